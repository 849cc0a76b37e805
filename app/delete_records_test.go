package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// Kafka's DeleteRecords as transactions: another account's on alice's topic is refused (code
// 11), and so is alice's naming more partitions than MaxDeleteRecordsPartitions (code 9); each
// changes nothing and pays its gas. Alice's own moves the log start offset, and her block's
// EndBlocker deletes the batches wholly below it (within its budget; the batch holding the
// offset stays). Gas grows with the partitions named.
func TestAttackDeleteRecordsOfAnotherAccountsTopic(t *testing.T) {
	c := newFeeChain(t, 1e15, 1e15)
	alice, bob := c.addr(0), c.addr(1)
	c.deliver(0, 1_000_000, createMsg(alice, "orders", 4))
	for i := 0; i < 5; i++ {
		c.deliver(0, 3_000_000, produceMsg(alice, "orders", 10, 100))
	}
	k := c.app.TopicsKeeper
	partitions := func() []topicstypes.Partition {
		var out []topicstypes.Partition
		for i := uint32(0); i < 4; i++ {
			p, err := k.GetPartition(c.ctx(), "orders", i)
			require.NoError(t, err)
			out = append(out, p)
		}
		return out
	}
	// all names the 4 partitions: partition 0 (which holds the records) to offset, the others
	// to 0 (their high watermark).
	all := func(signer string, offset uint64) *topicstypes.MsgDeleteRecords {
		msg := &topicstypes.MsgDeleteRecords{Authority: signer}
		for i := uint32(0); i < 4; i++ {
			msg.Partitions = append(msg.Partitions, topicstypes.DeleteRecordsPartition{Topic: "orders", Partition: i})
		}
		msg.Partitions[0].Offset = offset
		return msg
	}
	// send runs one paid transaction from account i in its own block; a refusal in the message
	// still uses the account's sequence.
	send := func(i int, gas uint64, msg *topicstypes.MsgDeleteRecords) *abci.ExecTxResult {
		r := c.block(c.tx(i, c.fee(gas), gas, msg))[0]
		c.seqs[i]++
		return r
	}
	before := partitions()

	r := send(1, 1_000_000, all(bob.String(), 30))
	require.Equal(t, topicstypes.ModuleName, r.Codespace, r.Log)
	require.Equal(t, topicstypes.ErrUnauthorized.ABCICode(), r.Code, r.Log)
	require.Equal(t, before, partitions(), "bob moved nothing")
	t.Logf("bob's DeleteRecords of 4 partitions of alice's topic: code %d (%s), gas used %d", r.Code, r.Log, r.GasUsed)

	tooMany := &topicstypes.MsgDeleteRecords{Authority: alice.String()}
	for i := 0; i <= topicstypes.MaxDeleteRecordsPartitions; i++ {
		tooMany.Partitions = append(tooMany.Partitions, topicstypes.DeleteRecordsPartition{Topic: "orders", Partition: uint32(i % 4), Offset: uint64(i)})
	}
	r = send(0, 5_000_000, tooMany)
	require.Equal(t, topicstypes.ModuleName, r.Codespace, r.Log)
	require.Equal(t, topicstypes.ErrTooManyPartitions.ABCICode(), r.Code, r.Log)
	require.Equal(t, before, partitions())
	t.Logf("alice's DeleteRecords of %d partitions (tx %d B): code %d, gas used %d", len(tooMany.Partitions), tooMany.Size(), r.Code, r.GasUsed)

	lasts := func() []uint64 {
		var out []uint64
		rng := collections.NewPrefixedPairRange[topicstypes.TopicPartition, uint64](topicstypes.TopicPartition{Topic: "orders", Partition: 0})
		require.NoError(t, k.BatchMetas.Walk(c.ctx(), rng, func(key collections.Pair[topicstypes.TopicPartition, uint64], _ topicstypes.BatchMeta) (bool, error) {
			out = append(out, key.K2())
			return false, nil
		}))
		return out
	}
	require.Equal(t, []uint64{9, 19, 29, 39, 49}, lasts())

	// Into the third batch: its block's EndBlocker deletes the two below, the third stays.
	one := &topicstypes.MsgDeleteRecords{Authority: alice.String(), Partitions: []topicstypes.DeleteRecordsPartition{{Topic: "orders", Partition: 0, Offset: 25}}}
	r = send(0, 1_000_000, one)
	require.Zero(t, r.Code, r.Log)
	gasOne := r.GasUsed
	p := partitions()[0]
	require.Equal(t, uint64(25), p.LogStartOffset)
	require.Equal(t, uint64(30), p.RecordCount)
	require.Equal(t, []uint64{29, 39, 49}, lasts())

	r = send(0, 1_000_000, all(alice.String(), 50))
	require.Zero(t, r.Code, r.Log)
	t.Logf("alice's own DeleteRecords: 1 partition gas used %d, 4 partitions %d (%d per partition charged besides the store's)",
		gasOne, r.GasUsed, keeper.DeleteRecordsGasPerPartition)
	require.Greater(t, r.GasUsed, gasOne+3*keeper.DeleteRecordsGasPerPartition)
	found := false
	for _, e := range r.Events {
		found = found || e.Type == "bftlog.topics.v1.EventRecordsDeleted"
	}
	require.True(t, found, "EventRecordsDeleted")
	require.Empty(t, lasts())
	require.Equal(t, topicstypes.Partition{Topic: "orders", Partition: 0, HighWatermark: 50, LogStartOffset: 50}, partitions()[0])
	require.Equal(t, before[1:], partitions()[1:])
}
