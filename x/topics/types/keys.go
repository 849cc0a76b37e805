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
