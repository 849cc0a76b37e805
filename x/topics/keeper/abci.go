package keeper

import (
	"context"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// EndBlocker expires silent group members, forms the Kafka groups' generations that are due,
// then purges deleted topics and applies retention
// within one shared cleanup budget. Which of the two goes first alternates by block height, so
// a flood of deleted topics cannot starve retention, nor a retention backlog the purges.
// Log compaction comes last, with its own budget.
func (k Keeper) EndBlocker(ctx context.Context) error {
	if err := k.ExpireMembers(ctx); err != nil {
		return err
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if _, err := k.CompleteKafkaRebalances(ctx, params.MaxExpiryWorkPerBlock); err != nil {
		return err
	}
	budget := newCleanupBudget(params)
	first, second := k.purgeTopics, func(ctx context.Context, b *cleanupBudget) error { return k.applyRetention(ctx, params, b) }
	if sdk.UnwrapSDKContext(ctx).BlockHeight()%2 == 1 {
		first, second = second, first
	}
	if err := first(ctx, &budget); err != nil {
		return err
	}
	if err := second(ctx, &budget); err != nil {
		return err
	}
	return k.applyCompaction(ctx, params)
}
