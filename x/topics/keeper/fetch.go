package keeper

import (
	"context"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Fetch limits: a fetch returns at most MaxFetchRecords records and, past the first record,
// at most MaxFetchBytes record bytes.
const (
	DefaultFetchRecords = 500
	MaxFetchRecords     = 10_000
	DefaultFetchBytes   = 4 << 20
	MaxFetchBytes       = 16 << 20
)

// FetchResult is a Kafka-style fetch answer for one partition.
type FetchResult struct {
	Records   []types.Record
	Partition types.Partition
	// NextOffset is where the next fetch should start.
	NextOffset uint64
}

// Fetch reads records of one partition from offset, seeking straight to the batch that holds
// offset. As in Kafka, the first record is returned even when it exceeds maxBytes.
func (k Keeper) Fetch(ctx context.Context, topic string, partition uint32, offset uint64, maxRecords uint32, maxBytes uint64) (FetchResult, error) {
	if err := types.ValidateTopicName(topic); err != nil {
		return FetchResult{}, err
	}
	p, err := k.GetPartition(ctx, topic, partition)
	if err != nil {
		return FetchResult{}, err
	}
	if offset < p.LogStartOffset || offset > p.HighWatermark {
		return FetchResult{}, errorsmod.Wrapf(types.ErrOffsetOutOfRange,
			"offset %d of %s is outside [log start offset %d, high watermark %d]", offset, p.Label(), p.LogStartOffset, p.HighWatermark)
	}
	if maxRecords == 0 {
		maxRecords = DefaultFetchRecords
	}
	maxRecords = min(maxRecords, MaxFetchRecords)
	if maxBytes == 0 {
		maxBytes = DefaultFetchBytes
	}
	maxBytes = min(maxBytes, MaxFetchBytes)

	res := FetchResult{Partition: p, NextOffset: offset}
	if offset == p.HighWatermark {
		return res, nil
	}
	tp := types.TopicPartition{Topic: topic, Partition: partition}
	rng := new(collections.Range[collections.Pair[types.TopicPartition, uint64]]).
		StartInclusive(collections.Join(tp, offset)).
		EndInclusive(collections.Join(tp, uint64(math.MaxUint64)))
	iter, err := k.Batches.Iterate(ctx, rng)
	if err != nil {
		return res, err
	}
	defer iter.Close()
	var bytes uint64
	for ; iter.Valid(); iter.Next() {
		b, err := iter.Value()
		if err != nil {
			return res, err
		}
		for i, r := range b.Records {
			off := b.BaseOffset + uint64(i)
			if off < offset {
				continue
			}
			size := r.RecordSize()
			if len(res.Records) > 0 && (uint32(len(res.Records)) >= maxRecords || bytes+size > maxBytes) {
				return res, nil
			}
			res.Records = append(res.Records, b.Record(i))
			bytes += size
			res.NextOffset = off + 1
		}
	}
	return res, nil
}

// GetRecord returns the record at one offset.
func (k Keeper) GetRecord(ctx context.Context, topic string, partition uint32, offset uint64) (types.Record, error) {
	res, err := k.Fetch(ctx, topic, partition, offset, 1, 1)
	if err != nil {
		return types.Record{}, err
	}
	if len(res.Records) == 0 {
		return types.Record{}, errorsmod.Wrapf(types.ErrOffsetOutOfRange,
			"offset %d of %s is at the high watermark; no record there yet", offset, res.Partition.Label())
	}
	return res.Records[0], nil
}
