package keeper

import "context"

// ExpireMembersWork runs the EndBlocker's member expiry and returns the work units it spent.
func (k Keeper) ExpireMembersWork(ctx context.Context) (uint64, error) { return k.expireMembers(ctx) }

// KeyHash is how KeyOffsets keys a record key.
var KeyHash = keyHash

// CompactionWork runs one block's compaction and returns the bytes and records it spent.
func (k Keeper) CompactionWork(ctx context.Context) (uint64, uint32, error) {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return 0, 0, err
	}
	b := compactionBudget{bytes: params.CompactionBytesPerBlock, records: params.CompactionRecordsPerBlock}
	err = k.compact(ctx, &b)
	return params.CompactionBytesPerBlock - b.bytes, params.CompactionRecordsPerBlock - b.records, err
}

// Isolate runs fn as the EndBlocker runs each piece of its work (abci.go).
func (k Keeper) Isolate(ctx context.Context, step, subject string, fn func(context.Context) error) error {
	return k.isolate(ctx, step, subject, fn)
}
