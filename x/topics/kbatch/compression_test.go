package kbatch_test

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"testing"
	"time"

	"github.com/golang/snappy"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/kbatch"
)

// Codec names are Kafka's compression.type values, and codec numbers Kafka's attribute bits.
func TestParseCompression(t *testing.T) {
	for i, name := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		c, err := kbatch.ParseCompression(name)
		require.NoError(t, err)
		require.Equal(t, kbatch.Compression(i), c)
		require.Equal(t, name, c.String())
		require.Equal(t, int(kgo.CompressionCodecType(i)), int(c))
	}
	for _, name := range []string{"", "GZIP", "producer", "lz4hc", "unknown"} {
		_, err := kbatch.ParseCompression(name)
		require.ErrorIs(t, err, kbatch.ErrUnsupportedCompression, name)
	}
	require.Equal(t, "unknown", kbatch.Compression(6).String())
}

func kgoCodec(c kbatch.Compression) kgo.CompressionCodec {
	return []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}[c]
}

// kmsgBatch builds a batch the way franz-go's producer does: kmsg records, compressed by kgo's
// default compressor, framed by kmsg.RecordBatch, with a producer id as an idempotent
// producer sends it.
func kmsgBatch(t *testing.T, recs []kbatch.Record, c kbatch.Compression, xerial bool) []byte {
	t.Helper()
	baseTs, maxTs := recs[0].Timestamp, recs[0].Timestamp
	for _, r := range recs {
		baseTs, maxTs = min(baseTs, r.Timestamp), max(maxTs, r.Timestamp)
	}
	var body []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.Timestamp - baseTs, OffsetDelta: int32(i)}
		if r.Key != nil {
			kr.Key = append([]byte{}, r.Key...)
		}
		if r.Value != nil {
			kr.Value = append([]byte{}, r.Value...)
		}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // a zero length takes one byte
		body = kr.AppendTo(body)
	}
	records := body
	switch {
	case xerial:
		records = xerialFrame(body)
	case c != kbatch.CompressionNone:
		comp, err := kgo.DefaultCompressor(kgoCodec(c))
		require.NoError(t, err)
		out, used := comp.Compress(new(bytes.Buffer), body)
		require.Equal(t, kgo.CompressionCodecType(c), used)
		records = append([]byte(nil), out...)
	}
	rb := kmsg.RecordBatch{
		Magic: 2, Attributes: int16(c), LastOffsetDelta: int32(len(recs) - 1),
		FirstTimestamp: baseTs, MaxTimestamp: maxTs, ProducerID: 4242, ProducerEpoch: 3, FirstSequence: 17,
		NumRecords: int32(len(recs)), Records: records,
	}
	b := rb.AppendTo(nil)
	return fixBatch(b)
}

