package keeper

import (
	"context"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/internal/blockstep"
	"github.com/bftlog/bftlog/x/topics/types"
)

// EndBlocker expires silent group members, forms the Kafka groups' generations that are due,
// takes back share groups' records whose locks ran out, then purges deleted topics and applies retention
// within one shared cleanup budget. Which of the two goes first alternates by block height, so
// a flood of deleted topics cannot starve retention, nor a retention backlog the purges.
// Log compaction comes last, with its own budget.
//
// The rule of every block-level step: an error returned here stops every validator alike at
// this height, for good (a restart replays the same block). So no step may fail because of
// state an account or a Kafka client shaped: each step, and inside it each group or partition,
// runs in a branch of the state (isolate); one that fails is dropped, logged and reported as
// EventBlockWorkSkipped, and the block goes on. Only a failure of the node's own storage
// (ErrStorage: its record files) stops the node, since going on would make it diverge.
func (k Keeper) EndBlocker(ctx context.Context) error {
	if err := k.isolate(ctx, "expire", "", k.ExpireMembers); err != nil {
		return err
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if err := k.isolate(ctx, "kafka_rebalance", "", func(ctx context.Context) error {
		_, err := k.CompleteKafkaRebalances(ctx, params.MaxExpiryWorkPerBlock)
		return err
	}); err != nil {
		return err
	}
	if err := k.isolate(ctx, "share_locks", "", func(ctx context.Context) error {
		_, err := k.ExpireShareLocks(ctx, params.MaxExpiryWorkPerBlock)
		return err
	}); err != nil {
		return err
	}
	budget := newCleanupBudget(params)
	purge := func(ctx context.Context) error { return k.purgeTopics(ctx, &budget) }
	retain := func(ctx context.Context) error { return k.applyRetention(ctx, params, &budget) }
	first, second := stepFunc{"purge", purge}, stepFunc{"retention", retain}
	if sdk.UnwrapSDKContext(ctx).BlockHeight()%2 == 1 {
		first, second = second, first
	}
	for _, s := range []stepFunc{first, second} {
		if err := k.isolate(ctx, s.name, "", s.run); err != nil {
			return err
		}
	}
	return k.isolate(ctx, "compaction", "", func(ctx context.Context) error { return k.applyCompaction(ctx, params) })
}

type stepFunc struct {
	name string
	run  func(context.Context) error
}

// ErrStorage marks a failure of the node's own storage (blockstep.ErrStorage): the one kind of
// error a block-level step returns.
var ErrStorage = blockstep.ErrStorage

// storageError wraps err as an ErrStorage.
func storageError(err error) error { return blockstep.Storage(err) }

// isolate runs fn as blockstep.Isolate does; work it skips is logged and reported as
// EventBlockWorkSkipped (step, subject).
func (k Keeper) isolate(ctx context.Context, step, subject string, fn func(context.Context) error) error {
	_, err := k.attempt(ctx, step, subject, fn)
	return err
}

// attempt is isolate saying whether fn's work was done (false: skipped).
func (k Keeper) attempt(ctx context.Context, step, subject string, fn func(context.Context) error) (bool, error) {
	skipped, err := blockstep.Isolate(ctx, fn)
	if skipped == nil {
		return err == nil, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	sdkCtx.Logger().Error("x/topics: block work skipped", "step", step, "subject", subject, "height", sdkCtx.BlockHeight(), "err", skipped)
	return false, sdkCtx.EventManager().EmitTypedEvent(&types.EventBlockWorkSkipped{Step: step, Subject: subject, Reason: skipped.Error()})
}
