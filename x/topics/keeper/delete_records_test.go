package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// deleteRecords sends a MsgDeleteRecords from signer.
func (f *fixture) deleteRecords(signer string, parts ...types.DeleteRecordsPartition) (*types.MsgDeleteRecordsResponse, error) {
	return f.msgs.DeleteRecords(f.ctx, &types.MsgDeleteRecords{Authority: signer, Partitions: parts})
}

// produceBatches appends n batches of per records each to topic/partition.
func (f *fixture) produceBatches(topic string, partition uint32, n, per int) {
	f.t.Helper()
	for i := 0; i < n; i++ {
		recs := make([]types.BatchRecord, per)
		for j := range recs {
			recs[j] = rec("", "0123456789")
		}
		_, err := f.produce(f.alice, pb{Topic: topic, Partition: partition, Records: recs})
		require.NoError(f.t, err)
	}
}

// batchLasts lists the last offsets of a partition's stored batches.
func (f *fixture) batchLasts(topic string, partition uint32) []uint64 {
	f.t.Helper()
	var out []uint64
	rng := collections.NewPrefixedPairRange[types.TopicPartition, uint64](types.TopicPartition{Topic: topic, Partition: partition})
	require.NoError(f.t, f.k.BatchMetas.Walk(f.ctx, rng, func(key collections.Pair[types.TopicPartition, uint64], _ types.BatchMeta) (bool, error) {
		out = append(out, key.K2())
		return false, nil
	}))
	return out
}

// recordsDeleted returns the EventRecordsDeleted emitted on ctx.
func recordsDeleted(t *testing.T, ctx sdk.Context) []*types.EventRecordsDeleted {
	t.Helper()
	var out []*types.EventRecordsDeleted
	for _, e := range ctx.EventManager().Events() {
		if e.Type != "bftlog.topics.v1.EventRecordsDeleted" {
			continue
		}
		msg, err := sdk.ParseTypedEvent(abci.Event(e))
		require.NoError(t, err)
		out = append(out, msg.(*types.EventRecordsDeleted))
	}
	return out
}

