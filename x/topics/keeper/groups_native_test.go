package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func (f *fixture) join(member, group string, topics ...string) *types.MsgJoinGroupResponse {
	f.t.Helper()
	res, err := f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: member, GroupId: group, Topics: topics, SessionTimeoutMs: 10_000})
	require.NoError(f.t, err)
	return res
}

func (f *fixture) assignment(group, member string) []types.TopicPartitions {
	f.t.Helper()
	res, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: group})
	require.NoError(f.t, err)
	for _, m := range res.Members {
		if m.Member == member {
			return m.Assignment
		}
	}
	return nil
}

func tp(topic string, partitions ...uint32) types.TopicPartitions {
	return types.TopicPartitions{Topic: topic, Partitions: partitions}
}

func TestJoinLeaveRebalanceRange(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 5)
	f.createTopic("b", 2)
	// Addresses sort as alice < bob < carol.
	f.open(f.bob, "g")
	res := f.join(f.bob, "g", "a")
	require.Equal(t, uint64(1), res.Generation)
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1, 2, 3, 4)}, res.Assignment)

	res = f.join(f.alice, "g", "a", "b")
	require.Equal(t, uint64(2), res.Generation)
	// Range: per topic, the first (5 % 2) members by address get one extra.
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1, 2), tp("b", 0, 1)}, res.Assignment)
	require.Equal(t, []types.TopicPartitions{tp("a", 3, 4)}, f.assignment("g", f.bob))

	f.join(f.carol, "g", "a")
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1), tp("b", 0, 1)}, f.assignment("g", f.alice))
	require.Equal(t, []types.TopicPartitions{tp("a", 2, 3)}, f.assignment("g", f.bob))
	require.Equal(t, []types.TopicPartitions{tp("a", 4)}, f.assignment("g", f.carol))

	_, err := f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: f.alice, GroupId: "g"})
	require.NoError(t, err)
	g, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Equal(t, uint64(4), g.Group.Generation)
	require.Len(t, g.Members, 2)
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1, 2)}, f.assignment("g", f.bob))
	require.Equal(t, []types.TopicPartitions{tp("a", 3, 4)}, f.assignment("g", f.carol))
	require.Equal(t, f.bob, g.Group.Admin, "the creating member administers the group")
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventGroupRebalanced")

	_, err = f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: f.alice, GroupId: "g"})
	require.ErrorIs(t, err, types.ErrUnknownMember)
	_, err = f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: f.alice, GroupId: "nope"})
	require.ErrorIs(t, err, types.ErrUnknownGroup)
}

func TestRoundRobinAssignor(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 3)
	f.createTopic("b", 3)
	f.open(f.alice, "rr", types.ASSIGNOR_ROUND_ROBIN)
	f.join(f.alice, "rr", "a", "b")
	f.join(f.bob, "rr", "a", "b")
	// a0 a1 a2 b0 b1 b2 dealt alternately to alice, bob.
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 2), tp("b", 1)}, f.assignment("rr", f.alice))
	require.Equal(t, []types.TopicPartitions{tp("a", 1), tp("b", 0, 2)}, f.assignment("rr", f.bob))
}

func TestJoinGroupErrors(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 1)
	cases := []struct {
		msg types.MsgJoinGroup
		err error
	}{
		{types.MsgJoinGroup{Member: f.alice, GroupId: "bad id", Topics: []string{"a"}}, types.ErrInvalidGroupID},
		{types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: nil}, types.ErrInvalidRequest},
		{types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: []string{"a", "a"}}, types.ErrInvalidRequest},
		{types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: []string{"nope"}}, types.ErrUnknownTopic},
		{types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: []string{"a"}, SessionTimeoutMs: 5}, types.ErrInvalidSessionTimeout},
		{types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: []string{"a"}, Assignor: 7}, types.ErrInvalidRequest},
		{types.MsgJoinGroup{Member: "x", GroupId: "g", Topics: []string{"a"}}, types.ErrInvalidAddress},
	}
	for _, tc := range cases {
		_, err := f.msgs.JoinGroup(f.ctx, &tc.msg)
		require.ErrorIs(t, err, tc.err)
	}
	has, err := f.k.Groups.Has(f.ctx, "g")
	require.NoError(t, err)
	require.False(t, has)

	p := types.DefaultParams()
	p.MaxGroupMembers = 1
	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)
	f.open(f.alice, "g")
	f.join(f.alice, "g", "a")
	f.join(f.alice, "g", "a") // re-join updates, does not count twice
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: "g", Topics: []string{"a"}})
	require.ErrorIs(t, err, types.ErrGroupFull)
}

