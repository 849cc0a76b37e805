package kbatch

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every header field is written where ReadBatchHeader reads it, and the 61 bytes are all
// fields: a header read and written again is the same bytes.
func TestBatchHeaderRoundTrip(t *testing.T) {
	h := BatchHeader{BaseOffset: -2, BatchLength: 3, PartitionLeaderEpoch: -4, Magic: 2, CRC: 0xfedcba98,
		Attributes: attrTransactional | int16(CompressionZstd), LastOffsetDelta: 7, BaseTimestamp: -8, MaxTimestamp: 9,
		ProducerID: -10, ProducerEpoch: 11, BaseSequence: -12, RecordCount: 13}
	b := make([]byte, RecordBatchHeaderSize)
	h.put(b)
	got, ok := ReadBatchHeader(b)
	require.True(t, ok)
	require.Equal(t, h, got)
	require.Equal(t, CompressionZstd, got.Compression())
	require.True(t, got.Transactional())
	require.False(t, got.Control())
	require.False(t, got.LogAppendTime())

	for i := range b {
		b[i] = byte(i*37 + 1)
	}
	got, _ = ReadBatchHeader(b)
	again := make([]byte, RecordBatchHeaderSize)
	got.put(again)
	require.Equal(t, b, again)

	_, ok = ReadBatchHeader(b[:RecordBatchHeaderSize-1])
	require.False(t, ok)
}

// Walking a batch's records and their headers allocates nothing.
func TestRecordReaderDoesNotAllocate(t *testing.T) {
	recs := []Record{
		{Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: "a", Value: []byte("1")}, {Key: "b"}}},
		{Value: []byte{}},
	}
	b, err := EncodeRecordBatch(recs, CompressionNone)
	require.NoError(t, err)
	body := b[RecordBatchHeaderSize:]
	allocs := testing.AllocsPerRun(100, func() {
		rr := NewRecordReader(body)
		for range recs {
			rec, err := rr.Next()
			if err != nil {
				panic(err)
			}
			hs := rec.Headers()
			n, _ := hs.Count()
			for ; n > 0; n-- {
				if _, _, err := hs.Next(); err != nil {
					panic(err)
				}
			}
		}
	})
	require.Zero(t, allocs)

	rr := NewRecordReader(body)
	first, err := rr.Next()
	require.NoError(t, err)
	require.Equal(t, []byte("k"), first.Key)
	require.Equal(t, []byte("v"), first.Value)
	second, err := rr.Next()
	require.NoError(t, err)
	require.Nil(t, second.Key, "a null key reads as nil")
	require.NotNil(t, second.Value, "an empty value is not a tombstone")
	require.False(t, second.Tombstone())
	require.Equal(t, int64(1), second.OffsetDelta)
	require.Zero(t, rr.Remaining())
	require.Equal(t, len(body), len(first.Raw)+len(second.Raw))
}
