package app

import (
	"context"
	"fmt"

	storetypes "cosmossdk.io/store/types"
	abci "github.com/cometbft/cometbft/abci/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/distribution"
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"
	"github.com/cosmos/cosmos-sdk/x/slashing"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	"github.com/cosmos/cosmos-sdk/x/staking"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
)

// A block without transactions writes nothing unless something is due in it (an evidence, a
// proposal ending, an unbonding maturing, retention or compaction with work to do), so that
// CometBFT can skip timeout_commit (bftlogd init sets skip_timeout_commit): it proposes at once
// after a block that changed the app hash (a "proof block") and otherwise waits for
// transactions, up to create_empty_blocks_interval. The SDK's modules wrote on every block, so
// every block changed the app hash and a chain without timeout_commit would have made empty
// blocks back to back:
//   - slashing's BeginBlock moves each validator's liveness window (its signing info);
//   - distribution's allocates the fees collected, zero or not, and records the proposer;
//   - staking's keeps the validator set as historical info (for IBC, which bftlog lacks: its
//     genesis sets historical_entries 0, consensus.go), and its EndBlock stores each block's list
//     of validator updates, empty or not.
//
// Slashing and distribution run here only in blocks that carry transactions. Liveness is then
// counted over those blocks, by the votes each carries for the block before it: a validator
// that stops signing is jailed after missing too many of them (slashing's signed_blocks_window),
// and one that is away while the chain idles is not jailed meanwhile (each height it misses
// still waits timeout_commit for its precommit). Fees are allocated in the next block with
// transactions, to that block's voters. Since UpgradeV4 (upgrades.go); blocks below its height
// are the release before's to run.
type blockTxs struct {
	carried bool // the block FinalizeBlock runs carries transactions
}

// beginBlock runs a module's BeginBlock only in a block that carries transactions.
func (t *blockTxs) beginBlock(ctx context.Context, begin func(context.Context) error) error {
	if !t.carried {
		return nil
	}
	return begin(ctx)
}

// slashingModule is x/slashing with BeginBlock only in blocks that carry transactions.
type slashingModule struct {
	slashing.AppModule
	txs *blockTxs
}

func (m slashingModule) BeginBlock(ctx context.Context) error {
	return m.txs.beginBlock(ctx, m.AppModule.BeginBlock)
}

// distributionModule is x/distribution with BeginBlock only in blocks that carry transactions.
type distributionModule struct {
	distribution.AppModule
	txs *blockTxs
}

func (m distributionModule) BeginBlock(ctx context.Context) error {
	return m.txs.beginBlock(ctx, m.AppModule.BeginBlock)
}

// stakingModule is x/staking with an EndBlock that, in a block without transactions, keeps its
// writes only if they change something. Its BeginBlock writes nothing: bftlog keeps no
// historical info (consensus.go WithoutHistoricalInfo).
type stakingModule struct {
	staking.AppModule
	keeper *stakingkeeper.Keeper
	txs    *blockTxs
}

// EndBlock applies the validator set's changes and the staking queues that matured. It also
// stores the block's list of validator updates, empty or not, which nothing reads: in a block
// without transactions that write alone is dropped, and the block's other writes (a validator
// set changed by an evidence or a proposal, an unbonding that matured) are kept.
func (m stakingModule) EndBlock(ctx context.Context) ([]abci.ValidatorUpdate, error) {
	if m.txs.carried {
		return m.AppModule.EndBlock(ctx)
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	branch, write := sdkCtx.CacheContext()
	updates, err := m.AppModule.EndBlock(branch)
	if err != nil {
		return nil, err
	}
	due, err := m.queuesDue(sdkCtx)
	if err != nil {
		return nil, err
	}
	if len(updates) > 0 || due {
		write()
	}
	return updates, nil
}

// queuesDue says whether one of the queues staking's EndBlock empties holds an entry due now.
func (m stakingModule) queuesDue(ctx sdk.Context) (bool, error) {
	for _, open := range []func() (storetypes.Iterator, error){
		func() (storetypes.Iterator, error) {
			return m.keeper.ValidatorQueueIterator(ctx, ctx.BlockTime(), ctx.BlockHeight())
		},
		func() (storetypes.Iterator, error) { return m.keeper.UBDQueueIterator(ctx, ctx.BlockTime()) },
		func() (storetypes.Iterator, error) { return m.keeper.RedelegationQueueIterator(ctx, ctx.BlockTime()) },
	} {
		it, err := open()
		if err != nil {
			return false, err
		}
		due := it.Valid()
		it.Close()
		if due {
			return true, nil
		}
	}
	return false, nil
}

// quietEmptyBlocks replaces the three modules in the module manager with their wrappers,
// before the app loads. Every other method is the module's own.
func (app *App) quietEmptyBlocks() {
	mods := app.ModuleManager.Modules
	slash, ok1 := mods[slashingtypes.ModuleName].(slashing.AppModule)
	distr, ok2 := mods[distrtypes.ModuleName].(distribution.AppModule)
	stake, ok3 := mods[stakingtypes.ModuleName].(staking.AppModule)
	if !ok1 || !ok2 || !ok3 {
		panic(fmt.Sprintf("slashing, distribution and staking are %T, %T and %T, not the SDK's AppModules",
			mods[slashingtypes.ModuleName], mods[distrtypes.ModuleName], mods[stakingtypes.ModuleName]))
	}
	mods[slashingtypes.ModuleName] = slashingModule{AppModule: slash, txs: &app.blockTxs}
	mods[distrtypes.ModuleName] = distributionModule{AppModule: distr, txs: &app.blockTxs}
	mods[stakingtypes.ModuleName] = stakingModule{AppModule: stake, keeper: app.StakingKeeper, txs: &app.blockTxs}
}
