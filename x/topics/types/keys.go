package types

import (
	"math"

	"cosmossdk.io/collections"
	collcodec "cosmossdk.io/collections/codec"
)

const (
	// ModuleName is the module's name, store key and message route.
	ModuleName = "topics"
	// StoreKey is the module's KV store key.
	StoreKey = ModuleName
	// PendingRecordsStoreKey is the transient store holding the record batch bytes a block
	// writes or deletes until the module's Precommit moves them to the record database
	// (keeper.RecordStore): bytes outside IAVL (no Merkle tree, no node caches), each batch
	// bound to the Merkle state by the SHA-256 stored in the batches collection.
	PendingRecordsStoreKey = "transient_topics_records"
	// RecordDBPrefix is the record database's prefix in the node's application database; it
	// is outside every prefix the SDK's multistore uses ("s/").
	RecordDBPrefix = "topics_records/"
)

// RecordHistoryBlocks is how many blocks a node's record store keeps the bytes a block's
// compaction rewrote or its retention deleted: reads proven at any of the last
// RecordHistoryBlocks heights (about 12 s at bftlogd's block timing) get the bytes that
// height's state commits to, and a node that stops after a block's Precommit replays it. At
// most compaction_bytes_per_block of rewritten bytes per block are kept, beside the deleted
// segments that wait as long.
const RecordHistoryBlocks = 50

// Store prefixes. Changing them breaks existing chain state.
var (
	ParamsKey        = collections.NewPrefix(0)
	TopicsPrefix     = collections.NewPrefix(1)
	PartitionsPrefix = collections.NewPrefix(2)
	// BatchesPrefix keys record batches by (topic, partition, last offset) so that the batch
	// holding offset N is the first key >= (topic, partition, N).
	BatchesPrefix = collections.NewPrefix(3)
	// Prefix 4 held the keyless-record partitioner's cursors (gone: producers partition).
	GroupsPrefix  = collections.NewPrefix(5)
	MembersPrefix = collections.NewPrefix(6)
	// MemberExpiryPrefix indexes members by (expires_at_ms, group, member) for the EndBlocker.
	MemberExpiryPrefix = collections.NewPrefix(7)
	OffsetsPrefix      = collections.NewPrefix(8)
	// GroupTopicsPrefix indexes (topic, group) pairs with committed offsets, for topic deletion.
	GroupTopicsPrefix     = collections.NewPrefix(9)
	ProducerStatesPrefix  = collections.NewPrefix(10)
	RetentionCursorPrefix = collections.NewPrefix(11)
	// BatchMetaPrefix keys each batch's BatchMeta exactly like the batch, for the EndBlocker.
	BatchMetaPrefix = collections.NewPrefix(12)
	// TopicPurgesPrefix keys deleted topics still being purged, by name.
	TopicPurgesPrefix = collections.NewPrefix(13)
	// RecordBytesPrefix keys record batch bytes like their batch, in the record store (or in
	// the module store when a chain gives the keeper no record store).
	RecordBytesPrefix = collections.NewPrefix(14)
	// Prefixes 23, 24 and 25 are the record database's own (x/topics/internal/recordstore).
	// KafkaGroupsPrefix and KafkaMembersPrefix hold Kafka-protocol groups' state and members
	// (a member's expiry is in MemberExpiryPrefix like a native member's).
	KafkaGroupsPrefix  = collections.NewPrefix(15)
	KafkaMembersPrefix = collections.NewPrefix(16)
	// KafkaRebalanceDuePrefix indexes (time, group) at which a Kafka group's join phase may
	// complete, for the EndBlocker.
	KafkaRebalanceDuePrefix = collections.NewPrefix(17)
	// KafkaProducersPrefix keys Kafka idempotent producers' states by ((topic, partition),
	// account, producer id).
	KafkaProducersPrefix = collections.NewPrefix(18)
	// Log compaction (keeper/compaction.go): KeyOffsetsPrefix keys a compacted partition's
	// latest offset of each key by ((topic, partition), SHA-256 of the key);
	// CompactionsPrefix its cleaner state by (topic, partition); CompactionDuePrefix indexes
	// (due time, partition) of scheduled passes and TombstoneDuePrefix (time, partition, key
	// hash) when a tombstone may go.
	KeyOffsetsPrefix    = collections.NewPrefix(19)
	CompactionsPrefix   = collections.NewPrefix(20)
	CompactionDuePrefix = collections.NewPrefix(21)
	TombstoneDuePrefix  = collections.NewPrefix(22)
	// ConsumerGroupsPrefix and ConsumerMembersPrefix hold KIP-848 consumer groups' state.
	ConsumerGroupsPrefix  = collections.NewPrefix(23)
	ConsumerMembersPrefix = collections.NewPrefix(24)
	// ShareGroupsPrefix, ShareMembersPrefix, SharePartitionsPrefix and ShareLockDuePrefix hold
	// KIP-932 share groups' state.
	ShareGroupsPrefix     = collections.NewPrefix(25)
	ShareMembersPrefix    = collections.NewPrefix(26)
	SharePartitionsPrefix = collections.NewPrefix(27)
	ShareLockDuePrefix    = collections.NewPrefix(28)
)

