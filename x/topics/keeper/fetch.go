package keeper

import (
	"context"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Fetch limits: past the first batch, a fetch returns at most MaxFetchRecords records and
// MaxFetchBytes stored bytes (so it reads at most MaxFetchRecords batches: each spans an
// offset at least). In the records format the byte limit bounds the records' bytes once
// decompressed as well: a compressed batch is a few hundred bytes that may expand to
// max_batch_bytes, and a query is free, so what one query decompresses (and holds) is bounded
// by its limit, not by the stored bytes it reads.
//
// The first batch is always answered, as Kafka answers a first batch above fetch.max.bytes,
// so a consumer makes progress whatever its limit; its decompression is bounded by
// kbatch.MaxDecodedBatchBytes, above any batch max_batch_bytes admits (types.MaxBatchBytesLimit).
// A later batch that would take the records past the limit ends the answer at the batch
// before it, decompressing no further than the limit; next_offset says where to go on.
const (
	DefaultFetchRecords = 500
	MaxFetchRecords     = 10_000
	DefaultFetchBytes   = 4 << 20
	MaxFetchBytes       = 16 << 20
)

// FetchResult is a Kafka-style fetch answer for one partition: whole stored batches, the
// first holding the requested offset, or their records (FetchRecords).
type FetchResult struct {
	Batches []types.RecordBatch
	// Records are the batches' records from the requested offset on (FetchRecords only).
	Records   []types.Record
	Partition types.Partition
	// NextOffset is where the next fetch should start.
	NextOffset uint64
	// RecordBytes is what FetchRecords decoded: the records' bytes once decompressed.
	RecordBytes uint64
}

// Fetch reads the stored batches of one partition from offset, seeking straight to the batch
// that holds offset, without decoding them. Past the first batch (always returned, as in
// Kafka) it stops before maxRecords records or maxBytes stored bytes would be passed.
func (k Keeper) Fetch(ctx context.Context, topic string, partition uint32, offset uint64, maxRecords uint32, maxBytes uint64) (FetchResult, error) {
	return k.fetch(ctx, topic, partition, offset, maxRecords, maxBytes, false)
}

// FetchRecords is Fetch decoding the records from offset on, at most maxRecords of them; past
// the first batch it also stops before the records' decompressed bytes would pass maxBytes.
// Decompression is charged to the query's gas meter as produce charges it (so a node's
// query-gas-limit counts it too); the limits bound it whatever that meter allows.
func (k Keeper) FetchRecords(ctx context.Context, topic string, partition uint32, offset uint64, maxRecords uint32, maxBytes uint64) (FetchResult, error) {
	return k.fetch(ctx, topic, partition, offset, maxRecords, maxBytes, true)
}

func (k Keeper) fetch(ctx context.Context, topic string, partition uint32, offset uint64, maxRecords uint32, maxBytes uint64, decode bool) (FetchResult, error) {
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
		first := len(res.Batches) == 0
		if !first && (records+n > uint64(maxRecords) || bytes+b.SizeBytes > maxBytes) {
			break
		}
		if b, err = k.withBytes(ctx, kv.Key, b); err != nil {
			return res, err
		}
		if decode {
			limit := uint64(math.MaxUint64) // the first batch: only the codec's bound
			if !first {
				limit = maxBytes - min(res.RecordBytes, maxBytes)
			}
			recs, size, err := b.RecordsWithin(limit)
			if kbatch.RecordBatchCompression(b.RecordBatch) != kbatch.CompressionNone {
				sdk.UnwrapSDKContext(ctx).GasMeter().ConsumeGas(size*DecompressedBytesGas, "fetch decompression")
			}
			if !first && errorsmod.IsOf(err, types.ErrBatchTooLarge) {
				break
			}
			if err != nil {
				return res, err
			}
			res.RecordBytes += size
			for _, r := range recs {
				if r.Offset >= offset && uint32(len(res.Records)) < maxRecords {
					res.Records = append(res.Records, r)
				}
			}
		}
		res.Batches = append(res.Batches, b)
		records += n
		bytes += b.SizeBytes
		res.NextOffset = b.LastOffset() + 1
	}
	// Cut by the record limit, the next fetch starts after the last record returned;
	// otherwise after the last batch read, past any transaction markers (no records).
	if n := len(res.Records); n > 0 && uint32(n) == maxRecords {
		res.NextOffset = res.Records[n-1].Offset + 1
	}
	return res, nil
}

// GetRecord returns the record at one offset.
func (k Keeper) GetRecord(ctx context.Context, topic string, partition uint32, offset uint64) (types.Record, error) {
	res, err := k.FetchRecords(ctx, topic, partition, offset, 1, 1)
	if err != nil {
		return types.Record{}, err
	}
	recs := res.Records
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
