package kbatch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A compacted batch keeps what Kafka's cleaner keeps — base offset, last offset delta (the
// batch's span), timestamps, producer id, epoch and sequence — and only the kept records, with
// their own offset deltas, uncompressed whatever the input's codec; it is a valid v2 batch
// (CRC, framing) that decodes to the kept records at their original offsets, that franz-go's
// kmsg parses the same way (types' TestCompactedBatchIsStored stores it).
func TestCompactedBatchKeepsOffsetsAndHeader(t *testing.T) {
	for _, c := range []Compression{CompressionNone, CompressionGzip, CompressionZstd} {
		t.Run(c.String(), func(t *testing.T) {
			var recs []Record
			for i := 0; i < 6; i++ {
				r := Record{Key: []byte(fmt.Sprintf("k%d", i%3)), Timestamp: 1000 + int64(i)}
				if i != 4 {
					r.Value = []byte(fmt.Sprintf("v%d", i))
				}
				recs = append(recs, r)
			}
			raw, err := EncodeRecordBatch(recs, c)
			require.NoError(t, err)
			raw = WithBaseOffset(WithProducer(raw, 77, 3, 40), 100)

			all, _, err := CompactionRecords(raw)
			require.NoError(t, err)
			require.Len(t, all, 6)
			require.True(t, all[4].Tombstone())
			require.Equal(t, []byte("k1"), all[4].Key)
			kept := []RecordView{all[1], all[4], all[5]}
			out := CompactedBatch(raw, kept)

			require.NoError(t, CheckBatchFraming(out), "CRC and length")
			require.Equal(t, raw[:8], out[:8], "base offset")
			require.Equal(t, raw[12:17], out[12:17], "partition leader epoch, magic")
			require.Equal(t, raw[23:57], out[23:57], "last offset delta, timestamps, producer id, epoch, base sequence")
			require.Equal(t, uint32(5), RecordBatchLastOffsetDelta(out))
			require.Equal(t, uint32(3), RecordBatchCount(out))
			got, err := DecodeRecordBatch(out)
			require.NoError(t, err)
			require.Equal(t, []int64{101, 104, 105}, []int64{got[0].Offset, got[1].Offset, got[2].Offset})
			require.Equal(t, "v1", string(got[0].Value))
			require.Nil(t, got[1].Value, "the tombstone stays a tombstone")
			require.Equal(t, int64(1005), got[2].Timestamp)

			var kb kmsg.RecordBatch
			require.NoError(t, kb.ReadFrom(out))
			require.Equal(t, int64(100), kb.FirstOffset)
			require.Equal(t, int32(5), kb.LastOffsetDelta)
			require.Equal(t, int32(3), kb.NumRecords)
			require.Equal(t, int16(0), kb.Attributes&0x07, "uncompressed")
			require.Equal(t, int64(77), kb.ProducerID)

		})
	}
}

// With RequireKeys (a compacted topic), CheckRecordBatch collects every record's key and
// tombstone flag, and refuses a record without a key with ErrMissingKey.
func TestCheckRecordBatchRequireKeys(t *testing.T) {
	lim := BatchLimits{MaxRecordBytes: 1 << 20, MaxDecompressedBytes: 4 << 20, MaxHeaders: 8, RequireKeys: true}
	raw, err := EncodeRecordBatch([]Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte{}}}, CompressionNone)
	require.NoError(t, err)
	info, err := CheckRecordBatch(raw, lim)
	require.NoError(t, err)
	require.Equal(t, []RecordKey{{Key: []byte("a")}, {Key: []byte{}, Tombstone: true}}, info.Keys)
	raw, err = EncodeRecordBatch([]Record{{Value: []byte("1")}}, CompressionNone)
	require.NoError(t, err)
	_, err = CheckRecordBatch(raw, lim)
	require.ErrorIs(t, err, ErrMissingKey)
}
