package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"

	"github.com/cosmos/cosmos-sdk/types/module"
)

// roundTrip exports the chain as `bftlogd export` does, validates the genesis as `bftlogd
// genesis validate` does, imports it into a new App twice — once through InitChain and a first
// block (a chain restarted from the export), once by every module's InitGenesis followed at
// once by its ExportGenesis — and requires the second export to equal the first, module by
// module.
func (c *chain) roundTrip(dir string) error {
	a := c.main.app
	exported, err := a.ExportAppStateAndValidators(false, nil, nil)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(exported.AppState, &state); err != nil {
		return err
	}
	basics := module.NewBasicManagerFromManager(a.ModuleManager, nil)
	if err := basics.ValidateGenesis(a.AppCodec(), a.TxConfig(), state); err != nil {
		return fmt.Errorf("genesis validate: %w", err)
	}

	restarted := filepath.Join(dir, "restarted")
	if err := os.MkdirAll(restarted, 0o755); err != nil {
		return err
	}
	b := openNode(dbm.NewMemDB(), restarted)
	if _, err := b.app.InitChain(&abci.RequestInitChain{ChainId: chainID, ConsensusParams: &exported.ConsensusParams, AppStateBytes: exported.AppState,
		InitialHeight: exported.Height, Time: c.time}); err != nil {
		return fmt.Errorf("InitChain from the export: %w", err)
	}
	if _, err := finalize(b, &abci.RequestFinalizeBlock{Height: exported.Height, Time: c.time}); err != nil {
		return fmt.Errorf("the first block from the export: %w", err)
	}
	if err := commit(b, exported.Height); err != nil {
		return fmt.Errorf("the first block from the export: %w", err)
	}

	fresh := filepath.Join(dir, "imported")
	if err := os.MkdirAll(fresh, 0o755); err != nil {
		return err
	}
	d := openNode(dbm.NewMemDB(), fresh)
	ctx := d.app.NewUncachedContext(false, cmtproto.Header{ChainID: chainID, Height: exported.Height, Time: c.time})
	if _, err := d.app.ModuleManager.InitGenesis(ctx, d.app.AppCodec(), state); err != nil {
		return fmt.Errorf("InitGenesis: %w", err)
	}
	again, err := d.app.ModuleManager.ExportGenesisForModules(ctx, d.app.AppCodec(), nil)
	if err != nil {
		return fmt.Errorf("export after import: %w", err)
	}
	var diffs []string
	for _, m := range sortedKeys(state) {
		if !jsonEqual(state[m], again[m]) {
			diffs = append(diffs, m)
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		var werr error
		for _, m := range diffs {
			werr = errors.Join(werr,
				os.WriteFile(filepath.Join(dir, "export-"+m+".json"), state[m], 0o644),
				os.WriteFile(filepath.Join(dir, "reexport-"+m+".json"), again[m], 0o644))
		}
		if werr != nil {
			return fmt.Errorf("%w: modules %v (writing both exports to %s: %v)", errRoundTrip, diffs, dir, werr)
		}
		return fmt.Errorf("%w: modules %v (both exports written to %s)", errRoundTrip, diffs, dir)
	}
	return nil
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
