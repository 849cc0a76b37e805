package keeper_test

import (
	"fmt"
	"testing"
	"time"

	storetypes "cosmossdk.io/store/types"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func (f *fixture) kjoin(owner, group, member string, protocols ...string) (types.KafkaGroup, error) {
	f.t.Helper()
	if len(protocols) == 0 {
		protocols = []string{"range"}
	}
	msg := &types.MsgKafkaJoinGroup{Owner: owner, GroupId: group, MemberId: member, ProtocolType: "consumer",
		SessionTimeoutMs: 10_000, RebalanceTimeoutMs: 20_000}
	for _, p := range protocols {
		msg.Protocols = append(msg.Protocols, types.KafkaProtocol{Name: p, Metadata: []byte("sub:" + member)})
	}
	res, err := f.msgs.KafkaJoinGroup(f.ctx, msg)
	if err != nil {
		return types.KafkaGroup{}, err
	}
	return res.Group, nil
}

func (f *fixture) kstate(group string) *types.QueryKafkaGroupResponse {
	f.t.Helper()
	res, err := f.query.KafkaGroup(f.ctx, &types.QueryKafkaGroupRequest{GroupId: group})
	require.NoError(f.t, err)
	return res
}

// endBlock advances block time by d and runs the EndBlocker, as the next block does.
func (f *fixture) endBlock(d time.Duration) {
	f.t.Helper()
	f.advance(d)
	require.NoError(f.t, f.k.EndBlocker(f.ctx))
}

func memberIDs(ms []types.KafkaMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.MemberId)
	}
	return out
}

