package keeper_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	storetypes "cosmossdk.io/store/types"

	"github.com/bftlog/bftlog/x/topics/internal/recordstore"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// A batch in every codec is stored as it came (compressed), with only its base offset set,
// and reads back record for record: keys and values (null and empty kept), headers in order,
// timestamps.
func TestCompressedBatchesStoredAsTheyCame(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	records := []types.BatchRecord{
		rec("k", "a value that repeats, a value that repeats, a value that repeats", "h1", "x", "h2", ""),
		{Key: nil, Value: nil, CreateTimeMs: 99},
		{Key: &types.Bytes{}, Value: &types.Bytes{}, CreateTimeMs: 100},
	}
	var next uint64
	for _, c := range []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionGzip, kbatch.CompressionSnappy, kbatch.CompressionLZ4, kbatch.CompressionZstd} {
		t.Run(c.String(), func(t *testing.T) {
			b, err := types.NewProduceBatch("t", 0, records, c)
			require.NoError(t, err)
			sent := bytes.Clone(b.RecordBatch)
			res, err := f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{b}})
			require.NoError(t, err)
			require.Equal(t, next, res.Results[0].BaseOffset)

			out, err := f.query.Fetch(f.ctx, &types.QueryFetchRequest{Topic: "t", Partition: 0, Offset: next, MaxRecords: 1, Format: types.FETCH_FORMAT_BATCHES})
			require.NoError(t, err)
			require.Len(t, out.Batches, 1)
			stored := out.Batches[0].RecordBatch
			require.Equal(t, next, kbatch.RecordBatchBaseOffset(stored))
			require.Equal(t, sent[8:], stored[8:], "everything after the base offset is what the producer sent")
			require.Equal(t, uint16(c), binary.BigEndian.Uint16(stored[21:23])&7, "stored compressed")

			got, err := f.fetch("t", 0, next, 0, 0)
			require.NoError(t, err)
			require.Len(t, got.Records, len(records))
			for i, r := range got.Records {
				require.Equal(t, next+uint64(i), r.Offset)
				requireSameBytes(t, records[i].Key, r.Key, "record %d key", i)
				requireSameBytes(t, records[i].Value, r.Value, "record %d value", i)
				require.Equal(t, records[i].CreateTimeMs, r.CreateTimeMs)
				require.Equal(t, len(records[i].Headers), len(r.Headers))
				for j, h := range records[i].Headers {
					require.Equal(t, h.Key, r.Headers[j].Key)
					require.Equal(t, string(h.Value), string(r.Headers[j].Value))
				}
			}
			next += uint64(len(records))
		})
	}
}

// requireSameBytes: both null, or both present with equal contents (empty is not null).
func requireSameBytes(t *testing.T, want, got *types.Bytes, msg string, args ...any) {
	t.Helper()
	require.Equal(t, want == nil, got == nil, msg, args)
	if want != nil {
		require.Equal(t, string(want.Data), string(got.Data), msg, args)
	}
}

// resealed recomputes a batch's CRC after a test changed its bytes, so that a check other
// than the CRC is what refuses it.
func resealed(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// Malformed batches are refused with a registered error and change nothing.
func TestMalformedBatchesRefused(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	good := func() types.ProduceBatch {
		b, err := types.NewProduceBatch("t", 0, []types.BatchRecord{rec("k", "v"), rec("", "w")}, kbatch.CompressionNone)
		require.NoError(t, err)
		return b
	}
	cases := []struct {
		name  string
		edit  func(b *types.ProduceBatch)
		error error
	}{
		{"CRC mismatch", func(b *types.ProduceBatch) { b.RecordBatch[len(b.RecordBatch)-1] ^= 1 }, types.ErrInvalidRecordBatch},
		{"truncated", func(b *types.ProduceBatch) { b.RecordBatch = b.RecordBatch[:len(b.RecordBatch)-3] }, types.ErrInvalidRecordBatch},
		{"count says more than the batch", func(b *types.ProduceBatch) { b.RecordCount = 3 }, types.ErrInvalidRecordBatch},
		{"magic 1", func(b *types.ProduceBatch) { b.RecordBatch[16] = 1 }, types.ErrInvalidRecordBatch},
		{"transactional", func(b *types.ProduceBatch) { b.RecordBatch[22] |= 0x10; resealed(b.RecordBatch) }, types.ErrInvalidRecordBatch},
		{"codec 7", func(b *types.ProduceBatch) { b.RecordBatch[22] |= 0x07; resealed(b.RecordBatch) }, types.ErrUnsupportedCompression},
		{"no record batch", func(b *types.ProduceBatch) { b.RecordBatch = nil }, types.ErrEmptyBatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := good()
			tc.edit(&b)
			_, err := f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{good(), b}})
			require.ErrorIs(t, err, tc.error)
			require.Zero(t, f.partitions("t")[0].HighWatermark, "a refused message appends nothing")
		})
	}
}

