package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// deleteGroupOffsets sends a MsgDeleteGroupOffsets from signer.
func (f *fixture) deleteGroupOffsets(signer, group string, parts ...types.DeleteGroupOffsetsPartition) error {
	_, err := f.msgs.DeleteGroupOffsets(f.ctx, &types.MsgDeleteGroupOffsets{Authority: signer, GroupId: group, Partitions: parts})
	return err
}

// gp names one partition of a MsgDeleteGroupOffsets.
func gp(topic string, partition uint32) types.DeleteGroupOffsetsPartition {
	return types.DeleteGroupOffsetsPartition{Topic: topic, Partition: partition}
}

// committed lists a group's committed offsets as "topic/partition" labels.
func (f *fixture) committed(group string) []string {
	f.t.Helper()
	var out []string
	require.NoError(f.t, f.k.Offsets.Walk(f.ctx, collections.NewPrefixedPairRange[string, types.TopicPartition](group),
		func(key collections.Pair[string, types.TopicPartition], _ types.CommittedOffset) (bool, error) {
			out = append(out, types.Partition{Topic: key.K2().Topic, Partition: key.K2().Partition}.Label())
			return false, nil
		}))
	return out
}

// groupTopicIndexed tells whether the (topic, group) index entry exists.
func (f *fixture) groupTopicIndexed(topic, group string) bool {
	f.t.Helper()
	has, err := f.k.GroupTopics.Has(f.ctx, collections.Join(topic, group))
	require.NoError(f.t, err)
	return has
}

// groupOffsetsDeleted returns the EventGroupOffsetsDeleted emitted on ctx.
func groupOffsetsDeleted(t *testing.T, ctx sdk.Context) []*types.EventGroupOffsetsDeleted {
	t.Helper()
	var out []*types.EventGroupOffsetsDeleted
	for _, e := range ctx.EventManager().Events() {
		if e.Type != "bftlog.topics.v1.EventGroupOffsetsDeleted" {
			continue
		}
		msg, err := sdk.ParseTypedEvent(abci.Event(e))
		require.NoError(t, err)
		out = append(out, msg.(*types.EventGroupOffsetsDeleted))
	}
	return out
}

// requireUnchanged runs fn, which must fail with want, and checks the state is as before.
func (f *fixture) requireUnchanged(name string, want error, fn func() error) {
	f.t.Helper()
	before, err := f.k.ExportGenesis(f.ctx)
	require.NoError(f.t, err)
	require.ErrorIs(f.t, fn(), want, name)
	after, err := f.k.ExportGenesis(f.ctx)
	require.NoError(f.t, err)
	require.Equal(f.t, before, after, "%s changed state", name)
}

