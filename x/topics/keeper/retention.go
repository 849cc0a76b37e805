package keeper

import (
	"context"
	"fmt"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// cleanupBudget is what the EndBlocker may delete in one block, shared by topic purges and
// retention: keys (batches, producer states, purged partitions) and stored batch bytes.
type cleanupBudget struct {
	keys  uint32
	bytes uint64
}

func newCleanupBudget(p types.Params) cleanupBudget {
	return cleanupBudget{keys: p.RetentionBatchesPerBlock, bytes: p.CleanupBytesPerBlock}
}

// open reports whether another key may be deleted. A batch larger than what is left still
// goes, so a block always makes progress; the overshoot is below one batch.
func (b *cleanupBudget) open() bool { return b.keys > 0 && b.bytes > 0 }

func (b *cleanupBudget) spend(bytes uint64) {
	b.keys--
	b.bytes -= min(bytes, b.bytes)
}

// ApplyRetention runs retention alone with a whole block's budget.
func (k Keeper) ApplyRetention(ctx context.Context) error {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	budget := newCleanupBudget(params)
	return k.applyRetention(ctx, params, &budget)
}

// applyRetention (cleanup.policy delete) deletes whole batches that are older than a topic's retention_ms (by
// LogAppendTime against block time) or that lie beyond its retention_bytes (oldest first, as
// long as the partition keeps at least retention_bytes, as Kafka does), and advances the log
// start offset. Whatever the policy, it also deletes the batches wholly below the log start
// offset, which MsgDeleteRecords moves without deleting any. It reads only BatchMetas, never a
// batch. Work per block is bounded: at most retention_partitions_per_block partitions
// inspected, and deletions within the shared budget, resuming from a stored cursor, so a
// backlog continues in the next block.
func (k Keeper) applyRetention(ctx context.Context, params types.Params, budget *cleanupBudget) error {
	cursor, err := k.RetentionCursor.Get(ctx)
	if err != nil && !isNotFound(err) {
		return err
	}
	found := err == nil
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	start := types.TopicPartition{Topic: cursor.Topic, Partition: cursor.Partition}
	rng := new(collections.Range[types.TopicPartition]).StartInclusive(start)
	var (
		visited uint32
		next    *types.RetentionCursor
		topic   types.Topic
	)
	iter, err := k.Partitions.Iterate(ctx, rng)
	if err != nil {
		return err
	}
	var todo []types.Partition
	for ; iter.Valid(); iter.Next() {
		if visited == params.RetentionPartitionsPerBlock {
			key, err := iter.Key()
			if err != nil {
				iter.Close()
				return err
			}
			next = &types.RetentionCursor{Topic: key.Topic, Partition: key.Partition}
			break
		}
		p, err := iter.Value()
		if err != nil {
			iter.Close()
			return err
		}
		todo = append(todo, p)
		visited++
	}
	iter.Close()

	for _, p := range todo {
		// Each partition isolated: one that fails is skipped (EventBlockWorkSkipped) and the
		// cursor moves past it, so it cannot hold up the others' retention.
		if topic.Name != p.Topic {
			t, err := k.Topics.Get(ctx, p.Topic)
			if isNotFound(err) {
				continue // a partition without its topic: nothing to retain by
			} else if err != nil {
				return err
			}
			topic = t
		}
		// A partition whose log start offset is 0 has nothing below it to delete, and one
		// without retention nothing expired: left alone without a read.
		if !retains(topic.Config) && p.LogStartOffset == 0 {
			continue
		}
		finished := true
		ok, err := k.attempt(ctx, "retention", fmt.Sprintf("%s/%d", p.Topic, p.Partition), func(ctx context.Context) error {
			var err error
			finished, err = k.retainPartition(ctx, topic.Config, p, now, budget)
			return err
		})
		if err != nil {
			return err
		}
		if ok && !finished { // out of budget inside this partition: resume here next block
			next = &types.RetentionCursor{Topic: p.Topic, Partition: p.Partition}
			break
		}
	}
	// Blocks without transactions (an idle chain makes one a second) write nothing unless
	// something is due in them (app/empty_blocks.go), so retention's cursor moves in them only
	// to finish inspecting every partition after the last block with transactions. That block
	// may have started mid-lap, after the partitions before the cursor were inspected: the lap
	// then ends with another one from the first partition (another_lap). Past that, a block
	// without transactions inspects the first partitions and saves no cursor, whatever it
	// deleted there; the others wait for the next block with transactions (while the chain is
	// idle nothing is appended to them). One topic of 256 partitions once made every empty
	// block write the cursor. A block with transactions can make up to two laps of blocks that
	// write it (partitions / retention_partitions_per_block each).
	idle := noTransactionRan(ctx)
	if idle && !found {
		return nil
	}
	anotherLap := cursor.AnotherLap || (!idle && found && cursor.Topic != "")
	if next == nil { // wrapped around
		if anotherLap {
			return k.RetentionCursor.Set(ctx, types.RetentionCursor{}) // the next lap, from the first partition
		}
		return k.RetentionCursor.Remove(ctx) // start over in the next block that needs it
	}
	next.AnotherLap = anotherLap
	return k.RetentionCursor.Set(ctx, *next)
}

// noTransactionRan tells the EndBlocker that the block carries no transaction: its
// transactions used no gas (every one that runs pays for its bytes). Without a block gas meter
// (a test's context) it answers false.
func noTransactionRan(ctx context.Context) bool {
	m := sdk.UnwrapSDKContext(ctx).BlockGasMeter()
	return m != nil && m.GasConsumed() == 0
}

// retains tells whether retention by time or size applies to a topic: cleanup.policy compact
// alone ignores retention.ms and retention.bytes, as in Kafka.
func retains(cfg types.TopicConfig) bool {
	return cfg.Deletes() && (cfg.RetentionMs > 0 || cfg.RetentionBytes > 0)
}

// retainPartition deletes, oldest first and within the budget, a partition's batches wholly
// below its log start offset and those retention finds expired or over its size, and reports
// whether it finished.
func (k Keeper) retainPartition(ctx context.Context, cfg types.TopicConfig, p types.Partition, now int64, budget *cleanupBudget) (bool, error) {
	rng := collections.NewPrefixedPairRange[types.TopicPartition, uint64](types.TopicPartition{Topic: p.Topic, Partition: p.Partition})
	iter, err := k.BatchMetas.Iterate(ctx, rng)
	if err != nil {
		return false, err
	}
	var (
		doomed          []collections.Pair[types.TopicPartition, uint64]
		records, nbytes uint64
		finished        = true
	)
	size := p.ByteCount
	for ; iter.Valid(); iter.Next() {
		kv, err := iter.KeyValue()
		if err != nil {
			iter.Close()
			return false, err
		}
		m := kv.Value
		below := kv.Key.K2() < p.LogStartOffset // its last offset: MsgDeleteRecords passed it
		expired := retains(cfg) && cfg.RetentionMs > 0 && m.LogAppendTimeMs < now-cfg.RetentionMs
		oversize := retains(cfg) && cfg.RetentionBytes > 0 && size-m.SizeBytes >= uint64(cfg.RetentionBytes)
		if !below && !expired && !oversize {
			break
		}
		if !budget.open() {
			finished = false
			break
		}
		doomed = append(doomed, kv.Key)
		budget.spend(m.SizeBytes)
		size -= m.SizeBytes
		records += m.Records(kv.Key.K2())
		nbytes += m.SizeBytes
	}
	iter.Close()
	if len(doomed) == 0 {
		return finished, nil
	}
	for _, key := range doomed {
		if err := k.removeBatch(ctx, key); err != nil {
			return false, err
		}
	}
	// Past the last batch deleted, never back: MsgDeleteRecords may have moved the log start
	// offset beyond it, into a batch that stays (or past the last one).
	p.LogStartOffset = max(p.LogStartOffset, doomed[len(doomed)-1].K2()+1)
	p.RecordCount -= records
	p.ByteCount -= nbytes
	if err := k.Partitions.Set(ctx, types.TopicPartition{Topic: p.Topic, Partition: p.Partition}, p); err != nil {
		return false, err
	}
	return finished, sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventRetentionApplied{
		Topic: p.Topic, Partition: p.Partition, LogStartOffset: p.LogStartOffset, RecordsDeleted: records, BytesDeleted: nbytes,
	})
}

// removeBatch deletes a batch and its metadata without reading the batch.
func (k Keeper) removeBatch(ctx context.Context, key collections.Pair[types.TopicPartition, uint64]) error {
	if err := k.Batches.Remove(ctx, key); err != nil {
		return err
	}
	if err := k.RecordBytes.Remove(ctx, key); err != nil {
		return err
	}
	return k.BatchMetas.Remove(ctx, key)
}
