package keeper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func (f *fixture) setParams(edit func(*types.Params)) {
	f.t.Helper()
	p, err := f.k.Params.Get(f.ctx)
	require.NoError(f.t, err)
	edit(&p)
	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(f.t, err)
}

// Issue "Hostile accounts" item 4: a join that would make the group's subscription (the union of
// its members' topics) larger than max_group_subscribed_partitions is refused, so a rebalance
// never costs more than members x that cap.
func TestAttackJoinOverSubscriptionCapIsRefused(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 8)
	f.createTopic("b", 4)
	f.setParams(func(p *types.Params) { p.MaxGroupSubscribedPartitions = 10 })
	f.open(f.alice, "g")
	f.join(f.alice, "g", "a")
	var err error
	gas, took := f.metered(func() {
		_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.alice, GroupId: "g", Topics: []string{"a", "b"}})
	})
	require.ErrorIs(t, err, types.ErrSubscriptionTooLarge)
	t.Logf("join subscribing 12 partitions over a cap of 10: refused in %v, %d gas", took, gas)
	// Another member's topics count too: the cap is on the group's union.
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: "g", Topics: []string{"b"}})
	require.ErrorIs(t, err, types.ErrSubscriptionTooLarge)
	// A new group over the cap is not created either.
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: "h", Topics: []string{"a", "b"}})
	require.ErrorIs(t, err, types.ErrSubscriptionTooLarge)
	has, err := f.k.Groups.Has(f.ctx, "h")
	require.NoError(t, err)
	require.False(t, has)
	res, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, res.Members, 1)
	require.Equal(t, []string{"a"}, res.Members[0].Topics)
	// A re-join replacing the member's own topics counts only the new ones.
	f.join(f.alice, "g", "b")
	f.join(f.bob, "g", "b")
}

// Expiry in the EndBlocker is bounded by work (members x subscribed partitions per rebalanced
// group), not by a count of members: many expired members in large groups drain over several
// blocks, each within the budget.
func TestAttackExpiryWorkIsBoundedPerBlock(t *testing.T) {
	f := newFixture(t)
	const groups, members, partitions, budget = 6, 50, 100, 12_000
	f.createTopic("a", partitions)
	f.setParams(func(p *types.Params) {
		p.MaxExpiriesPerBlock = 10_000 // the count bound is not what limits this
		p.MaxExpiryWorkPerBlock = budget
	})
	accts := accounts(t, members)
	for g := 0; g < groups; g++ {
		id := fmt.Sprintf("g%d", g)
		f.open(f.alice, id)
		for _, a := range accts {
			f.join(a, id, "a")
		}
	}
	f.advance(11 * time.Second) // every session (10 s) has ended
	perGroup := uint64(members*partitions + members + members)
	left, blocks := groups*members, 0
	for left > 0 {
		blocks++
		start := time.Now()
		var work uint64
		gas, _ := f.metered(func() {
			var err error
			work, err = f.k.ExpireMembersWork(f.ctx)
			require.NoError(t, err)
		})
		took := time.Since(start)
		n := 0
		for g := 0; g < groups; g++ {
			res, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: fmt.Sprintf("g%d", g)})
			require.NoError(t, err)
			n += len(res.Members)
		}
		t.Logf("block %d: expired %d members, %d work units (budget %d), %d gas, %v", blocks, left-n, work, budget, gas, took)
		require.LessOrEqual(t, work, uint64(budget))
		require.Less(t, n, left, "every block makes progress")
		require.Equal(t, 0, (left-n)%members, "whole groups fit in this budget")
		left = n
		f.advance(200 * time.Millisecond)
	}
	require.Equal(t, groups/int(budget/perGroup), blocks, "%d work units per group", perGroup)

	// A group costlier than the whole budget still drains, one member per block.
	f.setParams(func(p *types.Params) { p.MaxExpiryWorkPerBlock = 100 })
	f.open(f.alice, "big")
	for _, a := range accts[:3] {
		f.join(a, "big", "a")
	}
	f.advance(11 * time.Second)
	for want := 2; want >= 0; want-- {
		work, err := f.k.ExpireMembersWork(f.ctx)
		require.NoError(t, err)
		res, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: "big"})
		require.NoError(t, err)
		require.Len(t, res.Members, want)
		t.Logf("over-budget group: %d work units, %d members left", work, want)
		f.advance(200 * time.Millisecond)
	}
}

// The Lag query without a topic answers at most max_group_subscribed_partitions partitions;
// per topic it is bounded by the topic.
func TestAttackLagQueryIsBounded(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 4)
	f.createTopic("b", 4)
	f.open(f.alice, "g")
	gen := f.join(f.alice, "g", "a", "b").Generation
	_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "g", Generation: gen,
		Offsets: []types.OffsetCommit{{Topic: "a", Partition: 0}, {Topic: "b", Partition: 3}}})
	require.NoError(t, err)
	lag, err := f.query.Lag(f.ctx, &types.QueryLagRequest{GroupId: "g"})
	require.NoError(t, err)
	require.Len(t, lag.Lags, 8)
	f.setParams(func(p *types.Params) { p.MaxGroupSubscribedPartitions = 5 })
	_, err = f.query.Lag(f.ctx, &types.QueryLagRequest{GroupId: "g"})
	require.ErrorIs(t, err, types.ErrInvalidRequest)
	require.Contains(t, err.Error(), "ask per topic")
	f.setParams(func(p *types.Params) { p.MaxGroupSubscribedPartitions = 1 })
	_, err = f.query.Lag(f.ctx, &types.QueryLagRequest{GroupId: "g"})
	require.ErrorIs(t, err, types.ErrInvalidRequest, "the committed offsets alone exceed the cap")
	lag, err = f.query.Lag(f.ctx, &types.QueryLagRequest{GroupId: "g", Topic: "b"})
	require.NoError(t, err)
	require.Len(t, lag.Lags, 4)
}

// A rebalance is paid by the signer that triggers it, in proportion to its work: the last of 20
// members leaving a 1,000-partition subscription pays for reassigning it to the other 19.
func TestAttackRebalanceIsChargedToItsSigner(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"b0", "b1", "b2", "b3"} {
		f.createTopic(name, 250)
	}
	f.createTopic("small", 1)
	accts := accounts(t, 20)
	f.open(f.alice, "g")
	f.open(f.alice, "s")
	for _, a := range accts {
		f.join(a, "g", "b0", "b1", "b2", "b3")
		f.join(a, "s", "small")
	}
	leave := func(group string) uint64 {
		var err error
		gas, took := f.metered(func() {
			_, err = f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: accts[0], GroupId: group})
		})
		require.NoError(t, err)
		t.Logf("leave from 20-member group %s: %d gas, %v", group, gas, took)
		return gas
	}
	big, small := leave("g"), leave("s")
	require.GreaterOrEqual(t, big, uint64(19*1000*types.RebalanceGasPerUnit), "19 members x 1000 partitions")
	require.Less(t, small, uint64(19*1000*types.RebalanceGasPerUnit))
}
