package keeper_test

import (
	"testing"
	"time"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

func setRetention(t *testing.T, f *fixture, topic string, ms, bytes int64) {
	t.Helper()
	cfg := anyone()
	cfg.RetentionMs, cfg.RetentionBytes = ms, bytes
	_, err := f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: topic, Config: cfg})
	require.NoError(t, err)
}

func TestRetentionByTimeIsBoundedAndResumes(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	f.createTopic("forever", 1)
	p := types.DefaultParams()
	p.RetentionBatchesPerBlock = 3
	_, err := f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)
	// 10 batches of 2 records, one per second, on each partition.
	for i := 0; i < 10; i++ {
		f.advance(time.Second)
		for _, topic := range []string{"t", "forever"} {
			_, err := f.produce(f.alice, types.ProduceBatch{Topic: topic, Partition: 0, Records: []types.BatchRecord{rec("", "0123456789"), rec("", "0123456789")}})
			require.NoError(t, err)
		}
		_, err := f.produce(f.alice, types.ProduceBatch{Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "0123456789")}})
		require.NoError(t, err)
	}
	setRetention(t, f, "t", 4_500, -1)
	setRetention(t, f, "forever", -1, -1)
	// Batches appended more than 4.5 s before now: the first 5 of each partition (10 in all),
	// deleted at 3 per block.
	var starts [][2]uint64
	for i := 0; i < 5; i++ {
		f.advance(time.Millisecond)
		require.NoError(t, f.k.EndBlocker(f.ctx))
		ps := f.partitions("t")
		starts = append(starts, [2]uint64{ps[0].LogStartOffset, ps[1].LogStartOffset})
	}
	require.Equal(t, [][2]uint64{{6, 0}, {10, 1}, {10, 4}, {10, 5}, {10, 5}}, starts)
	ps := f.partitions("t")
	require.Equal(t, types.Partition{Topic: "t", Partition: 0, HighWatermark: 20, LogStartOffset: 10, RecordCount: 10, ByteCount: storedBytes(t, f, "t", 0)}, ps[0])
	require.Equal(t, uint64(490), ps[0].ByteCount, "5 batches of 98 stored bytes (2 x 19 of records, 60 of batch)")
	require.Equal(t, uint64(5), ps[1].RecordCount)
	require.Zero(t, f.partitions("forever")[0].LogStartOffset)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventRetentionApplied")

	_, err = f.fetch("t", 0, 9, 0, 0)
	require.ErrorIs(t, err, types.ErrOffsetOutOfRange)
	require.ErrorContains(t, err, "log start offset 10")
	res, err := f.fetch("t", 0, 10, 0, 0)
	require.NoError(t, err)
	require.Len(t, res.Records, 10)
	earliest, err := f.query.ListOffsets(f.ctx, &types.QueryListOffsetsRequest{Topic: "t", Partition: 0, Spec: types.OFFSET_SPEC_EARLIEST})
	require.NoError(t, err)
	require.Equal(t, int64(10), earliest.Offset)
}

func TestRetentionByBytesKeepsAtLeastTheLimit(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	for i := 0; i < 6; i++ {
		_, err := f.produce(f.alice, types.ProduceBatch{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("", "0123456789")}})
		require.NoError(t, err)
	}
	last, err := f.k.BatchMetas.Get(f.ctx, collections.Join(types.TopicPartition{Topic: "t"}, uint64(5)))
	require.NoError(t, err)
	// Delete whole batches while at least 2.5 batches' stored bytes remain: 3 batches stay.
	setRetention(t, f, "t", -1, int64(last.SizeBytes*5/2))
	require.NoError(t, f.k.EndBlocker(f.ctx))
	p := f.partitions("t")[0]
	require.Equal(t, uint64(3), p.LogStartOffset)
	require.Equal(t, 3*last.SizeBytes, p.ByteCount)
	require.Equal(t, storedBytes(t, f, "t", 0), p.ByteCount)
	require.Equal(t, uint64(3), p.RecordCount)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	require.Equal(t, uint64(3), f.partitions("t")[0].LogStartOffset, "stable once within the limit")
}

func TestRetentionPartitionBudgetCarriesOver(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 4)
	p := types.DefaultParams()
	p.RetentionPartitionsPerBlock = 3
	_, err := f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)
	for i := int32(0); i < 4; i++ {
		_, err := f.produce(f.alice, types.ProduceBatch{Topic: "t", Partition: i, Records: []types.BatchRecord{rec("", "x")}})
		require.NoError(t, err)
	}
	setRetention(t, f, "t", 1000, -1)
	f.advance(2 * time.Second)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	var starts []uint64
	for _, p := range f.partitions("t") {
		starts = append(starts, p.LogStartOffset)
	}
	require.Equal(t, []uint64{1, 1, 1, 0}, starts, "three partitions in the first block")
	require.NoError(t, f.k.EndBlocker(f.ctx))
	require.Equal(t, uint64(1), f.partitions("t")[3].LogStartOffset, "the fourth in the next")
}

// storedBytes sums the encoded size of a partition's stored batches, the figure byte_count
// must equal.
func storedBytes(t *testing.T, f *fixture, topic string, partition uint32) uint64 {
	t.Helper()
	var n uint64
	rng := collections.NewPrefixedPairRange[types.TopicPartition, uint64](types.TopicPartition{Topic: topic, Partition: partition})
	require.NoError(t, f.k.Batches.Walk(f.ctx, rng, func(_ collections.Pair[types.TopicPartition, uint64], b types.RecordBatch) (bool, error) {
		bz, err := proto.Marshal(&b)
		require.NoError(t, err)
		require.Equal(t, uint64(len(bz)), b.SizeBytes, "size_bytes is the stored size")
		n += uint64(len(bz))
		return false, nil
	}))
	return n
}
