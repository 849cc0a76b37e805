package kbatch

import (
	"encoding/binary"
	"math"
	"unicode/utf8"

	errorsmod "cosmossdk.io/errors"
)

// BatchLimits bound one batch: the producer pays for and the node holds at most these.
type BatchLimits struct {
	// MaxRecordBytes bounds one record's encoded size (length prefix included, uncompressed).
	MaxRecordBytes uint64
	// MaxDecompressedBytes bounds the records' bytes once decompressed: the hard bound on what
	// a compressed batch may expand to.
	MaxDecompressedBytes uint64
	// MaxHeaders bounds one record's headers.
	MaxHeaders uint32
	// RequireKeys refuses records without a key (a compacted topic's) and collects every
	// record's key into BatchInfo.Keys.
	RequireKeys bool
}

// BatchInfo is what CheckRecordBatch learns of a valid batch.
type BatchInfo struct {
	Records     uint32
	Compression Compression
	// RecordBytes is the records' encoded size once decompressed (what gas is charged for).
	// On a refusal it is what was decompressed before it, so that work is charged as well.
	RecordBytes    uint64
	BaseTimestamp  int64
	MaxTimestamp   int64
	ProducerID     int64
	ProducerEpoch  int16
	BaseSequence   int32
	Transactional  bool
	LogAppendTimes bool
	// Keys holds each record's key in order, with RequireKeys (aliasing the decompressed records).
	Keys []RecordKey
}

// RecordKey is a record's key and whether the record is a tombstone (a null value).
type RecordKey struct {
	Key       []byte
	Tombstone bool
}

// CheckRecordBatch checks one record batch in a single pass without a Go object per record:
// framing, magic, CRC-32C, attributes, record count and consecutive offset deltas, every
// record's framing, size and header count. A compressed batch is decompressed within
// lim.MaxDecompressedBytes.
func CheckRecordBatch(b []byte, lim BatchLimits) (BatchInfo, error) {
	var info BatchInfo
	h, err := readBatch(b)
	if err != nil {
		return info, err
	}
	info.Compression = h.Compression()
	info.LogAppendTimes = h.LogAppendTime()
	info.Transactional = h.Transactional()
	if h.Control() {
		return info, errorsmod.Wrap(ErrInvalidRecordBatch, "control batches (transaction markers) are written by the chain, not produced")
	}
	if info.Transactional && h.ProducerID < 0 {
		return info, errorsmod.Wrap(ErrInvalidRecordBatch, "a transactional batch needs a producer id")
	}
	count := h.RecordCount
	if count <= 0 {
		return info, errorsmod.Wrapf(ErrEmptyBatch, "record batch has %d records", count)
	}
	if h.LastOffsetDelta != count-1 {
		return info, errorsmod.Wrapf(ErrInvalidRecordBatch, "last offset delta %d does not match %d records", h.LastOffsetDelta, count)
	}
	info.Records = uint32(count)
	info.BaseTimestamp = h.BaseTimestamp
	info.MaxTimestamp = h.MaxTimestamp
	info.ProducerID = h.ProducerID
	info.ProducerEpoch = h.ProducerEpoch
	info.BaseSequence = h.BaseSequence

	records := b[RecordBatchHeaderSize:]
	if info.Compression != CompressionNone {
		if records, err = decompress(info.Compression, records, lim.MaxDecompressedBytes); err != nil {
			if errorsmod.IsOf(err, ErrBatchTooLarge) {
				// Decompressed up to the bound before refusing: that work is charged too.
				info.RecordBytes = lim.MaxDecompressedBytes
			}
			return info, err
		}
	}
	info.RecordBytes = uint64(len(records))
	if info.RecordBytes > lim.MaxDecompressedBytes {
		return info, errorsmod.Wrapf(ErrBatchTooLarge, "records are %d bytes, the limit is %d", info.RecordBytes, lim.MaxDecompressedBytes)
	}
	rr := NewRecordReader(records)
	if lim.RequireKeys {
		info.Keys = make([]RecordKey, 0, count)
	}
	for i := int32(0); i < count; i++ {
		rec, err := rr.Next()
		if err == nil {
			err = checkRecord(rec, i, lim, &info)
		}
		if err != nil {
			return info, errorsmod.Wrapf(err, "record %d", i)
		}
		if size := uint64(len(rec.Raw)); size > lim.MaxRecordBytes {
			return info, errorsmod.Wrapf(ErrRecordTooLarge, "record %d is %d bytes, the limit is %d", i, size, lim.MaxRecordBytes)
		}
	}
	if n := rr.Remaining(); n != 0 {
		return info, errorsmod.Wrapf(ErrInvalidRecordBatch, "%d bytes follow the last record", n)
	}
	return info, nil
}

