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

// RecordSize is the record's stored size, counted against every limit: the bytes it occupies
// inside its batch's encoding (its protobuf encoding plus field tag and length). Counting only
// keys, values and headers would let empty headers and nulls be stored for free.
func (r BatchRecord) RecordSize() uint64 {
	n := uint64(r.Size())
	return 1 + uvarintLen(n) + n
}

// StoredSize is the size of b's encoding once SizeBytes holds it: what the store keeps, and
// what partition byte counts and retention_bytes count. recordBytes is the sum of the records'
// RecordSize, so a caller that has it need not walk the records again.
func (b RecordBatch) StoredSize(recordBytes uint64) uint64 {
	b.Records, b.SizeBytes = nil, 0
	base := uint64(b.Size()) + recordBytes
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

// RecordBytes is the sum of the records' RecordSize.
func (b RecordBatch) RecordBytes() uint64 {
	var n uint64
	for _, r := range b.Records {
		n += r.RecordSize()
	}
	return n
}

// Meta is what the EndBlocker keeps of the batch.
func (b RecordBatch) Meta() BatchMeta {
	return BatchMeta{BaseOffset: b.BaseOffset, LogAppendTimeMs: b.LogAppendTimeMs, SizeBytes: b.SizeBytes}
}

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
