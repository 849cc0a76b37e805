package types

import "github.com/bftlog/bftlog/x/topics/kbatch"

// NewProduceBatch encodes records as one record batch for one partition.
func NewProduceBatch(topic string, partition uint32, records []BatchRecord, c kbatch.Compression) (ProduceBatch, error) {
	b, err := EncodeRecordBatch(records, c)
	if err != nil {
		return ProduceBatch{}, err
	}
	return ProduceBatch{Topic: topic, Partition: partition, RecordBatch: b, RecordCount: uint32(len(records))}, nil
}