// checkRecord checks what CheckRecordBatch asks of the i-th record beyond its framing to its
// value: consecutive offset deltas, a key with lim.RequireKeys (collected), the header count
// and every header's framing and UTF-8 key, and no byte past the headers.
func checkRecord(rec RecordView, i int32, lim BatchLimits, info *BatchInfo) error {
	if rec.OffsetDelta != int64(i) {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "offset delta %d; records must have consecutive deltas from 0", rec.OffsetDelta)
	}
	if lim.RequireKeys {
		if rec.Key == nil {
			return errorsmod.Wrap(ErrMissingKey, "a compacted topic keeps records by key; this one has none")
		}
		info.Keys = append(info.Keys, RecordKey{Key: rec.Key, Tombstone: rec.Tombstone()})
	}
	hs := rec.Headers()
	nh, err := hs.Count()
	if err != nil {
		return err
	}
	if nh < 0 || nh > int64(lim.MaxHeaders) {
		return errorsmod.Wrapf(ErrTooManyHeaders, "%d headers, the limit is %d", nh, lim.MaxHeaders)
	}
	for h := int64(0); h < nh; h++ {
		k, _, err := hs.Next()
		if err != nil {
			return err
		}
		if !utf8.Valid(k) {
			return errorsmod.Wrapf(ErrInvalidRecordBatch, "header %d key is not UTF-8", h)
		}
	}
	if n := hs.Remaining(); n != 0 {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "%d bytes of the record follow its headers", n)
	}
	return nil
}

// readBatch reads the header of b, checking that b is exactly one magic-2 batch with a
// correct CRC.
func readBatch(b []byte) (BatchHeader, error) {
	h, ok := ReadBatchHeader(b)
	if !ok {
		return h, errorsmod.Wrapf(ErrInvalidRecordBatch, "record batch is %d bytes, shorter than its %d-byte header", len(b), RecordBatchHeaderSize)
	}
	if n := h.Size(); n != int64(len(b)) {
		return h, errorsmod.Wrapf(ErrInvalidRecordBatch, "batch length field says %d bytes, the batch is %d", n, len(b))
	}
	if h.Magic != 2 {
		return h, errorsmod.Wrapf(ErrInvalidRecordBatch, "magic %d; only record batches of magic 2 are accepted", uint8(h.Magic))
	}
	if want := RecordBatchCRC(b); h.CRC != want {
		return h, errorsmod.Wrapf(ErrInvalidRecordBatch, "CRC-32C is %08x, the batch's bytes give %08x", h.CRC, want)
	}
	return h, nil
}

// CheckBatchFraming checks that b is exactly one magic-2 batch with a correct CRC, without
// reading its records (a stored batch's check).
func CheckBatchFraming(b []byte) error {
	_, err := readBatch(b)
	return err
}

// RecordBatchCount returns the record count of a batch whose framing is valid (0 otherwise).
func RecordBatchCount(b []byte) uint32 {
	h, _ := ReadBatchHeader(b)
	return uint32(max(h.RecordCount, 0))
}

// WithBaseOffset returns a copy of b with its base offset set, as a broker writes it on append.
// The base offset lies outside the CRC, so the producer's CRC stays valid.
func WithBaseOffset(b []byte, base uint64) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	binary.BigEndian.PutUint64(out[offBaseOffset:], base)
	return out
}

// DecodeRecordBatch decodes the records of a stored or produced batch (clients: consumers,
// verifiers, the console). Offsets are base offset + delta; timestamps base + delta.
func DecodeRecordBatch(b []byte) ([]KafkaRecord, error) {
	recs, _, err := DecodeRecordBatchWithin(b, math.MaxUint64)
	return recs, err
}

