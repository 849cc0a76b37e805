package types

import "cosmossdk.io/collections"

const (
	// ModuleName is the module's name, store key and message route.
	ModuleName = "topics"
	// StoreKey is the module's KV store key.
	StoreKey = ModuleName
)

// Store prefixes. Changing them breaks existing chain state.
var (
	ParamsKey        = collections.NewPrefix(0)
	TopicsPrefix     = collections.NewPrefix(1)
	PartitionsPrefix = collections.NewPrefix(2)
	// BatchesPrefix keys record batches by (topic, partition, last offset) so that the batch
	// holding offset N is the first key >= (topic, partition, N).
	BatchesPrefix       = collections.NewPrefix(3)
	SpreadCursorsPrefix = collections.NewPrefix(4)
	GroupsPrefix        = collections.NewPrefix(5)
	MembersPrefix       = collections.NewPrefix(6)
	// MemberExpiryPrefix indexes members by (expires_at_ms, group, member) for the EndBlocker.
	MemberExpiryPrefix = collections.NewPrefix(7)
	OffsetsPrefix      = collections.NewPrefix(8)
	// GroupTopicsPrefix indexes (topic, group) pairs with committed offsets, for topic deletion.
	GroupTopicsPrefix     = collections.NewPrefix(9)
	ProducerStatesPrefix  = collections.NewPrefix(10)
	RetentionCursorPrefix = collections.NewPrefix(11)
)

// Key codecs of the collections whose entries a verifying client proves: the keeper stores with
// them and client/verify rebuilds the same raw store keys with them.
var (
	PartitionKeyCodec = collections.PairKeyCodec(collections.StringKey, collections.Uint32Key)
	BatchKeyCodec     = collections.TripleKeyCodec(collections.StringKey, collections.Uint32Key, collections.Uint64Key)
	OffsetKeyCodec    = collections.TripleKeyCodec(collections.StringKey, collections.StringKey, collections.Uint32Key)
)

// TopicStoreKey is the raw store key of a topic.
func TopicStoreKey(name string) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(TopicsPrefix.Bytes(), collections.StringKey, name))
}

// PartitionStoreKey is the raw store key of a partition's metadata.
func PartitionStoreKey(topic string, partition uint32) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(PartitionsPrefix.Bytes(), PartitionKeyCodec, collections.Join(topic, partition)))
}

// BatchStoreKey is the raw store key of the batch whose last offset is lastOffset.
func BatchStoreKey(topic string, partition uint32, lastOffset uint64) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(BatchesPrefix.Bytes(), BatchKeyCodec, collections.Join3(topic, partition, lastOffset)))
}

// OffsetStoreKey is the raw store key of a group's committed offset for a partition.
func OffsetStoreKey(group, topic string, partition uint32) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(OffsetsPrefix.Bytes(), OffsetKeyCodec, collections.Join3(group, topic, partition)))
}

// ParseBatchStoreKey decodes a raw batch store key; ok is false for any other key.
func ParseBatchStoreKey(key []byte) (topic string, partition uint32, lastOffset uint64, ok bool) {
	p := BatchesPrefix.Bytes()
	if len(key) <= len(p) || string(key[:len(p)]) != string(p) {
		return "", 0, 0, false
	}
	n, k, err := BatchKeyCodec.Decode(key[len(p):])
	if err != nil || n != len(key)-len(p) {
		return "", 0, 0, false
	}
	return k.K1(), k.K2(), k.K3(), true
}

func mustKey(bz []byte, err error) []byte {
	if err != nil {
		panic(err) // string and integer keys always encode
	}
	return bz
}
