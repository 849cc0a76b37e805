package types_test

import (
	"testing"

	errorsmod "cosmossdk.io/errors"
	"github.com/cosmos/gogoproto/proto"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// storedBatch is a produced batch as the keeper appends it at base.
func storedBatch(t *testing.T, base uint64, records []types.BatchRecord, c kbatch.Compression) types.RecordBatch {
	t.Helper()
	bz, err := types.EncodeRecordBatch(records, c)
	require.NoError(t, err)
	b := types.RecordBatch{BaseOffset: base, Producer: "bftlog1producer", LogAppendTimeMs: 1_700_000_000_000, Height: 9,
		RecordCount: uint32(len(records)), RecordBatch: kbatch.WithBaseOffset(bz, base)}
	b.Seal()
	return b
}

// size_bytes is exactly the stored encoding, including around varint boundaries of both the
// batch bytes and the size itself.
func TestStoredSizeIsTheEncoding(t *testing.T) {
	for _, n := range []int{0, 1, 100, 115, 116, 117, 118, 127, 128, 16_370, 16_383, 16_384, 1 << 20} {
		for _, records := range []int{1, 3} {
			var recs []types.BatchRecord
			for i := 0; i < records; i++ {
				recs = append(recs, types.BatchRecord{Value: &types.Bytes{Data: make([]byte, n)}, CreateTimeMs: int64(i)})
			}
			b := storedBatch(t, uint64(n), recs, kbatch.CompressionNone)
			b.Height = int64(n)
			b.Seal()
			bz, err := proto.Marshal(&b)
			require.NoError(t, err)
			require.Equal(t, uint64(len(bz)), b.SizeBytes, "value %d x %d records", n, records)
		}
	}
	// Around the size's own varint boundaries the fixed point still holds.
	for n := 100; n < 140; n++ {
		b := types.RecordBatch{RecordBatch: make([]byte, n), RecordCount: 1}
		b.Seal()
		bz, err := proto.Marshal(&b)
		require.NoError(t, err)
		require.Equal(t, uint64(len(bz)), b.SizeBytes, "batch of %d bytes", n)
	}
}

// RecordSize bounds a record's encoded size inside a batch from above, closely (producers split
// batches with it), and empty headers are not free: 64 of them cost 2 bytes each.
func TestRecordSizeBoundsTheEncoding(t *testing.T) {
	recs := []types.BatchRecord{
		{},
		{Headers: make([]types.Header, 64)},
		{Key: types.NewBytes([]byte("k")), Value: types.NewBytes(make([]byte, 300)), CreateTimeMs: 1_700_000_000_000},
		{Key: types.NewBytes([]byte{}), Value: types.NewBytes(make([]byte, 1<<16)), Headers: []types.Header{{Key: "h", Value: []byte{}}, {Key: "n"}}, CreateTimeMs: -5},
	}
	for i, r := range recs {
		bz, err := types.EncodeRecordBatch([]types.BatchRecord{r}, kbatch.CompressionNone)
		require.NoError(t, err)
		actual := uint64(len(bz) - kbatch.RecordBatchHeaderSize)
		require.GreaterOrEqual(t, r.RecordSize(), actual, "record %d", i)
		// Only the offset delta (3 bytes reserved, 1 used), the timestamp delta (the whole
		// timestamp's varint reserved) and so the length prefix are over-estimated.
		require.LessOrEqual(t, r.RecordSize()-actual, uint64(2+9+1), "record %d", i)
	}
	empty, headers := types.BatchRecord{}, types.BatchRecord{Headers: make([]types.Header, 64)}
	// 64 x (key length 0, null value), and the header count and length prefix take 2 bytes.
	require.Equal(t, empty.RecordSize()+64*2+2, headers.RecordSize())
	// A batch of many records: the sum bounds the records' bytes.
	var many []types.BatchRecord
	var sum uint64
	for i := 0; i < 500; i++ {
		r := types.BatchRecord{Value: types.NewBytes(make([]byte, i)), CreateTimeMs: int64(1_700_000_000_000 + i)}
		many = append(many, r)
		sum += r.RecordSize()
	}
	bz, err := types.EncodeRecordBatch(many, kbatch.CompressionNone)
	require.NoError(t, err)
	require.GreaterOrEqual(t, sum, uint64(len(bz)-kbatch.RecordBatchHeaderSize))
}

// A stored batch decodes to consumer records at consecutive offsets from its base offset,
// carrying the batch's metadata, and its last offset is its store key.
func TestRecordBatchRecords(t *testing.T) {
	recs := sampleRecords()
	for c := kbatch.CompressionNone; c <= kbatch.CompressionZstd; c++ { // every codec
		b := storedBatch(t, 1000, recs, c)
		require.NoError(t, b.CheckStored(), c)
		require.Equal(t, uint64(1000+len(recs)-1), b.LastOffset())
		out, err := b.Records()
		require.NoError(t, err, c)
		require.Len(t, out, len(recs))
		for i, r := range out {
			require.Equal(t, uint64(1000+i), r.Offset)
			require.Equal(t, recs[i].Key, r.Key, "record %d key", i)
			require.Equal(t, recs[i].Value, r.Value, "record %d value", i)
			require.Equal(t, recs[i].CreateTimeMs, r.CreateTimeMs)
			require.Equal(t, b.LogAppendTimeMs, r.LogAppendTimeMs)
			require.Equal(t, b.Producer, r.Producer)
			require.Equal(t, b.Height, r.Height)
			require.Equal(t, recs[i].Headers, r.Headers, "record %d headers: null apart from empty", i)
		}
	}
}

// CheckStored refuses a stored batch whose metadata disagrees with its bytes, and one whose
// bytes are not a framed batch.
func TestRecordBatchCheckStored(t *testing.T) {
	good := storedBatch(t, 7, sampleRecords(), kbatch.CompressionZstd)
	require.NoError(t, good.CheckStored())

	wrongBase := good
	wrongBase.BaseOffset = 8
	require.ErrorIs(t, wrongBase.CheckStored(), types.ErrInvalidRecordBatch)

	wrongCount := good
	wrongCount.RecordCount++
	require.ErrorIs(t, wrongCount.CheckStored(), types.ErrInvalidRecordBatch)
	_, err := wrongCount.Records()
	require.ErrorIs(t, err, types.ErrInvalidRecordBatch)

	zero := good
	zero.RecordCount = 0
	require.ErrorIs(t, zero.CheckStored(), types.ErrInvalidRecordBatch)

	corrupt := good
	corrupt.RecordBatch = append([]byte(nil), good.RecordBatch...)
	corrupt.RecordBatch[len(corrupt.RecordBatch)-1] ^= 1
	require.ErrorIs(t, corrupt.CheckStored(), types.ErrInvalidRecordBatch)
	_, err = corrupt.Records()
	require.ErrorIs(t, err, types.ErrInvalidRecordBatch)

	// Bytes that frame and check but are not the ones sealed: a batch rewritten at another
	// base offset keeps its CRC, not its SHA-256.
	moved := good
	moved.RecordBatch = kbatch.WithBaseOffset(good.RecordBatch, 7)
	require.NoError(t, moved.CheckStored(), "same bytes")
	moved.RecordBatch[0] = 1
	require.ErrorIs(t, moved.CheckStored(), types.ErrInvalidRecordBatch)
	resealed := moved
	resealed.Seal()
	require.ErrorIs(t, resealed.CheckStored(), types.ErrInvalidRecordBatch, "sealed, but the base offset disagrees")

	short := good
	short.RecordBatch = good.RecordBatch[:kbatch.RecordBatchHeaderSize-1]
	require.ErrorIs(t, short.CheckStored(), types.ErrInvalidRecordBatch)
}

// A batch compaction wrote (fewer records than its span) is a stored batch: CheckStored
// accepts it with its span, its last offset stays the span's, and its records keep their
// offsets; a span that disagrees with the header is refused.
func TestCompactedBatchIsStored(t *testing.T) {
	b := storedBatch(t, 100, sampleRecords(), kbatch.CompressionZstd)
	all, _, err := kbatch.CompactionRecords(b.RecordBatch)
	require.NoError(t, err)
	stored := types.RecordBatch{BaseOffset: 100, RecordCount: 2, LastOffsetDelta: 3, RecordBatch: kbatch.CompactedBatch(b.RecordBatch, []kbatch.RecordView{all[1], all[3]})}
	stored.Seal()
	require.NoError(t, stored.CheckStored())
	require.Equal(t, uint64(103), stored.LastOffset())
	recs, err := stored.Records()
	require.NoError(t, err)
	require.Equal(t, []uint64{101, 103}, []uint64{recs[0].Offset, recs[1].Offset})
	require.Equal(t, sampleRecords()[3].Headers, recs[1].Headers)
	stored.LastOffsetDelta = 2
	require.ErrorIs(t, stored.CheckStored(), types.ErrInvalidRecordBatch, "a span that disagrees with the header")
}

// The batch codec registers its refusals in this module's codespace, with the codes they had.
func TestBatchCodecErrorsAreTheModules(t *testing.T) {
	require.Equal(t, types.ModuleName, kbatch.Codespace)
	for code, err := range map[uint32]*errorsmod.Error{6: types.ErrEmptyBatch, 7: types.ErrRecordTooLarge, 8: types.ErrBatchTooLarge,
		18: types.ErrTooManyHeaders, 38: types.ErrInvalidRecordBatch, 39: types.ErrUnsupportedCompression, 43: types.ErrMissingKey} {
		require.Equal(t, types.ModuleName, err.Codespace())
		require.Equal(t, code, err.ABCICode())
	}
}
