package keeper_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// createCompacted creates a topic with cleanup.policy compact and the config edit gives.
func (f *fixture) createCompacted(name string, partitions uint32, edit func(*types.TopicConfig)) {
	f.t.Helper()
	cfg := anyone()
	cfg.CleanupPolicy = types.CleanupPolicyCompact
	if edit != nil {
		edit(&cfg)
	}
	_, err := f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: name, Partitions: partitions, Config: cfg})
	require.NoError(f.t, err)
}

// kv is a keyed record; a nil value is a tombstone.
func kv(key string, value *string) types.BatchRecord {
	r := types.BatchRecord{Key: &types.Bytes{Data: []byte(key)}, CreateTimeMs: 1234}
	if value != nil {
		r.Value = &types.Bytes{Data: []byte(*value)}
	}
	return r
}

func str(s string) *string { return &s }

// model is what a compacted partition must hold: every record produced, by offset.
type model struct {
	keys   []string
	values []*string
	times  []int64
}

func (m *model) add(key string, value *string, ms int64) {
	m.keys, m.values, m.times = append(m.keys, key), append(m.values, value), append(m.times, ms)
}

// latest is the offset of each key's last record.
func (m *model) latest() map[string]uint64 {
	out := map[string]uint64{}
	for i, k := range m.keys {
		out[k] = uint64(i)
	}
	return out
}

// table is what a consumer reading from the beginning builds: each key's latest value,
// tombstones deleting their key.
func table(recs []types.Record) map[string]string {
	out := map[string]string{}
	for _, r := range recs {
		if r.Value == nil {
			delete(out, string(r.Key.Data))
		} else {
			out[string(r.Key.Data)] = string(r.Value.Data)
		}
	}
	return out
}

func (m *model) table() map[string]string {
	out := map[string]string{}
	for i, k := range m.keys {
		if m.values[i] == nil {
			delete(out, k)
		} else {
			out[k] = *m.values[i]
		}
	}
	return out
}

// readAll fetches a partition from its log start offset to its high watermark, as a consumer
// does, following next offsets across the gaps compaction leaves.
func (f *fixture) readAll(topic string, partition uint32) []types.Record {
	f.t.Helper()
	var out []types.Record
	offset := f.partitions(topic)[partition].LogStartOffset
	for {
		res, err := f.fetch(topic, partition, offset, 0, 0)
		require.NoError(f.t, err)
		out = append(out, res.Records...)
		if res.NextOffset == res.HighWatermark {
			return out
		}
		require.Greater(f.t, res.NextOffset, offset, "a fetch makes progress")
		offset = res.NextOffset
	}
}

// compactUntilIdle runs blocks (1 ms apart) until no pass is due, and returns how many.
func (f *fixture) compactUntilIdle(limit int) int {
	f.t.Helper()
	for n := 1; n <= limit; n++ {
		f.endBlock(time.Millisecond)
		due := false
		require.NoError(f.t, f.k.CompactionDue.Walk(f.ctx, nil, func(key collections.Pair[int64, types.TopicPartition], _ bool) (bool, error) {
			due = due || key.K1() <= f.ctx.BlockTime().UnixMilli()
			return due, nil
		}))
		if !due {
			return n
		}
	}
	f.t.Fatalf("compaction still due after %d blocks", limit)
	return limit
}

func offsets(recs []types.Record) []uint64 {
	var out []uint64
	for _, r := range recs {
		out = append(out, r.Offset)
	}
	return out
}