// DecodeRecordBatchWithin is DecodeRecordBatch for records of at most limit bytes
// (ErrBatchTooLarge past it; a compressed batch is decompressed no further, and never past
// MaxDecodedBatchBytes). It also returns the records' size, or on that refusal of a compressed
// batch the bytes it made the reader decompress.
func DecodeRecordBatchWithin(b []byte, limit uint64) ([]KafkaRecord, uint64, error) {
	h, err := readBatch(b)
	if err != nil {
		return nil, 0, err
	}
	count := h.RecordCount
	if count < 0 {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRecordBatch, "record count %d", count)
	}
	records := b[RecordBatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		lim := min(limit, MaxDecodedBatchBytes)
		if records, err = decompress(c, records, lim); err != nil {
			if errorsmod.IsOf(err, ErrBatchTooLarge) {
				return nil, lim, err
			}
			return nil, 0, err
		}
	} else if uint64(len(records)) > limit {
		return nil, 0, errorsmod.Wrapf(ErrBatchTooLarge, "records are %d bytes, the limit is %d", len(records), limit)
	}
	recs, err := decodeRecords(h, records)
	return recs, uint64(len(records)), err
}

// RecordBatchCompression is the codec of a batch whose framing is valid.
func RecordBatchCompression(b []byte) Compression {
	h, _ := ReadBatchHeader(b)
	return h.Compression()
}

// decodeRecords decodes the h.RecordCount records of a batch with header h, whose
// (decompressed) records are records.
func decodeRecords(h BatchHeader, records []byte) ([]KafkaRecord, error) {
	count := h.RecordCount
	// The count is the sender's word: each record takes at least 7 bytes (length, attributes,
	// timestamp and offset deltas, key, value, header count), so the bytes bound the capacity.
	out := make([]KafkaRecord, 0, min(int(count), len(records)/7))
	rr := NewRecordReader(records)
	for i := int32(0); i < count; i++ {
		rec, err := rr.Next()
		if err != nil {
			return nil, errorsmod.Wrapf(err, "record %d", i)
		}
		kr := KafkaRecord{Offset: h.BaseOffset + rec.OffsetDelta, Timestamp: h.BaseTimestamp + rec.TimestampDelta, Key: rec.Key, Value: rec.Value}
		hs := rec.Headers()
		nh, err := hs.Count()
		if err != nil || nh < 0 || nh > int64(hs.Remaining()) {
			return nil, errorsmod.Wrapf(ErrInvalidRecordBatch, "record %d header count %d", i, nh)
		}
		for j := int64(0); j < nh; j++ {
			k, v, err := hs.Next()
			if err != nil {
				return nil, err
			}
			kr.Headers = append(kr.Headers, Header{Key: string(k), Value: v})
		}
		out = append(out, kr)
	}
	return out, nil
}

// MaxDecodedBatchBytes bounds what a client decompresses of one batch it reads.
const MaxDecodedBatchBytes = 64 << 20

// KafkaRecord is one decoded record of a batch. Key and Value are nil when null and alias the
// batch's (decompressed) bytes.
type KafkaRecord struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Header is a record header. Its key is never null; its value is nil when null. It has the
// fields of x/topics' proto Header, so each converts to the other.
type Header struct {
	Key   string
	Value []byte
}

// Record is a record as a producer writes it, before it is encoded into a batch. Key and
// Value are nil when null (an empty non-nil slice is an empty value); Timestamp is its
// CreateTime in milliseconds.
type Record struct {
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp int64
}

