package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/kbatch"
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
	b.RecordBatch = kbatch.WithProducer(b.RecordBatch, pid, epoch, seq)
	return b
}

// Kafka idempotence on chain: retries of any of the last five batches — in any order, as five
// in-flight requests retried after a timeout arrive — are answered with their first offsets
// and append nothing; a gap is OUT_OF_ORDER_SEQUENCE; an older epoch is fenced; another
// account using the same producer id has state of its own.
func TestAttackKafkaIdempotentProducerOnChain(t *testing.T) {
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

	// The KafkaProducerStates query (Kafka's DescribeProducers) lists both accounts' producer
	// 4711, each with its epoch and last batch.
	listed, err := f.query.KafkaProducerStates(f.ctx, &types.QueryKafkaProducerStatesRequest{Topic: "pay", Partition: 0})
	require.NoError(t, err)
	require.Len(t, listed.Producers, 2)
	byAccount := map[string]types.KafkaProducerState{}
	for _, p := range listed.Producers {
		require.Equal(t, int64(pid), p.ProducerId)
		byAccount[p.Producer] = p
	}
	require.Equal(t, int32(1), byAccount[f.alice].Epoch)
	require.Equal(t, int32(0), byAccount[f.alice].Batches[len(byAccount[f.alice].Batches)-1].LastSequence)
	require.Equal(t, int32(0), byAccount[f.bob].Epoch)
	_, err = f.query.KafkaProducerStates(f.ctx, &types.QueryKafkaProducerStatesRequest{Topic: "pay", Partition: 7})
	require.Error(t, err, "an unknown partition is refused")

	// Exported and imported with the chain.
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Len(t, gs.KafkaProducerStates, 2)
	require.NoError(t, gs.Validate(f.k.AddressCodec()))
}

// A Kafka transaction arrives as one message (the gateway's EndTxn): its transactional batches
// commit with it, and each partition they went to gets Kafka's commit marker after them — an
// offset holding no record, skipped by fetch as Kafka consumers skip it.
func TestKafkaTransactionCommitsWithItsMessage(t *testing.T) {
	f := newFixture(t)
	f.createTopic("out", 2)
	txnBatch := func(partition uint32, n int, seq int32) types.ProduceBatch {
		b := kafkaBatch(t, "out", partition, n, 99, 3, seq)
		b.RecordBatch[22] |= 0x10 // transactional
		b.RecordBatch = kbatch.WithProducer(b.RecordBatch, 99, 3, seq)
		return b
	}
	res, err := f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{txnBatch(0, 2, 0), txnBatch(1, 3, 0), txnBatch(0, 1, 2)}})
	require.NoError(t, err)
	require.Len(t, res.Results, 3)
	parts := f.partitions("out")
	require.Equal(t, uint64(4), parts[0].HighWatermark, "3 records and the marker")
	require.Equal(t, uint64(4), parts[1].HighWatermark, "3 records and the marker")
	fetched, err := f.fetch("out", 0, 0, 100, 1<<20)
	require.NoError(t, err)
	require.Len(t, fetched.Records, 3, "the marker holds no record")
	require.Equal(t, uint64(4), fetched.NextOffset, "past the marker")
	batches, err := f.query.Fetch(f.ctx, &types.QueryFetchRequest{Topic: "out", Partition: 1, Format: types.FETCH_FORMAT_BATCHES})
	require.NoError(t, err)
	require.Len(t, batches.Batches, 2)
	require.True(t, kbatch.IsControlBatch(batches.Batches[1].RecordBatch), "the commit marker follows the transaction's batch")

	noID := pb{Topic: "out", Partition: 0, Records: []types.BatchRecord{rec("k", "v")}}.wire(t)
	noID.RecordBatch = kbatch.WithProducer(noID.RecordBatch, -1, -1, -1)
	noID.RecordBatch[22] |= 0x10
	noID.RecordBatch = kbatch.WithProducer(noID.RecordBatch, -1, -1, -1)
	_, err = f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{noID}})
	require.ErrorIs(t, err, types.ErrInvalidRecordBatch, "a transactional batch needs a producer id")
}
