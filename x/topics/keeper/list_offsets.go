package keeper

import (
	"context"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/types"
)

// ListOffsetsResult answers Kafka's ListOffsets for one partition.
type ListOffsetsResult struct {
	// Offset is -1 when a TIMESTAMP lookup finds no record at or after the time.
	Offset      int64
	TimestampMs int64
}

// ListOffsets returns the log start offset (EARLIEST), the high watermark (LATEST), or the
// first offset whose LogAppendTime is at or after ts (TIMESTAMP, Kafka's offsetsForTimes).
// LogAppendTime is block time and so never decreases along a partition, which lets the
// TIMESTAMP lookup binary-search batches: O(log n) seeks, never a scan.
func (k Keeper) ListOffsets(ctx context.Context, topic string, partition uint32, spec types.OffsetSpec, ts int64) (ListOffsetsResult, error) {
	if err := types.ValidateTopicName(topic); err != nil {
		return ListOffsetsResult{}, err
	}
	p, err := k.GetPartition(ctx, topic, partition)
	if err != nil {
		return ListOffsetsResult{}, err
	}
	switch spec {
	case types.OFFSET_SPEC_EARLIEST:
		return ListOffsetsResult{Offset: int64(p.LogStartOffset), TimestampMs: -1}, nil
	case types.OFFSET_SPEC_LATEST:
		return ListOffsetsResult{Offset: int64(p.HighWatermark), TimestampMs: -1}, nil
	case types.OFFSET_SPEC_TIMESTAMP:
	default:
		return ListOffsetsResult{}, errorsmod.Wrapf(types.ErrInvalidRequest, "offset spec must be EARLIEST, LATEST or TIMESTAMP, not %s", spec)
	}
	// Smallest offset o in [start, hwm) whose batch was appended at or after ts. The search
	// reads only batch metadata: a lookup never decodes a batch of up to max_batch_bytes.
	lo, hi := p.LogStartOffset, p.HighWatermark
	var found *types.BatchMeta
	for lo < hi {
		mid := lo + (hi-lo)/2
		last, m, err := k.batchMetaHolding(ctx, topic, partition, mid)
		if err != nil {
			return ListOffsetsResult{}, err
		}
		if m.LogAppendTimeMs >= ts {
			found = &m
			// Every offset of this batch has the same time; offsets before it that no batch
			// holds (compaction removed them) are no answer either.
			hi = max(min(m.BaseOffset, mid), lo)
		} else {
			lo = last + 1
		}
	}
	if found == nil {
		return ListOffsetsResult{Offset: -1, TimestampMs: -1}, nil
	}
	off := max(found.BaseOffset, p.LogStartOffset)
	return ListOffsetsResult{Offset: int64(off), TimestampMs: found.LogAppendTimeMs}, nil
}

// batchMetaHolding returns the last offset and the metadata of the stored batch that holds
// offset (which must be retained).
func (k Keeper) batchMetaHolding(ctx context.Context, topic string, partition uint32, offset uint64) (uint64, types.BatchMeta, error) {
	tp := types.TopicPartition{Topic: topic, Partition: partition}
	rng := new(collections.Range[collections.Pair[types.TopicPartition, uint64]]).
		StartInclusive(collections.Join(tp, offset)).
		EndInclusive(collections.Join(tp, uint64(math.MaxUint64)))
	iter, err := k.BatchMetas.Iterate(ctx, rng)
	if err != nil {
		return 0, types.BatchMeta{}, err
	}
	defer iter.Close()
	if !iter.Valid() {
		return 0, types.BatchMeta{}, errorsmod.Wrapf(types.ErrOffsetOutOfRange, "no batch holds offset %d of %s/%d", offset, topic, partition)
	}
	kv, err := iter.KeyValue()
	if err != nil {
		return 0, types.BatchMeta{}, err
	}
	return kv.Key.K2(), kv.Value, nil
}
