package types_test

import (
	"bytes"
	"reflect"
	"testing"

	errorsmod "cosmossdk.io/errors"

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
	for _, c := range []types.Compression{types.CompressionNone, types.CompressionZstd} {
		bz, err := types.EncodeRecordBatch(recs, c)
		if err != nil {
			f.Fatal(err)
		}
		seed := types.RecordBatch{BaseOffset: 7, Producer: "bftlog1x", LogAppendTimeMs: 1, Height: 2,
			RecordCount: uint32(len(recs)), RecordBatch: types.WithBaseOffset(bz, 7)}
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

// FuzzCheckRecordBatch: the keeper's check never panics on any bytes, and a batch it accepts
// decodes, without error, to exactly the record count it reported, at consecutive offsets. The
// consumer's decoder never panics either, whatever the check said.
func FuzzCheckRecordBatch(f *testing.F) {
	recs := sampleRecords()
	for _, c := range allCodecs {
		b, err := types.EncodeRecordBatch(recs, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		one, err := types.EncodeRecordBatch(recs[:1], c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(one)
	}
	f.Add([]byte{})
	f.Add(rawBatch(0, 1, 0, rawRecord(0, nil, nil, rawHeader{key: []byte("h")})))
	f.Add(rawBatch(0, 0x7fffffff, 0x7ffffffe, rawRecord(0, nil, nil)))
	f.Add(rawBatch(0x10, 1, 0, rawRecord(0, nil, nil)))
	// Fuzzed inputs cannot make the check allocate more than this.
	lim := types.BatchLimits{MaxRecordBytes: 64 << 10, MaxDecompressedBytes: 256 << 10, MaxHeaders: 8}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := types.CheckRecordBatch(data, lim)
		decoded, derr := types.DecodeRecordBatch(data)
		if err != nil {
			return
		}
		if info.RecordBytes > lim.MaxDecompressedBytes {
			t.Fatalf("accepted %d record bytes over the %d limit", info.RecordBytes, lim.MaxDecompressedBytes)
		}
		if derr != nil {
			t.Fatalf("accepted batch does not decode: %v", derr)
		}
		if uint32(len(decoded)) != info.Records || types.RecordBatchCount(data) != info.Records {
			t.Fatalf("check reported %d records, decoded %d, header says %d", info.Records, len(decoded), types.RecordBatchCount(data))
		}
		base := int64(types.RecordBatchBaseOffset(data))
		for i, r := range decoded {
			if r.Offset != base+int64(i) {
				t.Fatalf("record %d at offset %d, base %d", i, r.Offset, base)
			}
		}
	})
}

// batchSeeds are encoded batches for the fuzz targets of the batch codec: every codec, keyed
// records (one a tombstone) and not, a hand-built batch with headers, and a commit marker.
func batchSeeds(f *testing.F) [][]byte {
	keyed := []types.BatchRecord{
		{Key: &types.Bytes{Data: []byte("a")}, Value: &types.Bytes{Data: []byte("1")}, CreateTimeMs: 10},
		{Key: &types.Bytes{Data: []byte("b")}, Headers: []types.Header{{Key: "h", Value: []byte("v")}}, CreateTimeMs: 9},
		{Key: &types.Bytes{Data: []byte("a")}, Value: &types.Bytes{}, CreateTimeMs: 12},
	}
	var out [][]byte
	for _, recs := range [][]types.BatchRecord{sampleRecords(), keyed} {
		for _, c := range allCodecs {
			b, err := types.EncodeRecordBatch(recs, c)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, types.WithBaseOffset(b, 40))
		}
	}
	return append(out, rawBatch(0, 1, 0, rawRecord(0, []byte("k"), nil, rawHeader{key: []byte("h")})), types.EncodeCommitMarker(3, 1, 7))
}

// addBatchSeeds adds batchSeeds, each also to be sealed (see sealed).
func addBatchSeeds(f *testing.F) {
	for _, b := range batchSeeds(f) {
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte{}, false)
}

// sealed is data with its length field and CRC-32C made right when seal is set, so that the
// fuzzer reaches the records rather than stopping at the CRC.
func sealed(data []byte, seal bool) []byte {
	if !seal || len(data) < types.RecordBatchHeaderSize {
		return data
	}
	return fixBatch(append([]byte(nil), data...))
}

// FuzzDecodeRecordBatch: the consumers' decoder never panics, keeps within its limit, decodes
// as many records as the header says, and what it decodes encodes again to a batch that
// decodes to the same keys, values, headers and timestamps.
func FuzzDecodeRecordBatch(f *testing.F) {
	addBatchSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, seal bool) {
		data = sealed(data, seal)
		// Within a limit, so that one input costs little; past it the decoder stops early.
		const limit = 256 << 10
		recs, size, err := types.DecodeRecordBatchWithin(data, limit)
		if errorsmod.IsOf(err, types.ErrBatchTooLarge) {
			return
		}
		if err == nil && size > limit {
			t.Fatalf("decoded %d record bytes over the %d limit", size, limit)
		}
		if all, aerr := types.DecodeRecordBatch(data); !reflect.DeepEqual(all, recs) || (aerr == nil) != (err == nil) {
			t.Fatalf("within the limit: %v, %v; without: %v, %v", recs, err, all, aerr)
		}
		if err != nil {
			return
		}
		if uint32(len(recs)) != types.RecordBatchCount(data) {
			t.Fatalf("decoded %d records, the header says %d", len(recs), types.RecordBatchCount(data))
		}
		if len(recs) == 0 {
			return
		}
		in := make([]types.BatchRecord, len(recs))
		for i, r := range recs {
			in[i] = types.BatchRecord{Key: types.NewBytes(r.Key), Value: types.NewBytes(r.Value), Headers: r.Headers, CreateTimeMs: r.Timestamp}
		}
		b, err := types.EncodeRecordBatch(in, types.CompressionNone)
		if err != nil {
			t.Fatal(err)
		}
		again, err := types.DecodeRecordBatch(b)
		if err != nil {
			t.Fatalf("re-encoded records do not decode: %v", err)
		}
		for i := range recs {
			recs[i].Offset, again[i].Offset = 0, 0
		}
		if !reflect.DeepEqual(recs, again) {
			t.Fatalf("decoded %+v, re-encoded and decoded %+v", recs, again)
		}
	})
}

