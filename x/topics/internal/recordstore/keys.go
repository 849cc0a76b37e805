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
	// SupersededPrefix keys the pointers a block replaced or deleted by (batch key, height),
	// kept for types.RecordHistoryBlocks blocks; SupersededByHeightPrefix indexes them by height.
	SupersededPrefix         = collections.NewPrefix(23)
	SupersededByHeightPrefix = collections.NewPrefix(24)
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

// supersededKey is where the pointer the block at height replaced or deleted at the record
// store key key is kept: after the batch's key, so a batch's kept versions are together.
func supersededKey(key []byte, height uint64) []byte {
	return binary.BigEndian.AppendUint64(keptKey(key[len(types.RecordBytesPrefix.Bytes()):]), height)
}

// keptKey is the start of the kept pointers' keys of the batch whose key (without the record
// bytes prefix) is batch.
func keptKey(batch []byte) []byte {
	return append(bytes.Clone(SupersededPrefix.Bytes()), batch...)
}

// supersededByHeightKey indexes supersededKey(key, height) by height.
func supersededByHeightKey(key []byte, height uint64) []byte {
	out := binary.BigEndian.AppendUint64(bytes.Clone(SupersededByHeightPrefix.Bytes()), height)
	return append(out, key[len(types.RecordBytesPrefix.Bytes()):]...)
}

// prefixEnd is the first key after every key starting with prefix.
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
