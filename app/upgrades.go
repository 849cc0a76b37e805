package app

import (
	"context"
	"slices"

	storetypes "cosmossdk.io/store/types"
	"cosmossdk.io/x/feegrant"
	upgradetypes "cosmossdk.io/x/upgrade/types"

	"github.com/cosmos/cosmos-sdk/types/module"
	authzkeeper "github.com/cosmos/cosmos-sdk/x/authz/keeper"
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

// UpgradeV4 switches to the binary whose blocks without transactions write nothing unless
// something is due (empty_blocks.go), so that nodes can skip timeout_commit: slashing's liveness
// window and distribution's fee allocation move in blocks with transactions only, and staking
// keeps no historical info (its handler sets historical_entries to 0 and deletes what was kept).
const UpgradeV4 = "v4"

// UpgradeV5 switches to the binary with KIP-848 consumer groups (MsgConsumerGroupHeartbeat,
// group kind CONSUMER, consumer group state under two new prefixes of x/topics' store): blocks
// execute differently, so validators change binaries at one height. No store changes.
const UpgradeV5 = "v5"

// UpgradeV6 switches to the binary with x/authz (a topic owner lets a gateway produce in its
// name, ProduceAuthorization) and x/feegrant (an organisation pays its producers' fees): their
// stores are added at the upgrade height (StoreUpgrades) and their genesis run by the handler.
const UpgradeV6 = "v6"

// storesAddedIn are the plans a release without x/authz and x/feegrant halts for: every one
// before v6. A chain of such a release (the e2e upgrade test's v1 chain proposes v2) reaches
// this binary through its plan, whose height is then the first with the two stores.
var storesAddedIn = []string{UpgradeV2, UpgradeV3, UpgradeV4, UpgradeV5, UpgradeV6}

// StoreUpgrades are the stores this binary adds when it starts on a chain halted for the plan
// named name, or nil.
func StoreUpgrades(name string) *storetypes.StoreUpgrades {
	if !slices.Contains(storesAddedIn, name) {
		return nil
	}
	return &storetypes.StoreUpgrades{Added: []string{authzkeeper.StoreKey, feegrant.StoreKey}}
}

// setUpgradeStoreLoader adds the stores of the plan the chain halted for (upgrade-info.json,
// written by the release before at the halt), at that plan's height only.
func (app *App) setUpgradeStoreLoader() {
	plan, err := app.UpgradeKeeper.ReadUpgradeInfoFromDisk()
	if err != nil {
		panic(err)
	}
	if plan.Name == "" || app.UpgradeKeeper.IsSkipHeight(plan.Height) {
		return
	}
	if added := StoreUpgrades(plan.Name); added != nil {
		app.SetStoreLoader(upgradetypes.UpgradeStoreLoader(plan.Height, added))
	}
}

// registerUpgradeHandlers registers every upgrade this binary can perform. An upgrade's
// handler runs the store migrations of the modules whose consensus version grew, in the
// module manager's order; the chain halts rather than run a plan this binary has no handler for.
func (app *App) registerUpgradeHandlers() {
	app.UpgradeKeeper.SetUpgradeHandler(UpgradeV2, func(ctx context.Context, _ upgradetypes.Plan, fromVM module.VersionMap) (module.VersionMap, error) {
		return app.ModuleManager.RunMigrations(ctx, app.Configurator(), fromVM)
	})
	app.UpgradeKeeper.SetUpgradeHandler(UpgradeV3, func(ctx context.Context, _ upgradetypes.Plan, fromVM module.VersionMap) (module.VersionMap, error) {
		return app.ModuleManager.RunMigrations(ctx, app.Configurator(), fromVM)
	})
	app.UpgradeKeeper.SetUpgradeHandler(UpgradeV4, func(ctx context.Context, _ upgradetypes.Plan, fromVM module.VersionMap) (module.VersionMap, error) {
		if err := app.dropHistoricalInfo(ctx); err != nil {
			return nil, err
		}
		return app.ModuleManager.RunMigrations(ctx, app.Configurator(), fromVM)
	})
	app.UpgradeKeeper.SetUpgradeHandler(UpgradeV5, func(ctx context.Context, _ upgradetypes.Plan, fromVM module.VersionMap) (module.VersionMap, error) {
		return app.ModuleManager.RunMigrations(ctx, app.Configurator(), fromVM)
	})
	// authz and feegrant are missing from fromVM: RunMigrations runs their InitGenesis.
	app.UpgradeKeeper.SetUpgradeHandler(UpgradeV6, func(ctx context.Context, _ upgradetypes.Plan, fromVM module.VersionMap) (module.VersionMap, error) {
		return app.ModuleManager.RunMigrations(ctx, app.Configurator(), fromVM)
	})
	app.setUpgradeStoreLoader()
}

// dropHistoricalInfo sets staking's historical_entries to 0 and deletes the entries kept: with
// entries skipped in blocks without transactions, staking's pruning (which stops at the first
// missing height) would keep them forever, and nothing in bftlog reads them. At most the
// 10,000 of the SDK's default, once.
func (app *App) dropHistoricalInfo(ctx context.Context) error {
	params, err := app.StakingKeeper.GetParams(ctx)
	if err != nil {
		return err
	}
	params.HistoricalEntries = 0
	if err := app.StakingKeeper.SetParams(ctx, params); err != nil {
		return err
	}
	kept, err := app.StakingKeeper.GetAllHistoricalInfo(ctx)
	if err != nil {
		return err
	}
	for _, h := range kept {
		if err := app.StakingKeeper.DeleteHistoricalInfo(ctx, h.Header.Height); err != nil {
			return err
		}
	}
	return nil
}
