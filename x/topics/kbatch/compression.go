package kbatch

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"

	errorsmod "cosmossdk.io/errors"
	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression is a record batch's codec (attributes bits 0-2), as Kafka numbers them.
type Compression uint8

const (
	CompressionNone Compression = iota
	CompressionGzip
	CompressionSnappy
	CompressionLZ4
	CompressionZstd
)

var compressionNames = []string{"none", "gzip", "snappy", "lz4", "zstd"}

func (c Compression) String() string {
	if int(c) < len(compressionNames) {
		return compressionNames[c]
	}
	return "unknown"
}

// ParseCompression reads a codec name as Kafka's compression.type spells it.
func ParseCompression(s string) (Compression, error) {
	for i, n := range compressionNames {
		if n == s {
			return Compression(i), nil
		}
	}
	return 0, errorsmod.Wrapf(ErrUnsupportedCompression, "%q; use one of none, gzip, snappy, lz4, zstd", s)
}

// xerialHeader starts snappy data framed as the Java client writes it.
var xerialHeader = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decompress expands a batch's records, failing as soon as the output would pass limit: a
// small compressed batch cannot make a node allocate more than the bound.
func decompress(c Compression, in []byte, limit uint64) ([]byte, error) {
	fail := func(err error) ([]byte, error) {
		return nil, errorsmod.Wrapf(ErrUnsupportedCompression, "%s: %v", c, err)
	}
	tooLarge := func() ([]byte, error) {
		return nil, errorsmod.Wrapf(ErrBatchTooLarge, "%s records decompress to more than %d bytes", c, limit)
	}
	switch c {
	case CompressionGzip:
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err != nil {
			return fail(err)
		}
		return readLimited(zr, limit, fail, tooLarge)
	case CompressionLZ4:
		return readLimited(lz4.NewReader(bytes.NewReader(in)), limit, fail, tooLarge)
	case CompressionZstd:
		// The frame header's content size, when present, is checked before any allocation.
		var h zstd.Header
		if err := h.Decode(in); err == nil && h.HasFCS && h.FrameContentSize > limit {
			return tooLarge()
		}
		return readLimited(zstdStream(in), limit, fail, tooLarge)
	case CompressionSnappy:
		if !bytes.HasPrefix(in, xerialHeader) {
			return snappyBlock(in, nil, limit, fail, tooLarge)
		}
		// xerial framing: 16-byte header, then (int32 length, snappy block) chunks. The chunks'
		// decoded lengths are summed first, so a bomb is refused before anything is decoded
		// and the output is allocated once (not regrown chunk by chunk).
		if len(in) < 16 {
			return fail(io.ErrUnexpectedEOF)
		}
		var total uint64
		for rest := in[16:]; len(rest) > 0; {
			if len(rest) < 4 {
				return fail(io.ErrUnexpectedEOF)
			}
			n := binary.BigEndian.Uint32(rest)
			if uint64(n) > uint64(len(rest)-4) {
				return fail(io.ErrUnexpectedEOF)
			}
			d, err := snappy.DecodedLen(rest[4 : 4+n])
			if err != nil {
				return fail(err)
			}
			if total += uint64(d); total > limit {
				return tooLarge()
			}
			rest = rest[4+n:]
		}
		out := make([]byte, 0, total)
		for rest := in[16:]; len(rest) > 0; {
			n := binary.BigEndian.Uint32(rest)
			d, err := snappy.Decode(out[len(out):cap(out)], rest[4:4+n]) // decodes in place
			if err != nil {
				return fail(err)
			}
			out = out[:len(out)+len(d)]
			rest = rest[4+n:]
		}
		return out, nil
	default:
		return nil, errorsmod.Wrapf(ErrUnsupportedCompression, "codec %d", c)
	}
}

// zstdStream decodes synchronously (concurrency 1: no goroutines in the state machine) and
// refuses windows and frames larger than the largest batch allowed anywhere.
func zstdStream(in []byte) io.Reader {
	d, err := zstd.NewReader(bytes.NewReader(in), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(MaxDecodedBatchBytes), zstd.WithDecoderMaxWindow(8<<20))
	if err != nil {
		return errReader{err}
	}
	return d.IOReadCloser()
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func snappyBlock(in, out []byte, limit uint64, fail func(error) ([]byte, error), tooLarge func() ([]byte, error)) ([]byte, error) {
	n, err := snappy.DecodedLen(in)
	if err != nil {
		return fail(err)
	}
	if uint64(len(out))+uint64(n) > limit {
		return tooLarge()
	}
	d, err := snappy.Decode(nil, in)
	if err != nil {
		return fail(err)
	}
	return append(out, d...), nil
}

func readLimited(r io.Reader, limit uint64, fail func(error) ([]byte, error), tooLarge func() ([]byte, error)) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return fail(err)
	}
	if uint64(len(out)) > limit {
		return tooLarge()
	}
	return out, nil
}

// compress is the producer's side: it writes what decompress reads (snappy as a raw block,
// as librdkafka and franz-go do).
func compress(c Compression, in []byte) ([]byte, error) {
	var buf bytes.Buffer
	switch c {
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(in); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CompressionSnappy:
		return snappy.Encode(nil, in), nil
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(in); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CompressionZstd:
		return zstdEncoder.EncodeAll(in, nil), nil
	default:
		return nil, errorsmod.Wrapf(ErrUnsupportedCompression, "codec %d", c)
	}
	return buf.Bytes(), nil
}

var zstdEncoder, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