// xerialFrame frames snappy as the Java client's SnappyOutputStream does: the magic, version
// 1 and minimum compatible version 1, then 32 KiB blocks each as a big-endian length and a
// raw snappy block.
func xerialFrame(in []byte) []byte {
	out := append([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}, 0, 0, 0, 1, 0, 0, 0, 1)
	for len(in) > 0 {
		n := min(len(in), 32<<10)
		block := snappy.Encode(nil, in[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		in = in[n:]
	}
	return out
}

// Batches franz-go builds, with each of kgo's compressors (and snappy in the Java client's
// xerial framing), are accepted and decode to the records written.
func TestCheckRecordBatchAcceptsFranzGoBatches(t *testing.T) {
	recs := sampleRecords()
	// Enough data for several xerial blocks.
	recs = append(recs, kbatch.Record{Value: bytes.Repeat([]byte("0123456789"), 10_000), Timestamp: 1_700_000_000_001})
	plain, err := kbatch.EncodeRecordBatch(recs, kbatch.CompressionNone)
	require.NoError(t, err)
	for _, tc := range []struct {
		c      kbatch.Compression
		xerial bool
	}{{kbatch.CompressionNone, false}, {kbatch.CompressionGzip, false}, {kbatch.CompressionSnappy, false}, {kbatch.CompressionSnappy, true}, {kbatch.CompressionLZ4, false}, {kbatch.CompressionZstd, false}} {
		name := tc.c.String()
		if tc.xerial {
			name += "-xerial"
		}
		t.Run(name, func(t *testing.T) {
			b := kmsgBatch(t, recs, tc.c, tc.xerial)
			if tc.xerial {
				require.True(t, bytes.HasPrefix(b[kbatch.RecordBatchHeaderSize:], []byte("\x82SNAPPY\x00")))
				// kgo reads the framing as we write it: it is the Java client's.
				_, err := kgo.DefaultDecompressor().Decompress(b[kbatch.RecordBatchHeaderSize:], kgo.CodecSnappy)
				require.NoError(t, err)
			}
			info, err := kbatch.CheckRecordBatch(b, testLimits)
			require.NoError(t, err)
			require.Equal(t, uint32(len(recs)), info.Records)
			require.Equal(t, tc.c, info.Compression)
			// kmsg writes records byte for byte as we do: same decompressed size.
			require.Equal(t, uint64(len(plain)-kbatch.RecordBatchHeaderSize), info.RecordBytes)
			require.Equal(t, int64(4242), info.ProducerID)
			require.Equal(t, int16(3), info.ProducerEpoch)
			require.Equal(t, int32(17), info.BaseSequence)
			got, err := kbatch.DecodeRecordBatch(kbatch.WithBaseOffset(b, 500))
			require.NoError(t, err)
			requireDecoded(t, recs, got, 500)
		})
	}
}

// What EncodeRecordBatch writes is read by franz-go: kmsg parses the batch with a valid
// CRC-32C and kgo's decompressor expands the records, which kmsg reads back unchanged.
func TestFranzGoReadsEncodedBatches(t *testing.T) {
	recs := sampleRecords()
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			b, err := kbatch.EncodeRecordBatch(recs, c)
			require.NoError(t, err)
			b = kbatch.WithBaseOffset(b, 77)
			var rb kmsg.RecordBatch
			require.NoError(t, rb.ReadFrom(b))
			require.Equal(t, int64(77), rb.FirstOffset)
			require.Equal(t, int8(2), rb.Magic)
			require.Equal(t, int32(len(b)-12), rb.Length)
			require.Equal(t, uint32(rb.CRC), crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
			require.Equal(t, int16(c), rb.Attributes&0x07)
			require.Equal(t, int32(len(recs)), rb.NumRecords)
			require.Equal(t, int32(len(recs)-1), rb.LastOffsetDelta)
			require.Equal(t, int64(-1), rb.ProducerID)
			raw, err := kgo.DefaultDecompressor().Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&0x07))
			require.NoError(t, err)
			for i, want := range recs {
				l, n := binary.Varint(raw)
				require.Positive(t, n)
				var kr kmsg.Record
				require.NoError(t, kr.ReadFrom(raw[:n+int(l)]), "record %d", i)
				raw = raw[n+int(l):]
				require.Equal(t, int32(i), kr.OffsetDelta)
				require.Equal(t, want.Timestamp, rb.FirstTimestamp+kr.TimestampDelta64)
				requireNullable(t, want.Key, kr.Key, "key")
				requireNullable(t, want.Value, kr.Value, "value")
				got := make([]kbatch.Header, len(kr.Headers))
				for j, h := range kr.Headers {
					got[j] = kbatch.Header{Key: h.Key, Value: h.Value}
				}
				requireHeaders(t, want.Headers, got)
			}
			require.Empty(t, raw, "no bytes after the last record")
		})
	}
}

