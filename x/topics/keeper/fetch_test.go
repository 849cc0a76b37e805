package keeper_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	storetypes "cosmossdk.io/store/types"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

func TestFetch(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	// Batches of 3, 1 and 4 records: offsets 0-2, 3, 4-7.
	for _, n := range []int{3, 1, 4} {
		var rs []types.BatchRecord
		for i := 0; i < n; i++ {
			rs = append(rs, rec("", "0123456789"))
		}
		_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: rs})
		require.NoError(t, err)
	}
	offsets := func(res *types.QueryFetchResponse) []uint64 {
		var out []uint64
		for _, r := range res.Records {
			out = append(out, r.Offset)
		}
		return out
	}
	res, err := f.fetch("t", 0, 0, 0, 0)
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 1, 2, 3, 4, 5, 6, 7}, offsets(res))
	require.Equal(t, uint64(8), res.HighWatermark)
	require.Equal(t, uint64(8), res.NextOffset)

	res, err = f.fetch("t", 0, 5, 0, 0) // from inside the third batch
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 6, 7}, offsets(res))

	res, err = f.fetch("t", 0, 1, 3, 0)
	require.NoError(t, err)
	require.Equal(t, []uint64{1, 2, 3}, offsets(res))
	require.Equal(t, uint64(4), res.NextOffset)

	// Max bytes counts whole stored batches, as Kafka's fetch.max.bytes does: room for the
	// first two batches gives offset 2 (the first batch's records before 2 are left out) and 3.
	whole, err := f.query.Fetch(f.ctx, &types.QueryFetchRequest{Topic: "t", Partition: 0, Format: types.FETCH_FORMAT_BATCHES})
	require.NoError(t, err)
	require.Len(t, whole.Batches, 3)
	require.Equal(t, uint64(8), whole.NextOffset)
	res, err = f.fetch("t", 0, 2, 0, whole.Batches[0].SizeBytes+whole.Batches[1].SizeBytes)
	require.NoError(t, err)
	require.Equal(t, []uint64{2, 3}, offsets(res))
	require.Equal(t, uint64(4), res.NextOffset)

	res, err = f.fetch("t", 0, 2, 0, 1) // at least one record even above max bytes
	require.NoError(t, err)
	require.Equal(t, []uint64{2}, offsets(res))

	res, err = f.fetch("t", 0, 8, 0, 0) // at the high watermark: nothing yet
	require.NoError(t, err)
	require.Empty(t, res.Records)
	require.Equal(t, uint64(8), res.NextOffset)

	_, err = f.fetch("t", 0, 9, 0, 0)
	require.ErrorIs(t, err, types.ErrOffsetOutOfRange)
	_, err = f.fetch("t", 2, 0, 0, 0)
	require.ErrorIs(t, err, types.ErrInvalidPartition)
	_, err = f.fetch("nope", 0, 0, 0, 0)
	require.ErrorIs(t, err, types.ErrUnknownTopic)

	rr, err := f.query.Record(f.ctx, &types.QueryRecordRequest{Topic: "t", Partition: 0, Offset: 3})
	require.NoError(t, err)
	require.Equal(t, uint64(3), rr.Record.Offset)
	_, err = f.query.Record(f.ctx, &types.QueryRecordRequest{Topic: "t", Partition: 0, Offset: 8})
	require.ErrorIs(t, err, types.ErrOffsetOutOfRange)
	_, err = f.query.Record(f.ctx, &types.QueryRecordRequest{Topic: "t", Partition: 1, Offset: 0})
	require.ErrorIs(t, err, types.ErrOffsetOutOfRange)
}

