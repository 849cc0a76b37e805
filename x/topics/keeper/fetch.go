package keeper

import (
	"context"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Fetch limits: past the first batch, a fetch returns at most MaxFetchRecords records and
// MaxFetchBytes stored bytes.
const (
	DefaultFetchRecords = 500
	MaxFetchRecords     = 10_000
	DefaultFetchBytes   = 4 << 20
	MaxFetchBytes       = 16 << 20
)

// FetchResult is a Kafka-style fetch answer for one partition: whole stored batches, the
// first holding the requested offset.
type FetchResult struct {
	Batches   []types.RecordBatch
	Partition types.Partition
	// NextOffset is where the next fetch should start.
	NextOffset uint64
}

// Fetch reads the stored batches of one partition from offset, seeking straight to the batch
// that holds offset, without decoding them. Past the first batch (always returned, as in
// Kafka) it stops before maxRecords records or maxBytes stored bytes would be passed.
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
	var records, bytes uint64
	for ; iter.Valid(); iter.Next() {
		kv, err := iter.KeyValue()
		if err != nil {
			return res, err
		}
		b := kv.Value
		n := b.LastOffset() + 1 - max(b.BaseOffset, offset)
		if len(res.Batches) > 0 && (records+n > uint64(maxRecords) || bytes+b.SizeBytes > maxBytes) {
			break
		}
		if b, err = k.withBytes(ctx, kv.Key, b); err != nil {
			return res, err
		}
		res.Batches = append(res.Batches, b)
		records += n
		bytes += b.SizeBytes
		res.NextOffset = b.LastOffset() + 1
	}
	return res, nil
}

// Records decodes the fetched batches' records from offset on, at most maxRecords of them.
func (r FetchResult) Records(offset uint64, maxRecords uint32) ([]types.Record, error) {
	var out []types.Record
	for _, b := range r.Batches {
		recs, err := b.Records()
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if rec.Offset >= offset && uint32(len(out)) < maxRecords {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}

// GetRecord returns the record at one offset.
func (k Keeper) GetRecord(ctx context.Context, topic string, partition uint32, offset uint64) (types.Record, error) {
	res, err := k.Fetch(ctx, topic, partition, offset, 1, 1)
	if err != nil {
		return types.Record{}, err
	}
	recs, err := res.Records(offset, 1)
	if err != nil {
		return types.Record{}, err
	}
	if len(recs) == 0 {
		return types.Record{}, errorsmod.Wrapf(types.ErrOffsetOutOfRange,
			"offset %d of %s is at the high watermark; no record there yet", offset, res.Partition.Label())
	}
	if recs[0].Offset != offset {
		return types.Record{}, errorsmod.Wrapf(types.ErrOffsetOutOfRange,
			"offset %d of %s holds no record: compaction removed it (the next is at %d)", offset, res.Partition.Label(), recs[0].Offset)
	}
	return recs[0], nil
}
