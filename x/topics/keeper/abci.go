package keeper

import "context"

// EndBlocker expires silent group members and applies retention, each with bounded work.
func (k Keeper) EndBlocker(ctx context.Context) error {
	if err := k.ExpireMembers(ctx); err != nil {
		return err
	}
	return k.ApplyRetention(ctx)
}