// A native group: offsets on a topic a member subscribes to stay (Kafka's
// GROUP_SUBSCRIBED_TO_TOPIC); once nobody consumes it, the admin or gov deletes them, one event
// each, and the group-topic index entry goes with the topic's last offset. A partition without
// an offset is a success that changes nothing; a refusal anywhere changes nothing anywhere.
func TestDeleteGroupOffsetsNativeGroup(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	f.createTopic("b", 1)
	f.createTopic("c", 1)
	f.open(f.alice, "g")
	gen := f.join(f.bob, "g", "a", "b").Generation
	_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.bob, GroupId: "g", Generation: gen,
		Offsets: []types.OffsetCommit{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}}})
	require.NoError(t, err)
	require.Equal(t, []string{"a/0", "a/1", "b/0"}, f.committed("g"))

	f.requireUnchanged("subscribed", types.ErrGroupSubscribedToTopic, func() error { return f.deleteGroupOffsets(f.alice, "g", gp("b", 0)) })
	_, err = f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: f.bob, GroupId: "g"})
	require.NoError(t, err)
	f.join(f.carol, "g", "a") // carol consumes a, nobody b

	for _, tc := range []struct {
		name   string
		signer string
		group  string
		parts  []types.DeleteGroupOffsetsPartition
		want   error
	}{
		{"a member, not the admin", f.carol, "g", []types.DeleteGroupOffsetsPartition{gp("b", 0)}, types.ErrGroupAuthorization},
		{"a topic a member consumes", f.alice, "g", []types.DeleteGroupOffsetsPartition{gp("a", 0)}, types.ErrGroupSubscribedToTopic},
		{"a consumed topic beside a free one", f.alice, "g", []types.DeleteGroupOffsetsPartition{gp("b", 0), gp("a", 1)}, types.ErrGroupSubscribedToTopic},
		{"unknown group", f.alice, "nope", []types.DeleteGroupOffsetsPartition{gp("b", 0)}, types.ErrUnknownGroup},
		{"unknown topic beside a good partition", f.alice, "g", []types.DeleteGroupOffsetsPartition{gp("b", 0), gp("zz", 0)}, types.ErrUnknownTopic},
		{"partition out of range", f.alice, "g", []types.DeleteGroupOffsetsPartition{gp("b", 1)}, types.ErrInvalidPartition},
		{"a partition twice", f.alice, "g", []types.DeleteGroupOffsetsPartition{gp("b", 0), gp("b", 0)}, types.ErrInvalidRequest},
		{"no partitions", f.alice, "g", nil, types.ErrInvalidRequest},
		{"invalid topic name", f.alice, "g", []types.DeleteGroupOffsetsPartition{gp("a b", 0)}, types.ErrInvalidTopicName},
		{"invalid group id", f.alice, "a b", []types.DeleteGroupOffsetsPartition{gp("b", 0)}, types.ErrInvalidGroupID},
		{"invalid signer", "bftlog1nope", "g", []types.DeleteGroupOffsetsPartition{gp("b", 0)}, types.ErrInvalidAddress},
	} {
		f.requireUnchanged(tc.name, tc.want, func() error { return f.deleteGroupOffsets(tc.signer, tc.group, tc.parts...) })
	}

	f.newBlock()
	require.NoError(t, f.deleteGroupOffsets(f.alice, "g", gp("b", 0), gp("c", 0)), "the admin; c has no offset")
	require.Equal(t, []*types.EventGroupOffsetsDeleted{{GroupId: "g", Topic: "b", Partition: 0, Authority: f.alice}}, groupOffsetsDeleted(t, f.ctx))
	require.Equal(t, []string{"a/0", "a/1"}, f.committed("g"))
	require.False(t, f.groupTopicIndexed("b", "g"), "the group has no offset left on b")
	offs, err := f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: "g", Topic: "b"})
	require.NoError(t, err)
	require.Empty(t, offs.Offsets)

	f.newBlock()
	require.NoError(t, f.deleteGroupOffsets(f.alice, "g", gp("b", 0)), "nothing committed: a no-op")
	require.Empty(t, groupOffsetsDeleted(t, f.ctx))

	_, err = f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: f.carol, GroupId: "g"})
	require.NoError(t, err)
	require.NoError(t, f.deleteGroupOffsets(f.gov, "g", gp("a", 0)), "governance")
	require.Equal(t, []string{"a/1"}, f.committed("g"))
	require.True(t, f.groupTopicIndexed("a", "g"), "a/1 is left")
	require.NoError(t, f.deleteGroupOffsets(f.alice, "g", gp("a", 1)))
	require.Empty(t, f.committed("g"))
	require.False(t, f.groupTopicIndexed("a", "g"))

	// The export without them validates and imports to the same state.
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate(f.k.AddressCodec()))
	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)
}