// Compressed bytes that do not decompress are refused as corrupt compression, and a codec
// bftlog does not know as unsupported.
func TestCorruptCompressionRefused(t *testing.T) {
	recs := sampleRecords()
	for _, c := range allCodecs[1:] {
		b, err := kbatch.EncodeRecordBatch(recs, c)
		require.NoError(t, err)
		body := b[kbatch.RecordBatchHeaderSize:]
		for name, records := range map[string][]byte{
			"truncated": body[:len(body)/2],
			"garbage":   bytes.Repeat([]byte{0xa5}, 64),
			"empty":     {},
		} {
			bad := rawBatch(uint16(c), int32(len(recs)), int32(len(recs)-1), records)
			_, err := kbatch.CheckRecordBatch(bad, testLimits)
			require.Error(t, err, "%s %s", c, name)
			// A truncated stream may also end early but cleanly: then the records are short.
			require.True(t, kbatch.ErrUnsupportedCompression.Is(err) || kbatch.ErrInvalidRecordBatch.Is(err), "%s %s: %v", c, name, err)
			_, err = kbatch.DecodeRecordBatch(bad)
			require.Error(t, err, "%s %s", c, name)
		}
	}
	// Snappy in xerial framing with a chunk length past the end.
	bad := xerialFrame(bytes.Repeat([]byte("x"), 100))
	binary.BigEndian.PutUint32(bad[16:], 1<<20)
	_, err := kbatch.CheckRecordBatch(rawBatch(uint16(kbatch.CompressionSnappy), 1, 0, bad), testLimits)
	require.ErrorIs(t, err, kbatch.ErrUnsupportedCompression)
	for _, codec := range []uint16{5, 6, 7} {
		b := rawBatch(codec, 1, 0, rawRecord(0, nil, nil))
		_, err := kbatch.CheckRecordBatch(b, testLimits)
		require.ErrorIs(t, err, kbatch.ErrUnsupportedCompression, "codec %d", codec)
		_, err = kbatch.DecodeRecordBatch(b)
		require.ErrorIs(t, err, kbatch.ErrUnsupportedCompression, "codec %d", codec)
	}
}

const gib = 1 << 30

// Decompression bombs: small compressed inputs that expand (or claim to expand) far past
// MaxDecompressedBytes. Each builder is checked first at a size under the limit, where it
// decompresses fine (zeros are not records, so the refusal is then about the records), so
// the bomb's refusal is about its size, not its encoding.
var bombs = []struct {
	name  string
	c     kbatch.Compression
	build func(t testing.TB, size int) []byte
}{
	{"gzip zeros, concatenated members", kbatch.CompressionGzip, gzipZeros},
	{"zstd RLE blocks, no content size", kbatch.CompressionZstd, func(t testing.TB, size int) []byte { return zstdRLE(size, false) }},
	{"zstd RLE blocks, content size in the header", kbatch.CompressionZstd, func(t testing.TB, size int) []byte { return zstdRLE(size, true) }},
	{"lz4 zeros, concatenated frames", kbatch.CompressionLZ4, lz4Zeros},
	{"snappy block claiming its length", kbatch.CompressionSnappy, snappyClaim},
	{"snappy zeros", kbatch.CompressionSnappy, snappyZeros},
	{"snappy xerial zeros", kbatch.CompressionSnappy, func(t testing.TB, size int) []byte { return xerialFrame(make([]byte, size)) }},
	{"snappy xerial chunks claiming their length", kbatch.CompressionSnappy, xerialClaim},
}

// xerialClaim is xerial framing whose one chunk claims size bytes, a small block following.
func xerialClaim(t testing.TB, size int) []byte {
	if size <= 4<<20 {
		return xerialFrame(make([]byte, size))
	}
	out := xerialFrame(nil)
	for _, block := range [][]byte{snappyClaim(t, size), snappy.Encode(nil, make([]byte, 1024))} {
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
	}
	return out
}

