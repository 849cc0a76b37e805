package keeper_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	storetypes "cosmossdk.io/store/types"

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
			_, err := f.produce(f.alice, pb{Topic: topic, Partition: 0, Records: []types.BatchRecord{rec("", "0123456789"), rec("", "0123456789")}})
			require.NoError(t, err)
		}
		_, err := f.produce(f.alice, pb{Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "0123456789")}})
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
	require.Equal(t, uint64(970), ps[0].ByteCount, "5 batches of 194 stored bytes (95 of Kafka batch: a 61-byte header and 2 x 17 of records; 34 of its SHA-256; 65 of producer, offsets and times)")
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
		_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("", "0123456789")}})
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
	for i := uint32(0); i < 4; i++ {
		_, err := f.produce(f.alice, pb{Topic: "t", Partition: i, Records: []types.BatchRecord{rec("", "x")}})
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

// storedBytes sums the encoded size of a partition's stored batches (metadata in the state,
// bytes in the record store), the figure byte_count must equal.
func storedBytes(t *testing.T, f *fixture, topic string, partition uint32) uint64 {
	t.Helper()
	var n uint64
	rng := collections.NewPrefixedPairRange[types.TopicPartition, uint64](types.TopicPartition{Topic: topic, Partition: partition})
	require.NoError(t, f.k.Batches.Walk(f.ctx, rng, func(key collections.Pair[types.TopicPartition, uint64], b types.RecordBatch) (bool, error) {
		require.Empty(t, b.RecordBatch, "the Merkle state holds no record bytes")
		raw, err := f.k.RecordBytes.Get(f.ctx, key)
		require.NoError(t, err)
		b.RecordBatch = raw
		bz, err := proto.Marshal(&b)
		require.NoError(t, err)
		require.Equal(t, uint64(len(bz)), b.SizeBytes, "size_bytes is the stored size")
		n += uint64(len(bz))
		return false, nil
	}))
	return n
}

// worstCaseRecords is the batch that costs the most to decode per stored byte: the most
// records, each with the most headers, all empty (once counted as 0 bytes).
func worstCaseRecords(p types.Params) []types.BatchRecord {
	rs := make([]types.BatchRecord, p.MaxRecordsPerBatch)
	for i := range rs {
		rs[i].Headers = make([]types.Header, p.MaxHeadersPerRecord)
	}
	return rs
}

// The retention stall: 200 partitions (retention_partitions_per_block) each holding a batch of
// 10,000 records x 64 empty headers. Retention used to decode every partition's first batch each
// block, due or not (0.7-1.1 s for 20 such partitions), and counted these batches as 0 bytes.
// Now the batches count their stored size, and the EndBlocker reads only BatchMetas: with
// nothing due it reads a few dozen bytes per partition and takes milliseconds; when all is due
// it deletes within the shared budget without decoding a batch.
func TestAttackRetentionStallWorstCaseBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 200 worst-case batches (about 260 MB)")
	}
	f := newFixture(t)
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	n := params.RetentionPartitionsPerBlock
	f.createTopic("w", n)
	setRetention(t, f, "w", time.Hour.Milliseconds(), -1)
	records := worstCaseRecords(params)
	start := time.Now()
	for i := uint32(0); i < n; i++ {
		_, err := f.produce(f.alice, pb{Topic: "w", Partition: i, Records: records})
		require.NoError(t, err)
	}
	p0 := f.partitions("w")[0]
	require.Equal(t, storedBytes(t, f, "w", 0), p0.ByteCount, "byte_count is the stored size")
	require.Greater(t, p0.ByteCount, uint64(len(records))*uint64(params.MaxHeadersPerRecord)*2, "empty headers are paid for")
	t.Logf("%d partitions x 1 batch of %d records x %d empty headers: %d stored bytes each (once counted as 0), built in %s",
		n, len(records), params.MaxHeadersPerRecord, p0.ByteCount, time.Since(start).Round(time.Millisecond))

	// What the old EndBlocker did per block for 20 of them: decode each first batch.
	start = time.Now()
	for i := uint32(0); i < 20; i++ {
		_, err := f.k.Batches.Get(f.ctx, collections.Join(types.TopicPartition{Topic: "w", Partition: i}, uint64(len(records)-1)))
		require.NoError(t, err)
	}
	decode20 := time.Since(start)

	// Nothing due: every partition is inspected, nothing deleted, a few bytes read each.
	var worst time.Duration
	var gas storetypes.Gas
	for b := 0; b < 5; b++ {
		f.advance(time.Second)
		ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		start = time.Now()
		require.NoError(t, f.k.EndBlocker(ctx))
		worst = max(worst, time.Since(start))
		gas = ctx.GasMeter().GasConsumed()
	}
	require.Equal(t, p0, f.partitions("w")[0], "nothing was due")
	t.Logf("EndBlocker over %d partitions, nothing due: slowest of 5 blocks %s, %d gas of store reads (decoding 20 first batches, as before: %s)",
		n, worst, gas, decode20.Round(time.Millisecond))
	require.Less(t, gas, uint64(n)*5_000, "reads metadata only, not 1.3 MB batches")
	require.Less(t, worst, 100*time.Millisecond)

	// All due: deleted within the byte budget, a few blocks, still no batch decoded.
	f.advance(2 * time.Hour)
	blocks := 0
	worst = 0
	for f.partitions("w")[n-1].RecordCount > 0 {
		blocks++
		require.LessOrEqual(t, blocks, 20, "retention must finish")
		f.advance(time.Second)
		start = time.Now()
		require.NoError(t, f.k.EndBlocker(f.ctx))
		worst = max(worst, time.Since(start))
	}
	for _, p := range f.partitions("w") {
		require.Zero(t, p.ByteCount)
		require.Equal(t, uint64(len(records)), p.LogStartOffset)
	}
	wantBlocks := (uint64(n)*p0.ByteCount + params.CleanupBytesPerBlock - 1) / params.CleanupBytesPerBlock
	t.Logf("all %d batches due: deleted in %d blocks (cleanup_bytes_per_block %d), slowest block %s", n, blocks, params.CleanupBytesPerBlock, worst)
	require.InDelta(t, float64(wantBlocks), float64(blocks), 1, "the byte budget bounds each block")
}

