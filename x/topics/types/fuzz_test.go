package types_test

import (
	"bytes"
	"testing"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// FuzzValidateTopicName: never panics, and accepts exactly Kafka's names.
func FuzzValidateTopicName(f *testing.F) {
	for _, s := range []string{"", ".", "..", "orders", "a.b_c-D9", string(bytes.Repeat([]byte("x"), 249)), string(bytes.Repeat([]byte("x"), 250)), "a/b", "ñ", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		err := types.ValidateTopicName(name)
		ok := len(name) >= 1 && len(name) <= 249 && name != "." && name != ".."
		for i := 0; i < len(name) && ok; i++ {
			c := name[i]
			ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		}
		if ok != (err == nil) {
			t.Fatalf("ValidateTopicName(%q) = %v, want ok=%v", name, err, ok)
		}
	})
}

// FuzzRecordBatchProto: arbitrary bytes never panic the stored batch's protobuf decoder,
// whatever decodes re-encodes to bytes that decode to the same batch, and a stored batch that
// passes CheckStored decodes without panicking. (The Kafka bytes it holds: FuzzDecodeRecordBatch.)
func FuzzRecordBatchProto(f *testing.F) {
	recs := []types.BatchRecord{{Key: &types.Bytes{Data: []byte("k")}, Value: &types.Bytes{}, Headers: []types.Header{{Key: "h", Value: []byte("v")}}, CreateTimeMs: 5}, {}}
	for _, c := range []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionZstd} {
		bz, err := types.EncodeRecordBatch(recs, c)
		if err != nil {
			f.Fatal(err)
		}
		seed := types.RecordBatch{BaseOffset: 7, Producer: "bftlog1x", LogAppendTimeMs: 1, Height: 2,
			RecordCount: uint32(len(recs)), RecordBatch: kbatch.WithBaseOffset(bz, 7)}
		seed.Seal()
		seedBz, _ := seed.Marshal()
		f.Add(seedBz)
	}
	f.Add([]byte{})
	f.Add([]byte{0x32, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		var b types.RecordBatch
		if err := b.Unmarshal(data); err != nil {
			return
		}
		out, err := b.Marshal()
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again types.RecordBatch
		if err := again.Unmarshal(out); err != nil {
			t.Fatalf("decode of re-encoded batch: %v", err)
		}
		out2, _ := again.Marshal()
		if !bytes.Equal(out, out2) {
			t.Fatalf("encoding not stable")
		}
		if b.CheckStored() == nil {
			if recs, err := b.Records(); err == nil && uint32(len(recs)) != b.RecordCount {
				t.Fatalf("%d records decoded, the batch says %d", len(recs), b.RecordCount)
			}
		}
	})
}

// FuzzKeyPartition: the partitioner always lands in range.
func FuzzKeyPartition(f *testing.F) {
	f.Add([]byte("user-1"), uint32(3))
	f.Add([]byte{}, uint32(1))
	f.Fuzz(func(t *testing.T, key []byte, n uint32) {
		if n == 0 {
			return
		}
		if p := types.KeyPartition(key, n); p >= n {
			t.Fatalf("partition %d of %d", p, n)
		}
	})
}
