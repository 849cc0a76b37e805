package types

import "github.com/bftlog/bftlog/x/topics/kbatch"

// Murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils.murmur2), so that the
// chain places keyed records on the same partition as Kafka's default partitioner does.
func Murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	length := len(data)
	h := seed ^ uint32(length)
	n := length / 4
	for i := 0; i < n; i++ {
		o := i * 4
		k := uint32(data[o]) | uint32(data[o+1])<<8 | uint32(data[o+2])<<16 | uint32(data[o+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n*4:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition is Kafka's default partition for a keyed record: toPositive(murmur2(key)) % n.
func KeyPartition(key []byte, n uint32) uint32 {
	return (uint32(Murmur2(key)) & 0x7fffffff) % n
}

// Producers (the CLI, the Go clients, the gateway) partition and encode client-side, as Kafka
// producers do; the chain only checks and stores the batches. The partitioner sits in types
// because chain-side tests and every client must place a key alike.

// PartitionBatches partitions records as Kafka's default partitioner does — a keyed record
// goes to murmur2(key) % partitions, keyless records stick together on the sticky partition —
// and encodes one batch per partition, in the order partitions are first used.
func PartitionBatches(topic string, partitions uint32, records []BatchRecord, sticky uint32, c kbatch.Compression) ([]ProduceBatch, error) {
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
