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
)