// EncodeRecordBatch writes records as one Kafka record batch (magic 2, CreateTime, no
// producer id), compressed with c. Producers call it; the chain assigns the base offset.
func EncodeRecordBatch(records []Record, c Compression) ([]byte, error) {
	if len(records) == 0 {
		return nil, errorsmod.Wrap(ErrEmptyBatch, "no records")
	}
	baseTs, maxTs := records[0].Timestamp, records[0].Timestamp
	for _, r := range records {
		baseTs, maxTs = min(baseTs, r.Timestamp), max(maxTs, r.Timestamp)
	}
	var body, rec []byte
	for i, r := range records {
		rec = append(rec[:0], 0) // attributes
		rec = binary.AppendVarint(rec, r.Timestamp-baseTs)
		rec = binary.AppendVarint(rec, int64(i))
		rec = appendNullable(rec, r.Key)
		rec = appendNullable(rec, r.Value)
		rec = binary.AppendVarint(rec, int64(len(r.Headers)))
		for _, h := range r.Headers {
			rec = binary.AppendVarint(rec, int64(len(h.Key)))
			rec = append(rec, h.Key...)
			if h.Value == nil {
				rec = binary.AppendVarint(rec, -1)
			} else {
				rec = binary.AppendVarint(rec, int64(len(h.Value)))
				rec = append(rec, h.Value...)
			}
		}
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	if c != CompressionNone {
		var err error
		if body, err = compress(c, body); err != nil {
			return nil, err
		}
	}
	h := BatchHeader{
		Attributes:      int16(c),
		LastOffsetDelta: int32(len(records) - 1),
		BaseTimestamp:   baseTs,
		MaxTimestamp:    maxTs,
		ProducerID:      -1,
		ProducerEpoch:   -1,
		BaseSequence:    -1,
		RecordCount:     int32(len(records)),
	}
	return newBatch(h, body), nil
}

func appendNullable(b []byte, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// RecordBatchBaseOffset returns the base offset written in a batch's header.
func RecordBatchBaseOffset(b []byte) uint64 {
	if len(b) < offBaseOffset+8 {
		return 0
	}
	return binary.BigEndian.Uint64(b[offBaseOffset:])
}

// WithProducer returns a copy of a valid batch b as a Kafka idempotent producer sends it:
// producer id, epoch and base sequence set in the header, the CRC-32C (which covers them)
// recomputed.
func WithProducer(b []byte, producerID int64, epoch int16, baseSequence int32) []byte {
	out := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(out[offProducerID:], uint64(producerID))
	binary.BigEndian.PutUint16(out[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(out[offBaseSequence:], uint32(baseSequence))
	sealBatch(out)
	return out
}

// IsControlBatch tells whether b is a control batch (a transaction marker), which holds no
// records for consumers.
func IsControlBatch(b []byte) bool {
	h, ok := ReadBatchHeader(b)
	return ok && h.Control()
}

// EncodeCommitMarker writes the control batch that commits a Kafka transaction of producerID
// at epoch on one partition, as a Kafka broker writes it: transactional and control
// attributes, one control record (key: version 0, type 1 = COMMIT; value: version 0,
// coordinator epoch 0), timestamp ts. It takes one offset.
func EncodeCommitMarker(producerID int64, epoch int16, ts int64) []byte {
	rec := []byte{0}                  // attributes
	rec = binary.AppendVarint(rec, 0) // timestamp delta
	rec = binary.AppendVarint(rec, 0) // offset delta
	rec = binary.AppendVarint(rec, 4)
	rec = append(rec, 0, 0, 0, 1) // key: version 0, type COMMIT
	rec = binary.AppendVarint(rec, 6)
	rec = append(rec, 0, 0, 0, 0, 0, 0) // value: version 0, coordinator epoch 0
	rec = binary.AppendVarint(rec, 0)   // no headers
	body := binary.AppendVarint(nil, int64(len(rec)))
	body = append(body, rec...)
	return newBatch(BatchHeader{
		Attributes:    attrTransactional | attrControl,
		BaseTimestamp: ts,
		MaxTimestamp:  ts,
		ProducerID:    producerID,
		ProducerEpoch: epoch,
		BaseSequence:  -1,
		RecordCount:   1,
	}, body)
}

// newBatch writes a magic-2 batch of header h (base offset as h gives it, length, magic and
// CRC set here) followed by the encoded records body.
func newBatch(h BatchHeader, body []byte) []byte {
	h.BatchLength = int32(RecordBatchHeaderSize - batchLengthBase + len(body))
	h.Magic = 2
	out := make([]byte, RecordBatchHeaderSize, RecordBatchHeaderSize+len(body))
	h.put(out)
	out = append(out, body...)
	sealBatch(out)
	return out
}
