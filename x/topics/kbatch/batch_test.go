package kbatch_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/kbatch"
)

var allCodecs = []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionGzip, kbatch.CompressionSnappy, kbatch.CompressionLZ4, kbatch.CompressionZstd}

// testLimits are x/topics' default bounds (max_record_bytes, max_batch_bytes,
// max_headers_per_record), as the keeper passes them.
var testLimits = kbatch.BatchLimits{
	MaxRecordBytes:       1 << 20,
	MaxDecompressedBytes: 4 << 20,
	MaxHeaders:           64,
}

// sampleRecords covers what a round trip must keep: null vs empty keys and values, repeated
// header keys in order, empty and null header values, unordered and negative timestamps,
// non-UTF-8 keys and values, and a value long enough for the codecs to compress.
func sampleRecords() []kbatch.Record {
	return []kbatch.Record{
		{Key: []byte("user-1"), Value: []byte("hello"), Timestamp: 1_700_000_000_500,
			Headers: []kbatch.Header{{Key: "b", Value: []byte("2")}, {Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("3")}}},
		{Key: nil, Value: nil, Timestamp: 1_700_000_000_000},
		{Key: []byte{}, Value: []byte{}, Timestamp: 1_700_000_000_900},
		{Key: nil, Value: []byte{0xff, 0x00, 0xfe}, Timestamp: 1_700_000_000_000,
			Headers: []kbatch.Header{{Key: "empty", Value: []byte{}}, {Key: "null", Value: nil}, {Key: "", Value: []byte("v")}}},
		{Key: []byte{0x80}, Value: bytes.Repeat([]byte("compressible "), 500), Timestamp: 1_700_000_001_000},
		{Key: []byte("k"), Value: nil, Timestamp: 1_700_000_000_000, Headers: []kbatch.Header{{Key: "ñ", Value: []byte("ü")}}},
	}
}

func requireHeaders(t *testing.T, want, got []kbatch.Header) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Key, got[i].Key, "header %d", i)
		// nil is a null header value, []byte{} an empty one: both are kept.
		require.Equal(t, want[i].Value == nil, got[i].Value == nil, "header %d nullness", i)
		require.True(t, bytes.Equal(want[i].Value, got[i].Value), "header %d value", i)
	}
}

func requireNullable(t *testing.T, want, got []byte, what string) {
	t.Helper()
	if want == nil {
		require.Nil(t, got, what+" null")
		return
	}
	require.NotNil(t, got, what+" not null")
	require.True(t, bytes.Equal(want, got), what)
}

// requireDecoded checks decoded records against what was encoded, from base.
func requireDecoded(t *testing.T, want []kbatch.Record, got []kbatch.KafkaRecord, base int64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		require.Equal(t, base+int64(i), g.Offset, "record %d offset", i)
		require.Equal(t, w.Timestamp, g.Timestamp, "record %d timestamp", i)
		requireNullable(t, w.Key, g.Key, "key")
		requireNullable(t, w.Value, g.Value, "value")
		requireHeaders(t, w.Headers, g.Headers)
	}
}

// fixBatch sets a hand-built batch's length field and CRC-32C (over bytes 21..end).
func fixBatch(b []byte) []byte {
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// rawBatch frames already encoded (and possibly compressed) records with a consistent length
// and CRC: the refusals below are then about one field only.
func rawBatch(attrs uint16, count int32, lastDelta int32, records []byte) []byte {
	b := make([]byte, kbatch.RecordBatchHeaderSize, kbatch.RecordBatchHeaderSize+len(records))
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:23], attrs)
	binary.BigEndian.PutUint32(b[23:27], uint32(lastDelta))
	binary.BigEndian.PutUint64(b[43:51], ^uint64(0))
	binary.BigEndian.PutUint16(b[51:53], ^uint16(0))
	binary.BigEndian.PutUint32(b[53:57], ^uint32(0))
	binary.BigEndian.PutUint32(b[57:61], uint32(count))
	return fixBatch(append(b, records...))
}

type rawHeader struct {
	key, value []byte
}