// DeleteRecords moves the log start offset at once (reads below it refused, ListOffsets
// EARLIEST returns it, a committed offset below it reads as below_log_start) and deletes no
// batch; the EndBlocker then deletes the batches wholly below it and keeps the one holding it,
// never moving the log start offset back.
func TestDeleteRecordsMovesLogStartThenEndBlockDeletes(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	f.produceBatches("t", 0, 5, 4) // batches [0,3] [4,7] [8,11] [12,15] [16,19]
	f.produceBatches("t", 1, 1, 4)
	gen := f.join(f.bob, "g", "t").Generation
	_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.bob, GroupId: "g", Generation: gen,
		Offsets: []types.OffsetCommit{{Topic: "t", Partition: 0, Offset: 2}, {Topic: "t", Partition: 1, Offset: 2}}})
	require.NoError(t, err)
	before := f.partitions("t")

	f.newBlock()
	res, err := f.deleteRecords(f.alice, types.DeleteRecordsPartition{Topic: "t", Partition: 0, Offset: 10})
	require.NoError(t, err)
	require.Equal(t, []types.DeleteRecordsResult{{Topic: "t", Partition: 0, LowWatermark: 10}}, res.Results)
	require.Equal(t, []*types.EventRecordsDeleted{{Topic: "t", Partition: 0, OldLogStartOffset: 0, NewLogStartOffset: 10, Authority: f.alice}},
		recordsDeleted(t, f.ctx))
	p := f.partitions("t")[0]
	want := before[0]
	want.LogStartOffset = 10
	require.Equal(t, want, p, "only the log start offset moved; the batches and their counts stay until the EndBlocker")
	require.Equal(t, before[1], f.partitions("t")[1], "partition 1 untouched")
	require.Equal(t, []uint64{3, 7, 11, 15, 19}, f.batchLasts("t", 0))

	// Reads below the new log start offset are refused while the batches still exist.
	for _, off := range []uint64{0, 7, 8, 9} {
		_, err := f.fetch("t", 0, off, 0, 0)
		require.ErrorIs(t, err, types.ErrOffsetOutOfRange, "fetch at %d", off)
		_, err = f.query.Record(f.ctx, &types.QueryRecordRequest{Topic: "t", Partition: 0, Offset: off})
		require.ErrorIs(t, err, types.ErrOffsetOutOfRange, "record at %d", off)
	}
	recs, err := f.fetch("t", 0, 10, 0, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(10), recs.LogStartOffset)
	require.Equal(t, []uint64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, offsets(recs.Records), "records from the log start offset on, none of the batch's before it")
	// The batch format answers the batch holding offset 10 whole, as a Kafka broker does; the
	// client skips records before the offset it asked for.
	batches, err := f.query.Fetch(f.ctx, &types.QueryFetchRequest{Topic: "t", Partition: 0, Offset: 10, Format: types.FETCH_FORMAT_BATCHES})
	require.NoError(t, err)
	require.Equal(t, uint64(8), batches.Batches[0].BaseOffset)
	r, err := f.query.Record(f.ctx, &types.QueryRecordRequest{Topic: "t", Partition: 0, Offset: 10})
	require.NoError(t, err)
	require.Equal(t, uint64(10), r.Record.Offset)
	earliest, err := f.query.ListOffsets(f.ctx, &types.QueryListOffsetsRequest{Topic: "t", Partition: 0, Spec: types.OFFSET_SPEC_EARLIEST})
	require.NoError(t, err)
	require.Equal(t, int64(10), earliest.Offset)
	byTime, err := f.query.ListOffsets(f.ctx, &types.QueryListOffsetsRequest{Topic: "t", Partition: 0, Spec: types.OFFSET_SPEC_TIMESTAMP, TimestampMs: 0})
	require.NoError(t, err)
	require.Equal(t, int64(10), byTime.Offset, "a time before every record answers the log start offset")
	offs, err := f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: "g", Topic: "t"})
	require.NoError(t, err)
	require.True(t, offs.Offsets[0].BelowLogStart, "committed 2, below the new log start offset 10")
	require.False(t, offs.Offsets[1].BelowLogStart)

	// The export holds the batches below the log start offset, validates and imports.
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate(f.k.AddressCodec()))
	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)

	// The next block deletes the two batches wholly below 10; the one holding 10 stays.
	f.newBlock()
	f.endBlock(time.Second)
	require.Equal(t, []uint64{11, 15, 19}, f.batchLasts("t", 0))
	p = f.partitions("t")[0]
	require.Equal(t, uint64(10), p.LogStartOffset, "not moved back to the batch's start, nor on to its end")
	require.Equal(t, uint64(12), p.RecordCount)
	require.Equal(t, storedBytes(t, f, "t", 0), p.ByteCount)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventRetentionApplied")
	f.newBlock()
	f.endBlock(time.Second)
	require.Equal(t, []uint64{11, 15, 19}, f.batchLasts("t", 0), "stable")
	require.Empty(t, skipped(t, f.ctx))

	// At or below the log start offset: a success that changes nothing.
	f.newBlock()
	res, err = f.deleteRecords(f.alice, types.DeleteRecordsPartition{Topic: "t", Partition: 0, Offset: 4}, types.DeleteRecordsPartition{Topic: "t", Partition: 1})
	require.NoError(t, err)
	require.Equal(t, []types.DeleteRecordsResult{{Topic: "t", Partition: 0, LowWatermark: 10}, {Topic: "t", Partition: 1, LowWatermark: 0}}, res.Results)
	require.Empty(t, recordsDeleted(t, f.ctx))
	require.Equal(t, p, f.partitions("t")[0])

	// To the high watermark (Kafka's -1): everything goes; appends go on from there.
	res, err = f.deleteRecords(f.alice, types.DeleteRecordsPartition{Topic: "t", Partition: 0, ToHighWatermark: true})
	require.NoError(t, err)
	require.Equal(t, uint64(20), res.Results[0].LowWatermark)
	f.endBlock(time.Second)
	require.Empty(t, f.batchLasts("t", 0))
	require.Equal(t, types.Partition{Topic: "t", Partition: 0, HighWatermark: 20, LogStartOffset: 20}, f.partitions("t")[0])
	empty, err := f.fetch("t", 0, 20, 0, 0)
	require.NoError(t, err)
	require.Empty(t, empty.Records)
	out, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("", "after")}})
	require.NoError(t, err)
	require.Equal(t, uint64(20), out.Results[0].BaseOffset)
}

