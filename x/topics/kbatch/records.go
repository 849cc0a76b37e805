package kbatch

import (
	"encoding/binary"

	errorsmod "cosmossdk.io/errors"
)

// RecordReader walks the records of a batch's (decompressed) records bytes without
// allocating: each record it yields aliases those bytes. It checks a record's framing as far
// as its value; what follows (the headers) each caller reads, and bounds, as it needs.
type RecordReader struct {
	r kreader
}

// NewRecordReader reads the records in records.
func NewRecordReader(records []byte) RecordReader {
	return RecordReader{r: kreader{b: records}}
}

// Remaining is how many bytes follow the last record read.
func (rr *RecordReader) Remaining() int { return len(rr.r.b) - rr.r.off }

// RecordView is one record as RecordReader reads it. Its slices alias the records bytes.
type RecordView struct {
	TimestampDelta int64
	// OffsetDelta is the varint as written (Kafka's is an int32; nothing here bounds it).
	OffsetDelta int64
	Key         []byte // nil when null
	Value       []byte // nil when null (a tombstone)
	// Raw is the record's encoding, length prefix included.
	Raw     []byte
	headers int // where in Raw the header count starts
}

// Tombstone tells whether the record's value is null.
func (v RecordView) Tombstone() bool { return v.Value == nil }

// Offset is the record's offset in a batch whose base offset is base. Kafka's offset delta is
// an int32: a varint past its range wraps, as compaction has always read stored records.
func (v RecordView) Offset(base uint64) uint64 { return base + uint64(int32(v.OffsetDelta)) }

// Next reads the next record: its length (at least the attributes byte, within the bytes
// left), attributes (unused in magic 2), timestamp and offset deltas, key and value. Every
// field is read within the record's length.
func (rr *RecordReader) Next() (RecordView, error) {
	r := &rr.r
	start := r.off
	l, err := r.varint()
	if err != nil {
		return RecordView{}, err
	}
	if l < 1 || l > int64(len(r.b)-r.off) {
		return RecordView{}, errorsmod.Wrapf(ErrInvalidRecordBatch, "record length %d out of range", l)
	}
	end := r.off + int(l)
	body := kreader{b: r.b[:end], off: r.off + 1}
	var v RecordView
	if v.TimestampDelta, err = body.varint(); err != nil {
		return RecordView{}, err
	}
	if v.OffsetDelta, err = body.varint(); err != nil {
		return RecordView{}, err
	}
	if v.Key, err = body.nullable(); err != nil {
		return RecordView{}, err
	}
	if v.Value, err = body.nullable(); err != nil {
		return RecordView{}, err
	}
	v.Raw, v.headers = r.b[start:end], body.off-start
	r.off = end
	return v, nil
}

// Headers reads the record's headers.
func (v RecordView) Headers() HeaderReader {
	return HeaderReader{r: kreader{b: v.Raw, off: v.headers}}
}

// HeaderReader walks a record's headers: Count first, then Next for each.
type HeaderReader struct {
	r kreader
}

// Count reads the header count as written; the caller bounds it.
func (h *HeaderReader) Count() (int64, error) { return h.r.varint() }

// Next reads one header: its key (never null) and value (nil when null).
func (h *HeaderReader) Next() (key, value []byte, err error) {
	if key, err = h.r.bytes(); err != nil {
		return nil, nil, err
	}
	value, err = h.r.nullable()
	return key, value, err
}

// Remaining is how many bytes of the record follow what was read.
func (h *HeaderReader) Remaining() int { return len(h.r.b) - h.r.off }

// kreader reads varints and length-prefixed fields, in the manner of franz-go's kbin.Reader.
type kreader struct {
	b   []byte
	off int
}

func (r *kreader) varint() (int64, error) {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		return 0, errorsmod.Wrap(ErrInvalidRecordBatch, "truncated or overlong varint")
	}
	r.off += n
	return v, nil
}

// nullable reads a length-prefixed field whose length -1 means null (nil); any other field
// read is non-nil.
func (r *kreader) nullable() ([]byte, error) {
	l, err := r.varint()
	if err != nil || l == -1 {
		return nil, err
	}
	return r.field(l)
}

// bytes reads a length-prefixed field that cannot be null.
func (r *kreader) bytes() ([]byte, error) {
	l, err := r.varint()
	if err != nil {
		return nil, err
	}
	return r.field(l)
}

func (r *kreader) field(l int64) ([]byte, error) {
	if l < 0 || l > int64(len(r.b)-r.off) {
		return nil, errorsmod.Wrapf(ErrInvalidRecordBatch, "field length %d out of range", l)
	}
	v := r.b[r.off : r.off+int(l)]
	r.off += int(l)
	if v == nil {
		v = []byte{}
	}
	return v, nil
}
