package kafka

import (
	"bytes"
	"testing"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// FuzzSplitBatches: splitting a produce request's record set never panics, and what it
// accepts are whole magic-2 batches that together are the record set byte for byte, each with
// the header fields read as the header holds them.
func FuzzSplitBatches(f *testing.F) {
	rec := types.BatchRecord{Key: &types.Bytes{Data: []byte("k")}, Value: &types.Bytes{Data: []byte("v")}, Headers: []types.Header{{Key: "h"}}}
	for _, c := range []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionZstd} {
		b, err := types.EncodeRecordBatch([]types.BatchRecord{rec, rec}, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(append([]byte(nil), b...), b...))
		f.Add(kbatch.WithProducer(b, 7, 1, 3))
	}
	f.Add([]byte{})
	f.Add(kbatch.EncodeCommitMarker(1, 0, 5))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := splitBatches(data)
		if err != nil {
			return
		}
		var joined []byte
		for _, pb := range got {
			h, ok := kbatch.ReadBatchHeader(pb.bytes)
			if !ok || h.Magic != 2 || h.Size() != int64(len(pb.bytes)) || h.CRC != kbatch.RecordBatchCRC(pb.bytes) {
				t.Fatalf("accepted a batch whose framing is not valid: %x", pb.bytes)
			}
			if h.Control() || pb.records == 0 || pb.records != uint32(h.RecordCount) || pb.compression != h.Compression() ||
				pb.producerID != h.ProducerID || pb.epoch != h.ProducerEpoch || pb.firstSequence != h.BaseSequence || pb.transactional != h.Transactional() {
				t.Fatalf("batch read as %+v, its header is %+v", pb, h)
			}
			joined = append(joined, pb.bytes...)
		}
		if !bytes.Equal(joined, data) {
			t.Fatalf("the batches are not the record set")
		}
	})
}