// TopicPartition names one partition of a topic. It is x/topics' one (topic, partition) key:
// comparable, so it keys Go maps (collections.Pair holds pointers and is not), and with
// TopicPartitionKey it is the (topic, partition) part of every store key that has one. Not to be
// confused with TopicPartitions, the protobuf assignment entry (a topic and a list of partitions).
type TopicPartition struct {
	Topic     string
	Partition uint32
}

// TopicPartitionKey is the key codec of a TopicPartition.
//
// Its encoding must never change: it writes exactly the bytes collections.PairKeyCodec(StringKey,
// Uint32Key) writes for the pair (topic, partition), in terminal and non-terminal position alike
// (the topic, a 0x00 terminator, the partition as 4 big-endian bytes), which are also the first
// two parts of the TripleKeyCodec keys the store was laid out with. Existing chain state, the app
// hash, and client/verify (which rebuilds raw store keys to check their proofs) all depend on
// these bytes. TestStoreKeyEncodingUnchanged pins them.
var TopicPartitionKey collcodec.KeyCodec[TopicPartition] = topicPartitionKey{}

// Key codecs of the collections whose entries a verifying client proves (and of the producer
// states), besides TopicPartitionKey for partitions: the keeper stores with them and client/verify rebuilds the same raw store keys.
var (
	// BatchKeyCodec keys record batches by ((topic, partition), last offset).
	BatchKeyCodec = collections.PairKeyCodec(TopicPartitionKey, collections.Uint64Key)
	// KeyOffsetKeyCodec keys compacted partitions' latest offsets by ((topic, partition), key hash).
	KeyOffsetKeyCodec = collections.PairKeyCodec(TopicPartitionKey, collections.BytesKey)
	// CompactionDueKeyCodec keys scheduled compaction passes by (due ms, (topic, partition)).
	CompactionDueKeyCodec = collections.PairKeyCodec(collections.Int64Key, TopicPartitionKey)
	// TombstoneDueKeyCodec keys tombstone deadlines by (due ms, (topic, partition), key hash).
	TombstoneDueKeyCodec = collections.TripleKeyCodec(collections.Int64Key, TopicPartitionKey, collections.BytesKey)
	// ShareLockDueKeyCodec keys share partitions by (earliest lock deadline, group, (topic, partition)).
	ShareLockDueKeyCodec = collections.TripleKeyCodec(collections.Int64Key, collections.StringKey, TopicPartitionKey)
	// OffsetKeyCodec keys committed offsets by (group, (topic, partition)).
	OffsetKeyCodec = collections.PairKeyCodec(collections.StringKey, TopicPartitionKey)
	// ProducerStateKeyCodec keys idempotent-producer states by ((topic, partition), producer).
	ProducerStateKeyCodec = collections.PairKeyCodec(TopicPartitionKey, collections.StringKey)
	// KafkaProducerKeyCodec keys Kafka idempotent-producer states by ((topic, partition),
	// account, producer id).
	KafkaProducerKeyCodec = collections.TripleKeyCodec(TopicPartitionKey, collections.StringKey, collections.Int64Key)
)

