package keeper_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/internal/recordstore"
	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// commitBlock ends the block and commits it as a node does: EndBlocker, Precommit (the record
// store's flush), then the multistore's commit.
func (f *fixture) commitBlock() {
	f.t.Helper()
	require.NoError(f.t, f.k.EndBlocker(f.ctx))
	require.NoError(f.t, f.k.Precommit(f.ctx))
	f.cms.Commit()
}

// kept lists the record pointers the store keeps (for reads at recent heights and replays)
// that the block at height replaced or deleted, by key; every one at height 0.
func (f *fixture) kept(height int64) map[string]string {
	f.t.Helper()
	it, err := f.recordDB.Iterator(recordstore.KeptPrefix.Bytes(), recordstore.KeptByHeightPrefix.Bytes())
	require.NoError(f.t, err)
	defer it.Close()
	out := map[string]string{}
	for ; it.Valid(); it.Next() {
		k := it.Key()
		if height == 0 || binary.BigEndian.Uint64(k[len(k)-8:]) == uint64(height) {
			out[string(k)] = string(it.Value())
		}
	}
	return out
}

// batchMetas lists every stored batch (metadata, SHA-256 of its bytes included) of ctx's state.
func batchMetas(t *testing.T, k keeper.Keeper, ctx sdk.Context) []string {
	t.Helper()
	var out []string
	require.NoError(t, k.Batches.Walk(ctx, nil, func(key collections.Pair[types.TopicPartition, uint64], b types.RecordBatch) (bool, error) {
		out = append(out, fmt.Sprintf("%s/%d@%d %x", key.K1().Topic, key.K1().Partition, key.K2(), b.RecordBatchSha256))
		return false, nil
	}))
	return out
}

// A node that stops after a block's Precommit and before its commit restarts with the state
// of the block before and replays the block. Compaction in that block had rewritten and deleted
// batches in the record store; the replay compacts the same batches again from their original
// bytes (kept for it), reaches the same state and does not halt. Meanwhile the restarted node
// serves the older state's records.
func TestFaultCompactionBlockReplaysAfterACrashBeforeCommit(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	var m model
	block := func(b int) {
		var recs []types.BatchRecord
		for j := 0; j < 20; j++ {
			key, value := fmt.Sprintf("k%d", (b*7+j*3)%25), fmt.Sprintf("v%d-%d", b, j)
			recs = append(recs, kv(key, &value))
			m.add(key, &value, f.ctx.BlockTime().UnixMilli())
		}
		_, err := f.produce(f.bob, pb{Topic: "table", Records: recs})
		require.NoError(t, err)
	}
	for b := 0; b < 20; b++ {
		f.advance(time.Second)
		block(b)
		f.commitBlock()
	}
	before := m
	beforeTable := table(f.readAll("table", 0))

	// The block that crashes: produced, ended and flushed in a branch that is never committed.
	f.advance(time.Second)
	start, height, blockTime := f.ctx, f.ctx.BlockHeight(), f.ctx.BlockTime()
	crashed := f.ctx.WithMultiStore(f.cms.CacheMultiStore())
	f.ctx = crashed
	block(20)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	want := batchMetas(t, f.k, f.ctx)
	require.NoError(t, f.k.Precommit(f.ctx))
	rewritten := f.kept(height)
	require.NotEmpty(t, rewritten, "the block's compaction rewrote or deleted batches in the record store")

	// Restart: the state is the previous block's, the record store has the crashed block's
	// bytes. Queries still read the previous block's records.
	f.k = f.restart()
	f.msgs, f.query = keeper.NewMsgServerImpl(f.k), keeper.NewQueryServer(f.k)
	f.ctx = start.WithMultiStore(f.cms)
	require.Equal(t, beforeTable, table(f.readAll("table", 0)), "a query between the crash and the replay")
	_, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err, "every batch of the committed state still has its bytes")

	// The replay: the same block, from the committed state.
	m = before
	f.ctx = start.WithMultiStore(f.cms.CacheMultiStore())
	require.Equal(t, height, f.ctx.BlockHeight())
	require.Equal(t, blockTime, f.ctx.BlockTime())
	t0 := time.Now()
	block(20)
	require.NoError(t, f.k.EndBlocker(f.ctx), "the replayed block's compaction finds the bytes it compacts")
	require.NoError(t, f.k.Precommit(f.ctx))
	replay := time.Since(t0)
	require.Equal(t, want, batchMetas(t, f.k, f.ctx), "the replay reaches the state of the first attempt")
	f.ctx.MultiStore().(interface{ Write() }).Write()
	f.cms.Commit()
	f.ctx = f.ctx.WithMultiStore(f.cms)
	after := f.kept(height)
	for k, v := range rewritten {
		require.Equal(t, v, after[k], "the original bytes stay kept; the first attempt's new ones are released")
	}
	// And the first attempt's copy of the block's new batch, which the replay wrote again.
	require.Len(t, after, len(rewritten)+1)
	t.Logf("crash after Precommit: %d batch pointers replaced or deleted by the block's compaction, kept; replay of the block took %v", len(rewritten), replay)

	// Later blocks release what the block kept; every batch reads back, also after a restart.
	for range types.RecordHistoryBlocks {
		require.NotEmpty(t, f.kept(height), "kept for reads at recent heights")
		f.advance(time.Second)
		f.commitBlock()
	}
	require.Empty(t, f.kept(height), "released types.RecordHistoryBlocks blocks later")
	for n := 0; n < 50 && len(f.kept(0)) > 0; n++ {
		f.advance(time.Second)
		f.commitBlock()
	}
	require.Empty(t, f.kept(0), "nothing kept once no block rewrites")
	f.k = f.restart()
	f.msgs, f.query = keeper.NewMsgServerImpl(f.k), keeper.NewQueryServer(f.k)
	got := f.readAll("table", 0)
	require.Equal(t, m.table(), table(got), "a consumer from the beginning builds the latest table")
	latest := m.latest()
	for _, r := range got {
		require.Equal(t, latest[string(r.Key.Data)], r.Offset, "only each key's latest record is left")
	}
	_, err = f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
}