// A Kafka-protocol group: the chain does not decode its members' subscriptions, so while it
// has a member every topic it has offsets on counts as subscribed; a topic it has none on is a
// no-op. Once its members are gone the admin deletes them.
func TestDeleteGroupOffsetsKafkaGroup(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 2)
	f.createTopic("idle", 1)
	f.open(f.alice, "ledger")
	_, err := f.kjoin(f.bob, "ledger", "m-b")
	require.NoError(t, err)
	f.endBlock(1100 * time.Millisecond)
	_, err = f.msgs.KafkaSyncGroup(f.ctx, &types.MsgKafkaSyncGroup{Owner: f.bob, GroupId: "ledger", MemberId: "m-b", Generation: 1,
		Assignments: []types.KafkaAssignment{{MemberId: "m-b", Assignment: []byte("opaque")}}})
	require.NoError(t, err)
	_, err = f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.bob, GroupId: "ledger", Generation: 1, KafkaMemberId: "m-b",
		Offsets: []types.OffsetCommit{{Topic: "orders", Partition: 0}}})
	require.NoError(t, err)

	f.requireUnchanged("a member, not the admin", types.ErrGroupAuthorization, func() error { return f.deleteGroupOffsets(f.bob, "ledger", gp("orders", 0)) })
	f.requireUnchanged("offsets on the topic, a live member", types.ErrGroupSubscribedToTopic, func() error { return f.deleteGroupOffsets(f.alice, "ledger", gp("orders", 1)) })
	f.requireUnchanged("gov too", types.ErrGroupSubscribedToTopic, func() error { return f.deleteGroupOffsets(f.gov, "ledger", gp("orders", 0)) })
	require.NoError(t, f.deleteGroupOffsets(f.alice, "ledger", gp("idle", 0)), "no offsets on idle: nothing to delete")

	_, err = f.msgs.KafkaLeaveGroup(f.ctx, &types.MsgKafkaLeaveGroup{Owner: f.bob, GroupId: "ledger", MemberIds: []string{"m-b"}})
	require.NoError(t, err)
	f.newBlock()
	require.NoError(t, f.deleteGroupOffsets(f.alice, "ledger", gp("orders", 0), gp("orders", 1)))
	require.Equal(t, []*types.EventGroupOffsetsDeleted{{GroupId: "ledger", Topic: "orders", Partition: 0, Authority: f.alice}}, groupOffsetsDeleted(t, f.ctx))
	require.Empty(t, f.committed("ledger"))
	require.False(t, f.groupTopicIndexed("orders", "ledger"))
}

// A message may name at most MaxDeleteGroupOffsetsPartitions partitions; its gas grows with
// them, charged before the state is read.
func TestDeleteGroupOffsetsBoundAndGas(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 8)
	f.open(f.alice, "g")
	parts := make([]types.DeleteGroupOffsetsPartition, types.MaxDeleteGroupOffsetsPartitions+1)
	for i := range parts {
		parts[i] = gp("t", uint32(i))
	}
	f.requireUnchanged("one partition too many", types.ErrTooManyPartitions, func() error { return f.deleteGroupOffsets(f.alice, "g", parts...) })
	f.requireUnchanged("at the bound", types.ErrInvalidPartition, func() error {
		return f.deleteGroupOffsets(f.alice, "g", parts[:types.MaxDeleteGroupOffsetsPartitions]...)
	})

	del := func(signer string, parts ...types.DeleteGroupOffsetsPartition) uint64 {
		gas, _ := f.metered(func() { _ = f.deleteGroupOffsets(signer, "g", parts...) })
		return gas
	}
	one := del(f.alice, parts[0])
	eight := del(f.alice, parts[:8]...)
	refused := del(f.bob, parts[:8]...)
	t.Logf("gas: 1 partition %d, 8 partitions %d, 8 refused (not the admin) %d (%d per partition charged besides the store's)",
		one, eight, refused, keeper.DeleteGroupOffsetsGasPerPartition)
	require.GreaterOrEqual(t, eight, 8*uint64(keeper.DeleteGroupOffsetsGasPerPartition))
	require.GreaterOrEqual(t, refused, 8*uint64(keeper.DeleteGroupOffsetsGasPerPartition))
	require.Less(t, one, eight/4)
}
