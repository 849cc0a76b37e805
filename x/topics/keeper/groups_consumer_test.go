package keeper_test

import (
	"fmt"
	"testing"
	"time"

	storetypes "cosmossdk.io/store/types"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// cbeat sends a consumer heartbeat that changes something: epoch 0 joins, -1/-2 leave; owned
// (when given) says what the client holds.
func (f *fixture) cbeat(owner, group, member string, epoch int32, topics []string, owned ...types.TopicPartitions) (types.ConsumerMember, error) {
	f.t.Helper()
	msg := &types.MsgConsumerGroupHeartbeat{Owner: owner, GroupId: group, MemberId: member, MemberEpoch: epoch,
		SubscribedTopicNames: topics, ServerAssignor: types.ConsumerAssignorUniform, RebalanceTimeoutMs: 20_000,
		OwnedKnown: owned != nil, Owned: owned}
	res, err := f.msgs.ConsumerGroupHeartbeat(f.ctx, msg)
	if err != nil {
		return types.ConsumerMember{}, err
	}
	return res.Member, nil
}

func (f *fixture) cstate(group string) map[string]types.ConsumerMember {
	f.t.Helper()
	res, err := f.query.ConsumerGroup(f.ctx, &types.QueryConsumerGroupRequest{GroupId: group})
	require.NoError(f.t, err)
	out := map[string]types.ConsumerMember{}
	seen := map[types.TopicPartition]string{}
	for _, m := range res.Members {
		out[m.MemberId] = m
		// Revocation before reassignment: no partition is held by two members at once.
		for tp := range types.NewPartitionSet(m.Assigned, m.PendingRevocation) {
			prev, dup := seen[tp]
			require.False(f.t, dup, "%s/%d held by %s and %s", tp.Topic, tp.Partition, prev, m.MemberId)
			seen[tp] = m.MemberId
		}
	}
	return out
}

func count(tps []types.TopicPartitions) int {
	return len(types.NewPartitionSet(tps))
}

// KIP-848 on chain: a lone member takes every partition; a second one's join makes the first
// revoke half before the second gets them (never both at once); a leave hands the partitions
// over without revocation; epochs fence, ownership is by account.
func TestConsumerGroupRevokesBeforeReassigning(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 6)
	f.open(f.alice, "ledger")
	topics := []string{"orders"}

	a, err := f.cbeat(f.alice, "ledger", "m-a", 0, topics)
	require.NoError(t, err)
	require.Equal(t, 6, count(a.Assigned), "a lone member owns every partition")
	require.Equal(t, types.CONSUMER_MEMBER_STATE_STABLE, a.State)
	e1 := a.MemberEpoch
	require.Positive(t, e1)

	f.advance(time.Second)
	b, err := f.cbeat(f.bob, "ledger", "m-b", 0, topics)
	require.NoError(t, err)
	require.Equal(t, types.CONSUMER_MEMBER_STATE_UNRELEASED_PARTITIONS, b.State, "its target is still held by m-a")
	require.Zero(t, count(b.Assigned))
	st := f.cstate("ledger")
	require.Equal(t, types.CONSUMER_MEMBER_STATE_UNREVOKED_PARTITIONS, st["m-a"].State)
	require.Equal(t, 3, count(st["m-a"].Assigned))
	require.Equal(t, 3, count(st["m-a"].PendingRevocation))
	require.Equal(t, e1, st["m-a"].MemberEpoch, "a member keeps its epoch until it revoked")

	// Only the owner may speak for a member; an epoch the chain never gave is fenced.
	_, err = f.cbeat(f.bob, "ledger", "m-a", e1, topics)
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.cbeat(f.alice, "ledger", "m-a", e1+5, topics)
	require.ErrorIs(t, err, types.ErrFencedMemberEpoch)

	// A heartbeat that still owns the pending partitions changes nothing.
	_, err = f.cbeat(f.alice, "ledger", "m-a", e1, topics, a.Assigned...)
	require.NoError(t, err)
	require.Equal(t, 3, count(f.cstate("ledger")["m-a"].PendingRevocation))

	// Revoked: m-a moves to the new epoch and m-b gets the three partitions in the same block.
	a, err = f.cbeat(f.alice, "ledger", "m-a", e1, topics, st["m-a"].Assigned...)
	require.NoError(t, err)
	require.Equal(t, types.CONSUMER_MEMBER_STATE_STABLE, a.State)
	st = f.cstate("ledger")
	require.Equal(t, types.CONSUMER_MEMBER_STATE_STABLE, st["m-b"].State)
	require.Equal(t, 3, count(st["m-b"].Assigned))
	require.Equal(t, a.MemberEpoch, st["m-b"].MemberEpoch)
	require.Greater(t, a.MemberEpoch, e1)

	// Commits carry the member epoch (or the one before); older ones are stale.
	commit := func(member string, epoch int32) error {
		_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "ledger", KafkaMemberId: member,
			Generation: uint64(epoch), Offsets: []types.OffsetCommit{{Topic: "orders", Partition: 0, Offset: 0}}})
		return err
	}
	require.NoError(t, commit("m-a", a.MemberEpoch))
	require.NoError(t, commit("m-a", e1), "the epoch before is still taken")
	require.ErrorIs(t, commit("m-a", e1-1), types.ErrStaleMemberEpoch)
	require.ErrorIs(t, commit("m-b", a.MemberEpoch), types.ErrGroupAuthorization, "m-b is bob's")

	// A leave hands m-b's partitions to m-a with no revocation round.
	_, err = f.cbeat(f.bob, "ledger", "m-b", types.ConsumerLeaveEpoch, nil)
	require.NoError(t, err)
	st = f.cstate("ledger")
	require.Len(t, st, 1)
	require.Equal(t, 6, count(st["m-a"].Assigned))

	// A member of another protocol cannot join; once empty, the group can be deleted.
	_, err = f.kjoin(f.bob, "ledger", "k-b")
	require.ErrorIs(t, err, types.ErrInconsistentGroupProtocol)
	_, err = f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: f.alice, GroupId: "ledger"})
	require.ErrorIs(t, err, types.ErrGroupNotEmpty)
	_, err = f.cbeat(f.alice, "ledger", "m-a", types.ConsumerLeaveEpoch, nil)
	require.NoError(t, err)
	_, err = f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: f.alice, GroupId: "ledger"})
	require.NoError(t, err)
	has, err := f.k.ConsumerGroups.Has(f.ctx, "ledger")
	require.NoError(t, err)
	require.False(t, has, "nothing of the group is left")
}

