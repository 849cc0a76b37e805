package app

import (
	"encoding/json"
	"fmt"

	"cosmossdk.io/x/feegrant"
	feegrantmodule "cosmossdk.io/x/feegrant/module"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
)

// A chain relaunched from an export starts at a later genesis time. Fee allowances and grants
// that expired by then may still be in the export (each prune takes at most 200 a block, and an
// idle chain makes no blocks), and the SDK's genesis refuses them: x/feegrant's InitGenesis
// fails on an allowance that expired before the genesis time, x/authz's panics on a grant
// expiring exactly at it. Any account can make many with one expiry, so both modules' genesis
// skips what has expired by the genesis time, as x/authz already does for the earlier ones.

// feegrantModule is x/feegrant with expired allowances skipped at genesis.
type feegrantModule struct{ feegrantmodule.AppModule }

func (m feegrantModule) InitGenesis(ctx sdk.Context, cdc codec.JSONCodec, bz json.RawMessage) {
	var gs feegrant.GenesisState
	cdc.MustUnmarshalJSON(bz, &gs)
	kept := gs.Allowances[:0]
	for _, g := range gs.Allowances {
		if a, err := g.GetGrant(); err == nil {
			if exp, err := a.ExpiresAt(); err == nil && exp != nil && !exp.After(ctx.BlockTime()) {
				continue
			}
		}
		kept = append(kept, g)
	}
	gs.Allowances = kept
	m.AppModule.InitGenesis(ctx, cdc, cdc.MustMarshalJSON(&gs))
}

func (m authzModule) InitGenesis(ctx sdk.Context, cdc codec.JSONCodec, bz json.RawMessage) {
	var gs authz.GenesisState
	cdc.MustUnmarshalJSON(bz, &gs)
	kept := gs.Authorization[:0]
	for _, g := range gs.Authorization {
		if g.Expiration != nil && !g.Expiration.After(ctx.BlockTime()) {
			continue
		}
		kept = append(kept, g)
	}
	gs.Authorization = kept
	m.AppModule.InitGenesis(ctx, cdc, cdc.MustMarshalJSON(&gs))
}

// skipExpiredAtGenesis puts feegrantModule in the module manager in place of x/feegrant's own
// (authzModule, boundAuthzPruning, skips x/authz's).
func (app *App) skipExpiredAtGenesis() {
	mod, ok := app.ModuleManager.Modules[feegrant.ModuleName].(feegrantmodule.AppModule)
	if !ok {
		panic(fmt.Sprintf("feegrant is %T, not the SDK's AppModule", app.ModuleManager.Modules[feegrant.ModuleName]))
	}
	app.ModuleManager.Modules[feegrant.ModuleName] = feegrantModule{mod}
}