// Verified reads prove a recent height, not the newest: a fetch at any of the last
// types.RecordHistoryBlocks heights of a compacted partition returns the records that height's
// state holds, although later blocks compacted their batches; older heights whose bytes were
// rewritten are refused rather than served with other bytes.
func TestReadsAtRecentHeightsGetTheirBytesAfterCompaction(t *testing.T) {
	f := newFixture(t)
	f.createCompacted("table", 1, func(c *types.TopicConfig) { c.MinCleanableDirtyRatioPermille = 1 })
	type past struct {
		version int64
		offsets []uint64
	}
	var heights []past
	for b := 0; b < types.RecordHistoryBlocks+20; b++ {
		f.advance(time.Second)
		var recs []types.BatchRecord
		for j := 0; j < 10; j++ {
			value := fmt.Sprintf("v%d-%d", b, j)
			recs = append(recs, kv(fmt.Sprintf("k%d", (b*3+j)%12), &value))
		}
		_, err := f.produce(f.bob, pb{Topic: "table", Records: recs})
		require.NoError(t, err)
		f.commitBlock()
		heights = append(heights, past{f.cms.LastCommitID().Version, offsets(f.readAll("table", 0))})
	}
	latest := f.ctx
	at := func(p past) ([]uint64, error) {
		ms, err := f.cms.CacheMultiStoreWithVersion(p.version)
		require.NoError(t, err)
		ctx := latest.WithMultiStore(ms)
		var out []uint64
		for offset := uint64(0); ; {
			res, err := f.query.Fetch(ctx, &types.QueryFetchRequest{Topic: "table", Partition: 0, Offset: offset})
			if err != nil {
				return out, err
			}
			out = append(out, offsets(res.Records)...)
			if res.NextOffset == res.HighWatermark {
				return out, nil
			}
			offset = res.NextOffset
		}
	}
	recent, refused := 0, 0
	for i, p := range heights {
		got, err := at(p)
		if age := len(heights) - 1 - i; age < types.RecordHistoryBlocks {
			require.NoError(t, err, "a read %d blocks old", age)
			require.Equal(t, p.offsets, got, "the records of the state %d blocks old", age)
			if !slices.Equal(p.offsets, heights[len(heights)-1].offsets) {
				recent++
			}
		} else if err != nil {
			require.ErrorContains(t, err, "record batch bytes of table/0", "refused: the bytes are gone or newer")
			refused++
		}
	}
	require.Positive(t, recent, "some recent state held records compacted since")
	require.Positive(t, refused, "older states' rewritten bytes are gone")
	t.Logf("of %d heights: the last %d read back their own records (%d of them records compacted since); %d older ones refused", len(heights), types.RecordHistoryBlocks, recent, refused)
}
