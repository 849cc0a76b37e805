package keeper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	storetypes "cosmossdk.io/store/types"

	addresscodec "github.com/cosmos/cosmos-sdk/codec/address"

	"github.com/bftlog/bftlog/x/topics/types"
)

// accounts returns n distinct addresses (not alice, bob or carol).
func accounts(t testing.TB, n int) []string {
	ac := addresscodec.NewBech32Codec("bftlog")
	out := make([]string, n)
	for i := range out {
		s, err := ac.BytesToString([]byte(fmt.Sprintf("acct%016d", i)))
		require.NoError(t, err)
		out[i] = s
	}
	return out
}

// metered runs fn on a fresh gas meter and returns the gas and time it took.
func (f *fixture) metered(fn func()) (uint64, time.Duration) {
	saved := f.ctx
	f.ctx = f.ctx.WithGasMeter(storetypes.NewInfiniteGasMeter())
	start := time.Now()
	fn()
	gas, took := f.ctx.GasMeter().GasConsumed(), time.Since(start)
	f.ctx = f.ctx.WithGasMeter(saved.GasMeter())
	return gas, took
}

// The takeover of issue "Hostile accounts" item 1: a victim's group is joined by an attacker
// (alice sorts first, so the range assignor would hand her every partition), who then commits
// the high watermark so the victim skips every unread record. The join is refused, and so is
// everything that would follow from it.
func TestAttackGroupTakeoverIsRefusedAtTheJoin(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 3)
	for p := uint32(0); p < 3; p++ {
		_, err := f.produce(f.carol, pb{Topic: "a", Partition: p, Records: []types.BatchRecord{rec("", "x"), rec("", "y")}})
		require.NoError(t, err)
	}
	// The victim creates its group implicitly, as `consume --group` does: it is closed.
	gen := f.join(f.carol, "g", "a").Generation
	g, err := f.k.GetGroup(f.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, f.carol, g.Admin)
	require.Equal(t, types.JOIN_POLICY_UNSPECIFIED, g.JoinPolicy, "implicit creation admits only the admin")

	var joinErr, commitErr error
	gas, took := f.metered(func() {
		_, joinErr = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: []string{"a"}})
		_, commitErr = f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "g", Generation: gen,
			Offsets: []types.OffsetCommit{{Topic: "a", Partition: 0, Offset: 2}}})
	})
	require.ErrorIs(t, joinErr, types.ErrGroupAuthorization)
	require.Contains(t, joinErr.Error(), "admits only its admin")
	require.ErrorIs(t, commitErr, types.ErrUnknownMember)
	t.Logf("attacker's join + commit on a closed group: refused in %v, %d gas", took, gas)
	res, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Equal(t, gen, res.Group.Generation, "no rebalance happened")
	require.Len(t, res.Members, 1)
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1, 2)}, res.Members[0].Assignment, "the victim keeps every partition")

	// 100 accounts cannot fill the group either.
	attackers := accounts(t, 100)
	gas, took = f.metered(func() {
		for _, a := range attackers {
			_, err := f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: a, GroupId: "g", Topics: []string{"a"}})
			require.ErrorIs(t, err, types.ErrGroupAuthorization)
		}
	})
	t.Logf("100 accounts joining a closed group: all refused in %v, %d gas", took, gas)
	n, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, n.Members, 1)

	// The id cannot be squatted or re-created by someone else.
	_, err = f.msgs.CreateGroup(f.ctx, &types.MsgCreateGroup{Admin: f.alice, GroupId: "g", JoinPolicy: types.JOIN_POLICY_ANYONE})
	require.ErrorIs(t, err, types.ErrInvalidRequest)
	// Nor can an outsider open it, take it over or remove the victim.
	_, err = f.msgs.UpdateGroupPolicy(f.ctx, &types.MsgUpdateGroupPolicy{Authority: f.alice, GroupId: "g", JoinPolicy: types.JOIN_POLICY_ANYONE})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.msgs.TransferGroupAdmin(f.ctx, &types.MsgTransferGroupAdmin{Authority: f.alice, GroupId: "g", NewAdmin: f.alice})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.alice, GroupId: "g", Member: f.carol})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	g2, err := f.k.GetGroup(f.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, g, g2, "refusals change nothing")
}