// Blocks without transactions (their block gas meter untouched) write retention's cursor only
// to finish inspecting every partition after the last block with transactions, then leave it
// alone, so an idle chain's blocks keep the app hash (app/empty_blocks.go) however many
// partitions there are; past that they retain only the first partitions, without a cursor. One account's topic with more
// partitions than retention_partitions_per_block once made every empty block write the cursor,
// and CometBFT, skipping timeout_commit, then made them back to back.
func TestRetentionCursorInBlocksWithoutTransactions(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 4)
	p := types.DefaultParams()
	p.RetentionPartitionsPerBlock = 3
	_, err := f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)
	setRetention(t, f, "t", 1000, -1)
	cursor := func() string {
		c, err := f.k.RetentionCursor.Get(f.ctx)
		if errors.Is(err, collections.ErrNotFound) {
			return "none"
		}
		require.NoError(t, err)
		return fmt.Sprintf("%s/%d %v", c.Topic, c.Partition, c.AnotherLap)
	}
	block := func(txs bool) string {
		ctx := f.ctx.WithBlockGasMeter(storetypes.NewGasMeter(1_000_000))
		if txs {
			ctx.BlockGasMeter().ConsumeGas(1, "a transaction")
		}
		require.NoError(t, f.k.EndBlocker(ctx))
		return cursor()
	}
	require.Equal(t, "none", block(false), "idle: the cursor stays")
	require.Equal(t, "none", block(false))
	require.Equal(t, "t/3 false", block(true), "a block with transactions inspects three partitions")
	require.Equal(t, "none", block(false), "an empty block finishes the lap, which began with the transactions")
	require.Equal(t, "none", block(false), "then stays")

	require.Equal(t, "t/3 false", block(true))
	require.Equal(t, "/0 false", block(true), "transactions mid-lap: after it, another lap from the first partition")
	require.Equal(t, "t/3 false", block(false), "carried on by empty blocks")
	require.Equal(t, "none", block(false))
	require.Equal(t, "none", block(false))

	// Something due while idle: the first partitions are retained and no cursor is saved; the
	// fourth waits for the next block with transactions, whose lap empty blocks finish.
	for i := uint32(0); i < 4; i++ {
		_, err := f.produce(f.alice, pb{Topic: "t", Partition: i, Records: []types.BatchRecord{rec("", "x")}})
		require.NoError(t, err)
	}
	f.advance(2 * time.Second)
	starts := func() []uint64 {
		var s []uint64
		for _, p := range f.partitions("t") {
			s = append(s, p.LogStartOffset)
		}
		return s
	}
	require.Equal(t, "none", block(false))
	require.Equal(t, []uint64{1, 1, 1, 0}, starts(), "three partitions retained without a cursor")
	require.Equal(t, "none", block(false))
	require.Equal(t, []uint64{1, 1, 1, 0}, starts())
	require.Equal(t, "t/3 false", block(true))
	require.Equal(t, "none", block(false), "the lap finished")
	require.Equal(t, []uint64{1, 1, 1, 1}, starts())
}