// Kafka's group protocol with its state on chain: members joining through different gateways
// (here: accounts) form one generation after the initial delay; the leader's SyncGroup makes
// the group stable with each member's assignment; a new member starts a rebalance that the
// others must join; a member that does not rejoin by the deadline is removed; commits are
// fenced by the Kafka generation; expiry rebalances.
func TestAttackKafkaGroupProtocolOnChain(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 4)
	f.open(f.alice, "ledger")

	kg, err := f.kjoin(f.alice, "ledger", "m-a")
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_PREPARING_REBALANCE, kg.State, "a new group waits the initial delay")
	kg, err = f.kjoin(f.bob, "ledger", "m-b", "roundrobin", "range")
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_PREPARING_REBALANCE, kg.State)

	f.endBlock(1100 * time.Millisecond)
	st := f.kstate("ledger")
	require.Equal(t, types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE, st.Group.State)
	require.Equal(t, int32(1), st.Group.Generation)
	require.Equal(t, "m-a", st.Group.Leader, "the first member to join leads")
	require.Equal(t, "range", st.Group.Protocol, "the only protocol every member supports")
	require.Equal(t, []string{"m-a", "m-b"}, memberIDs(st.Members))
	require.Equal(t, []byte("sub:m-b"), st.Members[1].Protocols[1].Metadata, "the leader sees every member's metadata")

	// Only the owner may act as a member; only the leader's sync assigns.
	_, err = f.kjoin(f.carol, "ledger", "m-a")
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.msgs.KafkaSyncGroup(f.ctx, &types.MsgKafkaSyncGroup{Owner: f.carol, GroupId: "ledger", MemberId: "m-a", Generation: 1})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.msgs.KafkaSyncGroup(f.ctx, &types.MsgKafkaSyncGroup{Owner: f.alice, GroupId: "ledger", MemberId: "m-a", Generation: 0})
	require.ErrorIs(t, err, types.ErrIllegalGeneration)
	res, err := f.msgs.KafkaSyncGroup(f.ctx, &types.MsgKafkaSyncGroup{Owner: f.bob, GroupId: "ledger", MemberId: "m-b", Generation: 1,
		Assignments: []types.KafkaAssignment{{MemberId: "m-b", Assignment: []byte("everything")}}})
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE, res.Group.State, "a follower's sync assigns nothing")
	res, err = f.msgs.KafkaSyncGroup(f.ctx, &types.MsgKafkaSyncGroup{Owner: f.alice, GroupId: "ledger", MemberId: "m-a", Generation: 1,
		Assignments: []types.KafkaAssignment{{MemberId: "m-a", Assignment: []byte("0,1")}, {MemberId: "m-b", Assignment: []byte("2,3")}, {MemberId: "ghost", Assignment: []byte("x")}}})
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_STABLE, res.Group.State)
	st = f.kstate("ledger")
	require.Equal(t, []byte("0,1"), st.Members[0].Assignment)
	require.Equal(t, []byte("2,3"), st.Members[1].Assignment)

	// Commits: the owner, at the Kafka generation.
	commit := func(owner, member string, gen uint64) error {
		_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: owner, GroupId: "ledger", Generation: gen, KafkaMemberId: member,
			Offsets: []types.OffsetCommit{{Topic: "orders", Partition: 2, Offset: 0}}})
		return err
	}
	require.NoError(t, commit(f.bob, "m-b", 1))
	require.ErrorIs(t, commit(f.alice, "m-b", 1), types.ErrGroupAuthorization)
	require.ErrorIs(t, commit(f.bob, "m-b", 0), types.ErrIllegalGeneration)
	// A native join to a Kafka group is refused, and the other way round.
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.carol, GroupId: "ledger", Topics: []string{"orders"}})
	require.ErrorIs(t, err, types.ErrInconsistentGroupProtocol)

	// A retried join of a follower with the same metadata leaves the generation as it is.
	kg, err = f.kjoin(f.bob, "ledger", "m-b", "roundrobin", "range")
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_STABLE, kg.State)
	require.Equal(t, int32(1), kg.Generation)

	// A third member: everyone must rejoin; m-b does not and is removed at the deadline (20 s).
	kg, err = f.kjoin(f.carol, "ledger", "m-c")
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_PREPARING_REBALANCE, kg.State)
	require.NoError(t, commit(f.bob, "m-b", 1), "the current generation's commits are taken while the next forms")
	_, err = f.msgs.KafkaSyncGroup(f.ctx, &types.MsgKafkaSyncGroup{Owner: f.alice, GroupId: "ledger", MemberId: "m-a", Generation: 1})
	require.ErrorIs(t, err, types.ErrRebalanceInProgress)
	kg, err = f.kjoin(f.alice, "ledger", "m-a")
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_PREPARING_REBALANCE, kg.State, "m-b has not rejoined")
	for i := 0; i < 4; i++ { // heartbeats keep every session alive, but m-b never rejoins
		for owner, id := range map[string]string{f.alice: "m-a", f.bob: "m-b", f.carol: "m-c"} {
			_, err = f.msgs.KafkaHeartbeat(f.ctx, &types.MsgKafkaHeartbeat{Owner: owner, GroupId: "ledger", MemberIds: []string{id}})
			require.NoError(t, err)
		}
		f.endBlock(6 * time.Second)
	}
	st = f.kstate("ledger")
	require.Equal(t, types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE, st.Group.State)
	require.Equal(t, int32(2), st.Group.Generation)
	require.Equal(t, []string{"m-a", "m-c"}, memberIDs(st.Members), "m-b did not rejoin within the rebalance timeout")
	require.Equal(t, "m-a", st.Group.Leader)
	require.ErrorIs(t, commit(f.bob, "m-b", 2), types.ErrUnknownMember)
	g, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "ledger"})
	require.NoError(t, err)
	require.Equal(t, uint64(2), g.Group.Generation, "the group's generation is the Kafka generation")

	// Expiry: m-c stops heartbeating; after its 10 s session the group rebalances without it.
	_, err = f.msgs.KafkaSyncGroup(f.ctx, &types.MsgKafkaSyncGroup{Owner: f.alice, GroupId: "ledger", MemberId: "m-a", Generation: 2})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err = f.msgs.KafkaHeartbeat(f.ctx, &types.MsgKafkaHeartbeat{Owner: f.alice, GroupId: "ledger", MemberIds: []string{"m-a"}})
		require.NoError(t, err)
		f.endBlock(4 * time.Second)
	}
	st = f.kstate("ledger")
	require.Equal(t, []string{"m-a"}, memberIDs(st.Members))
	require.Equal(t, types.KAFKA_GROUP_STATE_PREPARING_REBALANCE, st.Group.State)
	_, err = f.kjoin(f.alice, "ledger", "m-a")
	require.NoError(t, err)
	st = f.kstate("ledger")
	require.Equal(t, types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE, st.Group.State, "every member joined: the generation forms at once")
	require.Equal(t, int32(3), st.Group.Generation)

	// Leaving empties the group; a new first join starts from the next generation.
	_, err = f.msgs.KafkaLeaveGroup(f.ctx, &types.MsgKafkaLeaveGroup{Owner: f.alice, GroupId: "ledger", MemberIds: []string{"m-a"}})
	require.NoError(t, err)
	st = f.kstate("ledger")
	require.Equal(t, types.KAFKA_GROUP_STATE_EMPTY, st.Group.State)
	require.Equal(t, int32(4), st.Group.Generation)
	require.Empty(t, st.Members)
}