// bomb is one record batch of n records of zeros (each just under the record limit)
// compressed with c: a few KB that decompress to n times the limit.
func bomb(t testing.TB, c kbatch.Compression, n int, recordBytes uint64) types.ProduceBatch {
	recs := make([]types.BatchRecord, n)
	zeros := make([]byte, recordBytes-16)
	for i := range recs {
		recs[i] = types.BatchRecord{Value: &types.Bytes{Data: zeros}}
	}
	b, err := types.NewProduceBatch("t", 0, recs, c)
	require.NoError(t, err)
	return b
}

// A decompression bomb (a small compressed batch whose records expand past max_batch_bytes) is
// refused after decompressing at most max_batch_bytes, and pays gas for that work: it costs its
// sender what a full-size batch of real records costs, so a block can hold no more of them
// than of honest full batches. Each codec's figure (bytes sent, time, gas) is printed.
func TestDecompressionBombRefusedAndPaid(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	for _, c := range []kbatch.Compression{kbatch.CompressionGzip, kbatch.CompressionSnappy, kbatch.CompressionLZ4, kbatch.CompressionZstd} {
		b := bomb(t, c, 64, params.MaxRecordBytes) // 64 MiB of records at the default 1 MiB
		ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		start := time.Now()
		_, err := f.msgs.Produce(ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{b}})
		took := time.Since(start)
		require.ErrorIs(t, err, types.ErrBatchTooLarge, c.String())
		gas := ctx.GasMeter().GasConsumed()
		t.Logf("%s bomb: %d B sent claiming %d MiB of records; refused in %v after decompressing %d MiB, gas %d (%d per byte sent)",
			c, len(b.RecordBatch), 64*params.MaxRecordBytes>>20, took, params.MaxBatchBytes>>20, gas, gas/uint64(len(b.RecordBatch)))
		require.GreaterOrEqual(t, gas, params.MaxBatchBytes*(keeper.RecordBytesGas+keeper.DecompressedBytesGas), "the decompression is paid for")
		require.Zero(t, f.partitions("t")[0].HighWatermark)
	}
}

// Gas follows the decompressed size: a compressed batch pays for its records as an
// uncompressed one does (beside the smaller transaction-size and store-write gas).
func TestCompressedBatchGasByDecompressedSize(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	recs := make([]types.BatchRecord, 200)
	for i := range recs {
		recs[i] = rec(fmt.Sprintf("key-%d", i), fmt.Sprintf(`{"event":"payment","currency":"EUR","amount":%d,"status":"settled"}`, i))
	}
	gas := map[kbatch.Compression]uint64{}
	for _, c := range []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionLZ4} {
		b, err := types.NewProduceBatch("t", 0, recs, c)
		require.NoError(t, err)
		ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		_, err = f.msgs.Produce(ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{b}})
		require.NoError(t, err)
		gas[c] = ctx.GasMeter().GasConsumed()
		t.Logf("%s: %d B batch, gas %d", c, len(b.RecordBatch), gas[c])
	}
	none, err := types.NewProduceBatch("t", 0, recs, kbatch.CompressionNone)
	require.NoError(t, err)
	recordBytes := uint64(len(none.RecordBatch) - kbatch.RecordBatchHeaderSize)
	require.GreaterOrEqual(t, gas[kbatch.CompressionLZ4], recordBytes*(keeper.RecordBytesGas+keeper.DecompressedBytesGas))
}

