package types_test

import (
	"bytes"
	"math"
	"testing"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

// TestStoreKeyEncodingUnchanged pins the store key bytes: the TopicPartition codecs must write
// exactly what the (string, uint32) Pair and the Triple codecs the store was laid out with write.
func TestStoreKeyEncodingUnchanged(t *testing.T) {
	var (
		oldPartition = collections.PairKeyCodec(collections.StringKey, collections.Uint32Key)
		oldBatch     = collections.TripleKeyCodec(collections.StringKey, collections.Uint32Key, collections.Uint64Key)
		oldOffset    = collections.TripleKeyCodec(collections.StringKey, collections.StringKey, collections.Uint32Key)
		oldProducer  = collections.TripleKeyCodec(collections.StringKey, collections.Uint32Key, collections.StringKey)
	)
	enc := func(bz []byte, err error) []byte {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return bz
	}
	same := func(what string, got, want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: got %x, want %x", what, got, want)
		}
	}
	pfx := []byte{0x42}
	for _, topic := range []string{"t", "orders.v2", "a-b_c"} {
		for _, p := range []uint32{0, 1, 255, 256, math.MaxUint32} {
			tp := types.TopicPartition{Topic: topic, Partition: p}
			same("partition", enc(collections.EncodeKeyWithPrefix(pfx, types.TopicPartitionKey, tp)),
				enc(collections.EncodeKeyWithPrefix(pfx, oldPartition, collections.Join(topic, p))))
			for _, off := range []uint64{0, 7, math.MaxUint64} {
				same("batch", enc(collections.EncodeKeyWithPrefix(pfx, types.BatchKeyCodec, collections.Join(tp, off))),
					enc(collections.EncodeKeyWithPrefix(pfx, oldBatch, collections.Join3(topic, p, off))))
			}
			same("offset", enc(collections.EncodeKeyWithPrefix(pfx, types.OffsetKeyCodec, collections.Join("grp", tp))),
				enc(collections.EncodeKeyWithPrefix(pfx, oldOffset, collections.Join3("grp", topic, p))))
			same("producer state", enc(collections.EncodeKeyWithPrefix(pfx, types.ProducerStateKeyCodec, collections.Join(tp, "bftlog1x"))),
				enc(collections.EncodeKeyWithPrefix(pfx, oldProducer, collections.Join3(topic, p, "bftlog1x"))))
			// Prefixes (for prefix ranges and pagination) too.
			same("batch prefix", enc(collections.EncodeKeyWithPrefix(pfx, types.BatchKeyCodec, collections.PairPrefix[types.TopicPartition, uint64](tp))),
				enc(collections.EncodeKeyWithPrefix(pfx, oldBatch, collections.TripleSuperPrefix[string, uint32, uint64](topic, p))))
			same("producer prefix", enc(collections.EncodeKeyWithPrefix(pfx, types.ProducerStateKeyCodec, collections.PairPrefix[types.TopicPartition, string](tp))),
				enc(collections.EncodeKeyWithPrefix(pfx, oldProducer, collections.TripleSuperPrefix[string, uint32, string](topic, p))))

			// The raw store keys client/verify rebuilds.
			same("partition store key", types.PartitionStoreKey(topic, p),
				enc(collections.EncodeKeyWithPrefix(types.PartitionsPrefix.Bytes(), oldPartition, collections.Join(topic, p))))
			same("batch store key", types.BatchStoreKey(topic, p, 9),
				enc(collections.EncodeKeyWithPrefix(types.BatchesPrefix.Bytes(), oldBatch, collections.Join3(topic, p, uint64(9)))))
			same("offset store key", types.OffsetStoreKey("grp", topic, p),
				enc(collections.EncodeKeyWithPrefix(types.OffsetsPrefix.Bytes(), oldOffset, collections.Join3("grp", topic, p))))
			gotTopic, gotPart, gotLast, ok := types.ParseBatchStoreKey(types.BatchStoreKey(topic, p, 9))
			if !ok || gotTopic != topic || gotPart != p || gotLast != 9 {
				t.Fatalf("ParseBatchStoreKey: %q %d %d %v", gotTopic, gotPart, gotLast, ok)
			}

			// Decoding reads back what was written, consuming every byte.
			bz := enc(collections.EncodeKeyWithPrefix(nil, types.OffsetKeyCodec, collections.Join("grp", tp)))
			n, key, err := types.OffsetKeyCodec.Decode(bz)
			if err != nil || n != len(bz) || key.K1() != "grp" || key.K2() != tp {
				t.Fatalf("decode offset key: %d %v %v", n, key, err)
			}
		}
	}
}