func TestCommitFencingAndLag(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	for i := 0; i < 4; i++ {
		_, err := f.produce(f.alice, pb{Topic: "a", Partition: uint32(i % 2), Records: []types.BatchRecord{rec("", "x"), rec("", "y")}})
		require.NoError(t, err)
	}
	f.open(f.alice, "g")
	gen1 := f.join(f.alice, "g", "a").Generation
	commit := func(member string, gen uint64, offsets ...types.OffsetCommit) error {
		_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: member, GroupId: "g", Generation: gen, Offsets: offsets})
		return err
	}
	require.NoError(t, commit(f.alice, gen1, types.OffsetCommit{Topic: "a", Partition: 0, Offset: 3, Metadata: "m"}, types.OffsetCommit{Topic: "a", Partition: 1, Offset: 4}))

	gen2 := f.join(f.bob, "g", "a").Generation
	require.Equal(t, gen1+1, gen2)
	// A zombie commit with the old generation is fenced, and changes nothing.
	err := commit(f.alice, gen1, types.OffsetCommit{Topic: "a", Partition: 0, Offset: 4})
	require.ErrorIs(t, err, types.ErrIllegalGeneration)
	// After the rebalance alice owns partition 0 only; bob owns 1.
	require.ErrorIs(t, commit(f.alice, gen2, types.OffsetCommit{Topic: "a", Partition: 1, Offset: 4}), types.ErrPartitionNotAssigned)
	require.ErrorIs(t, commit(f.carol, gen2, types.OffsetCommit{Topic: "a", Partition: 0, Offset: 1}), types.ErrUnknownMember)
	require.ErrorIs(t, commit(f.alice, gen2, types.OffsetCommit{Topic: "a", Partition: 0, Offset: 5}), types.ErrInvalidOffset)
	require.ErrorIs(t, commit(f.alice, gen2), types.ErrInvalidRequest)
	// All or nothing: one bad partition rejects the whole commit.
	require.ErrorIs(t, commit(f.bob, gen2, types.OffsetCommit{Topic: "a", Partition: 1, Offset: 1}, types.OffsetCommit{Topic: "a", Partition: 0, Offset: 1}), types.ErrPartitionNotAssigned)

	offs, err := f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, offs.Offsets, 2)
	require.Equal(t, uint64(3), offs.Offsets[0].Committed.Offset)
	require.Equal(t, "m", offs.Offsets[0].Committed.Metadata)
	require.Equal(t, f.alice, offs.Offsets[0].Committed.Committer)
	require.Equal(t, uint64(4), offs.Offsets[1].Committed.Offset)

	lag, err := f.query.Lag(f.ctx, &types.QueryLagRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Equal(t, []types.PartitionLag{
		{Topic: "a", Partition: 0, Committed: 3, HighWatermark: 4, Lag: 1, Member: f.alice},
		{Topic: "a", Partition: 1, Committed: 4, HighWatermark: 4, Lag: 0, Member: f.bob},
	}, lag.Lags)
	require.NoError(t, commit(f.bob, gen2, types.OffsetCommit{Topic: "a", Partition: 1, Offset: 2}))
	lag, err = f.query.Lag(f.ctx, &types.QueryLagRequest{GroupId: "g", Topic: "a"})
	require.NoError(t, err)
	require.Equal(t, uint64(2), lag.Lags[1].Lag)
}

func TestSessionExpiryIsBoundedPerBlock(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 3)
	p := types.DefaultParams()
	p.MaxExpiriesPerBlock = 1
	_, err := f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)
	f.open(f.alice, "g")
	f.join(f.alice, "g", "a")
	f.join(f.bob, "g", "a")
	f.join(f.carol, "g", "a")

	f.advance(5 * time.Second)
	_, err = f.msgs.Heartbeat(f.ctx, &types.MsgHeartbeat{Member: f.carol, GroupId: "g"})
	require.NoError(t, err)
	f.advance(6 * time.Second) // alice and bob are past their 10 s session; carol is not
	require.NoError(t, f.k.EndBlocker(f.ctx))
	g, _ := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.Len(t, g.Members, 2, "one expiry per block")
	f.advance(200 * time.Millisecond)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	g, _ = f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.Len(t, g.Members, 1)
	require.Equal(t, f.carol, g.Members[0].Member)
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1, 2)}, g.Members[0].Assignment, "the survivor takes over")
	require.Equal(t, uint64(5), g.Group.Generation)

	hb, err := f.msgs.Heartbeat(f.ctx, &types.MsgHeartbeat{Member: f.carol, GroupId: "g"})
	require.NoError(t, err)
	require.Equal(t, uint64(5), hb.Generation)
	_, err = f.msgs.Heartbeat(f.ctx, &types.MsgHeartbeat{Member: f.alice, GroupId: "g"})
	require.ErrorIs(t, err, types.ErrUnknownMember)

	// A commit keeps a member alive too.
	f.advance(9 * time.Second)
	_, err = f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.carol, GroupId: "g", Generation: 5, Offsets: []types.OffsetCommit{{Topic: "a", Partition: 0}}})
	require.NoError(t, err)
	f.advance(9 * time.Second)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	g, _ = f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.Len(t, g.Members, 1)
}