// Many updates to few keys: once compacted, each key's latest record is there at its own
// offset and every older one is gone, except in the partition's last batch, which is never
// cleaned (Kafka's active segment); the high watermark and log start offset do not move; the
// partition's record and byte counts match what is stored; a consumer reading from the
// beginning builds the latest table; a fetch at a removed offset starts at the next record.
func TestCompactionKeepsTheLatestRecordOfEachKey(t *testing.T) {
	f := newFixture(t)
	// The smallest dirty ratio: every batch makes a pass due (TestCompactionWaitsForTheDirtyRatio
	// plays the default).
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	var m model
	for b := 0; b < 30; b++ {
		f.advance(time.Second)
		var recs []types.BatchRecord
		for j := 0; j < 10; j++ {
			key, value := fmt.Sprintf("k%d", (b*b*7+j*j*3+b*j)%40), fmt.Sprintf("v%d", b*10+j)
			recs = append(recs, kv(key, &value))
			m.add(key, &value, f.ctx.BlockTime().UnixMilli())
		}
		_, err := f.produce(f.bob, pb{Topic: "table", Records: recs})
		require.NoError(t, err)
		require.NoError(t, f.k.EndBlocker(f.ctx))
	}
	// The partition's last batch, never cleaned: one record.
	_, err := f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("k0", str("last"))}})
	require.NoError(t, err)
	m.add("k0", str("last"), f.ctx.BlockTime().UnixMilli())
	blocks := f.compactUntilIdle(20)

	latest := m.latest()
	var want []uint64
	for o := range m.keys {
		if latest[m.keys[o]] == uint64(o) {
			want = append(want, uint64(o))
		}
	}
	got := f.readAll("table", 0)
	require.Equal(t, want, offsets(got), "the latest record of each key, nothing else")
	require.Greater(t, len(want), 20, "latest records spread over many batches")
	for _, r := range got {
		require.Equal(t, m.keys[r.Offset], string(r.Key.Data), "offset %d keeps its key", r.Offset)
		require.Equal(t, *m.values[r.Offset], string(r.Value.Data), "offset %d keeps its value", r.Offset)
		require.Equal(t, m.times[r.Offset], r.LogAppendTimeMs)
	}
	require.Equal(t, m.table(), table(got), "a consumer from the beginning builds the latest table")
	p := f.partitions("table")[0]
	require.Equal(t, uint64(301), p.HighWatermark)
	require.Zero(t, p.LogStartOffset)
	require.Equal(t, uint64(len(got)), p.RecordCount)
	require.Equal(t, storedBytes(t, f, "table", 0), p.ByteCount)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventPartitionCompacted")
	t.Logf("301 records over 40 keys in 31 batches: %d kept after %d blocks of compaction, %d stored bytes", len(got), blocks, p.ByteCount)

	// Offset 0 was removed (k0 was written again): a fetch there starts at the next record;
	// the record query says it is gone.
	res, err := f.fetch("table", 0, 0, 1, 0)
	require.NoError(t, err)
	require.Equal(t, want[0], res.Records[0].Offset)
	_, err = f.query.Record(f.ctx, &types.QueryRecordRequest{Topic: "table", Partition: 0, Offset: 0})
	require.ErrorIs(t, err, types.ErrOffsetOutOfRange)
	require.ErrorContains(t, err, "compaction removed it")

	// New records keep taking the next offsets.
	out, err := f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("k1", str("again"))}})
	require.NoError(t, err)
	require.Equal(t, uint64(301), out.Results[0].BaseOffset)
}

// min.cleanable.dirty.ratio (0.5 by default): a pass starts once the bytes appended since the
// last one are half the partition, not before.
func TestCompactionWaitsForTheDirtyRatio(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, nil)
	produce := func(keys ...string) {
		t.Helper()
		var recs []types.BatchRecord
		for _, k := range keys {
			recs = append(recs, kv(k, str(k+string(make([]byte, 100)))))
		}
		_, err := f.produce(f.bob, pb{Topic: "table", Records: recs})
		require.NoError(t, err)
		f.endBlock(time.Second)
	}
	var keys []string
	for i := 0; i < 40; i++ {
		keys = append(keys, fmt.Sprintf("k%02d", i))
	}
	produce(keys...) // offsets 0–39
	produce("x")     // 40: the last batch
	f.compactUntilIdle(5)
	produce("k00") // 41: k00's record at 0 is superseded, but the new bytes are a small share
	produce("y")   // 42
	f.compactUntilIdle(5)
	require.Contains(t, offsets(f.readAll("table", 0)), uint64(0), "below the dirty ratio no pass runs")
	produce(append(keys[1:], "x")...) // 43–82: now more than half is new
	f.compactUntilIdle(5)
	want := []uint64{41, 42}
	for o := uint64(43); o <= 82; o++ {
		want = append(want, o)
	}
	require.Equal(t, want, offsets(f.readAll("table", 0)))
}

// A tombstone removes its key's older records at the next pass, and goes itself once older
// than delete.retention.ms — not before; with it goes the key's entry in the state.
func TestCompactionTombstonesGoAfterDeleteRetention(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.DeleteRetentionMs = 10_000 })
	produce := func(recs ...types.BatchRecord) {
		t.Helper()
		_, err := f.produce(f.bob, pb{Topic: "table", Records: recs})
		require.NoError(t, err)
	}
	produce(kv("a", str("a1")), kv("b", str("b1")))
	f.advance(time.Second)
	produce(kv("a", nil)) // offset 2: a's tombstone
	f.advance(time.Second)
	produce(kv("c", str("c1"))) // the last batch, never cleaned
	tombstoneAt := f.ctx.BlockTime().Add(-time.Second)

	f.compactUntilIdle(5)
	got := f.readAll("table", 0)
	require.Equal(t, []uint64{1, 2, 3}, offsets(got), "a1 went, the tombstone stays")
	require.Nil(t, got[1].Value, "offset 2 is the tombstone")

	// Just before delete.retention.ms has passed: still there, whatever runs.
	f.ctx = f.ctx.WithBlockTime(tombstoneAt.Add(10 * time.Second)).WithBlockHeight(f.ctx.BlockHeight() + 1)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	require.NoError(t, f.k.ApplyCompaction(f.ctx))
	require.Equal(t, []uint64{1, 2, 3}, offsets(f.readAll("table", 0)), "not before delete.retention.ms")

	// Once past it, its deadline schedules a pass that removes it.
	f.endBlock(2 * time.Millisecond)
	got = f.readAll("table", 0)
	require.Equal(t, []uint64{1, 3}, offsets(got), "the tombstone went after delete.retention.ms")
	require.Equal(t, map[string]string{"b": "b1", "c": "c1"}, table(got))
	has, err := f.k.KeyOffsets.Has(f.ctx, collections.Join(types.TopicPartition{Topic: "table"}, keyHashOf("a")))
	require.NoError(t, err)
	require.False(t, has, "the deleted key leaves the state")
	p := f.partitions("table")[0]
	require.Equal(t, uint64(4), p.HighWatermark)
	require.Equal(t, uint64(2), p.RecordCount)
}