// A member that never revokes is expired at its rebalance timeout (in block time, by the
// EndBlocker), and the partitions go to the member waiting for them.
func TestAttackConsumerThatNeverRevokes(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 4)
	f.open(f.alice, "ledger")
	topics := []string{"orders"}
	_, err := f.cbeat(f.alice, "ledger", "m-a", 0, topics)
	require.NoError(t, err)
	_, err = f.cbeat(f.bob, "ledger", "m-b", 0, topics)
	require.NoError(t, err)
	require.Equal(t, 2, count(f.cstate("ledger")["m-a"].PendingRevocation))
	// m-a's gateway keeps it alive, but it never says it revoked.
	for i := 0; i < 19; i++ {
		f.endBlock(time.Second)
		_, err = f.msgs.KafkaHeartbeat(f.ctx, &types.MsgKafkaHeartbeat{Owner: f.alice, GroupId: "ledger", MemberIds: []string{"m-a"}})
		require.NoError(t, err)
		_, err = f.msgs.KafkaHeartbeat(f.ctx, &types.MsgKafkaHeartbeat{Owner: f.bob, GroupId: "ledger", MemberIds: []string{"m-b"}})
		require.NoError(t, err)
	}
	require.Contains(t, f.cstate("ledger"), "m-a", "within its rebalance timeout (20 s)")
	f.endBlock(2 * time.Second)
	st := f.cstate("ledger")
	require.NotContains(t, st, "m-a", "expired at its rebalance timeout")
	require.Equal(t, 4, count(st["m-b"].Assigned))
	require.Equal(t, types.CONSUMER_MEMBER_STATE_STABLE, st["m-b"].State)
	t.Logf("a member holding partitions it will not revoke keeps them %d s of block time (its rebalance timeout), then they move", 20)
}

