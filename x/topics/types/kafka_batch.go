package types

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"unicode/utf8"

	errorsmod "cosmossdk.io/errors"
)

// Kafka's RecordBatch v2 (magic 2) is bftlog's record format, on the wire and in the store.
// Layout of the 61-byte header (big-endian):
//
//	0 baseOffset int64 · 8 batchLength int32 · 12 partitionLeaderEpoch int32 · 16 magic int8 ·
//	17 crc uint32 (CRC-32C of bytes 21..end) · 21 attributes int16 · 23 lastOffsetDelta int32 ·
//	27 baseTimestamp int64 · 35 maxTimestamp int64 · 43 producerId int64 ·
//	51 producerEpoch int16 · 53 baseSequence int32 · 57 recordsCount int32 · 61 records
//
// Each record: length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
// keyLength varint (-1: null), key, valueLength varint (-1: null), value, headerCount varint,
// then per header keyLength varint, key, valueLength varint (-1: null), value. Varints are
// zigzag, as encoding/binary's Varint.
const (
	RecordBatchHeaderSize = 61

	attrCompressionMask = 0x07
	attrTransactional   = 0x10
	attrControl         = 0x20
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

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
	if err := checkBatchFraming(b); err != nil {
		return info, err
	}
	attrs := binary.BigEndian.Uint16(b[21:23])
	info.Compression = Compression(attrs & attrCompressionMask)
	info.LogAppendTimes = attrs&0x08 != 0
	info.Transactional = attrs&attrTransactional != 0
	if attrs&attrControl != 0 {
		return info, errorsmod.Wrap(ErrInvalidRecordBatch, "control batches (transaction markers) are written by the chain, not produced")
	}
	if info.Transactional && int64(binary.BigEndian.Uint64(b[43:51])) < 0 {
		return info, errorsmod.Wrap(ErrInvalidRecordBatch, "a transactional batch needs a producer id")
	}
	count := int32(binary.BigEndian.Uint32(b[57:61]))
	if count <= 0 {
		return info, errorsmod.Wrapf(ErrEmptyBatch, "record batch has %d records", count)
	}
	if last := int32(binary.BigEndian.Uint32(b[23:27])); last != count-1 {
		return info, errorsmod.Wrapf(ErrInvalidRecordBatch, "last offset delta %d does not match %d records", last, count)
	}
	info.Records = uint32(count)
	info.BaseTimestamp = int64(binary.BigEndian.Uint64(b[27:35]))
	info.MaxTimestamp = int64(binary.BigEndian.Uint64(b[35:43]))
	info.ProducerID = int64(binary.BigEndian.Uint64(b[43:51]))
	info.ProducerEpoch = int16(binary.BigEndian.Uint16(b[51:53]))
	info.BaseSequence = int32(binary.BigEndian.Uint32(b[53:57]))

	records := b[RecordBatchHeaderSize:]
	if info.Compression != CompressionNone {
		var err error
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
	r := kreader{b: records}
	if lim.RequireKeys {
		info.Keys = make([]RecordKey, 0, count)
	}
	for i := int32(0); i < count; i++ {
		start := r.off
		if err := r.record(i, lim, &info); err != nil {
			return info, errorsmod.Wrapf(err, "record %d", i)
		}
		if size := uint64(r.off - start); size > lim.MaxRecordBytes {
			return info, errorsmod.Wrapf(ErrRecordTooLarge, "record %d is %d bytes, the limit is %d", i, size, lim.MaxRecordBytes)
		}
	}
	if r.off != len(records) {
		return info, errorsmod.Wrapf(ErrInvalidRecordBatch, "%d bytes follow the last record", len(records)-r.off)
	}
	return info, nil
}

// checkBatchFraming checks that b is exactly one magic-2 batch with a correct CRC.
func checkBatchFraming(b []byte) error {
	if len(b) < RecordBatchHeaderSize {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "record batch is %d bytes, shorter than its %d-byte header", len(b), RecordBatchHeaderSize)
	}
	if n := int64(int32(binary.BigEndian.Uint32(b[8:12]))) + 12; n != int64(len(b)) {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "batch length field says %d bytes, the batch is %d", n, len(b))
	}
	if b[16] != 2 {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "magic %d; only record batches of magic 2 are accepted", b[16])
	}
	if got, want := binary.BigEndian.Uint32(b[17:21]), crc32.Checksum(b[21:], crc32c); got != want {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "CRC-32C is %08x, the batch's bytes give %08x", got, want)
	}
	return nil
}

// RecordBatchCount returns the record count of a batch whose framing is valid (0 otherwise).
func RecordBatchCount(b []byte) uint32 {
	if len(b) < RecordBatchHeaderSize {
		return 0
	}
	return uint32(max(int32(binary.BigEndian.Uint32(b[57:61])), 0))
}

// WithBaseOffset returns a copy of b with its base offset set, as a broker writes it on append.
// The base offset lies outside the CRC, so the producer's CRC stays valid.
func WithBaseOffset(b []byte, base uint64) []byte {
	out := make([]byte, len(b))
	copy(out, b)
	binary.BigEndian.PutUint64(out[0:8], base)
	return out
}