// An owner sets a group up before anyone joins: an allowlist admits its consumers only.
func TestCreateGroupWithAllowlist(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	_, err := f.msgs.CreateGroup(f.ctx, &types.MsgCreateGroup{Admin: f.carol, GroupId: "h", JoinPolicy: types.JOIN_POLICY_ALLOWLIST,
		AllowedMembers: []string{f.bob}, SessionTimeoutMs: 10_000})
	require.NoError(t, err)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventGroupUpdated")
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.alice, GroupId: "h", Topics: []string{"a"}})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	require.Contains(t, err.Error(), "not on the allowlist")
	f.join(f.bob, "h", "a")
	f.join(f.carol, "h", "a") // the admin may always join

	for _, tc := range []struct {
		msg types.MsgCreateGroup
		err error
	}{
		{types.MsgCreateGroup{Admin: f.carol, GroupId: "x", JoinPolicy: 9}, types.ErrInvalidRequest},
		{types.MsgCreateGroup{Admin: f.carol, GroupId: "x", JoinPolicy: types.JOIN_POLICY_ANYONE, AllowedMembers: []string{f.bob}}, types.ErrInvalidRequest},
		{types.MsgCreateGroup{Admin: f.carol, GroupId: "x", JoinPolicy: types.JOIN_POLICY_ALLOWLIST, AllowedMembers: []string{f.bob, f.bob}}, types.ErrInvalidRequest},
		{types.MsgCreateGroup{Admin: f.carol, GroupId: "x", JoinPolicy: types.JOIN_POLICY_ALLOWLIST, AllowedMembers: []string{"nope"}}, types.ErrInvalidAddress},
		{types.MsgCreateGroup{Admin: f.carol, GroupId: "x", JoinPolicy: types.JOIN_POLICY_ALLOWLIST, AllowedMembers: accounts(t, types.MaxGroupAllowlist+1)}, types.ErrInvalidRequest},
		{types.MsgCreateGroup{Admin: f.carol, GroupId: "x y"}, types.ErrInvalidGroupID},
		{types.MsgCreateGroup{Admin: f.carol, GroupId: "x", SessionTimeoutMs: 1}, types.ErrInvalidSessionTimeout},
		{types.MsgCreateGroup{Admin: "bad", GroupId: "x"}, types.ErrInvalidAddress},
	} {
		_, err := f.msgs.CreateGroup(f.ctx, &tc.msg)
		require.ErrorIs(t, err, tc.err)
	}
	has, err := f.k.Groups.Has(f.ctx, "x")
	require.NoError(t, err)
	require.False(t, has)
}