// FuzzCompactionRecords: compaction's walk of stored bytes (it runs in the EndBlocker) never
// panics; the batch it writes for any subsequence of the records is a valid batch with the
// input's header fields, holding exactly those records (when it reads again); and a batch the produce check accepts
// with keys required reads here to the same keys and tombstones.
func FuzzCompactionRecords(f *testing.F) {
	addBatchSeeds(f)
	lim := types.BatchLimits{MaxRecordBytes: 64 << 10, MaxDecompressedBytes: 256 << 10, MaxHeaders: 8, RequireKeys: true}
	f.Fuzz(func(t *testing.T, data []byte, seal bool) {
		data = sealed(data, seal)
		types.IsControlBatch(data)
		recs, _, err := types.CompactionRecords(data)
		if info, cerr := types.CheckRecordBatch(data, lim); cerr == nil {
			if err != nil {
				t.Fatalf("accepted by the check, refused by compaction: %v", err)
			}
			keys := make([]types.RecordKey, len(recs))
			for i, r := range recs {
				keys[i] = types.RecordKey{Key: r.Key, Tombstone: r.Tombstone()}
			}
			if !reflect.DeepEqual(keys, info.Keys) {
				t.Fatalf("compaction reads keys %v, the check %v", keys, info.Keys)
			}
		}
		if err != nil {
			return
		}
		if uint32(len(recs)) != types.RecordBatchCount(data) {
			t.Fatalf("read %d records, the header says %d", len(recs), types.RecordBatchCount(data))
		}
		var odd []types.RecordView
		for i := 1; i < len(recs); i += 2 {
			odd = append(odd, recs[i])
		}
		in, _ := types.ReadBatchHeader(data)
		for _, kept := range [][]types.RecordView{recs, odd, nil} {
			out := types.CompactedBatch(data, kept)
			h, ok := types.ReadBatchHeader(out)
			if !ok || h.Size() != int64(len(out)) || h.CRC != types.RecordBatchCRC(out) || len(out) != types.CompactedBatchSize(kept) {
				t.Fatalf("compacted batch is not framed: %x", out)
			}
			want := in
			want.BatchLength, want.CRC, want.RecordCount = h.BatchLength, h.CRC, int32(len(kept))
			want.Attributes &^= 0x07 // the codec bits: written uncompressed
			if h != want {
				t.Fatalf("compacted header %+v, want %+v", h, want)
			}
			got, _, err := types.CompactionRecords(out)
			if err != nil {
				// Only where the input's records were shorter than any the produce check
				// accepts (7 bytes): compaction reads no further than their values.
				continue
			}
			if len(got) != len(kept) {
				t.Fatalf("compacted batch holds %d records, kept %d", len(got), len(kept))
			}
			for i := range got {
				if !bytes.Equal(got[i].Raw, kept[i].Raw) || got[i].OffsetDelta != kept[i].OffsetDelta {
					t.Fatalf("record %d changed in the compacted batch", i)
				}
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