// min.compaction.lag.ms: records younger than the lag stay, superseded or not; once older,
// they go.
func TestCompactionLagProtectsTheTail(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCompactionLagMs = 60_000 })
	for i := 0; i < 10; i++ {
		f.advance(10 * time.Second)
		_, err := f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("k", str(fmt.Sprint(i)))}})
		require.NoError(t, err)
	}
	// The first batch scheduled a pass for 60 s after it; by batch 9 the lag protects batches
	// 4..9 (appended less than 60 s ago), superseded or not.
	f.compactUntilIdle(5)
	require.Equal(t, []uint64{4, 5, 6, 7, 8, 9}, offsets(f.readAll("table", 0)), "records younger than the lag stay")
	f.ctx = f.ctx.WithBlockTime(f.ctx.BlockTime().Add(60 * time.Second)).WithBlockHeight(f.ctx.BlockHeight() + 1)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	got := f.readAll("table", 0)
	// Batches appended at or before now-60 s are cleanable: all but the last, which stays.
	require.Equal(t, []uint64{9}, offsets(got))
}

// A compacted topic refuses records without a key (Kafka: INVALID_RECORD) with ErrMissingKey,
// and changes nothing.
func TestCompactedTopicRefusesRecordsWithoutKey(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, nil)
	_, err := f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("k", str("v")), rec("", "no key")}})
	require.ErrorIs(t, err, types.ErrMissingKey)
	require.Zero(t, f.partitions("table")[0].HighWatermark)
	n := 0
	require.NoError(t, f.k.KeyOffsets.Walk(f.ctx, nil, func(collections.Pair[types.TopicPartition, []byte], uint64) (bool, error) { n++; return false, nil }))
	require.Zero(t, n)
}

// compact,delete: retention applies as well; cleanup.policy compact alone ignores retention.ms.
func TestCompactDeleteAppliesRetentionToo(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("both", 1, func(c *types.TopicConfig) { c.CleanupPolicy = "delete,compact"; c.RetentionMs = 5_000 })
	f.createCompacted("compact", 1, func(c *types.TopicConfig) { c.RetentionMs = 5_000 })
	topic, err := f.k.Topics.Get(f.ctx, "both")
	require.NoError(t, err)
	require.Equal(t, types.CleanupPolicyCompactDelete, topic.Config.CleanupPolicy, "stored as Kafka writes it")
	for i := 0; i < 4; i++ {
		for _, name := range []string{"both", "compact"} {
			_, err := f.produce(f.bob, pb{Topic: name, Records: []types.BatchRecord{kv(fmt.Sprintf("k%d", i), str("v"))}})
			require.NoError(t, err)
		}
		f.advance(time.Second)
	}
	f.ctx = f.ctx.WithBlockTime(f.ctx.BlockTime().Add(10 * time.Second)).WithBlockHeight(f.ctx.BlockHeight() + 1)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	require.Equal(t, uint64(4), f.partitions("both")[0].LogStartOffset, "retention deleted every batch")
	require.Len(t, f.readAll("compact", 0), 4, "compact alone keeps every key's latest record")

	// The key entries of the records retention deleted go with the partition's next pass
	// (due here in the same block); a key written later keeps its entry.
	require.Zero(t, f.keyEntries("both"))
	require.Equal(t, 4, f.keyEntries("compact"))
	_, err = f.produce(f.bob, pb{Topic: "both", Records: []types.BatchRecord{kv("k9", str("v"))}})
	require.NoError(t, err)
	f.compactUntilIdle(5)
	require.Equal(t, 1, f.keyEntries("both"), "k9's alone")
	require.Equal(t, 4, f.keyEntries("compact"))
}