// kreader walks encoded records without allocating.
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

// bytes skips a length-prefixed field and returns it; null (-1) returns nil, ok only if
// nullable.
func (r *kreader) bytes(nullable bool) ([]byte, bool, error) {
	l, err := r.varint()
	if err != nil {
		return nil, false, err
	}
	if l == -1 && nullable {
		return nil, true, nil
	}
	if l < 0 || l > int64(len(r.b)-r.off) {
		return nil, false, errorsmod.Wrapf(ErrInvalidRecordBatch, "field length %d out of range", l)
	}
	v := r.b[r.off : r.off+int(l)]
	r.off += int(l)
	return v, false, nil
}

// record checks the i-th record's framing (and with lim.RequireKeys collects its key).
func (r *kreader) record(i int32, lim BatchLimits, info *BatchInfo) error {
	l, err := r.varint()
	if err != nil {
		return err
	}
	if l < 0 || l > int64(len(r.b)-r.off) {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "record length %d out of range", l)
	}
	end := r.off + int(l)
	body := kreader{b: r.b[:end], off: r.off}
	if body.off >= end {
		return errorsmod.Wrap(ErrInvalidRecordBatch, "empty record")
	}
	body.off++                               // attributes: unused in magic 2
	if _, err := body.varint(); err != nil { // timestamp delta
		return err
	}
	delta, err := body.varint()
	if err != nil {
		return err
	}
	if delta != int64(i) {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "offset delta %d; records must have consecutive deltas from 0", delta)
	}
	key, nullKey, err := body.bytes(true)
	if err != nil {
		return err
	}
	_, nullValue, err := body.bytes(true)
	if err != nil {
		return err
	}
	if lim.RequireKeys {
		if nullKey {
			return errorsmod.Wrap(ErrMissingKey, "a compacted topic keeps records by key; this one has none")
		}
		info.Keys = append(info.Keys, RecordKey{Key: key, Tombstone: nullValue})
	}
	nh, err := body.varint()
	if err != nil {
		return err
	}
	if nh < 0 || nh > int64(lim.MaxHeaders) {
		return errorsmod.Wrapf(ErrTooManyHeaders, "%d headers, the limit is %d", nh, lim.MaxHeaders)
	}
	for h := int64(0); h < nh; h++ {
		k, _, err := body.bytes(false)
		if err != nil {
			return err
		}
		if !utf8.Valid(k) {
			return errorsmod.Wrapf(ErrInvalidRecordBatch, "header %d key is not UTF-8", h)
		}
		if _, _, err := body.bytes(true); err != nil {
			return err
		}
	}
	if body.off != end {
		return errorsmod.Wrapf(ErrInvalidRecordBatch, "record length %d does not match its fields (%d)", l, body.off-r.off)
	}
	r.off = end
	return nil
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
	if err := checkBatchFraming(b); err != nil {
		return nil, 0, err
	}
	count := int32(binary.BigEndian.Uint32(b[57:61]))
	if count < 0 {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRecordBatch, "record count %d", count)
	}
	records := b[RecordBatchHeaderSize:]
	if c := RecordBatchCompression(b); c != CompressionNone {
		lim := min(limit, MaxDecodedBatchBytes)
		var err error
		if records, err = decompress(c, records, lim); err != nil {
			if errorsmod.IsOf(err, ErrBatchTooLarge) {
				return nil, lim, err
			}
			return nil, 0, err
		}
	} else if uint64(len(records)) > limit {
		return nil, 0, errorsmod.Wrapf(ErrBatchTooLarge, "records are %d bytes, the limit is %d", len(records), limit)
	}
	recs, err := decodeRecords(b, count, records)
	return recs, uint64(len(records)), err
}

// RecordBatchCompression is the codec of a batch whose framing is valid.
func RecordBatchCompression(b []byte) Compression {
	if len(b) < RecordBatchHeaderSize {
		return CompressionNone
	}
	return Compression(binary.BigEndian.Uint16(b[21:23]) & attrCompressionMask)
}

