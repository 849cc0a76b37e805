package keeper

import "context"

// ExpireMembersWork runs the EndBlocker's member expiry and returns the work units it spent.
func (k Keeper) ExpireMembersWork(ctx context.Context) (uint64, error) { return k.expireMembers(ctx) }
