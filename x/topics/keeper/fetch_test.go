package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

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
