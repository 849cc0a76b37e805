package recordstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Prefixes of the record database's own keys, beside the batches' pointers (or bytes) under
// types.RecordBytesPrefix. Changing them breaks existing nodes' record databases; they are
// apart from every prefix of the module store (types/keys.go) though in another database.
var (
	// KeptPrefix keys the kept pointers, those a block replaced or deleted, by (batch key,
	// height); KeptByHeightPrefix indexes them by (height, batch key) to release them in order.
	KeptPrefix         = collections.NewPrefix(23)
	KeptByHeightPrefix = collections.NewPrefix(24)
	// SweepPrefix marks the partitions whose segments a flush removes after its pointer batch,
	// until they are gone.
	SweepPrefix = collections.NewPrefix(25)
)

// ParseKey decodes a record store key: the record bytes prefix, then (topic, partition, last
// offset).
func ParseKey(key []byte) (types.TopicPartition, uint64, error) {
	p := types.RecordBytesPrefix.Bytes()
	if !bytes.HasPrefix(key, p) {
		return types.TopicPartition{}, 0, fmt.Errorf("not a record store key: %x", key)
	}
	n, k, err := types.BatchKeyCodec.Decode(key[len(p):])
	if err != nil || n != len(key)-len(p) {
		return types.TopicPartition{}, 0, fmt.Errorf("record store key %x: %v", key, err)
	}
	return k.K1(), k.K2(), nil
}

// partitionPrefix is the start of every record store key of tp under prefix.
func partitionPrefix(prefix collections.Prefix, tp types.TopicPartition) []byte {
	p := prefix.Bytes()
	buf := make([]byte, len(p)+types.TopicPartitionKey.SizeNonTerminal(tp))
	copy(buf, p)
	if _, err := types.TopicPartitionKey.EncodeNonTerminal(buf[len(p):], tp); err != nil {
		panic(err) // a string and a uint32 always encode
	}
	return buf
}

// keptKey is where the pointer the block at height replaced or deleted at the record store
// key key is kept: after the batch's key, so a batch's kept versions are together.
func keptKey(key []byte, height uint64) []byte {
	return binary.BigEndian.AppendUint64(keptPrefix(key[len(types.RecordBytesPrefix.Bytes()):]), height)
}

// keptPrefix is the start of the keys of the kept pointers of the batch whose key (without
// the record bytes prefix) is batch.
func keptPrefix(batch []byte) []byte {
	return append(bytes.Clone(KeptPrefix.Bytes()), batch...)
}

// keptByHeightKey indexes keptKey(key, height) by height.
func keptByHeightKey(key []byte, height uint64) []byte {
	out := binary.BigEndian.AppendUint64(bytes.Clone(KeptByHeightPrefix.Bytes()), height)
	return append(out, key[len(types.RecordBytesPrefix.Bytes()):]...)
}