// A hostile member that keeps heartbeating used to pin a group for ever (no reset, no delete).
// The admin removes it: its commits, heartbeats and rejoin are refused, and the reset works.
func TestAttackRemovedMemberIsFencedAndResetWorks(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	for i := 0; i < 3; i++ {
		_, err := f.produce(f.carol, pb{Topic: "a", Partition: uint32(i % 2), Records: []types.BatchRecord{rec("", "x")}})
		require.NoError(t, err)
	}
	_, err := f.msgs.CreateGroup(f.ctx, &types.MsgCreateGroup{Admin: f.carol, GroupId: "g", JoinPolicy: types.JOIN_POLICY_ALLOWLIST,
		AllowedMembers: []string{f.alice, f.bob}, SessionTimeoutMs: 10_000})
	require.NoError(t, err)
	f.join(f.bob, "g", "a")
	gen := f.join(f.alice, "g", "a").Generation // alice turns hostile
	commit := func(member string, gen uint64, off uint64) error {
		_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: member, GroupId: "g", Generation: gen,
			Offsets: []types.OffsetCommit{{Topic: "a", Partition: 0, Offset: off}}})
		return err
	}
	require.NoError(t, commit(f.alice, gen, 2))
	for i := 0; i < 5; i++ { // heartbeating keeps her in, past any session timeout
		f.advance(8 * time.Second)
		_, err := f.msgs.Heartbeat(f.ctx, &types.MsgHeartbeat{Member: f.alice, GroupId: "g"})
		require.NoError(t, err)
		_, err = f.msgs.Heartbeat(f.ctx, &types.MsgHeartbeat{Member: f.bob, GroupId: "g"})
		require.NoError(t, err)
		require.NoError(t, f.k.EndBlocker(f.ctx))
	}
	reset := func() error {
		_, err := f.msgs.ResetOffsets(f.ctx, &types.MsgResetOffsets{Authority: f.carol, GroupId: "g", Topic: "a", To: types.OFFSET_SPEC_EARLIEST})
		return err
	}
	require.ErrorIs(t, reset(), types.ErrGroupNotEmpty)

	// Tightening the policy fences her at once, before she is removed.
	_, err = f.msgs.UpdateGroupPolicy(f.ctx, &types.MsgUpdateGroupPolicy{Authority: f.carol, GroupId: "g", JoinPolicy: types.JOIN_POLICY_ALLOWLIST, AllowedMembers: []string{f.bob}})
	require.NoError(t, err)
	require.ErrorIs(t, commit(f.alice, gen, 3), types.ErrGroupAuthorization)
	_, err = f.msgs.Heartbeat(f.ctx, &types.MsgHeartbeat{Member: f.alice, GroupId: "g"})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)

	var removeErr error
	gas, took := f.metered(func() {
		_, removeErr = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.carol, GroupId: "g", Member: f.alice})
	})
	require.NoError(t, removeErr)
	t.Logf("admin removes a hostile member (and rebalances): %v, %d gas", took, gas)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventGroupRebalanced")
	res, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, res.Members, 1)
	require.Equal(t, []types.TopicPartitions{tp("a", 0, 1)}, res.Members[0].Assignment, "bob takes her partitions")
	require.ErrorIs(t, commit(f.alice, res.Group.Generation, 3), types.ErrUnknownMember)
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: []string{"a"}})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.carol, GroupId: "g", Member: f.alice})
	require.ErrorIs(t, err, types.ErrUnknownMember)

	// Gov removes the last member too; then the admin resets.
	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.gov, GroupId: "g", Member: f.bob})
	require.NoError(t, err)
	require.NoError(t, reset())
	offs, err := f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Equal(t, uint64(0), offs.Offsets[0].Committed.Offset, "the hostile commit is undone")
	g, err := f.k.GetGroup(f.ctx, "g")
	require.NoError(t, err)
	require.Empty(t, g.AllowedMembers, "removal also revokes the allowlist entry")

	// Admin transfer: the new admin administers, the old one no longer does.
	_, err = f.msgs.TransferGroupAdmin(f.ctx, &types.MsgTransferGroupAdmin{Authority: f.carol, GroupId: "g", NewAdmin: f.bob})
	require.NoError(t, err)
	_, err = f.msgs.UpdateGroupPolicy(f.ctx, &types.MsgUpdateGroupPolicy{Authority: f.carol, GroupId: "g", JoinPolicy: types.JOIN_POLICY_ANYONE})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	_, err = f.msgs.UpdateGroupPolicy(f.ctx, &types.MsgUpdateGroupPolicy{Authority: f.bob, GroupId: "g", JoinPolicy: types.JOIN_POLICY_ANYONE})
	require.NoError(t, err)
	f.join(f.alice, "g", "a") // open now: anyone, alice included
	_, err = f.msgs.TransferGroupAdmin(f.ctx, &types.MsgTransferGroupAdmin{Authority: f.gov, GroupId: "g", NewAdmin: "bad"})
	require.ErrorIs(t, err, types.ErrInvalidAddress)
	_, err = f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: f.carol, GroupId: "g"})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
}

// A group stored without a policy (genesis or state from before policies) admits its admin
// only; its current members keep working only if they are the admin.
func TestGroupWithoutPolicyAdmitsOnlyItsAdmin(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 1)
	require.NoError(t, f.k.Groups.Set(f.ctx, "old", types.Group{GroupId: "old", Admin: f.bob, Assignor: types.ASSIGNOR_RANGE, SessionTimeoutMs: 10_000}))
	_, err := f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.alice, GroupId: "old", Topics: []string{"a"}})
	require.ErrorIs(t, err, types.ErrGroupAuthorization)
	f.join(f.bob, "old", "a")
}