// keyEntries counts topic's key entries (KeyOffsets).
func (f *fixture) keyEntries(topic string) int {
	f.t.Helper()
	n := 0
	require.NoError(f.t, f.k.KeyOffsets.Walk(f.ctx, nil, func(k collections.Pair[types.TopicPartition, []byte], _ uint64) (bool, error) {
		if k.K1().Topic == topic {
			n++
		}
		return false, nil
	}))
	return n
}

// A topic that stops compacting loses its key entries in the EndBlocker's next turns, bounded
// by the budget (one record each), and the sweep resumes where the budget stopped it.
func TestTopicThatStopsCompactingLosesItsKeyEntries(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, nil)
	var recs []types.BatchRecord
	for i := 0; i < 300; i++ {
		recs = append(recs, kv(fmt.Sprintf("k%d", i), str("v")))
	}
	_, err := f.produce(f.bob, pb{Topic: "table", Records: recs})
	require.NoError(t, err)
	require.Equal(t, 300, f.keyEntries("table"))
	f.setCompactionRecordsPerBlock(100)

	cfg := anyone()
	_, err = f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "table", Config: cfg})
	require.NoError(t, err)
	blocks := 0
	for f.keyEntries("table") > 0 {
		require.Less(t, blocks, 10, "the sweep ends")
		f.endBlock(time.Millisecond)
		blocks++
	}
	require.GreaterOrEqual(t, blocks, 3, "100 entries a block at most")
	require.Len(t, f.readAll("table", 0), 300, "records stay: the topic deletes by time now")
	t.Logf("300 key entries swept in %d blocks at 100 records of budget a block", blocks)
}

// Deleting a compacted topic purges its compaction state with it; the name is free again.
func TestDeletingACompactedTopicPurgesItsKeys(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 2, nil)
	for i := 0; i < 5; i++ {
		_, err := f.produce(f.bob, pb{Topic: "table", Partition: uint32(i % 2), Records: []types.BatchRecord{kv(fmt.Sprint(i), nil)}})
		require.NoError(t, err)
	}
	_, err := f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "table"})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		f.endBlock(time.Second)
	}
	for name, count := range map[string]func() int{
		"key offsets": func() int {
			n := 0
			require.NoError(t, f.k.KeyOffsets.Walk(f.ctx, nil, func(collections.Pair[types.TopicPartition, []byte], uint64) (bool, error) { n++; return false, nil }))
			return n
		},
		"compaction states": func() int {
			n := 0
			require.NoError(t, f.k.Compactions.Walk(f.ctx, nil, func(types.TopicPartition, types.CompactionState) (bool, error) { n++; return false, nil }))
			return n
		},
		"scheduled passes": func() int {
			n := 0
			require.NoError(t, f.k.CompactionDue.Walk(f.ctx, nil, func(collections.Pair[int64, types.TopicPartition], bool) (bool, error) { n++; return false, nil }))
			return n
		},
	} {
		require.Zero(t, count(), name)
	}
	f.createCompacted("table", 1, nil)
}

func keyHashOf(key string) []byte { return keeper.KeyHash([]byte(key)) }