// decodeRecords decodes the count records of batch b, whose (decompressed) records are records.
func decodeRecords(b []byte, count int32, records []byte) ([]KafkaRecord, error) {
	base := int64(binary.BigEndian.Uint64(b[0:8]))
	baseTs := int64(binary.BigEndian.Uint64(b[27:35]))
	// The count is the sender's word: each record takes at least 7 bytes (length, attributes,
	// timestamp and offset deltas, key, value, header count), so the bytes bound the capacity.
	out := make([]KafkaRecord, 0, min(int(count), len(records)/7))
	r := kreader{b: records}
	for i := int32(0); i < count; i++ {
		l, err := r.varint()
		if err != nil {
			return nil, err
		}
		if l < 1 || l > int64(len(r.b)-r.off) {
			return nil, errorsmod.Wrapf(ErrInvalidRecordBatch, "record %d length %d out of range", i, l)
		}
		end := r.off + int(l)
		body := kreader{b: r.b[:end], off: r.off + 1}
		tsDelta, err := body.varint()
		if err != nil {
			return nil, err
		}
		offDelta, err := body.varint()
		if err != nil {
			return nil, err
		}
		rec := KafkaRecord{Offset: base + offDelta, Timestamp: baseTs + tsDelta}
		var null bool
		if rec.Key, null, err = body.bytes(true); err != nil {
			return nil, err
		} else if !null && rec.Key == nil {
			rec.Key = []byte{}
		}
		if rec.Value, null, err = body.bytes(true); err != nil {
			return nil, err
		} else if !null && rec.Value == nil {
			rec.Value = []byte{}
		}
		nh, err := body.varint()
		if err != nil || nh < 0 || nh > int64(end-body.off) {
			return nil, errorsmod.Wrapf(ErrInvalidRecordBatch, "record %d header count %d", i, nh)
		}
		for h := int64(0); h < nh; h++ {
			k, _, err := body.bytes(false)
			if err != nil {
				return nil, err
			}
			v, null, err := body.bytes(true)
			if err != nil {
				return nil, err
			}
			if !null && v == nil {
				v = []byte{}
			}
			rec.Headers = append(rec.Headers, Header{Key: string(k), Value: v})
		}
		r.off = end
		out = append(out, rec)
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

// EncodeRecordBatch writes records as one Kafka record batch (magic 2, CreateTime, no
// producer id), compressed with c. Producers call it; the chain assigns the base offset.
func EncodeRecordBatch(records []BatchRecord, c Compression) ([]byte, error) {
	if len(records) == 0 {
		return nil, errorsmod.Wrap(ErrEmptyBatch, "no records")
	}
	baseTs, maxTs := records[0].CreateTimeMs, records[0].CreateTimeMs
	for _, r := range records {
		baseTs, maxTs = min(baseTs, r.CreateTimeMs), max(maxTs, r.CreateTimeMs)
	}
	var body, rec []byte
	for i, r := range records {
		rec = append(rec[:0], 0) // attributes
		rec = binary.AppendVarint(rec, r.CreateTimeMs-baseTs)
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
	out := make([]byte, RecordBatchHeaderSize, RecordBatchHeaderSize+len(body))
	binary.BigEndian.PutUint32(out[8:12], uint32(RecordBatchHeaderSize-12+len(body)))
	out[16] = 2
	binary.BigEndian.PutUint16(out[21:23], uint16(c))
	binary.BigEndian.PutUint32(out[23:27], uint32(len(records)-1))
	binary.BigEndian.PutUint64(out[27:35], uint64(baseTs))
	binary.BigEndian.PutUint64(out[35:43], uint64(maxTs))
	binary.BigEndian.PutUint64(out[43:51], ^uint64(0)) // producerId -1
	binary.BigEndian.PutUint16(out[51:53], ^uint16(0)) // producerEpoch -1
	binary.BigEndian.PutUint32(out[53:57], ^uint32(0)) // baseSequence -1
	binary.BigEndian.PutUint32(out[57:61], uint32(len(records)))
	out = append(out, body...)
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32c))
	return out, nil
}

func appendNullable(b []byte, v *Bytes) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v.Data)))
	return append(b, v.Data...)
}

// RecordBatchBaseOffset returns the base offset written in a batch's header.
func RecordBatchBaseOffset(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b[0:8])
}

// WithProducer returns a copy of a valid batch b as a Kafka idempotent producer sends it:
// producer id, epoch and base sequence set in the header, the CRC-32C (which covers them)
// recomputed.
func WithProducer(b []byte, producerID int64, epoch int16, baseSequence int32) []byte {
	out := append([]byte(nil), b...)
	binary.BigEndian.PutUint64(out[43:51], uint64(producerID))
	binary.BigEndian.PutUint16(out[51:53], uint16(epoch))
	binary.BigEndian.PutUint32(out[53:57], uint32(baseSequence))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32c))
	return out
}

// IsControlBatch tells whether b is a control batch (a transaction marker), which holds no
// records for consumers.
func IsControlBatch(b []byte) bool {
	return len(b) >= RecordBatchHeaderSize && binary.BigEndian.Uint16(b[21:23])&attrControl != 0
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
	out := make([]byte, RecordBatchHeaderSize, RecordBatchHeaderSize+len(body))
	binary.BigEndian.PutUint32(out[8:12], uint32(RecordBatchHeaderSize-12+len(body)))
	out[16] = 2
	binary.BigEndian.PutUint16(out[21:23], attrTransactional|attrControl)
	binary.BigEndian.PutUint64(out[27:35], uint64(ts))
	binary.BigEndian.PutUint64(out[35:43], uint64(ts))
	binary.BigEndian.PutUint64(out[43:51], uint64(producerID))
	binary.BigEndian.PutUint16(out[51:53], uint16(epoch))
	binary.BigEndian.PutUint32(out[53:57], ^uint32(0)) // baseSequence -1
	binary.BigEndian.PutUint32(out[57:61], 1)
	out = append(out, body...)
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32c))
	return out
}
