package keeper

import (
	"context"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// ApplyRetention deletes whole batches that are older than a topic's retention_ms (by
// LogAppendTime against block time) or that lie beyond its retention_bytes (oldest first, as
// long as the partition keeps at least retention_bytes, as Kafka does), and advances the log
// start offset. Work per block is bounded: it inspects at most retention_partitions_per_block
// partitions and deletes at most retention_batches_per_block batches, resuming from a stored
// cursor, so a backlog continues in the next block.
func (k Keeper) ApplyRetention(ctx context.Context) error {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	cursor, err := k.RetentionCursor.Get(ctx)
	if err != nil && !isNotFound(err) {
		return err
	}
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	budget := params.RetentionBatchesPerBlock
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
		if topic.Name != p.Topic {
			if topic, err = k.Topics.Get(ctx, p.Topic); err != nil {
				return err
			}
		}
		if topic.Config.RetentionMs <= 0 && topic.Config.RetentionBytes <= 0 {
			continue
		}
		done, err := k.retainPartition(ctx, topic.Config, p, now, &budget)
		if err != nil {
			return err
		}
		if !done { // out of budget inside this partition: resume here next block
			next = &types.RetentionCursor{Topic: p.Topic, Partition: p.Partition}
			break
		}
	}
	if next == nil {
		return k.RetentionCursor.Remove(ctx) // wrapped around: start over next block
	}
	return k.RetentionCursor.Set(ctx, *next)
}

// retainPartition deletes a partition's expired batches within the budget and reports
// whether it finished.
func (k Keeper) retainPartition(ctx context.Context, cfg types.TopicConfig, p types.Partition, now int64, budget *uint32) (bool, error) {
	rng := collections.NewPrefixedPairRange[types.TopicPartition, uint64](types.TopicPartition{Topic: p.Topic, Partition: p.Partition})
	iter, err := k.Batches.Iterate(ctx, rng)
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
		b, err := iter.Value()
		if err != nil {
			iter.Close()
			return false, err
		}
		expired := cfg.RetentionMs > 0 && b.LogAppendTimeMs < now-cfg.RetentionMs
		oversize := cfg.RetentionBytes > 0 && size-b.SizeBytes >= uint64(cfg.RetentionBytes)
		if !expired && !oversize {
			break
		}
		if *budget == 0 {
			finished = false
			break
		}
		key, err := iter.Key()
		if err != nil {
			iter.Close()
			return false, err
		}
		doomed = append(doomed, key)
		*budget--
		size -= b.SizeBytes
		records += uint64(len(b.Records))
		nbytes += b.SizeBytes
	}
	iter.Close()
	if len(doomed) == 0 {
		return finished, nil
	}
	for _, key := range doomed {
		if err := k.Batches.Remove(ctx, key); err != nil {
			return false, err
		}
	}
	p.LogStartOffset = doomed[len(doomed)-1].K2() + 1
	p.RecordCount -= records
	p.ByteCount -= nbytes
	if err := k.Partitions.Set(ctx, types.TopicPartition{Topic: p.Topic, Partition: p.Partition}, p); err != nil {
		return false, err
	}
	return finished, sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventRetentionApplied{
		Topic: p.Topic, Partition: p.Partition, LogStartOffset: p.LogStartOffset, RecordsDeleted: records, BytesDeleted: nbytes,
	})
}
