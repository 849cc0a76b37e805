package kafka

import (
	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// producedBatch is one Kafka record batch of a produce request. Its bytes go to the chain
// unchanged: the chain stores them as sent, with the base offset set.
type producedBatch struct {
	bytes         []byte
	records       uint32
	compression   kbatch.Compression
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
		size, magic, ok := kbatch.PeekRecordBatch(b)
		if !ok {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "truncated record batch (%d bytes)", len(b))
		}
		if magic != 2 {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "magic %d; only record batches of magic 2 are accepted", uint8(magic))
		}
		if size < kbatch.RecordBatchHeaderSize || size > int64(len(b)) {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "record batch length %d out of range (%d bytes left)", size, len(b))
		}
		batch := b[:size:size]
		h, _ := kbatch.ReadBatchHeader(batch)
		if want := kbatch.RecordBatchCRC(batch); h.CRC != want {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "CRC-32C is %08x, the batch's bytes give %08x", h.CRC, want)
		}
		if h.Control() {
			return nil, errorsmod.Wrap(types.ErrInvalidRecordBatch, "control batches (transaction markers) are written by the chain")
		}
		c := h.Compression()
		if c > kbatch.CompressionZstd {
			return nil, errorsmod.Wrapf(types.ErrUnsupportedCompression, "codec %d", c)
		}
		if h.RecordCount <= 0 {
			return nil, errorsmod.Wrapf(types.ErrEmptyBatch, "record batch has %d records", h.RecordCount)
		}
		if h.LastOffsetDelta != h.RecordCount-1 {
			return nil, errorsmod.Wrapf(types.ErrInvalidRecordBatch, "%d records with last offset delta %d", h.RecordCount, h.LastOffsetDelta)
		}
		out = append(out, producedBatch{
			bytes:         batch,
			records:       uint32(h.RecordCount),
			compression:   c,
			producerID:    h.ProducerID,
			epoch:         h.ProducerEpoch,
			firstSequence: h.BaseSequence,
			transactional: h.Transactional(),
		})
		b = b[size:]
	}
	return out, nil
}