// A records-format fetch decompresses the batches it answers from. 1,000 zstd batches of four
// records of 1 MiB of zeros, stored as a few hundred bytes each, fit every stored-byte and
// record limit of one fetch, so one free query decompressed (and held) all 4 GiB. A fetch now
// decompresses at most its byte limit (16 MiB at most) past its first batch and answers with
// what fits; the next fetch goes on from there.
func TestAttackFetchRecordsDecompressionIsBounded(t *testing.T) {
	f := newFixture(t)
	f.createTopic("zeros", 1)
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	const batches = 1_000
	recs := make([]types.BatchRecord, 4)
	for i := range recs {
		recs[i] = types.BatchRecord{CreateTimeMs: 1234, Value: &types.Bytes{Data: make([]byte, params.MaxRecordBytes-32)}}
		require.LessOrEqual(t, recs[i].RecordSize(), params.MaxRecordBytes)
	}
	b, err := types.NewProduceBatch("zeros", 0, recs, kbatch.CompressionZstd)
	require.NoError(t, err)
	decoded := uint64(len(recs)) * (params.MaxRecordBytes - 32)
	var paid uint64
	for i := 0; i < batches; i++ {
		ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		_, err := f.msgs.Produce(ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{b}})
		require.NoError(t, err)
		paid += ctx.GasMeter().GasConsumed()
	}
	p := f.partitions("zeros")[0]
	t.Logf("%d batches of %d stored bytes, each decompressing to %.1f MiB: %d stored bytes, %d records; the producer paid %d gas",
		batches, p.ByteCount/batches, float64(decoded)/(1<<20), p.ByteCount, p.HighWatermark, paid)

	fetch := func(offset, maxBytes uint64) (*types.QueryFetchResponse, uint64, uint64, time.Duration) {
		ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		res, err := f.query.Fetch(ctx, &types.QueryFetchRequest{Topic: "zeros", Partition: 0, Offset: offset,
			MaxRecords: keeper.MaxFetchRecords, MaxBytes: maxBytes, Format: types.FETCH_FORMAT_RECORDS})
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		require.NoError(t, err)
		return res, after.TotalAlloc - before.TotalAlloc, ctx.GasMeter().GasConsumed(), took
	}
	res, alloc, gas, took := fetch(0, keeper.MaxFetchBytes)
	var got uint64
	for _, r := range res.Records {
		got += uint64(len(r.Value.GetData()))
	}
	t.Logf("one fetch (max_records %d, max_bytes %d MiB) of records that decompress to %.0f MiB: %d records (%.1f MiB), next offset %d, %.1f MiB allocated, %d gas, %v",
		keeper.MaxFetchRecords, keeper.MaxFetchBytes>>20, float64(batches*decoded)/(1<<20), len(res.Records), float64(got)/(1<<20), res.NextOffset, float64(alloc)/(1<<20), gas, took.Round(time.Millisecond))
	require.NotEmpty(t, res.Records)
	require.Less(t, res.NextOffset, p.HighWatermark, "a partial answer")
	require.Equal(t, res.Records[len(res.Records)-1].Offset+1, res.NextOffset)
	require.LessOrEqual(t, got, uint64(keeper.MaxFetchBytes), "decompressed bytes answered")
	if !raceEnabled { // make test-race: the detector's own allocations would count
		require.Less(t, alloc, uint64(4*keeper.MaxFetchBytes), "bytes allocated by one fetch")
	}

	// The next fetch goes on where this one stopped.
	next, _, _, _ := fetch(res.NextOffset, keeper.MaxFetchBytes)
	require.Equal(t, res.NextOffset, next.Records[0].Offset)

	// A first batch above the byte limit is answered whole, so a consumer always makes progress.
	one, alloc, _, _ := fetch(4, 1)
	require.Len(t, one.Records, len(recs))
	require.Equal(t, uint64(8), one.NextOffset)
	t.Logf("max_bytes 1: the first batch's %d records (%.1f MiB), %.1f MiB allocated", len(one.Records), float64(decoded)/(1<<20), float64(alloc)/(1<<20))
	if !raceEnabled {
		require.Less(t, alloc, 4*decoded)
	}
}