// The Merkle state holds each batch's SHA-256, not its bytes; a node whose record store holds
// other bytes than were appended (a disk fault, or an operator editing it) refuses to serve
// the batch instead of serving them.
func TestRecordStoreBytesBoundToState(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("k", "v"), rec("", "w")}})
	require.NoError(t, err)
	key := collections.Join(types.TopicPartition{Topic: "t", Partition: 0}, uint64(1))
	meta, err := f.k.Batches.Get(f.ctx, key)
	require.NoError(t, err)
	require.Empty(t, meta.RecordBatch)
	stored, err := f.k.RecordBytes.Get(f.ctx, key)
	require.NoError(t, err)
	sum := sha256.Sum256(stored)
	require.Equal(t, sum[:], meta.RecordBatchSha256)

	forged := bytes.Clone(stored)
	forged[len(forged)-1] ^= 1
	require.NoError(t, f.k.RecordBytes.Set(f.ctx, key, resealed(forged)))
	_, err = f.fetch("t", 0, 0, 0, 0)
	require.ErrorContains(t, err, "do not match their SHA-256")
	require.NoError(t, f.k.RecordBytes.Remove(f.ctx, key))
	_, err = f.fetch("t", 0, 0, 0, 0)
	require.Error(t, err)
}

// A block's record bytes wait in the transient store, are dropped with a failed transaction's
// branch, reach the record database at Precommit and survive the commit that empties the
// transient store; a deletion hides the bytes at once and removes them at the next Precommit,
// keeping the pointer (for a replay of that block) until the Precommit of the next block.
func TestRecordStorePendingUntilPrecommit(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	inDB := func() int {
		it, err := f.recordDB.Iterator(types.RecordBytesPrefix.Bytes(), recordstore.KeptPrefix.Bytes())
		require.NoError(t, err)
		defer it.Close()
		n := 0
		for ; it.Valid(); it.Next() {
			n++
		}
		return n
	}
	_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("k", "v")}})
	require.NoError(t, err)
	require.Zero(t, inDB(), "pending until Precommit")
	res, err := f.fetch("t", 0, 0, 0, 0)
	require.NoError(t, err)
	require.Len(t, res.Records, 1, "a block reads its own pending bytes")

	// A transaction that fails: its branch, record bytes included, is never written.
	failed, _ := f.ctx.CacheContext()
	_, err = f.msgs.Produce(failed, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("k", "lost")}}.wire(t)}})
	require.NoError(t, err)

	require.NoError(t, f.k.Precommit(f.ctx))
	f.cms.Commit()
	require.Equal(t, 1, inDB(), "one batch flushed, the failed transaction's gone with its branch")
	res, err = f.fetch("t", 0, 0, 0, 0)
	require.NoError(t, err)
	require.Len(t, res.Records, 1)
	require.Equal(t, "v", string(res.Records[0].Value.Data))
	require.EqualValues(t, 1, res.HighWatermark)

	key := collections.Join(types.TopicPartition{Topic: "t", Partition: 0}, uint64(0))
	require.NoError(t, f.k.RecordBytes.Remove(f.ctx, key))
	has, err := f.k.RecordBytes.Has(f.ctx, key)
	require.NoError(t, err)
	require.False(t, has, "a pending deletion hides the committed bytes")
	require.Equal(t, 1, inDB())
	f.advance(time.Second)
	require.NoError(t, f.k.Precommit(f.ctx))
	require.Zero(t, inDB())
	kept, err := f.recordDB.Get(binary.BigEndian.AppendUint64(append(recordstore.KeptPrefix.Bytes(), mustEncode(t, key)...), uint64(f.ctx.BlockHeight())))
	require.NoError(t, err)
	require.NotNil(t, kept, "the deleted pointer is kept for reads at recent heights and a replay of its block")

	f.cms.Commit()
	for i := 0; i < types.RecordHistoryBlocks; i++ {
		it, err := f.recordDB.Iterator(nil, nil)
		require.NoError(t, err)
		require.True(t, it.Valid(), "kept %d blocks later", i)
		it.Close()
		f.advance(time.Second)
		require.NoError(t, f.k.Precommit(f.ctx))
		f.cms.Commit()
	}
	it, err := f.recordDB.Iterator(nil, nil)
	require.NoError(t, err)
	defer it.Close()
	require.False(t, it.Valid(), "released types.RecordHistoryBlocks blocks later")
}

func mustEncode(t *testing.T, key collections.Pair[types.TopicPartition, uint64]) []byte {
	t.Helper()
	bz, err := collections.EncodeKeyWithPrefix(nil, types.BatchKeyCodec, key)
	require.NoError(t, err)
	return bz
}
