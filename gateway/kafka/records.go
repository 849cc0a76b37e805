package kafka

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

var (
	crc32c       = crc32.MakeTable(crc32.Castagnoli)
	decompressor = kgo.DefaultDecompressor()
)

// producedBatch is one Kafka record batch of a produce request, decoded.
type producedBatch struct {
	producerID    int64
	firstSequence int32
	records       []types.BatchRecord
}

// decodeBatches reads the record batches (magic 2) of one partition of a produce request.
func decodeBatches(b []byte) ([]producedBatch, int16, error) {
	var out []producedBatch
	for len(b) > 0 {
		if len(b) < 61 {
			return nil, kerr.CorruptMessage.Code, errors.New("truncated record batch")
		}
		size := int(int32(binary.BigEndian.Uint32(b[8:12]))) + 12
		if size < 61 || size > len(b) {
			return nil, kerr.CorruptMessage.Code, errors.New("record batch length out of range")
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(b[:size]); err != nil {
			return nil, kerr.CorruptMessage.Code, err
		}
		if rb.Magic != 2 {
			return nil, kerr.UnsupportedVersion.Code, errors.New("only record batches of magic 2 are accepted")
		}
		if uint32(rb.CRC) != crc32.Checksum(b[21:size], crc32c) {
			return nil, kerr.CorruptMessage.Code, errors.New("record batch CRC mismatch")
		}
		if rb.Attributes&0x10 != 0 || rb.Attributes&0x20 != 0 {
			return nil, kerr.InvalidRecord.Code, errors.New("transactional and control batches are not accepted")
		}
		raw, err := decompressor.Decompress(rb.Records, kgo.CompressionCodecType(rb.Attributes&0x07))
		if err != nil {
			return nil, kerr.UnsupportedCompressionType.Code, err
		}
		pb := producedBatch{producerID: rb.ProducerID, firstSequence: rb.FirstSequence}
		for i := int32(0); i < rb.NumRecords; i++ {
			l, n := binary.Varint(raw)
			if n <= 0 || l < 0 || int(l) > len(raw)-n {
				return nil, kerr.CorruptMessage.Code, errors.New("record length out of range")
			}
			var r kmsg.Record
			if err := r.ReadFrom(raw[:n+int(l)]); err != nil {
				return nil, kerr.CorruptMessage.Code, err
			}
			raw = raw[n+int(l):]
			ts := rb.FirstTimestamp + r.TimestampDelta64
			br := types.BatchRecord{Key: types.NewBytes(r.Key), Value: types.NewBytes(r.Value), CreateTimeMs: ts}
			for _, h := range r.Headers {
				br.Headers = append(br.Headers, types.Header{Key: h.Key, Value: h.Value})
			}
			pb.records = append(pb.records, br)
		}
		out = append(out, pb)
		b = b[size:]
	}
	return out, 0, nil
}

func unwrap(b *types.Bytes) []byte {
	if b == nil {
		return nil
	}
	if b.Data == nil {
		return []byte{}
	}
	return b.Data
}

// encodeBatch writes records (consecutive offsets of one partition) as one uncompressed
// record batch of magic 2 with CreateTime timestamps.
func encodeBatch(recs []types.Record) []byte {
	first := recs[0]
	ts := func(r types.Record) int64 {
		if r.CreateTimeMs > 0 {
			return r.CreateTimeMs
		}
		return r.LogAppendTimeMs
	}
	firstTs, maxTs := ts(first), ts(first)
	var body []byte
	for _, r := range recs {
		t := ts(r)
		firstTs, maxTs = min(firstTs, t), max(maxTs, t)
	}
	for _, r := range recs {
		kr := kmsg.Record{TimestampDelta64: ts(r) - firstTs, OffsetDelta: int32(r.Offset - first.Offset), Key: unwrap(r.Key), Value: unwrap(r.Value)}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // the body after a one-byte zero length
		body = kr.AppendTo(body)
	}
	last := recs[len(recs)-1]
	rb := kmsg.RecordBatch{
		FirstOffset: int64(first.Offset), Magic: 2, LastOffsetDelta: int32(last.Offset - first.Offset),
		FirstTimestamp: firstTs, MaxTimestamp: maxTs, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1,
		NumRecords: int32(len(recs)), Records: body,
	}
	out := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:12], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:21], crc32.Checksum(out[21:], crc32c))
	return out
}
