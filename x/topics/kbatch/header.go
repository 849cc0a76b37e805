package kbatch

import (
	"encoding/binary"
	"hash/crc32"
)

// Kafka's RecordBatch v2 (magic 2) is bftlog's record format, on the wire and in the store.
// Its 61-byte header is big-endian; the offsets below name where each field sits. The CRC-32C
// covers everything from the attributes to the batch's end, so the base offset, batch length,
// partition leader epoch and magic lie outside it (a broker sets the base offset on append).
//
// Each record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
// keyLength varint (-1: null), key, valueLength varint (-1: null), value, headerCount varint,
// then per header keyLength varint, key, valueLength varint (-1: null), value. Varints are
// zigzag, as encoding/binary's Varint. RecordReader walks them.
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offRecordCount          = 57

	// RecordBatchHeaderSize is the v2 header's size: the records start there.
	RecordBatchHeaderSize = 61
	// batchLengthBase is what the batch length field leaves out: the base offset and itself.
	batchLengthBase = offPartitionLeaderEpoch

	attrCompressionMask = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// crc32c is the one CRC-32C table of the batch codec.
var crc32c = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the v2 record batch header, field by field.
type BatchHeader struct {
	BaseOffset int64
	// BatchLength counts the bytes after itself: the batch is BatchLength+12 bytes.
	BatchLength          int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// ReadBatchHeader reads the header of b, whatever its values; false if b is shorter than a
// header. It checks nothing: callers decide what they refuse.
func ReadBatchHeader(b []byte) (BatchHeader, bool) {
	if len(b) < RecordBatchHeaderSize {
		return BatchHeader{}, false
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offPartitionLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}, true
}

// put writes every field of h into b's first RecordBatchHeaderSize bytes (the CRC as h holds
// it: sealBatch recomputes it once the records follow).
func (h BatchHeader) put(b []byte) {
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(h.BatchLength))
	be.PutUint32(b[offPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = byte(h.Magic)
	be.PutUint32(b[offCRC:], h.CRC)
	be.PutUint16(b[offAttributes:], uint16(h.Attributes))
	be.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(h.RecordCount))
}

// Compression is the codec of the batch's records.
func (h BatchHeader) Compression() Compression {
	return Compression(h.Attributes & attrCompressionMask)
}

// LogAppendTime tells whether the batch's timestamps are the broker's (else the producer's).
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attrLogAppendTime != 0 }

// Transactional tells whether the batch belongs to a Kafka transaction.
func (h BatchHeader) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control tells whether the batch is a control batch (a transaction marker).
func (h BatchHeader) Control() bool { return h.Attributes&attrControl != 0 }

// Size is the batch's size in bytes as its length field gives it.
func (h BatchHeader) Size() int64 { return int64(h.BatchLength) + batchLengthBase }

// PeekRecordBatch reads the size and magic that a batch of any magic starts with (legacy
// message sets, magic 0 and 1, keep them at the same places), so that a reader of several
// batches can find the first one's end before it knows its kind; false if b is too short.
func PeekRecordBatch(b []byte) (size int64, magic int8, ok bool) {
	if len(b) <= offMagic {
		return 0, 0, false
	}
	return int64(int32(binary.BigEndian.Uint32(b[offBatchLength:]))) + batchLengthBase, int8(b[offMagic]), true
}

// RecordBatchCRC is the CRC-32C that the header of batch b (at least a header long) should
// hold: that of its bytes from the attributes on.
func RecordBatchCRC(b []byte) uint32 {
	return crc32.Checksum(b[offAttributes:], crc32c)
}

// sealBatch writes b's CRC-32C, once everything it covers is in place.
func sealBatch(b []byte) {
	binary.BigEndian.PutUint32(b[offCRC:], RecordBatchCRC(b))
}