// TestAttackCompactionIsBoundedPerBlock plays a hostile owner against compaction: a topic with the
// smallest dirty ratio (0.001) and no lag, flooded with 100,000 updates of 500 keys in 50
// batches, next to a victim's small compacted topic. Every block's compaction stays within
// compaction_records_per_block and compaction_bytes_per_block (the default 5,000 records,
// 8 MiB); the flood's pass goes on over blocks; due passes take turns, so the victim's table is
// compacted while the flood's pass is still under way. It prints each block's work and time.
func TestAttackCompactionIsBoundedPerBlock(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("flood", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	f.createCompacted("table", 1, nil)
	value := string(make([]byte, 100))
	for b := 0; b < 50; b++ {
		recs := make([]types.BatchRecord, 0, 2000)
		for j := 0; j < 2000; j++ {
			recs = append(recs, kv(fmt.Sprintf("key-%03d", (b*2000+j)%500), &value))
		}
		_, err := f.produce(f.carol, pb{Topic: "flood", Records: recs})
		require.NoError(t, err)
	}
	for i := 0; i < 3; i++ {
		_, err := f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("price", str(fmt.Sprint(i)))}})
		require.NoError(t, err)
	}
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)

	var (
		blocks, victimAt int
		maxTook, total   time.Duration
		maxRecords       uint32
		maxBytes         uint64
	)
	for blocks = 1; blocks <= 100; blocks++ {
		f.advance(time.Second)
		start := time.Now()
		nbytes, nrecords, err := f.k.CompactionWork(f.ctx)
		took := time.Since(start)
		require.NoError(t, err)
		require.LessOrEqual(t, nrecords, params.CompactionRecordsPerBlock, "block %d", blocks)
		require.LessOrEqual(t, nbytes, params.CompactionBytesPerBlock, "block %d", blocks)
		maxTook, total = max(maxTook, took), total+took
		maxRecords, maxBytes = max(maxRecords, nrecords), max(maxBytes, nbytes)
		if victimAt == 0 && len(f.readAll("table", 0)) == 1 {
			victimAt = blocks
		}
		if nrecords <= 1 && victimAt > 0 { // nothing left to do but look
			break
		}
	}
	flood := f.readAll("flood", 0)
	require.Len(t, flood, 2000, "the last batch, never cleaned, holds each key's latest record (4 times over)")
	require.NotZero(t, victimAt)
	require.Less(t, victimAt, blocks-1, "the victim's pass ran while the flood's was under way")
	t.Logf("flood of 100,000 records (500 keys, 50 batches, ratio 0.001): compacted to %d records over %d blocks; per block at most %d records and %.1f MiB examined, at most %s (mean %s; in-memory IAVL); the victim's table was compacted in block %d",
		len(flood), blocks, maxRecords, float64(maxBytes)/(1<<20), maxTook.Round(time.Millisecond), (total / time.Duration(blocks)).Round(time.Millisecond), victimAt)

	// Large records make the byte budget the bound: 4,000 updates of 4 KiB values to 200 keys.
	f.createCompacted("blobs", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	blob := string(make([]byte, 4096))
	for b := 0; b < 8; b++ {
		recs := make([]types.BatchRecord, 0, 500)
		for j := 0; j < 500; j++ {
			recs = append(recs, kv(fmt.Sprintf("blob-%03d", (b*500+j)%200), &blob))
		}
		_, err := f.produce(f.carol, pb{Topic: "blobs", Records: recs})
		require.NoError(t, err)
	}
	maxTook, maxBytes, maxRecords, blocks = 0, 0, 0, 0
	for nrecords := uint32(2); nrecords > 1; blocks++ {
		require.Less(t, blocks, 50)
		f.advance(time.Second)
		start := time.Now()
		nbytes, n, err := f.k.CompactionWork(f.ctx)
		took := time.Since(start)
		require.NoError(t, err)
		require.LessOrEqual(t, nbytes, params.CompactionBytesPerBlock+params.MaxBatchBytes, "at most one batch past the byte budget")
		maxTook, maxBytes, maxRecords, nrecords = max(maxTook, took), max(maxBytes, nbytes), max(maxRecords, n), n
	}
	require.Len(t, f.readAll("blobs", 0), 500)
	t.Logf("4,000 records of 4 KiB (200 keys, 8 batches of 2 MiB): compacted over %d blocks; per block at most %d records and %.1f MiB examined, at most %s",
		blocks, maxRecords, float64(maxBytes)/(1<<20), maxTook.Round(time.Millisecond))
}

// A compacted partition exports with its gaps, validates and imports; the new chain derives
// its compaction state from the batches (every key's latest offset) and compacts on.
func TestCompactedPartitionExportsAndImports(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	for b := 0; b < 6; b++ {
		_, err := f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv(fmt.Sprint(b%2), str(fmt.Sprint(b))), kv(fmt.Sprint(b%3), str(fmt.Sprint(b)))}})
		require.NoError(t, err)
		f.endBlock(time.Second)
	}
	f.compactUntilIdle(5)
	before := f.readAll("table", 0)
	require.Less(t, len(before), 12)
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)

	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	require.Equal(t, offsets(before), offsets(g.readAll("table", 0)))
	keys := 0
	require.NoError(t, g.k.KeyOffsets.Walk(g.ctx, nil, func(collections.Pair[types.TopicPartition, []byte], uint64) (bool, error) { keys++; return false, nil }))
	require.Equal(t, 3, keys, "keys 0, 1 and 2")
	g.ctx = g.ctx.WithBlockTime(f.ctx.BlockTime().Add(time.Minute)) // the new chain starts later
	_, err = g.produce(g.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("0", str("new")), kv("1", str("new")), kv("2", str("new"))}})
	require.NoError(t, err)
	g.compactUntilIdle(5)
	require.Equal(t, []uint64{12, 13, 14}, offsets(g.readAll("table", 0)), "the imported records superseded by new ones went")
}

