package types

// Record returns the i-th record of the batch as a consumer reads it.
func (b RecordBatch) Record(i int) Record {
	r := b.Records[i]
	return Record{
		Offset:          b.BaseOffset + uint64(i),
		Key:             r.Key,
		Value:           r.Value,
		Headers:         r.Headers,
		CreateTimeMs:    r.CreateTimeMs,
		LogAppendTimeMs: b.LogAppendTimeMs,
		Producer:        b.Producer,
		Height:          b.Height,
	}
}

// LastOffset is the offset of the batch's last record (its store key).
func (b RecordBatch) LastOffset() uint64 { return b.BaseOffset + uint64(len(b.Records)) - 1 }

// RecordSize is the record's size as counted against limits: key + value + header keys and values.
func (r BatchRecord) RecordSize() uint64 {
	n := uint64(len(r.Key.GetData()) + len(r.Value.GetData()))
	for _, h := range r.Headers {
		n += uint64(len(h.Key) + len(h.Value))
	}
	return n
}

// NewBytes wraps b as a non-null Bytes; nil stays null.
func NewBytes(b []byte) *Bytes {
	if b == nil {
		return nil
	}
	return &Bytes{Data: b}
}
