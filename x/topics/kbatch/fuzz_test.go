package kbatch_test

import (
	"bytes"
	"reflect"
	"testing"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/kbatch"
)

// FuzzCheckRecordBatch: the keeper's check never panics on any bytes, and a batch it accepts
// decodes, without error, to exactly the record count it reported, at consecutive offsets. The
// consumer's decoder never panics either, whatever the check said.
func FuzzCheckRecordBatch(f *testing.F) {
	recs := sampleRecords()
	for _, c := range allCodecs {
		b, err := kbatch.EncodeRecordBatch(recs, c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		one, err := kbatch.EncodeRecordBatch(recs[:1], c)
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
	lim := kbatch.BatchLimits{MaxRecordBytes: 64 << 10, MaxDecompressedBytes: 256 << 10, MaxHeaders: 8}
	f.Fuzz(func(t *testing.T, data []byte) {
		info, err := kbatch.CheckRecordBatch(data, lim)
		decoded, derr := kbatch.DecodeRecordBatch(data)
		if err != nil {
			return
		}
		if info.RecordBytes > lim.MaxDecompressedBytes {
			t.Fatalf("accepted %d record bytes over the %d limit", info.RecordBytes, lim.MaxDecompressedBytes)
		}
		if derr != nil {
			t.Fatalf("accepted batch does not decode: %v", derr)
		}
		if uint32(len(decoded)) != info.Records || kbatch.RecordBatchCount(data) != info.Records {
			t.Fatalf("check reported %d records, decoded %d, header says %d", info.Records, len(decoded), kbatch.RecordBatchCount(data))
		}
		base := int64(kbatch.RecordBatchBaseOffset(data))
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
	keyed := []kbatch.Record{
		{Key: []byte("a"), Value: []byte("1"), Timestamp: 10},
		{Key: []byte("b"), Headers: []kbatch.Header{{Key: "h", Value: []byte("v")}}, Timestamp: 9},
		{Key: []byte("a"), Value: []byte{}, Timestamp: 12},
	}
	var out [][]byte
	for _, recs := range [][]kbatch.Record{sampleRecords(), keyed} {
		for _, c := range allCodecs {
			b, err := kbatch.EncodeRecordBatch(recs, c)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, kbatch.WithBaseOffset(b, 40))
		}
	}
	return append(out, rawBatch(0, 1, 0, rawRecord(0, []byte("k"), nil, rawHeader{key: []byte("h")})), kbatch.EncodeCommitMarker(3, 1, 7))
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
	if !seal || len(data) < kbatch.RecordBatchHeaderSize {
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
		recs, size, err := kbatch.DecodeRecordBatchWithin(data, limit)
		if errorsmod.IsOf(err, kbatch.ErrBatchTooLarge) {
			return
		}
		if err == nil && size > limit {
			t.Fatalf("decoded %d record bytes over the %d limit", size, limit)
		}
		if all, aerr := kbatch.DecodeRecordBatch(data); !reflect.DeepEqual(all, recs) || (aerr == nil) != (err == nil) {
			t.Fatalf("within the limit: %v, %v; without: %v, %v", recs, err, all, aerr)
		}
		if err != nil {
			return
		}
		if uint32(len(recs)) != kbatch.RecordBatchCount(data) {
			t.Fatalf("decoded %d records, the header says %d", len(recs), kbatch.RecordBatchCount(data))
		}
		if len(recs) == 0 {
			return
		}
		in := make([]kbatch.Record, len(recs))
		for i, r := range recs {
			in[i] = kbatch.Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp}
		}
		b, err := kbatch.EncodeRecordBatch(in, kbatch.CompressionNone)
		if err != nil {
			t.Fatal(err)
		}
		again, err := kbatch.DecodeRecordBatch(b)
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
	lim := kbatch.BatchLimits{MaxRecordBytes: 64 << 10, MaxDecompressedBytes: 256 << 10, MaxHeaders: 8, RequireKeys: true}
	f.Fuzz(func(t *testing.T, data []byte, seal bool) {
		data = sealed(data, seal)
		kbatch.IsControlBatch(data)
		recs, _, err := kbatch.CompactionRecords(data)
		if info, cerr := kbatch.CheckRecordBatch(data, lim); cerr == nil {
			if err != nil {
				t.Fatalf("accepted by the check, refused by compaction: %v", err)
			}
			keys := make([]kbatch.RecordKey, len(recs))
			for i, r := range recs {
				keys[i] = kbatch.RecordKey{Key: r.Key, Tombstone: r.Tombstone()}
			}
			if !reflect.DeepEqual(keys, info.Keys) {
				t.Fatalf("compaction reads keys %v, the check %v", keys, info.Keys)
			}
		}
		if err != nil {
			return
		}
		if uint32(len(recs)) != kbatch.RecordBatchCount(data) {
			t.Fatalf("read %d records, the header says %d", len(recs), kbatch.RecordBatchCount(data))
		}
		var odd []kbatch.RecordView
		for i := 1; i < len(recs); i += 2 {
			odd = append(odd, recs[i])
		}
		in, _ := kbatch.ReadBatchHeader(data)
		for _, kept := range [][]kbatch.RecordView{recs, odd, nil} {
			out := kbatch.CompactedBatch(data, kept)
			h, ok := kbatch.ReadBatchHeader(out)
			if !ok || h.Size() != int64(len(out)) || h.CRC != kbatch.RecordBatchCRC(out) || len(out) != kbatch.CompactedBatchSize(kept) {
				t.Fatalf("compacted batch is not framed: %x", out)
			}
			want := in
			want.BatchLength, want.CRC, want.RecordCount = h.BatchLength, h.CRC, int32(len(kept))
			want.Attributes &^= 0x07 // the codec bits: written uncompressed
			if h != want {
				t.Fatalf("compacted header %+v, want %+v", h, want)
			}
			got, _, err := kbatch.CompactionRecords(out)
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