// Hostile joins: a group closed to the joiner is refused; protocols nobody shares, oversize
// metadata and member ids are refused; a group's members are bounded by max_group_members.
func TestAttackKafkaGroupRefusals(t *testing.T) {
	f := newFixture(t)
	_, err := f.kjoin(f.alice, "private", "m-a")
	require.NoError(t, err)
	_, err = f.kjoin(f.bob, "private", "m-b")
	require.ErrorIs(t, err, types.ErrGroupAuthorization, "a group created by a first join admits only its admin")

	f.open(f.alice, "open")
	_, err = f.kjoin(f.alice, "open", "m-a", "range")
	require.NoError(t, err)
	_, err = f.kjoin(f.bob, "open", "m-b", "sticky")
	require.ErrorIs(t, err, types.ErrInconsistentGroupProtocol)

	big := &types.MsgKafkaJoinGroup{Owner: f.bob, GroupId: "open", MemberId: "m-b", ProtocolType: "consumer", SessionTimeoutMs: 10_000,
		Protocols: []types.KafkaProtocol{{Name: "range", Metadata: make([]byte, types.MaxKafkaProtocolMetadata+1)}}}
	_, err = f.msgs.KafkaJoinGroup(f.ctx, big)
	require.ErrorIs(t, err, types.ErrInvalidRequest)
	_, err = f.kjoin(f.bob, "open", string(make([]byte, types.MaxKafkaIDLength+1)))
	require.ErrorIs(t, err, types.ErrInvalidRequest)

	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	params.MaxGroupMembers = 3
	require.NoError(t, f.k.SetParams(f.ctx, params))
	for _, id := range []string{"m-b", "m-c"} {
		_, err = f.kjoin(f.bob, "open", id)
		require.NoError(t, err)
	}
	_, err = f.kjoin(f.bob, "open", "m-d")
	require.ErrorIs(t, err, types.ErrGroupFull)

	// The largest join the bounds allow (16 protocols of 64 KiB) is paid for by its signer in
	// store gas: what one member may make every validator keep.
	f.open(f.alice, "big")
	maxJoin := &types.MsgKafkaJoinGroup{Owner: f.bob, GroupId: "big", MemberId: "m-max", ProtocolType: "consumer", SessionTimeoutMs: 10_000}
	for i := 0; i < types.MaxKafkaProtocols; i++ {
		maxJoin.Protocols = append(maxJoin.Protocols, types.KafkaProtocol{Name: fmt.Sprintf("p%d", i), Metadata: make([]byte, types.MaxKafkaProtocolMetadata)})
	}
	ctx := f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
	start := time.Now()
	_, err = f.msgs.KafkaJoinGroup(ctx, maxJoin)
	require.NoError(t, err)
	gas := ctx.GasMeter().GasConsumed()
	require.Greater(t, gas, uint64(types.MaxKafkaProtocols*types.MaxKafkaProtocolMetadata*30), "at least 30 gas per stored metadata byte")
	t.Logf("largest Kafka join (16 × 64 KiB metadata): %d gas, %v; with max_group_members 3 the 4th member was refused", gas, time.Since(start).Round(time.Microsecond))
}