// Who may: the topic's owner and governance; a topic whose cleanup.policy is compact alone
// refuses it (Kafka: POLICY_VIOLATION), compact,delete accepts it; past the high watermark is
// out of range. Each refusal leaves the state as it was, even when another partition of the
// message was fine.
func TestDeleteRecordsWhoMayAndRefusals(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	f.produceBatches("t", 0, 3, 2)
	f.produceBatches("t", 1, 1, 2)
	f.createCompacted("c", 1, nil)
	f.createCompacted("cd", 1, func(cfg *types.TopicConfig) { cfg.CleanupPolicy = types.CleanupPolicyCompactDelete })
	_, err := f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.bob, Name: "bobs", Partitions: 1, Config: anyone()})
	require.NoError(t, err)
	for _, topic := range []string{"c", "cd", "bobs"} {
		_, err := f.produce(f.alice, pb{Topic: topic, Partition: 0, Records: []types.BatchRecord{rec("k", "1"), rec("k", "2")}})
		require.NoError(t, err)
	}
	part := func(topic string, partition uint32, offset uint64) types.DeleteRecordsPartition {
		return types.DeleteRecordsPartition{Topic: topic, Partition: partition, Offset: offset}
	}
	for _, tc := range []struct {
		name   string
		signer string
		parts  []types.DeleteRecordsPartition
		want   error
	}{
		{"another account", f.bob, []types.DeleteRecordsPartition{part("t", 0, 2)}, types.ErrUnauthorized},
		{"another account's topic beside one's own", f.alice, []types.DeleteRecordsPartition{part("t", 0, 2), part("bobs", 0, 1)}, types.ErrUnauthorized},
		{"compact alone", f.alice, []types.DeleteRecordsPartition{part("c", 0, 1)}, types.ErrPolicyViolation},
		{"past the high watermark", f.alice, []types.DeleteRecordsPartition{part("t", 0, 7)}, types.ErrOffsetOutOfRange},
		{"one good partition, one past its high watermark", f.alice, []types.DeleteRecordsPartition{part("t", 0, 4), part("t", 1, 3)}, types.ErrOffsetOutOfRange},
		{"partition out of range", f.alice, []types.DeleteRecordsPartition{part("t", 2, 0)}, types.ErrInvalidPartition},
		{"unknown topic", f.alice, []types.DeleteRecordsPartition{part("nope", 0, 0)}, types.ErrUnknownTopic},
		{"invalid topic name", f.alice, []types.DeleteRecordsPartition{part("a b", 0, 0)}, types.ErrInvalidTopicName},
		{"offset with to_high_watermark", f.alice, []types.DeleteRecordsPartition{{Topic: "t", Offset: 1, ToHighWatermark: true}}, types.ErrInvalidRequest},
		{"a partition twice", f.alice, []types.DeleteRecordsPartition{part("t", 0, 1), part("t", 0, 2)}, types.ErrInvalidRequest},
		{"no partitions", f.alice, nil, types.ErrInvalidRequest},
		{"invalid signer", "bftlog1nope", []types.DeleteRecordsPartition{part("t", 0, 1)}, types.ErrInvalidAddress},
	} {
		before, err := f.k.ExportGenesis(f.ctx)
		require.NoError(t, err)
		_, err = f.deleteRecords(tc.signer, tc.parts...)
		require.ErrorIs(t, err, tc.want, tc.name)
		after, err := f.k.ExportGenesis(f.ctx)
		require.NoError(t, err)
		require.Equal(t, before, after, "%s changed state", tc.name)
	}

	res, err := f.deleteRecords(f.alice, part("cd", 0, 1))
	require.NoError(t, err, "compact,delete deletes records, as in Kafka")
	require.Equal(t, uint64(1), res.Results[0].LowWatermark)
	res, err = f.deleteRecords(f.gov, part("t", 0, 6), part("bobs", 0, 2))
	require.NoError(t, err, "governance, on anyone's topics")
	require.Equal(t, []types.DeleteRecordsResult{{Topic: "t", Partition: 0, LowWatermark: 6}, {Topic: "bobs", Partition: 0, LowWatermark: 2}}, res.Results)
	res, err = f.deleteRecords(f.bob, types.DeleteRecordsPartition{Topic: "bobs", ToHighWatermark: true})
	require.NoError(t, err, "the owner")
	require.Equal(t, uint64(2), res.Results[0].LowWatermark)
}