// A topic turned compacted keeps the records it held without a key (nothing can supersede
// them), and compacts the keyed ones once their key is written again; lag and tombstone
// retention are bounded (a deadline past int64 would be due in every block).
func TestTopicTurnedCompactedKeepsItsKeylessRecords(t *testing.T) {
	f := newFixture(t)
	f.createTopic("log", 1)
	_, err := f.produce(f.bob, pb{Topic: "log", Records: []types.BatchRecord{rec("", "keyless"), kv("", str("empty key")), kv("k", str("old"))}})
	require.NoError(t, err)
	cfg := anyone()
	cfg.CleanupPolicy, cfg.MinCleanableDirtyRatioPermille = types.CleanupPolicyCompact, 1
	_, err = f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "log", Config: cfg})
	require.NoError(t, err)
	f.advance(time.Second)
	_, err = f.produce(f.bob, pb{Topic: "log", Records: []types.BatchRecord{kv("", str("empty again")), kv("k", str("new"))}})
	require.NoError(t, err)
	f.advance(time.Second)
	_, err = f.produce(f.bob, pb{Topic: "log", Records: []types.BatchRecord{kv("last", str("x"))}})
	require.NoError(t, err)
	f.compactUntilIdle(5)
	require.Equal(t, []uint64{0, 3, 4, 5}, offsets(f.readAll("log", 0)), "the empty key and k were written again after the switch; the keyless record stays")
	f.advance(time.Second)
	_, err = f.produce(f.bob, pb{Topic: "log", Records: []types.BatchRecord{kv("", str("empty 3")), kv("k", str("newest"))}})
	require.NoError(t, err)
	f.compactUntilIdle(5)
	require.Equal(t, []uint64{0, 5, 6, 7}, offsets(f.readAll("log", 0)), "the keyless record still stays")

	for _, c := range []types.TopicConfig{{MinCompactionLagMs: types.MaxCompactionMs + 1}, {DeleteRetentionMs: 1 << 62}} {
		c.CleanupPolicy = types.CleanupPolicyCompact
		_, err := f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "log", Config: c})
		require.ErrorIs(t, err, types.ErrInvalidConfig)
	}
}

// An attack on disk: a producer writes highly compressible zstd batches to a compacted topic
// and then writes one key again, so that compaction would rewrite each batch uncompressed —
// hundreds of times its size, stored by every validator and never paid for. A compressed
// batch whose kept records would take more than twice its bytes stays as it is (its obsolete
// record with it); once enough of it is obsolete it is rewritten or removed.
func TestAttackCompactionGrowsACompressedBatchAtMostTwofold(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	produce := func(c kbatch.Compression, from, to int, tag string) {
		var recs []types.BatchRecord
		for i := from; to > i; i++ {
			recs = append(recs, kv(fmt.Sprintf("k%03d", i), str(tag+strings.Repeat("x", 4000))))
		}
		b, err := types.NewProduceBatch("table", 0, recs, c)
		require.NoError(t, err)
		_, err = f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.bob, Batches: []types.ProduceBatch{b}})
		require.NoError(t, err)
	}
	produce(kbatch.CompressionZstd, 0, 100, "a") // 100 records of 4 KB: a few KB compressed
	f.compactUntilIdle(10)
	before := f.partitions("table")[0]
	raw := storedBytes(t, f, "table", 0)

	produce(kbatch.CompressionNone, 0, 1, "b") // k000 again: one obsolete record in the zstd batch
	f.compactUntilIdle(10)
	p := f.partitions("table")[0]
	grown := storedBytes(t, f, "table", 0) - raw
	require.Equal(t, before.RecordCount+1, p.RecordCount, "the compressed batch is not rewritten (99 of 100 records kept would be ~400 KB)")
	require.Less(t, grown, uint64(5000), "only the new record's batch was stored")
	recs := f.readAll("table", 0)
	require.Len(t, recs, 101, "the obsolete record stays readable until its batch can shrink")
	require.Equal(t, "b", string(recs[len(recs)-1].Value.Data[:1]))

	produce(kbatch.CompressionNone, 1, 100, "c") // every other key again: the zstd batch is all obsolete
	f.compactUntilIdle(10)
	p = f.partitions("table")[0]
	require.EqualValues(t, 100, p.RecordCount, "each key's latest record")
	got := table(f.readAll("table", 0))
	require.Len(t, got, 100)
	require.Equal(t, byte('b'), got["k000"][0])
	require.Equal(t, byte('c'), got["k099"][0])
	t.Logf("a 100-record zstd batch of %d stored bytes: one key written again left it as it was (rewritten uncompressed it would hold ~%d KB); all written again removed it; %d bytes stored now",
		raw, 99*4, storedBytes(t, f, "table", 0))

	// Ordinary data compresses a few times: a batch half obsolete is rewritten, within twice
	// its bytes.
	f.createCompacted("prices", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	var prices []types.BatchRecord
	for i := 0; i < 100; i++ {
		prices = append(prices, kv(fmt.Sprintf("sym-%03d", i), str(fmt.Sprintf("%d.%04d;%x", i, i*7919%10000, i*2654435761))))
	}
	b, err := types.NewProduceBatch("prices", 0, prices, kbatch.CompressionZstd)
	require.NoError(t, err)
	_, err = f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.bob, Batches: []types.ProduceBatch{b}})
	require.NoError(t, err)
	f.compactUntilIdle(10)
	zstd := storedBytes(t, f, "prices", 0)
	b, err = types.NewProduceBatch("prices", 0, prices[:50], kbatch.CompressionNone)
	require.NoError(t, err)
	_, err = f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.bob, Batches: []types.ProduceBatch{b}})
	require.NoError(t, err)
	f.compactUntilIdle(10)
	require.EqualValues(t, 100, f.partitions("prices")[0].RecordCount, "the zstd batch rewritten with its 50 latest records")
	var first types.RecordBatch
	require.NoError(t, f.k.Batches.Walk(f.ctx, collections.NewPrefixedPairRange[types.TopicPartition, uint64](types.TopicPartition{Topic: "prices"}), func(_ collections.Pair[types.TopicPartition, uint64], b types.RecordBatch) (bool, error) {
		first = b
		return true, nil
	}))
	require.LessOrEqual(t, first.SizeBytes, 2*zstd)
	t.Logf("a 100-record zstd batch of ordinary values, %d stored bytes, half obsolete: rewritten uncompressed as %d", zstd, first.SizeBytes)
}

