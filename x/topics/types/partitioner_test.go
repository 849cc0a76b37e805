package types_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka's murmur2 test vectors (org.apache.kafka.common.utils.UtilsTest).
func TestMurmur2MatchesKafka(t *testing.T) {
	cases := map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	}
	for in, want := range cases {
		require.Equal(t, want, types.Murmur2([]byte(in)), in)
	}
}

// Keyed records land where Kafka's default partitioner puts them: franz-go's
// StickyKeyPartitioner with its Kafka hasher (murmur2, sign bit masked, mod n), and the
// Java client's own murmur2 vectors.
func TestKeyPartitionMatchesKafka(t *testing.T) {
	kafka := kgo.StickyKeyPartitioner(nil).ForTopic("orders")
	for _, n := range []uint32{1, 2, 3, 7, 12, 64, 256} {
		for i := 0; i < 2000; i++ {
			key := []byte(fmt.Sprintf("user-%d", i))
			if i%5 == 0 {
				key = []byte{byte(i), byte(i >> 8), 0xff, 0x80}[:i%4]
			}
			want := kafka.Partition(&kgo.Record{Key: key}, int(n))
			require.Equal(t, uint32(want), types.KeyPartition(key, n), "key %q of %d partitions", key, n)
		}
	}
	// toPositive(murmur2("21")) % 10 with murmur2("21") = -973932308 (UtilsTest).
	require.Equal(t, uint32((-973932308&0x7fffffff)%10), types.KeyPartition([]byte("21"), 10))
}

// PartitionBatches puts each keyed record on its murmur2 partition and every keyless record on
// the sticky partition, keeps the records' order within a partition, and encodes one valid
// batch per partition in the order partitions are first used.
func TestPartitionBatches(t *testing.T) {
	const partitions, sticky = 6, 9 // the sticky partition is taken mod the partition count
	kafka := kgo.StickyKeyPartitioner(nil).ForTopic("orders")
	var recs []types.BatchRecord
	for i := 0; i < 300; i++ {
		r := types.BatchRecord{Value: types.NewBytes([]byte(fmt.Sprintf("v%d", i))), CreateTimeMs: int64(i)}
		switch i % 3 {
		case 0:
			r.Key = types.NewBytes([]byte(fmt.Sprintf("k%d", i%40)))
		case 1:
			// An empty key is a key: Kafka hashes it.
			if i%2 == 0 {
				r.Key = types.NewBytes([]byte{})
			}
		}
		recs = append(recs, r)
	}
	for _, c := range []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionLZ4} {
		batches, err := types.PartitionBatches("orders", partitions, recs, sticky, c)
		require.NoError(t, err)

		want := map[uint32][]types.BatchRecord{}
		var order []uint32
		for _, r := range recs {
			p := uint32(sticky % partitions)
			if r.Key != nil {
				p = uint32(kafka.Partition(&kgo.Record{Key: r.Key.Data}, partitions))
			}
			if _, ok := want[p]; !ok {
				order = append(order, p)
			}
			want[p] = append(want[p], r)
		}
		require.Len(t, batches, len(order))
		total := 0
		for i, b := range batches {
			require.Equal(t, "orders", b.Topic)
			require.Equal(t, order[i], b.Partition, "batch %d", i)
			require.Less(t, b.Partition, uint32(partitions))
			require.Zero(t, b.Sequence)
			require.Equal(t, uint32(len(want[b.Partition])), b.RecordCount)
			info, err := kbatch.CheckRecordBatch(b.RecordBatch, testLimits)
			require.NoError(t, err)
			require.Equal(t, b.RecordCount, info.Records)
			require.Equal(t, c, info.Compression)
			got, err := kbatch.DecodeRecordBatch(b.RecordBatch)
			require.NoError(t, err)
			requireDecoded(t, want[b.Partition], got, 0)
			total += len(got)
		}
		require.Equal(t, len(recs), total)
	}

	// Keyless records only: one batch, on the sticky partition.
	batches, err := types.PartitionBatches("orders", 4, []types.BatchRecord{{}, {Value: types.NewBytes([]byte("x"))}}, 2, kbatch.CompressionNone)
	require.NoError(t, err)
	require.Len(t, batches, 1)
	require.Equal(t, uint32(2), batches[0].Partition)
	require.Equal(t, uint32(2), batches[0].RecordCount)

	batches, err = types.PartitionBatches("orders", 4, nil, 0, kbatch.CompressionNone)
	require.NoError(t, err)
	require.Empty(t, batches)
	_, err = types.PartitionBatches("orders", 4, recs, 0, kbatch.Compression(7))
	require.ErrorIs(t, err, types.ErrUnsupportedCompression)
}