// The message's gas grows with its partitions, not with the records it deletes: deleting 1
// batch or 40 costs the same, and the EndBlocker deletes them within its budget, over blocks.
func TestDeleteRecordsGasAndBoundedCleanup(t *testing.T) {
	f := newFixture(t)
	f.createTopic("one", 1)
	f.createTopic("two", 1)
	f.createTopic("wide", 8)
	f.produceBatches("one", 0, 1, 1)
	f.produceBatches("two", 0, 40, 1)
	f.setParams(func(p *types.Params) { p.RetentionBatchesPerBlock = 7 })

	del := func(parts ...types.DeleteRecordsPartition) uint64 {
		gas, _ := f.metered(func() {
			_, err := f.deleteRecords(f.alice, parts...)
			require.NoError(t, err)
		})
		return gas
	}
	small := del(types.DeleteRecordsPartition{Topic: "one", ToHighWatermark: true})
	big := del(types.DeleteRecordsPartition{Topic: "two", ToHighWatermark: true})
	var parts []types.DeleteRecordsPartition
	for i := uint32(0); i < 8; i++ {
		parts = append(parts, types.DeleteRecordsPartition{Topic: "wide", Partition: i})
	}
	wide := del(parts...)
	t.Logf("gas: 1 partition, 1 batch %d; 1 partition, 40 batches %d; 8 partitions %d (%d per partition charged besides the store's)",
		small, big, wide, keeper.DeleteRecordsGasPerPartition)
	require.InDelta(t, small, big, 100, "the records deleted do not count (a few bytes of the partition's counters differ)")
	require.GreaterOrEqual(t, wide, 8*uint64(keeper.DeleteRecordsGasPerPartition))
	require.Less(t, small, wide/4)

	blocks := 0
	for len(f.batchLasts("two", 0)) > 0 {
		blocks++
		require.LessOrEqual(t, blocks, 10)
		f.newBlock()
		f.endBlock(time.Second)
		require.Empty(t, skipped(t, f.ctx))
	}
	require.Equal(t, 6, blocks, "41 batches at 7 keys per block")
	require.Empty(t, f.batchLasts("one", 0))
	for _, name := range []string{"one", "two"} {
		p := f.partitions(name)[0]
		require.Equal(t, p.HighWatermark, p.LogStartOffset)
		require.Zero(t, p.RecordCount)
		require.Zero(t, p.ByteCount)
	}
}

// A message may name at most MaxDeleteRecordsPartitions partitions.
func TestDeleteRecordsPartitionBound(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	parts := make([]types.DeleteRecordsPartition, types.MaxDeleteRecordsPartitions+1)
	for i := range parts {
		parts[i] = types.DeleteRecordsPartition{Topic: "t", Partition: uint32(i)}
	}
	_, err := f.deleteRecords(f.alice, parts...)
	require.ErrorIs(t, err, types.ErrTooManyPartitions)
	_, err = f.deleteRecords(f.alice, parts[:types.MaxDeleteRecordsPartitions]...)
	require.ErrorIs(t, err, types.ErrInvalidPartition, "within the bound, checked further")
}