// Static membership: a member leaving with epoch -2 keeps its partitions for its session; its
// instance id rejoining under a new member id takes them over with no rebalance; an active
// instance id cannot be taken.
func TestConsumerGroupStaticMembership(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 4)
	f.open(f.alice, "ledger")
	join := func(owner, member, instance string, epoch int32) (types.ConsumerMember, error) {
		res, err := f.msgs.ConsumerGroupHeartbeat(f.ctx, &types.MsgConsumerGroupHeartbeat{Owner: owner, GroupId: "ledger", MemberId: member,
			MemberEpoch: epoch, InstanceId: instance, SubscribedTopicNames: []string{"orders"}})
		return res.GetMember(), err
	}
	_, err := join(f.alice, "m-a", "i-a", 0)
	require.NoError(t, err)
	_, err = join(f.bob, "m-b", "i-b", 0)
	require.NoError(t, err)
	// m-a revokes; both stable with two partitions each.
	a := f.cstate("ledger")["m-a"]
	_, err = f.cbeat(f.alice, "ledger", "m-a", a.MemberEpoch, []string{"orders"}, a.Assigned...)
	require.NoError(t, err)
	st := f.cstate("ledger")
	require.Equal(t, 2, count(st["m-b"].Assigned))
	epoch, held := st["m-b"].MemberEpoch, st["m-b"].Assigned

	_, err = join(f.carol, "m-x", "i-b", 0)
	require.ErrorIs(t, err, types.ErrUnreleasedInstanceID, "i-b is active")
	_, err = join(f.bob, "m-b", "i-b", types.ConsumerLeaveStaticEpoch)
	require.NoError(t, err)
	require.Equal(t, types.CONSUMER_MEMBER_STATE_LEFT_STATIC, f.cstate("ledger")["m-b"].State)
	require.Equal(t, 2, count(f.cstate("ledger")["m-b"].Assigned), "kept for its session")

	// Leaving again does not extend the session.
	expires := f.cstate("ledger")["m-b"].ExpiresAtMs
	f.advance(time.Second)
	_, err = join(f.bob, "m-b", "i-b", types.ConsumerLeaveStaticEpoch)
	require.NoError(t, err)
	require.Equal(t, expires, f.cstate("ledger")["m-b"].ExpiresAtMs)
	b2, err := join(f.bob, "m-b2", "i-b", 0)
	require.NoError(t, err)
	require.Equal(t, held, b2.Assigned, "the instance takes its partitions back")
	require.Equal(t, epoch, b2.MemberEpoch, "no rebalance")
	require.NotContains(t, f.cstate("ledger"), "m-b")
}

// A regex subscription is resolved on chain against the topics that exist; a bad one is
// Kafka's INVALID_REGULAR_EXPRESSION; a server assignor the chain does not run is refused.
func TestConsumerGroupRegexSubscription(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders-eu", 2)
	f.createTopic("orders-us", 3)
	f.createTopic("payments", 1)
	f.open(f.alice, "ledger")
	res, err := f.msgs.ConsumerGroupHeartbeat(f.ctx, &types.MsgConsumerGroupHeartbeat{Owner: f.alice, GroupId: "ledger", MemberId: "m-a",
		SubscribedTopicRegex: "orders-.*"})
	require.NoError(t, err)
	require.Equal(t, []string{"orders-eu", "orders-us"}, res.Member.RegexTopics)
	require.Equal(t, 5, count(res.Member.Assigned))

	_, err = f.msgs.ConsumerGroupHeartbeat(f.ctx, &types.MsgConsumerGroupHeartbeat{Owner: f.alice, GroupId: "ledger", MemberId: "m-b",
		SubscribedTopicRegex: "orders-(["})
	require.ErrorIs(t, err, types.ErrInvalidRegularExpression)
	_, err = f.msgs.ConsumerGroupHeartbeat(f.ctx, &types.MsgConsumerGroupHeartbeat{Owner: f.alice, GroupId: "ledger", MemberId: "m-b",
		SubscribedTopicNames: []string{"payments"}, ServerAssignor: "sticky"})
	require.ErrorIs(t, err, types.ErrUnsupportedAssignor)
	// Names come sorted and once each, so the chain merges subscriptions in linear time.
	_, err = f.msgs.ConsumerGroupHeartbeat(f.ctx, &types.MsgConsumerGroupHeartbeat{Owner: f.alice, GroupId: "ledger", MemberId: "m-b",
		SubscribedTopicNames: []string{"payments", "orders-eu"}})
	require.ErrorIs(t, err, types.ErrInvalidRequest)
}

