package types

import (
	"encoding/binary"
	"hash/crc32"

	errorsmod "cosmossdk.io/errors"
)

// CompactionRecord is one record of a stored batch as log compaction sees it: its offset delta,
// key and whether it is a tombstone, and its encoding (length prefix included), which a
// compacted batch carries unchanged.
type CompactionRecord struct {
	OffsetDelta int32
	Key         []byte // nil when null
	Tombstone   bool
	raw         []byte
}

// CompactionRecords reads a stored batch's records far enough for compaction, and returns how
// many bytes they take decompressed (what compaction's budget counts).
func CompactionRecords(b []byte) ([]CompactionRecord, uint64, error) {
	if err := checkBatchFraming(b); err != nil {
		return nil, 0, err
	}
	count := int32(binary.BigEndian.Uint32(b[57:61]))
	records := b[RecordBatchHeaderSize:]
	if c := Compression(binary.BigEndian.Uint16(b[21:23]) & attrCompressionMask); c != CompressionNone {
		var err error
		if records, err = decompress(c, records, MaxDecodedBatchBytes); err != nil {
			return nil, 0, err
		}
	}
	if count < 0 || int(count) > len(records)/7 { // a record takes at least 7 bytes
		return nil, 0, errorsmod.Wrapf(ErrInvalidRecordBatch, "record count %d for %d bytes", count, len(records))
	}
	out := make([]CompactionRecord, 0, count)
	r := kreader{b: records}
	for i := int32(0); i < count; i++ {
		start := r.off
		l, err := r.varint()
		if err != nil {
			return nil, 0, err
		}
		if l < 1 || l > int64(len(r.b)-r.off) {
			return nil, 0, errorsmod.Wrapf(ErrInvalidRecordBatch, "record %d length %d out of range", i, l)
		}
		end := r.off + int(l)
		body := kreader{b: r.b[:end], off: r.off + 1}
		if _, err := body.varint(); err != nil { // timestamp delta
			return nil, 0, err
		}
		delta, err := body.varint()
		if err != nil {
			return nil, 0, err
		}
		key, nullKey, err := body.bytes(true)
		if err != nil {
			return nil, 0, err
		}
		if !nullKey && key == nil {
			key = []byte{}
		}
		_, nullValue, err := body.bytes(true)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, CompactionRecord{OffsetDelta: int32(delta), Key: key, Tombstone: nullValue, raw: r.b[start:end]})
		r.off = end
	}
	return out, uint64(len(records)), nil
}

// CompactedBatch is batch b holding only the records kept (a subsequence of its
// CompactionRecords), as Kafka's log cleaner writes it: the header's base offset, last offset
// delta, timestamps, producer id, epoch and base sequence and transactional flag stay, so
// offsets and the producer's state keep their meaning; the kept records keep their own
// encodings and offset deltas (consumers skip the gaps). It is written uncompressed: the
// output is a function of the input alone, on every node and in every later release.
func CompactedBatch(b []byte, kept []CompactionRecord) []byte {
	n := CompactedBatchSize(kept)
	out := make([]byte, RecordBatchHeaderSize, n)
	copy(out, b[:RecordBatchHeaderSize])
	for _, r := range kept {
		out = append(out, r.raw...)
	}
	binary.BigEndian.PutUint32(out[8:12], uint32(n-12))
	attrs := binary.BigEndian.Uint16(out[21:23]) &^ attrCompressionMask
	binary.BigEndian.PutUint16(out[21:23], attrs)
	binary.BigEndian.PutUint32(out[57:61], uint32(len(kept)))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32c))
	return out
}

// CompactedBatchSize is the size of the batch CompactedBatch writes for kept.
func CompactedBatchSize(kept []CompactionRecord) int {
	n := RecordBatchHeaderSize
	for _, r := range kept {
		n += len(r.raw)
	}
	return n
}

// RecordBatchLastOffsetDelta is the last offset delta in a batch's header: its span less one,
// which compaction keeps (0 if b is too short).
func RecordBatchLastOffsetDelta(b []byte) uint32 {
	if len(b) < RecordBatchHeaderSize {
		return 0
	}
	return binary.BigEndian.Uint32(b[23:27])
}
