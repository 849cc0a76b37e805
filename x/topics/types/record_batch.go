package types

import (
	"bytes"
	"crypto/sha256"
	"math"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/kbatch"
)

// Records decodes the batch's records as consumers read them.
func (b RecordBatch) Records() ([]Record, error) {
	recs, _, err := b.RecordsWithin(math.MaxUint64)
	return recs, err
}

// RecordsWithin is Records for records of at most limit bytes once decompressed, returning
// their size as DecodeRecordBatchWithin does.
func (b RecordBatch) RecordsWithin(limit uint64) ([]Record, uint64, error) {
	if kbatch.IsControlBatch(b.RecordBatch) {
		return nil, 0, nil // a transaction marker takes an offset and holds no record, as in Kafka
	}
	recs, size, err := kbatch.DecodeRecordBatchWithin(b.RecordBatch, limit)
	if err != nil {
		return nil, size, err
	}
	if uint32(len(recs)) != b.RecordCount {
		return nil, size, errorsmod.Wrapf(ErrInvalidRecordBatch, "batch at offset %d holds %d records, says %d", b.BaseOffset, len(recs), b.RecordCount)
	}
	out := make([]Record, len(recs))
	headers := protoHeaders(recs)
	for i, r := range recs {
		// The batch's own offset deltas: compaction leaves gaps between them.
		out[i] = Record{
			Offset:          uint64(r.Offset),
			Key:             NewBytes(r.Key),
			Value:           NewBytes(r.Value),
			Headers:         headers(len(r.Headers)),
			CreateTimeMs:    r.Timestamp,
			LogAppendTimeMs: b.LogAppendTimeMs,
			Producer:        b.Producer,
			Height:          b.Height,
		}
	}
	return out, size, nil
}

// LastOffset is the last offset the batch spans (its store key): its last record's, or, once
// compaction removed records, the last offset it held when appended.
func (b RecordBatch) LastOffset() uint64 {
	return b.BaseOffset + uint64(max(b.LastOffsetDelta, b.RecordCount-1))
}

// StoredSize is the size of b's encoding once SizeBytes holds it: what the store keeps, and
// what partition byte counts and retention_bytes count.
func (b RecordBatch) StoredSize() uint64 {
	b.SizeBytes = 0
	base := uint64(b.Size())
	// size_bytes adds its tag and its own varint: settle the fixed point (at most 3 steps).
	n := base
	for {
		next := base + 1 + uvarintLen(n)
		if next == n {
			return n
		}
		n = next
	}
}

// Seal sets the batch's SHA-256 and then its stored size (which counts the hash).
func (b *RecordBatch) Seal() {
	sum := sha256.Sum256(b.RecordBatch)
	b.RecordBatchSha256 = sum[:]
	b.SizeBytes = b.StoredSize()
}

// CheckStored checks what a stored or imported batch must satisfy without decompressing it:
// one framed batch with a valid CRC, its bytes matching their SHA-256, its base offset and
// record count matching the metadata.
func (b RecordBatch) CheckStored() error {
	if err := kbatch.CheckBatchFraming(b.RecordBatch); err != nil {
		return err
	}
	if sum := sha256.Sum256(b.RecordBatch); !bytes.Equal(sum[:], b.RecordBatchSha256) {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "batch at offset %d: record batch bytes do not match record_batch_sha256", b.BaseOffset)
	}
	if b.RecordCount == 0 || kbatch.RecordBatchCount(b.RecordBatch) != b.RecordCount {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "record count %d, the batch holds %d", b.RecordCount, kbatch.RecordBatchCount(b.RecordBatch))
	}
	if base := kbatch.RecordBatchBaseOffset(b.RecordBatch); base != b.BaseOffset {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "base offset %d, the batch says %d", b.BaseOffset, base)
	}
	if d := kbatch.RecordBatchLastOffsetDelta(b.RecordBatch); d != max(b.LastOffsetDelta, b.RecordCount-1) {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "batch at offset %d spans %d offsets, its last offset delta says %d", b.BaseOffset, max(b.LastOffsetDelta, b.RecordCount-1)+1, d+1)
	}
	return nil
}

