package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	storetypes "cosmossdk.io/store/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

func TestOffsetsForTimes(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	var times []int64
	for i := 0; i < 50; i++ {
		f.advance(time.Duration(1+i%3) * time.Second)
		times = append(times, f.ctx.BlockTime().UnixMilli())
		n := 1 + i%4
		rs := make([]types.BatchRecord, n)
		for j := range rs {
			rs[j] = rec("", "v")
		}
		_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: rs})
		require.NoError(t, err)
	}
	// Expected answer by a linear walk over the fetched records.
	res, err := f.fetch("t", 0, 0, 10_000, 0)
	require.NoError(t, err)
	expect := func(ts int64) int64 {
		for _, r := range res.Records {
			if r.LogAppendTimeMs >= ts {
				return int64(r.Offset)
			}
		}
		return -1
	}
	list := func(ts int64) int64 {
		out, err := f.query.ListOffsets(f.ctx, &types.QueryListOffsetsRequest{Topic: "t", Partition: 0, Spec: types.OFFSET_SPEC_TIMESTAMP, TimestampMs: ts})
		require.NoError(t, err)
		return out.Offset
	}
	for _, ts := range []int64{0, times[0], times[0] + 1, times[17] - 1, times[17], times[49], times[49] + 1} {
		require.Equal(t, expect(ts), list(ts), "ts %d", ts)
	}
	for i := range times {
		require.Equal(t, expect(times[i]), list(times[i]))
	}
	latest, err := f.query.ListOffsets(f.ctx, &types.QueryListOffsetsRequest{Topic: "t", Partition: 0, Spec: types.OFFSET_SPEC_LATEST})
	require.NoError(t, err)
	require.Equal(t, int64(len(res.Records)), latest.Offset)
	_, err = f.query.ListOffsets(f.ctx, &types.QueryListOffsetsRequest{Topic: "t", Partition: 0})
	require.ErrorIs(t, err, types.ErrInvalidRequest)

	// After retention, lookups before the log start answer the log start.
	setRetention(t, f, "t", 20_000, -1)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	start := f.partitions("t")[0].LogStartOffset
	require.NotZero(t, start)
	require.Equal(t, int64(start), list(0))
}

// A timestamp lookup reads batch metadata only: its gas does not grow with batch size, so a
// partition of maximal batches cannot make every offsetsForTimes query decode megabytes.
func TestOffsetsForTimesReadsNoBatch(t *testing.T) {
	f := newFixture(t)
	f.createTopic("big", 1)
	value := string(make([]byte, 900))
	for i := 0; i < 16; i++ {
		f.advance(time.Second)
		rs := make([]types.BatchRecord, 1000)
		for j := range rs {
			rs[j] = rec("", value)
		}
		_, err := f.produce(f.alice, pb{Topic: "big", Partition: 0, Records: rs})
		require.NoError(t, err)
	}
	p := f.partitions("big")[0]
	ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
	start := time.Now()
	out, err := f.query.ListOffsets(ctx, &types.QueryListOffsetsRequest{Topic: "big", Partition: 0, Spec: types.OFFSET_SPEC_TIMESTAMP, TimestampMs: f.ctx.BlockTime().UnixMilli()})
	require.NoError(t, err)
	require.EqualValues(t, 15_000, out.Offset)
	gas := ctx.GasMeter().GasConsumed()
	t.Logf("offsetsForTimes over %d batches of %d stored bytes: %d gas, %s", 16, p.ByteCount/16, gas, time.Since(start))
	// Reading one ~1 MB batch would cost ~3 gas per byte read, about 3M gas.
	require.Less(t, gas, uint64(100_000))
}
