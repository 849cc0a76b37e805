package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// Kafka's OffsetDelete as transactions: bob, a member of alice's group, deleting its committed
// offsets is refused (code 35), and so is alice's while bob consumes the topic (code 45: her
// consumers would lose their place) and alice's naming more partitions than
// MaxDeleteGroupOffsetsPartitions (code 9); each changes nothing and pays its gas. Once bob
// left, alice's own deletes the offsets. Gas grows with the partitions named.
func TestAttackDeleteGroupOffsetsOfAnotherAccountsGroup(t *testing.T) {
	c := newFeeChain(t, 1e15, 1e15)
	alice, bob := c.addr(0), c.addr(1)
	c.deliver(0, 1_000_000, createMsg(alice, "orders", 4))
	c.deliver(0, 1_000_000, &topicstypes.MsgCreateGroup{Admin: alice.String(), GroupId: "ledger", JoinPolicy: topicstypes.JOIN_POLICY_ANYONE})
	c.deliver(1, 5_000_000, &topicstypes.MsgJoinGroup{Member: bob.String(), GroupId: "ledger", Topics: []string{"orders"}, SessionTimeoutMs: 60_000})
	k := c.app.TopicsKeeper
	g, err := k.GetGroup(c.ctx(), "ledger")
	require.NoError(t, err)
	commit := &topicstypes.MsgCommitOffsets{Member: bob.String(), GroupId: "ledger", Generation: g.Generation}
	for i := uint32(0); i < 4; i++ {
		commit.Offsets = append(commit.Offsets, topicstypes.OffsetCommit{Topic: "orders", Partition: i})
	}
	c.deliver(1, 1_000_000, commit)
	offsets := func() []topicstypes.CommittedOffset {
		var out []topicstypes.CommittedOffset
		require.NoError(t, k.Offsets.Walk(c.ctx(), collections.NewPrefixedPairRange[string, topicstypes.TopicPartition]("ledger"),
			func(_ collections.Pair[string, topicstypes.TopicPartition], o topicstypes.CommittedOffset) (bool, error) {
				out = append(out, o)
				return false, nil
			}))
		return out
	}
	before := offsets()
	require.Len(t, before, 4)

	all := func(signer string, n int) *topicstypes.MsgDeleteGroupOffsets {
		msg := &topicstypes.MsgDeleteGroupOffsets{Authority: signer, GroupId: "ledger"}
		for i := 0; i < n; i++ {
			msg.Partitions = append(msg.Partitions, topicstypes.DeleteGroupOffsetsPartition{Topic: "orders", Partition: uint32(i)})
		}
		return msg
	}
	// send runs one paid transaction from account i in its own block; a refusal in the message
	// still uses the account's sequence.
	send := func(i int, gas uint64, msg *topicstypes.MsgDeleteGroupOffsets) *abci.ExecTxResult {
		r := c.block(c.tx(i, c.fee(gas), gas, msg))[0]
		c.seqs[i]++
		return r
	}
	refused := func(r *abci.ExecTxResult, want uint32) {
		t.Helper()
		require.Equal(t, topicstypes.ModuleName, r.Codespace, r.Log)
		require.Equal(t, want, r.Code, r.Log)
		require.Equal(t, before, offsets(), "nothing deleted")
	}

	r := send(1, 1_000_000, all(bob.String(), 4))
	refused(r, topicstypes.ErrGroupAuthorization.ABCICode())
	t.Logf("bob's OffsetDelete of 4 partitions of alice's group: code %d (%s), gas used %d", r.Code, r.Log, r.GasUsed)

	r = send(0, 1_000_000, all(alice.String(), 4))
	refused(r, topicstypes.ErrGroupSubscribedToTopic.ABCICode())
	t.Logf("alice's OffsetDelete of 4 partitions while bob consumes the topic: code %d (%s), gas used %d", r.Code, r.Log, r.GasUsed)

	tooMany := &topicstypes.MsgDeleteGroupOffsets{Authority: alice.String(), GroupId: "ledger"}
	for i := 0; i <= topicstypes.MaxDeleteGroupOffsetsPartitions; i++ {
		tooMany.Partitions = append(tooMany.Partitions, topicstypes.DeleteGroupOffsetsPartition{Topic: "orders", Partition: uint32(i)})
	}
	r = send(0, 5_000_000, tooMany)
	refused(r, topicstypes.ErrTooManyPartitions.ABCICode())
	t.Logf("alice's OffsetDelete of %d partitions (tx %d B): code %d, gas used %d", len(tooMany.Partitions), tooMany.Size(), r.Code, r.GasUsed)

	c.deliver(1, 1_000_000, &topicstypes.MsgLeaveGroup{Member: bob.String(), GroupId: "ledger"})
	r = send(0, 1_000_000, all(alice.String(), 1))
	require.Zero(t, r.Code, r.Log)
	gasOne := r.GasUsed
	require.Equal(t, before[1:], offsets())
	r = send(0, 1_000_000, all(alice.String(), 4))
	require.Zero(t, r.Code, r.Log)
	t.Logf("alice's own OffsetDelete: 1 partition gas used %d, 4 partitions (3 with an offset) %d (%d per partition charged besides the store's)",
		gasOne, r.GasUsed, keeper.DeleteGroupOffsetsGasPerPartition)
	require.Greater(t, r.GasUsed, gasOne+3*keeper.DeleteGroupOffsetsGasPerPartition)
	events := 0
	for _, e := range r.Events {
		if e.Type == "bftlog.topics.v1.EventGroupOffsetsDeleted" {
			events++
		}
	}
	require.Equal(t, 3, events, "one EventGroupOffsetsDeleted per offset deleted")
	require.Empty(t, offsets())
}