// Meta is what the EndBlocker keeps of the batch; the record count only once compaction made
// it differ from the batch's span.
func (b RecordBatch) Meta() BatchMeta {
	m := BatchMeta{BaseOffset: b.BaseOffset, LogAppendTimeMs: b.LogAppendTimeMs, SizeBytes: b.SizeBytes}
	if b.LastOffsetDelta != 0 {
		m.RecordCount = b.RecordCount
	}
	return m
}

// Records is how many records the batch under key lastOffset holds.
func (m BatchMeta) Records(lastOffset uint64) uint64 {
	if m.RecordCount != 0 {
		return uint64(m.RecordCount)
	}
	return lastOffset - m.BaseOffset + 1
}

// RecordSize is a record's encoded size inside an uncompressed batch (length prefix
// included): what max_record_bytes bounds. Producers use it to split records into batches.
func (r BatchRecord) RecordSize() uint64 {
	// attributes, timestamp delta (at most the timestamp), offset delta (under 2^20 records)
	n := uint64(1) + varintLen(r.CreateTimeMs) + 3
	n += nullableLen(r.Key) + nullableLen(r.Value) + varintLen(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintLen(int64(len(h.Key))) + uint64(len(h.Key))
		if h.Value == nil {
			n++
		} else {
			n += varintLen(int64(len(h.Value))) + uint64(len(h.Value))
		}
	}
	return varintLen(int64(n)) + n
}

func nullableLen(b *Bytes) uint64 {
	if b == nil {
		return 1
	}
	return varintLen(int64(len(b.Data))) + uint64(len(b.Data))
}

func varintLen(v int64) uint64 { return uvarintLen(uint64(v<<1) ^ uint64(v>>63)) }

func uvarintLen(n uint64) uint64 {
	l := uint64(1)
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

// NewBytes wraps b as a non-null Bytes; nil stays null.
func NewBytes(b []byte) *Bytes {
	if b == nil {
		return nil
	}
	return &Bytes{Data: b}
}

// protoHeaders copies the decoded records' headers into one slice of proto headers, and
// returns what hands each record, in order, its n headers from it (nil for none, as decoded).
func protoHeaders(recs []kbatch.KafkaRecord) func(n int) []Header {
	total := 0
	for _, r := range recs {
		total += len(r.Headers)
	}
	all := make([]Header, 0, total)
	for _, r := range recs {
		for _, h := range r.Headers {
			all = append(all, Header(h))
		}
	}
	return func(n int) []Header {
		if n == 0 {
			return nil
		}
		hs := all[:n:n]
		all = all[n:]
		return hs
	}
}

// EncodeRecordBatch writes a producer's records as one Kafka record batch compressed with c
// (kbatch.EncodeRecordBatch, given the proto records as the codec's).
func EncodeRecordBatch(records []BatchRecord, c kbatch.Compression) ([]byte, error) {
	total := 0
	for _, r := range records {
		total += len(r.Headers)
	}
	headers := make([]kbatch.Header, 0, total)
	in := make([]kbatch.Record, len(records))
	for i, r := range records {
		from := len(headers)
		for _, h := range r.Headers {
			headers = append(headers, kbatch.Header(h))
		}
		in[i] = kbatch.Record{Key: r.Key.nullable(), Value: r.Value.nullable(), Headers: headers[from:len(headers):len(headers)], Timestamp: r.CreateTimeMs}
	}
	return kbatch.EncodeRecordBatch(in, c)
}

// nullable is b's bytes: nil when null, never nil when not (an empty value is not a null one).
func (b *Bytes) nullable() []byte {
	if b == nil {
		return nil
	}
	if b.Data == nil {
		return []byte{}
	}
	return b.Data
}
