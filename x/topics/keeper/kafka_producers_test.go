package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// kafkaBatch is a batch of n records as a Kafka idempotent producer sends it: producer id,
// epoch and base sequence in the header, the CRC-32C over them recomputed.
func kafkaBatch(t *testing.T, topic string, partition uint32, n int, pid int64, epoch int16, seq int32) types.ProduceBatch {
	t.Helper()
	var recs []types.BatchRecord
	for i := 0; i < n; i++ {
		recs = append(recs, rec("k", "v"))
	}
	b := pb{Topic: topic, Partition: partition, Records: recs}.wire(t)
	b.RecordBatch = types.WithProducer(b.RecordBatch, pid, epoch, seq)
	return b
}

// Kafka idempotence on chain: retries of any of the last five batches — in any order, as five
// in-flight requests retried after a timeout arrive — are answered with their first offsets
// and append nothing; a gap is OUT_OF_ORDER_SEQUENCE; an older epoch is fenced; another
// account using the same producer id has state of its own.
func TestKafkaIdempotentProducerOnChain(t *testing.T) {
	f := newFixture(t)
	f.createTopic("pay", 1)
	produce := func(who string, b types.ProduceBatch) ([]types.ProduceResult, error) {
		res, err := f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: who, Batches: []types.ProduceBatch{b}})
		if err != nil {
			return nil, err
		}
		return res.Results, nil
	}
	const pid = 4711
	// Five in flight: sequences 0, 3, 5, 9, 10 (3, 2, 4, 1, 2 records).
	sizes := []int{3, 2, 4, 1, 2}
	var sent []types.ProduceBatch
	var offsets []uint64
	seq := int32(0)
	for _, n := range sizes {
		b := kafkaBatch(t, "pay", 0, n, pid, 0, seq)
		res, err := produce(f.alice, b)
		require.NoError(t, err)
		require.False(t, res[0].Duplicate)
		sent, offsets = append(sent, b), append(offsets, res[0].BaseOffset)
		seq += int32(n)
	}
	hw := f.partitions("pay")[0].HighWatermark
	require.Equal(t, uint64(12), hw)

	// Every one of the five retried, out of order: the original offsets, nothing appended.
	for _, i := range []int{3, 0, 4, 1, 2} {
		res, err := produce(f.alice, sent[i])
		require.NoError(t, err)
		require.True(t, res[0].Duplicate, "retry of batch %d", i)
		require.Equal(t, offsets[i], res[0].BaseOffset)
		require.Equal(t, uint32(sizes[i]), res[0].Count)
	}
	require.Equal(t, hw, f.partitions("pay")[0].HighWatermark, "retries appended nothing")

	// A gap, a sequence older than the window and an older epoch are refused.
	_, err := produce(f.alice, kafkaBatch(t, "pay", 0, 1, pid, 0, seq+1))
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence)
	res, err := produce(f.alice, kafkaBatch(t, "pay", 0, 1, pid, 0, seq))
	require.NoError(t, err)
	require.False(t, res[0].Duplicate)
	_, err = produce(f.alice, sent[0]) // now six batches back: outside the window
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence)
	_, err = produce(f.alice, kafkaBatch(t, "pay", 0, 1, pid, 1, 5))
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence, "a new epoch starts at 0")
	_, err = produce(f.alice, kafkaBatch(t, "pay", 0, 1, pid, 1, 0))
	require.NoError(t, err)
	_, err = produce(f.alice, kafkaBatch(t, "pay", 0, 1, pid, 0, seq+1))
	require.ErrorIs(t, err, types.ErrInvalidProducerEpoch, "the old epoch is fenced")

	// Bob using alice's producer id is a producer of his own: no interference either way.
	res, err = produce(f.bob, sent[0])
	require.NoError(t, err)
	require.False(t, res[0].Duplicate, "bob's first batch under the same producer id is new")

	// A batch without a producer id (-1) is never deduplicated.
	plain := pb{Topic: "pay", Partition: 0, Records: []types.BatchRecord{rec("k", "v")}}.wire(t)
	for i := 0; i < 2; i++ {
		res, err := produce(f.alice, plain)
		require.NoError(t, err)
		require.False(t, res[0].Duplicate)
	}

	// Exported and imported with the chain.
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Len(t, gs.KafkaProducerStates, 2)
	require.NoError(t, gs.Validate(f.k.AddressCodec()))
}