// A compressed batch left as it is (it would not shrink) keeps an obsolete record of a key
// deleted by a later tombstone: the tombstone stays past delete.retention.ms while the pass
// leaves such a batch behind, so a reader never sees the deleted key come back; once the batch
// shrinks away the old record and then the tombstone go.
func TestDeletedKeyStaysDeletedBehindACompressedBatch(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1; c.DeleteRetentionMs = 10_000 })
	produce := func(c kbatch.Compression, recs ...types.BatchRecord) {
		b, err := types.NewProduceBatch("table", 0, recs, c)
		require.NoError(t, err)
		_, err = f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.bob, Batches: []types.ProduceBatch{b}})
		require.NoError(t, err)
	}
	var recs []types.BatchRecord
	for i := 0; i < 100; i++ {
		recs = append(recs, kv(fmt.Sprintf("k%03d", i), str("a"+strings.Repeat("x", 4000))))
	}
	produce(kbatch.CompressionZstd, recs...)               // offsets 0-99
	produce(kbatch.CompressionNone, kv("other", str("v"))) // 100
	f.advance(time.Second)
	produce(kbatch.CompressionNone, kv("k000", nil), kv("other", nil)) // 101, 102: both deleted
	f.advance(time.Second)
	produce(kbatch.CompressionNone, kv("zzz", str("tail")))
	f.compactUntilIdle(10)
	f.advance(20 * time.Second) // past delete.retention.ms
	_, err := f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("zzz", str("tail2"))}})
	require.NoError(t, err)
	f.compactUntilIdle(10)
	all := f.readAll("table", 0)
	got := table(all)
	_, revived := got["k000"]
	require.False(t, revived, "the deleted key stays deleted")
	require.Contains(t, offsets(all), uint64(0), "k000's old record is still in the zstd batch")
	require.Contains(t, offsets(all), uint64(101), "so its tombstone stays")
	require.NotContains(t, offsets(all), uint64(102), "other's tombstone goes: no older record of it is left")
	require.NotContains(t, offsets(all), uint64(100))

	// Every other key written again: the zstd batch is removed, k000's old record with it,
	// and then its tombstone and key entry.
	recs = recs[:0]
	for i := 1; i < 100; i++ {
		recs = append(recs, kv(fmt.Sprintf("k%03d", i), str("b")))
	}
	produce(kbatch.CompressionNone, recs...)
	f.advance(20 * time.Second)
	produce(kbatch.CompressionNone, kv("zzz", str("tail3")))
	f.compactUntilIdle(10)
	all = f.readAll("table", 0)
	require.NotContains(t, offsets(all), uint64(0))
	require.NotContains(t, offsets(all), uint64(101), "the tombstone went after the old record")
	require.NotContains(t, table(all), "k000")
	require.Len(t, table(all), 100)
	for _, key := range []string{"k000", "other"} {
		has, err := f.k.KeyOffsets.Has(f.ctx, collections.Join(types.TopicPartition{Topic: "table"}, keyHashOf(key)))
		require.NoError(t, err)
		require.False(t, has, "%s's key entry went", key)
	}
}

// A topic that stops compacting while a retention sweep of its key entries is under way: the
// sweep becomes the full one, and every entry goes.
func TestStoppingCompactionDuringARetentionSweep(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("both", 1, func(c *types.TopicConfig) {
		c.CleanupPolicy, c.RetentionMs, c.MinCleanableDirtyRatioPermille = types.CleanupPolicyCompactDelete, 5_000, 1
	})
	for _, prefix := range []string{"k", "j"} {
		var recs []types.BatchRecord
		for i := 0; i < 300; i++ {
			recs = append(recs, kv(fmt.Sprintf("%s%d", prefix, i), str("v")))
		}
		_, err := f.produce(f.bob, pb{Topic: "both", Records: recs})
		require.NoError(t, err)
		f.advance(10 * time.Second)
	}
	f.setCompactionRecordsPerBlock(100)
	tp := types.TopicPartition{Topic: "both"}
	sweeping := false
	for i := 0; i < 20 && !sweeping; i++ {
		f.endBlock(time.Millisecond)
		st, err := f.k.Compactions.Get(f.ctx, tp)
		require.NoError(t, err)
		sweeping = st.SweepBelow != 0
	}
	require.True(t, sweeping, "retention moved the log start offset past 300 keys: a sweep runs")
	cfg := anyone()
	_, err := f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "both", Config: cfg})
	require.NoError(t, err)
	for i := 0; i < 20 && f.keyEntries("both") > 0; i++ {
		f.endBlock(time.Millisecond)
	}
	require.Zero(t, f.keyEntries("both"))
}