// rawRecord encodes one record with any offset delta and header bytes.
func rawRecord(offsetDelta int64, key, value []byte, headers ...rawHeader) []byte {
	body := []byte{0}
	body = binary.AppendVarint(body, 0)
	body = binary.AppendVarint(body, offsetDelta)
	for _, f := range [][]byte{key, value} {
		if f == nil {
			body = binary.AppendVarint(body, -1)
		} else {
			body = binary.AppendVarint(body, int64(len(f)))
			body = append(body, f...)
		}
	}
	body = binary.AppendVarint(body, int64(len(headers)))
	for _, h := range headers {
		body = binary.AppendVarint(body, int64(len(h.key)))
		body = append(body, h.key...)
		body = binary.AppendVarint(body, int64(len(h.value)))
		body = append(body, h.value...)
	}
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

// Every codec round-trips the records byte for byte through the producer's encoder, the
// keeper's check and the consumer's decoder, and the check reports the batch's figures.
func TestRecordBatchRoundTrip(t *testing.T) {
	recs := sampleRecords()
	plain, err := kbatch.EncodeRecordBatch(recs, kbatch.CompressionNone)
	require.NoError(t, err)
	recordBytes := uint64(len(plain) - kbatch.RecordBatchHeaderSize)
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			b, err := kbatch.EncodeRecordBatch(recs, c)
			require.NoError(t, err)
			if c != kbatch.CompressionNone {
				require.Less(t, len(b), len(plain), "compressed batch is smaller")
			}
			info, err := kbatch.CheckRecordBatch(b, testLimits)
			require.NoError(t, err)
			require.Equal(t, uint32(len(recs)), info.Records)
			require.Equal(t, c, info.Compression)
			require.Equal(t, recordBytes, info.RecordBytes, "decompressed size")
			require.Equal(t, int64(1_700_000_000_000), info.BaseTimestamp)
			require.Equal(t, int64(1_700_000_001_000), info.MaxTimestamp)
			require.Equal(t, int64(-1), info.ProducerID)
			require.Equal(t, int16(-1), info.ProducerEpoch)
			require.Equal(t, int32(-1), info.BaseSequence)
			require.False(t, info.Transactional)
			require.False(t, info.LogAppendTimes)
			require.Equal(t, uint32(len(recs)), kbatch.RecordBatchCount(b))
			require.Zero(t, kbatch.RecordBatchBaseOffset(b))

			got, err := kbatch.DecodeRecordBatch(b)
			require.NoError(t, err)
			requireDecoded(t, recs, got, 0)

			// The broker's base offset lies outside the CRC: the stored batch checks and
			// decodes at its offsets, and the produced bytes are left alone.
			stored := kbatch.WithBaseOffset(b, 1<<40)
			require.Zero(t, kbatch.RecordBatchBaseOffset(b))
			require.Equal(t, uint64(1<<40), kbatch.RecordBatchBaseOffset(stored))
			_, err = kbatch.CheckRecordBatch(stored, testLimits)
			require.NoError(t, err)
			got, err = kbatch.DecodeRecordBatch(stored)
			require.NoError(t, err)
			requireDecoded(t, recs, got, 1<<40)
		})
	}
}

// A single record, and many records with multi-byte offset deltas, round-trip too.
func TestRecordBatchRoundTripSizes(t *testing.T) {
	for _, n := range []int{1, 64, 65, 10_000} {
		recs := make([]kbatch.Record, n)
		for i := range recs {
			recs[i] = kbatch.Record{Key: binary.AppendUvarint(nil, uint64(i)), Timestamp: int64(i % 7)}
		}
		for _, c := range allCodecs {
			b, err := kbatch.EncodeRecordBatch(recs, c)
			require.NoError(t, err)
			info, err := kbatch.CheckRecordBatch(b, testLimits)
			require.NoError(t, err, "%d records, %s", n, c)
			require.Equal(t, uint32(n), info.Records)
			got, err := kbatch.DecodeRecordBatch(b)
			require.NoError(t, err)
			requireDecoded(t, recs, got, 0)
		}
	}
	_, err := kbatch.EncodeRecordBatch(nil, kbatch.CompressionNone)
	require.ErrorIs(t, err, kbatch.ErrEmptyBatch)
	_, err = kbatch.EncodeRecordBatch([]kbatch.Record{{}}, kbatch.Compression(6))
	require.ErrorIs(t, err, kbatch.ErrUnsupportedCompression)
}

