package keeper

import (
	"context"

	"cosmossdk.io/collections"
	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/codec"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Keeper owns the x/topics state: topics, partitions and record batches.
type Keeper struct {
	cdc          codec.BinaryCodec
	addressCodec address.Codec
	// authority may update params and every topic (the gov module account by default).
	authority string

	Schema     collections.Schema
	Params     collections.Item[types.Params]
	Topics     collections.Map[string, types.Topic]
	Partitions collections.Map[types.TopicPartition, types.Partition]
	// Batches is keyed by ((topic, partition), last offset of the batch). It holds each
	// batch without its record bytes, which RecordBytes holds under the same key.
	Batches collections.Map[collections.Pair[types.TopicPartition, uint64], types.RecordBatch]
	// RecordBytes holds each batch's Kafka record batch bytes, in the record store when the
	// app gives one (WithRecordStore), else in the module store.
	RecordBytes collections.Map[collections.Pair[types.TopicPartition, uint64], []byte]
	// BatchMetas holds each batch's append time and stored size under the batch's key, so
	// retention and purges read a few bytes per batch instead of decoding it.
	BatchMetas collections.Map[collections.Pair[types.TopicPartition, uint64], types.BatchMeta]
	// TopicPurges holds deleted topics whose keys the EndBlocker is still removing.
	TopicPurges collections.Map[string, types.TopicPurge]

	Groups collections.Map[string, types.Group]
	// Members is keyed by (group, member address).
	Members collections.Map[collections.Pair[string, string], types.Member]
	// MemberExpiry indexes members by (expires_at_ms, group, member) so the EndBlocker reads
	// only the members that are due. Index maps store true rather than being KeySets: an empty
	// store value leaves ics23 unable to prove the absence of a key next to it (client/verify).
	MemberExpiry collections.Map[collections.Triple[int64, string, string], bool]
	// KafkaGroups holds the Kafka group protocol's state of groups whose members are Kafka
	// clients (groups_kafka.go); KafkaMembers is keyed by (group, member id).
	KafkaGroups  collections.Map[string, types.KafkaGroup]
	KafkaMembers collections.Map[collections.Pair[string, string], types.KafkaMember]
	// KafkaRebalanceDue indexes (time, group) when a Kafka group's join phase may complete.
	KafkaRebalanceDue collections.Map[collections.Pair[int64, string], bool]
	// ConsumerGroups holds KIP-848 consumer groups' state (groups_consumer.go);
	// ConsumerMembers is keyed by (group, member id).
	ConsumerGroups  collections.Map[string, types.ConsumerGroup]
	ConsumerMembers collections.Map[collections.Pair[string, string], types.ConsumerMember]
	// ShareGroups and ShareMembers hold KIP-932 share groups (share_groups.go); SharePartitions
	// each share partition's delivery state, keyed by (group, (topic, partition)); ShareLockDue
	// indexes share partitions by their earliest lock deadline for the EndBlocker.
	ShareGroups     collections.Map[string, types.ShareGroup]
	ShareMembers    collections.Map[collections.Pair[string, string], types.ShareMember]
	SharePartitions collections.Map[collections.Pair[string, types.TopicPartition], types.SharePartition]
	ShareLockDue    collections.Map[collections.Triple[int64, string, types.TopicPartition], bool]
	// Offsets is keyed by (group, (topic, partition)).
	Offsets collections.Map[collections.Pair[string, types.TopicPartition], types.CommittedOffset]
	// GroupTopics indexes (topic, group) pairs that have offsets, for topic deletion.
	GroupTopics collections.Map[collections.Pair[string, string], bool]
	// ProducerStates is keyed by ((topic, partition), producer).
	ProducerStates collections.Map[collections.Pair[types.TopicPartition, string], types.ProducerState]
	// KafkaProducers holds Kafka idempotent producers' last batches, keyed by ((topic,
	// partition), account, producer id) (kafka_producers.go).
	KafkaProducers  collections.Map[collections.Triple[types.TopicPartition, string, int64], types.KafkaProducerState]
	RetentionCursor collections.Item[types.RetentionCursor]
	// Log compaction (compaction.go): each compacted partition's latest offset per key (by the
	// key's SHA-256), its cleaner state, the passes scheduled and the tombstones' deadlines.
	KeyOffsets    collections.Map[collections.Pair[types.TopicPartition, []byte], uint64]
	Compactions   collections.Map[types.TopicPartition, types.CompactionState]
	CompactionDue collections.Map[collections.Pair[int64, types.TopicPartition], bool]
	TombstoneDue  collections.Map[collections.Triple[int64, types.TopicPartition, []byte], uint64]

	// recordStore keeps RecordBytes outside IAVL when the app gives one (WithRecordStore).
	recordStore *RecordStore
	// fetchObs is the optional FetchObserver (metrics); not state.
	fetchObs *fetchObserverSlot
	// bank escrows topic deposits (WithBankKeeper); without it no deposit is taken.
	bank types.BankKeeper
}

// WithBankKeeper returns the keeper escrowing topic and partition deposits through bk. The app
// (depinject) always sets it; a keeper without one (unit tests of the log alone) takes none.
func (k Keeper) WithBankKeeper(bk types.BankKeeper) Keeper {
	k.bank = bk
	return k
}

// NewKeeper builds a Keeper. authority is a bech32 account address.
func NewKeeper(cdc codec.BinaryCodec, addressCodec address.Codec, storeService corestore.KVStoreService, authority string) Keeper {
	if _, err := addressCodec.StringToBytes(authority); err != nil {
		panic("x/topics: invalid authority address: " + err.Error())
	}
	sb := collections.NewSchemaBuilder(storeService)
	k := Keeper{
		cdc:          cdc,
		addressCodec: addressCodec,
		authority:    authority,
		Params:       collections.NewItem(sb, types.ParamsKey, "params", codec.CollValue[types.Params](cdc)),
		Topics:       collections.NewMap(sb, types.TopicsPrefix, "topics", collections.StringKey, codec.CollValue[types.Topic](cdc)),
		Partitions: collections.NewMap(sb, types.PartitionsPrefix, "partitions",
			types.TopicPartitionKey, codec.CollValue[types.Partition](cdc)),
		Batches: collections.NewMap(sb, types.BatchesPrefix, "batches",
			types.BatchKeyCodec, codec.CollValue[types.RecordBatch](cdc)),
		RecordBytes: collections.NewMap(sb, types.RecordBytesPrefix, "record_bytes", types.BatchKeyCodec, collections.BytesValue),
		BatchMetas: collections.NewMap(sb, types.BatchMetaPrefix, "batch_metas",
			types.BatchKeyCodec, codec.CollValue[types.BatchMeta](cdc)),
		TopicPurges: collections.NewMap(sb, types.TopicPurgesPrefix, "topic_purges", collections.StringKey, codec.CollValue[types.TopicPurge](cdc)),
		Groups:      collections.NewMap(sb, types.GroupsPrefix, "groups", collections.StringKey, codec.CollValue[types.Group](cdc)),
		Members: collections.NewMap(sb, types.MembersPrefix, "members",
			collections.PairKeyCodec(collections.StringKey, collections.StringKey), codec.CollValue[types.Member](cdc)),
		MemberExpiry: collections.NewMap(sb, types.MemberExpiryPrefix, "member_expiry",
			collections.TripleKeyCodec(collections.Int64Key, collections.StringKey, collections.StringKey), collections.BoolValue),
		KafkaGroups: collections.NewMap(sb, types.KafkaGroupsPrefix, "kafka_groups", collections.StringKey, codec.CollValue[types.KafkaGroup](cdc)),
		KafkaMembers: collections.NewMap(sb, types.KafkaMembersPrefix, "kafka_members",
			collections.PairKeyCodec(collections.StringKey, collections.StringKey), codec.CollValue[types.KafkaMember](cdc)),
		ConsumerGroups: collections.NewMap(sb, types.ConsumerGroupsPrefix, "consumer_groups", collections.StringKey, codec.CollValue[types.ConsumerGroup](cdc)),
		ConsumerMembers: collections.NewMap(sb, types.ConsumerMembersPrefix, "consumer_members",
			collections.PairKeyCodec(collections.StringKey, collections.StringKey), codec.CollValue[types.ConsumerMember](cdc)),
		ShareGroups: collections.NewMap(sb, types.ShareGroupsPrefix, "share_groups", collections.StringKey, codec.CollValue[types.ShareGroup](cdc)),
		ShareMembers: collections.NewMap(sb, types.ShareMembersPrefix, "share_members",
			collections.PairKeyCodec(collections.StringKey, collections.StringKey), codec.CollValue[types.ShareMember](cdc)),
		SharePartitions: collections.NewMap(sb, types.SharePartitionsPrefix, "share_partitions", types.OffsetKeyCodec, codec.CollValue[types.SharePartition](cdc)),
		ShareLockDue:    collections.NewMap(sb, types.ShareLockDuePrefix, "share_lock_due", types.ShareLockDueKeyCodec, collections.BoolValue),
		KafkaRebalanceDue: collections.NewMap(sb, types.KafkaRebalanceDuePrefix, "kafka_rebalance_due",
			collections.PairKeyCodec(collections.Int64Key, collections.StringKey), collections.BoolValue),
		Offsets: collections.NewMap(sb, types.OffsetsPrefix, "offsets",
			types.OffsetKeyCodec, codec.CollValue[types.CommittedOffset](cdc)),
		GroupTopics: collections.NewMap(sb, types.GroupTopicsPrefix, "group_topics",
			collections.PairKeyCodec(collections.StringKey, collections.StringKey), collections.BoolValue),
		ProducerStates: collections.NewMap(sb, types.ProducerStatesPrefix, "producer_states",
			types.ProducerStateKeyCodec, codec.CollValue[types.ProducerState](cdc)),
		KafkaProducers: collections.NewMap(sb, types.KafkaProducersPrefix, "kafka_producers",
			types.KafkaProducerKeyCodec, codec.CollValue[types.KafkaProducerState](cdc)),
		RetentionCursor: collections.NewItem(sb, types.RetentionCursorPrefix, "retention_cursor", codec.CollValue[types.RetentionCursor](cdc)),
		KeyOffsets:      collections.NewMap(sb, types.KeyOffsetsPrefix, "key_offsets", types.KeyOffsetKeyCodec, collections.Uint64Value),
		Compactions:     collections.NewMap(sb, types.CompactionsPrefix, "compactions", types.TopicPartitionKey, codec.CollValue[types.CompactionState](cdc)),
		CompactionDue:   collections.NewMap(sb, types.CompactionDuePrefix, "compaction_due", types.CompactionDueKeyCodec, collections.BoolValue),
		TombstoneDue:    collections.NewMap(sb, types.TombstoneDuePrefix, "tombstone_due", types.TombstoneDueKeyCodec, collections.Uint64Value),
		fetchObs:        new(fetchObserverSlot),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// Authority returns the module authority address.
func (k Keeper) Authority() string { return k.authority }

// AddressCodec returns the account address codec the keeper validates addresses with.
func (k Keeper) AddressCodec() address.Codec { return k.addressCodec }

// SetParams validates and stores the module params; only the authority may call it via Msg.
func (k Keeper) SetParams(ctx context.Context, p types.Params) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return k.Params.Set(ctx, p)
}

// GetTopic returns a topic or ErrUnknownTopic.
func (k Keeper) GetTopic(ctx context.Context, name string) (types.Topic, error) {
	t, err := k.Topics.Get(ctx, name)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return t, errorsmod.Wrapf(types.ErrUnknownTopic, "topic %q does not exist", name)
	}
	return t, err
}

// GetPartition returns a partition's state, checking the partition is in range.
func (k Keeper) GetPartition(ctx context.Context, topic string, partition uint32) (types.Partition, error) {
	p, err := k.Partitions.Get(ctx, types.TopicPartition{Topic: topic, Partition: partition})
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		if _, terr := k.GetTopic(ctx, topic); terr != nil {
			return p, terr
		}
		return p, errorsmod.Wrapf(types.ErrInvalidPartition, "topic %q has no partition %d", topic, partition)
	}
	return p, err
}

// checkAdmin allows the topic owner and the module authority.
func (k Keeper) checkAdmin(t types.Topic, signer string) error {
	if signer != t.Owner && signer != k.authority {
		return errorsmod.Wrapf(types.ErrUnauthorized, "%s may not administer topic %q (owner %s)", signer, t.Name, t.Owner)
	}
	return nil
}

func (k Keeper) validAddress(addr, what string) error {
	if _, err := k.addressCodec.StringToBytes(addr); err != nil {
		return errorsmod.Wrapf(types.ErrInvalidAddress, "%s %q: %v", what, addr, err)
	}
	return nil
}

func isNotFound(err error) bool { return errorsmod.IsOf(err, collections.ErrNotFound) }
