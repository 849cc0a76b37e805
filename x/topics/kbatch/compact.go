package kbatch

import (
	errorsmod "cosmossdk.io/errors"
)

// CompactionRecords reads a stored batch's records far enough for compaction (each record's
// framing to its value: the headers travel in the record's Raw encoding unread), and returns
// how many bytes they take decompressed (what compaction's budget counts).
func CompactionRecords(b []byte) ([]RecordView, uint64, error) {
	h, err := readBatch(b)
	if err != nil {
		return nil, 0, err
	}
	count := h.RecordCount
	records := b[RecordBatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		if records, err = decompress(c, records, MaxDecodedBatchBytes); err != nil {
			return nil, 0, err
		}
	}
	if count < 0 || int(count) > len(records)/7 { // a record takes at least 7 bytes
		return nil, 0, errorsmod.Wrapf(ErrInvalidRecordBatch, "record count %d for %d bytes", count, len(records))
	}
	out := make([]RecordView, 0, count)
	rr := NewRecordReader(records)
	for i := int32(0); i < count; i++ {
		rec, err := rr.Next()
		if err != nil {
			return nil, 0, errorsmod.Wrapf(err, "record %d", i)
		}
		out = append(out, rec)
	}
	return out, uint64(len(records)), nil
}

// CompactedBatch is batch b holding only the records kept (a subsequence of its
// CompactionRecords), as Kafka's log cleaner writes it: the header's base offset, last offset
// delta, timestamps, producer id, epoch and base sequence and transactional flag stay, so
// offsets and the producer's state keep their meaning; the kept records keep their own
// encodings and offset deltas (consumers skip the gaps). It is written uncompressed: the
// output is a function of the input alone, on every node and in every later release.
func CompactedBatch(b []byte, kept []RecordView) []byte {
	n := CompactedBatchSize(kept)
	out := make([]byte, RecordBatchHeaderSize, n)
	copy(out, b[:RecordBatchHeaderSize])
	for _, r := range kept {
		out = append(out, r.Raw...)
	}
	h, _ := ReadBatchHeader(out)
	h.BatchLength = int32(n - batchLengthBase)
	h.Attributes &^= attrCompressionMask
	h.RecordCount = int32(len(kept))
	h.put(out)
	sealBatch(out)
	return out
}

// CompactedBatchSize is the size of the batch CompactedBatch writes for kept.
func CompactedBatchSize(kept []RecordView) int {
	n := RecordBatchHeaderSize
	for _, r := range kept {
		n += len(r.Raw)
	}
	return n
}

// RecordBatchLastOffsetDelta is the last offset delta in a batch's header: its span less one,
// which compaction keeps (0 if b is too short).
func RecordBatchLastOffsetDelta(b []byte) uint32 {
	h, _ := ReadBatchHeader(b)
	return uint32(h.LastOffsetDelta)
}