// Time retention moves a compact,delete partition's log start offset nearly every block; a
// sweep of its key entries (one record of budget each) runs only once retention has deleted as
// many records as are left since the last one, not before every pass.
func TestKeySweepsAreAmortizedOverRetention(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("both", 1, func(c *types.TopicConfig) {
		c.CleanupPolicy, c.RetentionMs, c.MinCleanableDirtyRatioPermille = types.CleanupPolicyCompactDelete, 10_000, 1
	})
	f.produceDistinctKeys("both", 10, 100)
	tp := types.TopicPartition{Topic: "both"}
	sweeps, lastSwept := 0, uint64(0)
	f.advance(time.Second)
	for b := 0; b < 12; b++ { // one batch of 100 expires a block; a new key makes a pass due
		_, err := f.produce(f.bob, pb{Topic: "both", Records: []types.BatchRecord{kv(fmt.Sprintf("n%d", b), str("v"))}})
		require.NoError(t, err)
		f.endBlock(time.Second)
		st, err := f.k.Compactions.Get(f.ctx, tp)
		require.NoError(t, err)
		if st.SweptBelow != lastSwept {
			sweeps, lastSwept = sweeps+1, st.SweptBelow
		}
	}
	p := f.partitions("both")[0]
	require.GreaterOrEqual(t, p.LogStartOffset, uint64(1000), "retention deleted the 1,000 first records")
	require.LessOrEqual(t, sweeps, 4, "a sweep only after as many records deleted as are left")
	require.Less(t, f.keyEntries("both"), 20, "the deleted keys' entries went")
	t.Logf("retention deleted 1,000 records over 12 blocks: %d key sweeps (not one per block), %d entries left", sweeps, f.keyEntries("both"))
}

// A pass spread over blocks cleans only the batches that were there when it began: a key's
// tombstone appended meanwhile, and past delete.retention.ms by the time the pass would reach
// it, is not dropped while the key's older record, judged before the tombstone existed, is
// still in the log — a reader never sees the deleted key come back.
func TestTombstoneAppendedDuringAPassDoesNotRevive(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1; c.DeleteRetentionMs = 1 })
	f.setCompactionRecordsPerBlock(150) // about a batch of 100 a block
	f.produceDistinctKeys("table", 10, 100)
	f.endBlock(time.Second) // the pass begins: k0-0's record, its key's latest, is kept
	st, err := f.k.Compactions.Get(f.ctx, types.TopicPartition{Topic: "table"})
	require.NoError(t, err)
	require.True(t, st.InPass, "the pass goes on over blocks")
	_, err = f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("k0-0", nil)}}) // deleted
	require.NoError(t, err)
	_, err = f.produce(f.bob, pb{Topic: "table", Records: []types.BatchRecord{kv("tail", str("v"))}})
	require.NoError(t, err)
	for n := 0; n < 40; n++ {
		f.endBlock(time.Second)
	}
	got := table(f.readAll("table", 0))
	_, revived := got["k0-0"]
	require.False(t, revived, "the deleted key stays deleted")
	require.Len(t, got, 1000)
}

// produceDistinctKeys writes batches batches of perBatch records to topic, every key new
// (k<batch>-<i>), a second of block time apart.
func (f *fixture) produceDistinctKeys(topic string, batches, perBatch int) {
	f.t.Helper()
	for b := 0; b < batches; b++ {
		var recs []types.BatchRecord
		for i := 0; i < perBatch; i++ {
			recs = append(recs, kv(fmt.Sprintf("k%d-%d", b, i), str("v")))
		}
		_, err := f.produce(f.bob, pb{Topic: topic, Records: recs})
		require.NoError(f.t, err)
		f.advance(time.Second)
	}
}

// setCompactionRecordsPerBlock lowers the compaction budget so that work spreads over blocks.
func (f *fixture) setCompactionRecordsPerBlock(n uint32) {
	f.t.Helper()
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(f.t, err)
	params.CompactionRecordsPerBlock = n
	require.NoError(f.t, f.k.Params.Set(f.ctx, params))
}
