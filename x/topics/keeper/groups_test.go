package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

// open creates group administered by admin, open to anyone, with a 10 s session.
func (f *fixture) open(admin, group string, assignor ...types.Assignor) {
	f.t.Helper()
	msg := &types.MsgCreateGroup{Admin: admin, GroupId: group, JoinPolicy: types.JOIN_POLICY_ANYONE, SessionTimeoutMs: 10_000}
	if len(assignor) > 0 {
		msg.Assignor = assignor[0]
	}
	_, err := f.msgs.CreateGroup(f.ctx, msg)
	require.NoError(f.t, err)
}

func (f *fixture) advance(d time.Duration) {
	f.ctx = f.ctx.WithBlockTime(f.ctx.BlockTime().Add(d)).WithBlockHeight(f.ctx.BlockHeight() + 1)
}

func TestResetAndDeleteGroup(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	for i := 0; i < 3; i++ {
		f.advance(time.Second)
		_, err := f.produce(f.alice, pb{Topic: "a", Partition: 0, Records: []types.BatchRecord{rec("", "x"), rec("", "y")}})
		require.NoError(t, err)
	}
	t0 := f.ctx.BlockTime().UnixMilli() // the third batch (offsets 4-5) was appended at t0
	f.join(f.bob, "g", "a")
	reset := func(who string, to types.OffsetSpec, offset uint64, ts int64) ([]types.CommittedOffset, error) {
		res, err := f.msgs.ResetOffsets(f.ctx, &types.MsgResetOffsets{Authority: who, GroupId: "g", Topic: "a", Partitions: []uint32{0}, To: to, Offset: offset, TimestampMs: ts})
		if err != nil {
			return nil, err
		}
		return res.Offsets, nil
	}
	_, err := reset(f.bob, types.OFFSET_SPEC_EARLIEST, 0, 0)
	require.ErrorIs(t, err, types.ErrGroupNotEmpty, "Kafka resets only inactive groups")
	_, err = f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: f.bob, GroupId: "g"})
	require.NoError(t, err)
	_, err = reset(f.alice, types.OFFSET_SPEC_EARLIEST, 0, 0)
	require.ErrorIs(t, err, types.ErrGroupAuthorization)

	out, err := reset(f.bob, types.OFFSET_SPEC_LATEST, 0, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(6), out[0].Offset)
	out, err = reset(f.bob, types.OFFSET_SPEC_OFFSET, 3, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(3), out[0].Offset)
	_, err = reset(f.bob, types.OFFSET_SPEC_OFFSET, 7, 0)
	require.ErrorIs(t, err, types.ErrOffsetOutOfRange)
	out, err = reset(f.bob, types.OFFSET_SPEC_TIMESTAMP, 0, t0)
	require.NoError(t, err)
	require.Equal(t, uint64(4), out[0].Offset)
	all, err := f.msgs.ResetOffsets(f.ctx, &types.MsgResetOffsets{Authority: f.gov, GroupId: "g", Topic: "a", To: types.OFFSET_SPEC_EARLIEST})
	require.NoError(t, err)
	require.Len(t, all.Offsets, 2, "no partitions means all")

	_, err = f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: f.carol, GroupId: "g"})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: f.bob, GroupId: "g"})
	require.NoError(t, err)
	_, err = f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: "g"})
	require.ErrorIs(t, err, types.ErrUnknownGroup)
	n := 0
	require.NoError(t, f.k.Offsets.Walk(f.ctx, nil, func(_ collections.Pair[string, types.TopicPartition], _ types.CommittedOffset) (bool, error) {
		n++
		return false, nil
	}))
	require.Zero(t, n)
}

func TestDeleteTopicRemovesOffsetsAndProducerState(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 1)
	f.createTopic("b", 1)
	_, err := f.produce(f.alice, pb{Topic: "a", Partition: 0, Sequence: 1, Records: []types.BatchRecord{rec("", "x")}})
	require.NoError(t, err)
	gen := f.join(f.alice, "g", "a", "b").Generation
	_, err = f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "g", Generation: gen, Offsets: []types.OffsetCommit{{Topic: "a", Offset: 1}, {Topic: "b"}}})
	require.NoError(t, err)
	_, err = f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "a"})
	require.NoError(t, err)
	offs, err := f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, offs.Offsets, 1)
	require.Equal(t, "b", offs.Offsets[0].Committed.Topic)
	// A recreated topic starts with fresh producer state: sequence 1 is new again.
	require.NoError(t, f.k.EndBlocker(f.ctx)) // the purge frees the name
	f.createTopic("a", 1)
	res, err := f.produce(f.alice, pb{Topic: "a", Partition: 0, Sequence: 1, Records: []types.BatchRecord{rec("", "x")}})
	require.NoError(t, err)
	require.False(t, res.Results[0].Duplicate)
}

// Stale or orphaned expiry entries must never make the EndBlocker fail (that would halt the
// chain): they are dropped, and live members keep their sessions.
func TestExpiryIgnoresStaleEntries(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 1)
	f.join(f.alice, "g", "a")
	require.NoError(t, f.k.MemberExpiry.Set(f.ctx, collections.Join3(int64(1), "g", f.alice), true))  // stale
	require.NoError(t, f.k.MemberExpiry.Set(f.ctx, collections.Join3(int64(2), "g", "nobody"), true)) // orphan
	for i := 0; i < 3; i++ {
		f.advance(time.Second)
		require.NoError(t, f.k.EndBlocker(f.ctx))
	}
	g, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, g.Members, 1, "a stale entry does not expire a live member")
	f.advance(10 * time.Second)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	g, err = f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Empty(t, g.Members, "the real session still ends")
}

// Expiry looks members up where the group's kind says. A group a genesis file stored without a
// kind is known by its native members: they expire, and the rest rebalance, as in any native
// group.
func TestExpiryFollowsTheGroupKind(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	f.open(f.alice, "g")
	f.join(f.alice, "g", "a")
	f.advance(5 * time.Second)
	f.join(f.bob, "g", "a")
	g, err := f.k.Groups.Get(f.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, types.GROUP_KIND_NATIVE, g.Kind)
	g.Kind = types.GROUP_KIND_UNSPECIFIED // as a genesis file may store it
	require.NoError(t, f.k.Groups.Set(f.ctx, "g", g))

	f.advance(6 * time.Second) // alice's 10 s session has ended, bob's has not
	require.NoError(t, f.k.EndBlocker(f.ctx))
	res, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, res.Members, 1)
	require.Equal(t, f.bob, res.Members[0].Member)
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1)}, res.Members[0].Assignment)
	require.Equal(t, uint64(3), res.Group.Generation)

	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.alice, GroupId: "g", Member: f.bob})
	require.NoError(t, err)
	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.alice, GroupId: "g", Member: f.bob})
	require.ErrorIs(t, err, types.ErrUnknownMember)
}