// gzipZeros is size zeros as gzip members of at most 16 MiB of zeros each, Go's gzip reader
// reading them as one stream.
func gzipZeros(t testing.TB, size int) []byte {
	member := func(n int) []byte {
		var buf bytes.Buffer
		w, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		_, err = w.Write(make([]byte, n))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	const chunk = 16 << 20
	var out []byte
	full := member(min(size, chunk))
	for ; size >= chunk; size -= chunk {
		out = append(out, full...)
	}
	if size > 0 {
		out = append(out, member(size)...)
	}
	return out
}

// zstdRLE is one zstd frame of size zeros written as 128 KiB RLE blocks: 4 bytes per block.
func zstdRLE(size int, withSize bool) []byte {
	out := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if withSize {
		out = append(out, 0xc0, 0x38) // 8-byte content size; window 128 KiB
		out = binary.LittleEndian.AppendUint64(out, uint64(size))
	} else {
		out = append(out, 0x00, 0x38) // no content size; window 128 KiB
	}
	for size > 0 {
		n := min(size, 128<<10)
		size -= n
		h := uint32(1<<1) | uint32(n)<<3 // block type 1: RLE
		if size == 0 {
			h |= 1 // last block
		}
		out = append(out, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return out
}

// lz4Zeros is size zeros as concatenated lz4 frames of at most 4 MiB each.
func lz4Zeros(t testing.TB, size int) []byte {
	frame := func(n int) []byte {
		var buf bytes.Buffer
		w := lz4.NewWriter(&buf)
		require.NoError(t, w.Apply(lz4.BlockSizeOption(lz4.Block4Mb)))
		_, err := w.Write(make([]byte, n))
		require.NoError(t, err)
		require.NoError(t, w.Close())
		return buf.Bytes()
	}
	const chunk = 4 << 20
	var out []byte
	full := frame(min(size, chunk))
	for ; size >= chunk; size -= chunk {
		out = append(out, full...)
	}
	if size > 0 {
		out = append(out, frame(size)...)
	}
	return out
}

// snappyClaim is a raw snappy block whose header claims size bytes of zeros; past 4 MiB only
// the claim is written, with 64 KiB of data (the block is truncated).
func snappyClaim(t testing.TB, size int) []byte {
	if size <= 4<<20 {
		return snappy.Encode(nil, make([]byte, size))
	}
	enc := snappy.Encode(nil, make([]byte, 64<<10))
	_, n := binary.Uvarint(enc)
	return append(binary.AppendUvarint(nil, uint64(size)), enc[n:]...)
}

func snappyZeros(t testing.TB, size int) []byte { return snappy.Encode(nil, make([]byte, size)) }

func TestDecompressionBombsRefused(t *testing.T) {
	lim := testLimits // 4 MiB decompressed
	for _, bomb := range bombs {
		t.Run(bomb.name, func(t *testing.T) {
			// Under the limit the same construction decompresses: the records are refused.
			small := rawBatch(uint16(bomb.c), 1, 0, bomb.build(t, 256<<10))
			info, err := kbatch.CheckRecordBatch(small, lim)
			require.ErrorIs(t, err, kbatch.ErrInvalidRecordBatch)
			require.Equal(t, uint64(256<<10), info.RecordBytes)

			size := gib
			switch bomb.name {
			case "lz4 zeros, concatenated frames", "snappy zeros", "snappy xerial zeros":
				size = 64 << 20 // these codecs top out near 250:1 and 20:1
			}
			b := rawBatch(uint16(bomb.c), 1, 0, bomb.build(t, size))
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			info, err = kbatch.CheckRecordBatch(b, lim)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: %d compressed bytes expanding to %d: refused in %v, %.1f MiB allocated (limit %d MiB)",
				bomb.name, len(b), size, took, float64(alloc)/(1<<20), lim.MaxDecompressedBytes>>20)
			require.ErrorIs(t, err, kbatch.ErrBatchTooLarge)
			// The work done up to the bound is charged for.
			require.Equal(t, lim.MaxDecompressedBytes, info.RecordBytes)
			require.Less(t, alloc, 2*lim.MaxDecompressedBytes+16<<20, "allocated bytes")
			require.Less(t, took, 10*time.Second)

			// A reading client has its own bound.
			_, err = kbatch.DecodeRecordBatch(b)
			if size > kbatch.MaxDecodedBatchBytes {
				require.ErrorIs(t, err, kbatch.ErrBatchTooLarge)
			}
		})
	}
}