// Each malformed batch is refused with the registered error saying why.
func TestCheckRecordBatchRefusals(t *testing.T) {
	valid, err := kbatch.EncodeRecordBatch(sampleRecords(), kbatch.CompressionNone)
	require.NoError(t, err)
	_, err = kbatch.CheckRecordBatch(valid, testLimits)
	require.NoError(t, err)
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), valid...))
	}
	setU32 := func(at int, v uint32, crc bool) []byte {
		return mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[at:], v)
			if crc {
				binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
			}
			return b
		})
	}
	setAttrs := func(attrs uint16) []byte {
		return mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint16(b[21:23], attrs)
			return fixBatch(b)
		})
	}
	rec0, rec1 := rawRecord(0, []byte("k"), []byte("v")), rawRecord(1, nil, []byte("v"))
	bigValue := bytes.Repeat([]byte("x"), 1000)
	big := rawRecord(0, nil, bigValue)
	headers := func(n int, key []byte) []rawHeader {
		hs := make([]rawHeader, n)
		for i := range hs {
			hs[i] = rawHeader{key: key, value: []byte{}}
		}
		return hs
	}
	withLimits := func(f func(*kbatch.BatchLimits)) kbatch.BatchLimits {
		l := testLimits
		f(&l)
		return l
	}

	cases := []struct {
		name  string
		batch []byte
		lim   kbatch.BatchLimits
		want  error
	}{
		{"bad CRC: a record byte flipped", mutate(func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }), testLimits, kbatch.ErrInvalidRecordBatch},
		{"bad CRC: attributes changed after signing", mutate(func(b []byte) []byte { b[22] |= 0x08; return b }), testLimits, kbatch.ErrInvalidRecordBatch},
		{"bad CRC: CRC field", setU32(17, 0xdeadbeef, false), testLimits, kbatch.ErrInvalidRecordBatch},
		{"empty", nil, testLimits, kbatch.ErrInvalidRecordBatch},
		{"truncated inside the header", valid[:kbatch.RecordBatchHeaderSize-1], testLimits, kbatch.ErrInvalidRecordBatch},
		{"truncated: one byte short", valid[:len(valid)-1], testLimits, kbatch.ErrInvalidRecordBatch},
		{"truncated with length and CRC fixed", fixBatch(append([]byte(nil), valid[:len(valid)-3]...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"header only, length and CRC fixed", fixBatch(append([]byte(nil), valid[:kbatch.RecordBatchHeaderSize]...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"magic 1", mutate(func(b []byte) []byte { b[16] = 1; return b }), testLimits, kbatch.ErrInvalidRecordBatch},
		{"magic 0", mutate(func(b []byte) []byte { b[16] = 0; return b }), testLimits, kbatch.ErrInvalidRecordBatch},
		{"magic 3", mutate(func(b []byte) []byte { b[16] = 3; return b }), testLimits, kbatch.ErrInvalidRecordBatch},
		{"length field past the end", setU32(8, uint32(len(valid)-12+1), false), testLimits, kbatch.ErrInvalidRecordBatch},
		{"length field short of the end", setU32(8, uint32(len(valid)-12-1), false), testLimits, kbatch.ErrInvalidRecordBatch},
		{"length field max int32", setU32(8, 0x7fffffff, false), testLimits, kbatch.ErrInvalidRecordBatch},
		{"length field negative", setU32(8, 0xffffffff, false), testLimits, kbatch.ErrInvalidRecordBatch},
		{"length field makes len-12 wrap", setU32(8, 0xfffffff4, false), testLimits, kbatch.ErrInvalidRecordBatch},
		{"trailing bytes after the batch", append(append([]byte(nil), valid...), 0), testLimits, kbatch.ErrInvalidRecordBatch},
		{"two batches", append(append([]byte(nil), valid...), valid...), testLimits, kbatch.ErrInvalidRecordBatch},
		{"trailing bytes after the last record", rawBatch(0, 2, 1, append(append(append([]byte(nil), rec0...), rec1...), 0)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"trailing record beyond the count", rawBatch(0, 1, 0, append(append([]byte(nil), rec0...), rec1...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"fewer records than the count", rawBatch(0, 3, 2, append(append([]byte(nil), rec0...), rec1...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"lastOffsetDelta above count-1", setU32(23, uint32(len(sampleRecords())), true), testLimits, kbatch.ErrInvalidRecordBatch},
		{"lastOffsetDelta below count-1", setU32(23, 0, true), testLimits, kbatch.ErrInvalidRecordBatch},
		{"lastOffsetDelta -1", rawBatch(0, 1, -1, rec0), testLimits, kbatch.ErrInvalidRecordBatch},
		{"offset deltas skip", rawBatch(0, 2, 1, append(append([]byte(nil), rec0...), rawRecord(2, nil, nil)...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"offset deltas repeat", rawBatch(0, 2, 1, append(append([]byte(nil), rec0...), rawRecord(0, nil, nil)...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"offset deltas reversed", rawBatch(0, 2, 1, append(append([]byte(nil), rawRecord(1, nil, nil)...), rawRecord(0, nil, nil)...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"first offset delta not 0", rawBatch(0, 1, 0, rawRecord(5, nil, nil)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"transactional", setAttrs(0x10), testLimits, kbatch.ErrInvalidRecordBatch},
		{"control", setAttrs(0x20), testLimits, kbatch.ErrInvalidRecordBatch},
		{"transactional control (a commit marker)", setAttrs(0x30), testLimits, kbatch.ErrInvalidRecordBatch},
		{"zero records", rawBatch(0, 0, -1, nil), testLimits, kbatch.ErrEmptyBatch},
		{"negative record count", rawBatch(0, -1, -2, rec0), testLimits, kbatch.ErrEmptyBatch},
		{"too many headers", rawBatch(0, 1, 0, rawRecord(0, nil, nil, headers(int(testLimits.MaxHeaders)+1, []byte("h"))...)), testLimits, kbatch.ErrTooManyHeaders},
		{"too many headers for a lower limit", rawBatch(0, 1, 0, rawRecord(0, nil, nil, headers(3, []byte("h"))...)), withLimits(func(l *kbatch.BatchLimits) { l.MaxHeaders = 2 }), kbatch.ErrTooManyHeaders},
		{"non-UTF-8 header key", rawBatch(0, 1, 0, rawRecord(0, nil, nil, rawHeader{key: []byte{0xff, 'a'}, value: []byte("v")})), testLimits, kbatch.ErrInvalidRecordBatch},
		{"truncated UTF-8 header key", rawBatch(0, 1, 0, rawRecord(0, nil, nil, rawHeader{key: []byte("ñ")[:1]})), testLimits, kbatch.ErrInvalidRecordBatch},
		{"record over MaxRecordBytes", rawBatch(0, 1, 0, big), withLimits(func(l *kbatch.BatchLimits) { l.MaxRecordBytes = uint64(len(big)) - 1 }), kbatch.ErrRecordTooLarge},
		{"records over MaxDecompressedBytes", rawBatch(0, 2, 1, append(append([]byte(nil), big...), rawRecord(1, nil, bigValue)...)), withLimits(func(l *kbatch.BatchLimits) { l.MaxDecompressedBytes = uint64(2*len(big)) - 1 }), kbatch.ErrBatchTooLarge},
		{"codec 5", setAttrs(5), testLimits, kbatch.ErrUnsupportedCompression},
		{"codec 6", setAttrs(6), testLimits, kbatch.ErrUnsupportedCompression},
		{"codec 7", setAttrs(7), testLimits, kbatch.ErrUnsupportedCompression},
		{"gzip attribute on uncompressed records", setAttrs(uint16(kbatch.CompressionGzip)), testLimits, kbatch.ErrUnsupportedCompression},
		{"zstd attribute on uncompressed records", setAttrs(uint16(kbatch.CompressionZstd)), testLimits, kbatch.ErrUnsupportedCompression},
		{"record length past the end", rawBatch(0, 1, 0, append([]byte{0x7e}, rec0[1:]...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"record length negative", rawBatch(0, 1, 0, append([]byte{0x01}, rec0[1:]...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"record length longer than its fields", rawBatch(0, 1, 0, append(binary.AppendVarint(nil, int64(len(rec0))), append(append([]byte(nil), rec0[1:]...), 0)...)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"empty record", rawBatch(0, 1, 0, []byte{0}), testLimits, kbatch.ErrInvalidRecordBatch},
		{"overlong varint", rawBatch(0, 1, 0, bytes.Repeat([]byte{0xff}, 11)), testLimits, kbatch.ErrInvalidRecordBatch},
		{"key length past the record", rawBatch(0, 1, 0, []byte{8, 0, 0, 0, 20, 'k', 1, 0, 0}), testLimits, kbatch.ErrInvalidRecordBatch},
		{"key length -2", rawBatch(0, 1, 0, []byte{10, 0, 0, 0, 3, 1, 0}), testLimits, kbatch.ErrInvalidRecordBatch},
		{"null header key", rawBatch(0, 1, 0, []byte{16, 0, 0, 0, 1, 1, 2, 1, 1}), testLimits, kbatch.ErrInvalidRecordBatch},
		{"negative header count", rawBatch(0, 1, 0, []byte{12, 0, 0, 0, 1, 1, 1}), testLimits, kbatch.ErrTooManyHeaders},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kbatch.CheckRecordBatch(tc.batch, tc.lim)
			require.ErrorIs(t, err, tc.want)
		})
	}

	// At the bounds themselves the batch is accepted.
	atLimit := kbatch.BatchLimits{MaxRecordBytes: uint64(len(big)), MaxDecompressedBytes: uint64(2 * len(big)), MaxHeaders: 3}
	info, err := kbatch.CheckRecordBatch(rawBatch(0, 2, 1, append(append([]byte(nil), big...), rawRecord(1, nil, bigValue)...)), atLimit)
	require.NoError(t, err)
	require.Equal(t, uint64(2*len(big)), info.RecordBytes)
	_, err = kbatch.CheckRecordBatch(rawBatch(0, 1, 0, rawRecord(0, nil, nil, headers(3, []byte("ñ"))...)), atLimit)
	require.NoError(t, err)
	// LogAppendTime (bit 3) is only reported: the chain sets the append time anyway.
	info, err = kbatch.CheckRecordBatch(setAttrs(0x08), testLimits)
	require.NoError(t, err)
	require.True(t, info.LogAppendTimes)
}

// The consumer's decoder refuses what is not a framed batch, and never trusts the record count
// for an allocation.
func TestDecodeRecordBatchRefusals(t *testing.T) {
	valid, err := kbatch.EncodeRecordBatch(sampleRecords(), kbatch.CompressionNone)
	require.NoError(t, err)
	for name, b := range map[string][]byte{
		"empty":           nil,
		"truncated":       valid[:len(valid)-1],
		"bad CRC":         append(append([]byte(nil), valid[:len(valid)-1]...), valid[len(valid)-1]^1),
		"codec 7":         rawBatch(7, 1, 0, rawRecord(0, nil, nil)),
		"negative count":  rawBatch(0, -1, -2, rawRecord(0, nil, nil)),
		"count past data": rawBatch(0, 0x7fffffff, 0x7ffffffe, rawRecord(0, nil, nil)),
		"record length":   rawBatch(0, 1, 0, []byte{0x7e, 0}),
	} {
		_, err := kbatch.DecodeRecordBatch(b)
		require.Error(t, err, name)
		require.True(t, kbatch.ErrInvalidRecordBatch.Is(err) || kbatch.ErrUnsupportedCompression.Is(err), "%s: %v", name, err)
	}
}
