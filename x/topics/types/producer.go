package types

// Producers (the CLI, the Go clients, the gateway) partition and encode client-side, as Kafka
// producers do; the chain only checks and stores the batches.

// NewProduceBatch encodes records as one record batch for one partition.
func NewProduceBatch(topic string, partition uint32, records []BatchRecord, c Compression) (ProduceBatch, error) {
	b, err := EncodeRecordBatch(records, c)
	if err != nil {
		return ProduceBatch{}, err
	}
	return ProduceBatch{Topic: topic, Partition: partition, RecordBatch: b, RecordCount: uint32(len(records))}, nil
}

// PartitionBatches partitions records as Kafka's default partitioner does — a keyed record
// goes to murmur2(key) % partitions, keyless records stick together on the sticky partition —
// and encodes one batch per partition, in the order partitions are first used.
func PartitionBatches(topic string, partitions uint32, records []BatchRecord, sticky uint32, c Compression) ([]ProduceBatch, error) {
	var (
		order []uint32
		byP   = map[uint32][]BatchRecord{}
	)
	for _, r := range records {
		p := sticky % partitions
		if r.Key != nil {
			p = KeyPartition(r.Key.Data, partitions)
		}
		if _, ok := byP[p]; !ok {
			order = append(order, p)
		}
		byP[p] = append(byP[p], r)
	}
	out := make([]ProduceBatch, 0, len(order))
	for _, p := range order {
		b, err := NewProduceBatch(topic, p, byP[p], c)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}
