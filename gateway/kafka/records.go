package kafka

import (
	"encoding/binary"
	"hash/crc32"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/types"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// producedBatch is one Kafka record batch of a produce request. Its bytes go to the chain
// unchanged: the chain stores them as sent, with the base offset set.
type producedBatch struct {
	bytes         []byte
	records       uint32
	compression   types.Compression
	producerID    int64
	epoch         int16
	firstSequence int32
	transactional bool
}

// splitBatches splits one partition's record set of a produce request into its record batches
// (a client may send more than one) and checks what costs nothing here: framing, magic 2, the
// CRC-32C, the attributes and the record count. Every record is checked by the chain
// (CheckRecordBatch), whose refusal comes back as a registered error; so do these.
func splitBatches(b []byte) ([]producedBatch, error) {
	var out []producedBatch
	for len(b) > 0 {
		// Legacy message sets (magic 0 and 1) keep the magic at byte 16 too.
		if len(b) < 17 {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "truncated record batch (%d bytes)", len(b))
		}
		if b[16] != 2 {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "magic %d; only record batches of magic 2 are accepted", b[16])
		}
		size := int64(int32(binary.BigEndian.Uint32(b[8:12]))) + 12
		if size < types.RecordBatchHeaderSize || size > int64(len(b)) {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "record batch length %d out of range (%d bytes left)", size, len(b))
		}
		batch := b[:size:size]
		if got, want := binary.BigEndian.Uint32(batch[17:21]), crc32.Checksum(batch[21:], crc32c); got != want {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "CRC-32C is %08x, the batch's bytes give %08x", got, want)
		}
		attrs := binary.BigEndian.Uint16(batch[21:23])
		if attrs&0x20 != 0 {
			return nil, errorsmod.Wrap(types.ErrInvalidRecordBatch, "control batches (transaction markers) are written by the chain")
		}
		c := types.Compression(attrs & 0x07)
		if c > types.CompressionZstd {
			return nil, errorsmod.Wrapf(types.ErrUnsupportedCompression, "codec %d", c)
		}
		count := int32(binary.BigEndian.Uint32(batch[57:61]))
		if count <= 0 {
			return nil, errorsmod.Wrapf(types.ErrEmptyBatch, "record batch has %d records", count)
		}
		if last := int32(binary.BigEndian.Uint32(batch[23:27])); last != count-1 {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "%d records with last offset delta %d", count, last)
		}
		out = append(out, producedBatch{
			bytes:         batch,
			records:       uint32(count),
			compression:   c,
			producerID:    int64(binary.BigEndian.Uint64(batch[43:51])),
			epoch:         int16(binary.BigEndian.Uint16(batch[51:53])),
			firstSequence: int32(binary.BigEndian.Uint32(batch[53:57])),
			transactional: attrs&0x10 != 0,
		})
		b = b[size:]
	}
	return out, nil
}