// A short regex of counted repeats compiles to a program whose every match costs tens of
// thousands of steps per byte of every topic name: refused before any topic is read; an
// accepted regex pays for its matching in gas.
func TestAttackConsumerGroupCostlyRegex(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 40; i++ {
		f.createTopic(fmt.Sprintf("t%02d", i), 1)
	}
	f.open(f.alice, "ledger")
	costly := ""
	for len(costly)+9 < types.MaxTopicRegexLength {
		costly += ".{0,1000}"
	}
	start := time.Now()
	_, err := f.msgs.ConsumerGroupHeartbeat(f.ctx, &types.MsgConsumerGroupHeartbeat{Owner: f.alice, GroupId: "ledger", MemberId: "m", SubscribedTopicRegex: costly + "b"})
	require.ErrorIs(t, err, types.ErrInvalidRegularExpression)
	t.Logf("a %d-byte regex of counted repeats refused in %v", len(costly)+1, time.Since(start))
	f.ctx = f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
	_, err = f.msgs.ConsumerGroupHeartbeat(f.ctx, &types.MsgConsumerGroupHeartbeat{Owner: f.alice, GroupId: "ledger", MemberId: "m", SubscribedTopicRegex: "t[0-3][0-9]"})
	require.NoError(t, err)
	t.Logf("a regex over 40 topics used %d gas", f.ctx.GasMeter().GasConsumed())
}

// The uniform assignor keeps partitions where they are as members come and go, and balances.
func TestAssignUniformIsStickyAndBalanced(t *testing.T) {
	parts := map[string]uint32{"a": 6, "b": 4}
	in := []types.ConsumerAssignInput{{Member: "x", Topics: []string{"a", "b"}}, {Member: "y", Topics: []string{"a", "b"}}}
	out := types.AssignConsumers(types.ConsumerAssignorUniform, in, parts)
	require.Equal(t, 5, count(out[0]))
	require.Equal(t, 5, count(out[1]))
	// A third member: each old member gives up only what the newcomer needs.
	in = append(in, types.ConsumerAssignInput{Member: "z", Topics: []string{"a", "b"}})
	in[0].Previous, in[1].Previous = out[0], out[1]
	next := types.AssignConsumers(types.ConsumerAssignorUniform, in, parts)
	moved := 0
	for i := 0; i < 2; i++ {
		kept := types.NewPartitionSet(next[i])
		for tp := range types.NewPartitionSet(out[i]) {
			if !kept[tp] {
				moved++
			}
		}
	}
	require.Equal(t, 3, moved, "ten partitions over three members: 4/3/3, so three move")
	for _, tps := range next {
		require.InDelta(t, 3.33, float64(count(tps)), 0.7)
	}
	// Heterogeneous subscriptions: each partition goes to a subscriber.
	het := types.AssignConsumers(types.ConsumerAssignorUniform, []types.ConsumerAssignInput{{Member: "x", Topics: []string{"a"}}, {Member: "y", Topics: []string{"a", "b"}}}, parts)
	require.Equal(t, 10, count(het[0])+count(het[1]))
	for _, tp := range het[0] {
		require.Equal(t, "a", tp.Topic)
	}
}

// One account's 100-member group on 64 partitions: each join pays for the assignment in gas,
// so a large group's rebalances are the joiner's cost, not the validators'.
func TestAttackConsumerGroupAssignmentIsPaidFor(t *testing.T) {
	f := newFixture(t)
	f.createTopic("wide", 64)
	f.open(f.alice, "big")
	var last uint64
	for i := 0; i < 100; i++ {
		f.ctx = f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
		_, err := f.cbeat(f.alice, "big", fmt.Sprintf("m-%03d", i), 0, []string{"wide"})
		require.NoError(t, err)
		last = f.ctx.GasMeter().GasConsumed()
	}
	_, err := f.cbeat(f.alice, "big", "m-100", 0, []string{"wide"})
	require.ErrorIs(t, err, types.ErrGroupFull)
	st := f.cstate("big")
	require.Len(t, st, 100)
	t.Logf("the 100th join of a 64-partition group used %d gas (the assignment's share: %d)", last, uint64(101*65)*types.RebalanceGasPerUnit)
	require.Greater(t, last, uint64(101*65)*types.RebalanceGasPerUnit)
}