// PartitionsOfTopic ranges over every partition key of topic, in partition order: the same
// keys, in the same order, as a prefix range over the topic.
func PartitionsOfTopic(topic string) *collections.Range[TopicPartition] {
	return new(collections.Range[TopicPartition]).
		StartInclusive(TopicPartition{topic, 0}).
		EndInclusive(TopicPartition{topic, math.MaxUint32})
}

// topicPartitionKey delegates every method to the (string, uint32) pair codec, so that a
// TopicPartition encodes, decodes and prints exactly as collections.Join(topic, partition) did.
type topicPartitionKey struct{}

var topicPartitionPair = collections.PairKeyCodec(collections.StringKey, collections.Uint32Key)

func tpPair(tp TopicPartition) collections.Pair[string, uint32] {
	return collections.Join(tp.Topic, tp.Partition)
}

func fromPair(p collections.Pair[string, uint32]) TopicPartition {
	return TopicPartition{Topic: p.K1(), Partition: p.K2()}
}

func (topicPartitionKey) Encode(buffer []byte, key TopicPartition) (int, error) {
	return topicPartitionPair.Encode(buffer, tpPair(key))
}

func (topicPartitionKey) Decode(buffer []byte) (int, TopicPartition, error) {
	n, p, err := topicPartitionPair.Decode(buffer)
	return n, fromPair(p), err
}

func (topicPartitionKey) Size(key TopicPartition) int { return topicPartitionPair.Size(tpPair(key)) }

func (topicPartitionKey) EncodeNonTerminal(buffer []byte, key TopicPartition) (int, error) {
	return topicPartitionPair.EncodeNonTerminal(buffer, tpPair(key))
}

func (topicPartitionKey) DecodeNonTerminal(buffer []byte) (int, TopicPartition, error) {
	n, p, err := topicPartitionPair.DecodeNonTerminal(buffer)
	return n, fromPair(p), err
}

func (topicPartitionKey) SizeNonTerminal(key TopicPartition) int {
	return topicPartitionPair.SizeNonTerminal(tpPair(key))
}

func (topicPartitionKey) EncodeJSON(key TopicPartition) ([]byte, error) {
	return topicPartitionPair.EncodeJSON(tpPair(key))
}

func (topicPartitionKey) DecodeJSON(b []byte) (TopicPartition, error) {
	p, err := topicPartitionPair.DecodeJSON(b)
	return fromPair(p), err
}

func (topicPartitionKey) Stringify(key TopicPartition) string {
	return topicPartitionPair.Stringify(tpPair(key))
}

func (topicPartitionKey) KeyType() string { return "TopicPartition" }

// TopicStoreKey is the raw store key of a topic.
func TopicStoreKey(name string) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(TopicsPrefix.Bytes(), collections.StringKey, name))
}

// PartitionStoreKey is the raw store key of a partition's metadata.
func PartitionStoreKey(topic string, partition uint32) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(PartitionsPrefix.Bytes(), TopicPartitionKey, TopicPartition{topic, partition}))
}

// BatchStoreKey is the raw store key of the batch whose last offset is lastOffset.
func BatchStoreKey(topic string, partition uint32, lastOffset uint64) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(BatchesPrefix.Bytes(), BatchKeyCodec, collections.Join(TopicPartition{topic, partition}, lastOffset)))
}

// OffsetStoreKey is the raw store key of a group's committed offset for a partition.
func OffsetStoreKey(group, topic string, partition uint32) []byte {
	return mustKey(collections.EncodeKeyWithPrefix(OffsetsPrefix.Bytes(), OffsetKeyCodec, collections.Join(group, TopicPartition{topic, partition})))
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
	return k.K1().Topic, k.K1().Partition, k.K2(), true
}

func mustKey(bz []byte, err error) []byte {
	if err != nil {
		panic(err) // string and integer keys always encode
	}
	return bz
}
