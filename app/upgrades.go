package app

import (
	"context"

	upgradetypes "cosmossdk.io/x/upgrade/types"

	"github.com/cosmos/cosmos-sdk/types/module"
)

// UpgradeV2 is the software upgrade that moves x/topics to consensus version 2 (topic configs
// carry cleanup_policy). A MsgSoftwareUpgrade proposal with this name halts every node of the
// release before at its height; this binary runs the migrations there (docs/operations.md, Upgrades).
const UpgradeV2 = "v2"

// UpgradeV3 switches to the binary with MsgDeleteRecords (and retention deleting the batches
// below a log start offset it moved) and MsgDeleteGroupOffsets (Kafka's OffsetDelete): blocks
// execute differently, so validators change binaries at one height, by a software upgrade
// proposal. No store changes.
const UpgradeV3 = "v3"

// UpgradeV4 switches to the binary whose blocks without transactions leave the state as they
// found it (empty_blocks.go), so that nodes can skip timeout_commit: slashing's liveness window
// and distribution's fee allocation move in blocks with transactions only. No store changes.
const UpgradeV4 = "v4"

// registerUpgradeHandlers registers every upgrade this binary can perform. An upgrade's
// handler runs the store migrations of the modules whose consensus version grew, in the
// module manager's order; the chain halts rather than run a plan this binary has no handler for.
func (app *App) registerUpgradeHandlers() {
	app.UpgradeKeeper.SetUpgradeHandler(UpgradeV2, func(ctx context.Context, _ upgradetypes.Plan, fromVM module.VersionMap) (module.VersionMap, error) {
		return app.ModuleManager.RunMigrations(ctx, app.Configurator(), fromVM)
	})
	for _, name := range []string{UpgradeV3, UpgradeV4} {
		app.UpgradeKeeper.SetUpgradeHandler(name, func(ctx context.Context, _ upgradetypes.Plan, fromVM module.VersionMap) (module.VersionMap, error) {
			return app.ModuleManager.RunMigrations(ctx, app.Configurator(), fromVM)
		})
	}
}
