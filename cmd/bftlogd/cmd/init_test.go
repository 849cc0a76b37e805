package cmd_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/cmd/bftlogd/cmd"
)

// `bftlogd init` writes a finite block max_gas (CometBFT's default -1 lets one transaction use
// unbounded gas) and the x/topics fee and deposit params into the new genesis.
func TestInitWritesGasLimitsAndFees(t *testing.T) {
	home := t.TempDir()
	root := cmd.NewRootCmd()
	root.SetArgs([]string{"init", "gas", "--chain-id", "gas-test", "--home", home})
	require.NoError(t, svrcmd.Execute(root, "BFTLOGD_INIT_TEST", home))

	gen, err := genutiltypes.AppGenesisFromFile(filepath.Join(home, "config", "genesis.json"))
	require.NoError(t, err)
	require.Equal(t, int64(app.DefaultBlockMaxGas), gen.Consensus.Params.Block.MaxGas)
	require.Contains(t, string(gen.AppState), `"min_gas_price"`)
	require.Contains(t, string(gen.AppState), `"max_tx_gas": "300000000"`)
	require.Equal(t, int64(app.DefaultRetainBlocks), gen.Consensus.Params.Evidence.MaxAgeNumBlocks)
	require.Contains(t, string(gen.AppState), `"historical_entries": 0`, "staking keeps no historical info")
	appToml, err := os.ReadFile(filepath.Join(home, "config", "app.toml"))
	require.NoError(t, err)
	for _, line := range []string{`pruning = "custom"`, `pruning-keep-recent = "1000"`, `min-retain-blocks = 10000`, `snapshot-interval = 2000`, `snapshot-keep-recent = 2`} {
		require.Contains(t, string(appToml), line)
	}
	// Heights start as soon as every precommit is in; an idle chain makes a block a second.
	configToml, err := os.ReadFile(filepath.Join(home, "config", "config.toml"))
	require.NoError(t, err)
	for _, line := range []string{`skip_timeout_commit = true`, `create_empty_blocks = true`, `create_empty_blocks_interval = "1s"`, `timeout_commit = "200ms"`} {
		require.Contains(t, string(configToml), line)
	}
	t.Logf("genesis block max_gas %d, max_bytes %d", gen.Consensus.Params.Block.MaxGas, gen.Consensus.Params.Block.MaxBytes)
}
