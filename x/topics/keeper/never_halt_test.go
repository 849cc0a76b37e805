package keeper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"cosmossdk.io/collections"
	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// skipped returns the EventBlockWorkSkipped events emitted on ctx since its event manager was
// made, as "step subject".
func skipped(t testing.TB, ctx sdk.Context) []string {
	t.Helper()
	var out []string
	for _, e := range ctx.EventManager().Events() {
		if e.Type != "bftlog.topics.v1.EventBlockWorkSkipped" {
			continue
		}
		msg, err := sdk.ParseTypedEvent(abci.Event(e))
		require.NoError(t, err)
		ev := msg.(*types.EventBlockWorkSkipped)
		out = append(out, ev.Step+" "+ev.Subject)
	}
	return out
}

// newBlock gives the fixture a fresh event manager, as each block has.
func (f *fixture) newBlock() {
	f.ctx = f.ctx.WithEventManager(sdk.NewEventManager())
}

// requireNoGroupState checks that nothing in the store names group: no group, member, Kafka
// group, Kafka member, expiry or rebalance entry.
func (f *fixture) requireNoGroupState(group string) {
	f.t.Helper()
	has, err := f.k.Groups.Has(f.ctx, group)
	require.NoError(f.t, err)
	require.False(f.t, has, "group")
	has, err = f.k.KafkaGroups.Has(f.ctx, group)
	require.NoError(f.t, err)
	require.False(f.t, has, "Kafka group state")
	n := 0
	require.NoError(f.t, f.k.KafkaMembers.Walk(f.ctx, collections.NewPrefixedPairRange[string, string](group), func(collections.Pair[string, string], types.KafkaMember) (bool, error) {
		n++
		return false, nil
	}))
	require.NoError(f.t, f.k.Members.Walk(f.ctx, collections.NewPrefixedPairRange[string, string](group), func(collections.Pair[string, string], types.Member) (bool, error) {
		n++
		return false, nil
	}))
	require.NoError(f.t, f.k.MemberExpiry.Walk(f.ctx, nil, func(key collections.Triple[int64, string, string], _ bool) (bool, error) {
		if key.K2() == group {
			n++
		}
		return false, nil
	}))
	require.NoError(f.t, f.k.KafkaRebalanceDue.Walk(f.ctx, nil, func(key collections.Pair[int64, string], _ bool) (bool, error) {
		if key.K2() == group {
			n++
		}
		return false, nil
	}))
	require.Zero(f.t, n, "entries naming group %q left behind", group)
}

// deleteLeavingNothing deletes group as admin, checks nothing names it any more and that the
// next blocks' EndBlockers skip nothing.
func (f *fixture) deleteLeavingNothing(admin, group string) {
	f.t.Helper()
	_, err := f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: admin, GroupId: group})
	require.NoError(f.t, err)
	f.requireNoGroupState(group)
	for i := 0; i < 5; i++ {
		f.newBlock()
		f.endBlock(10 * time.Second)
		require.Empty(f.t, skipped(f.t, f.ctx))
	}
}

// H1, as first seen on a one-validator chain: a Kafka consumer of group "hg" crashed (it stays
// a member until its session ends), then its admin deleted the group. The delete was accepted,
// left the Kafka member, its expiry and the Kafka group state behind, and the EndBlocker that
// expired the member halted every validator ("group "hg" does not exist"). Now the delete and a
// reset are refused while a Kafka member is live, accepted once it expired, and leave nothing
// behind; later blocks skip nothing.
func TestAttackDeletingAGroupWithACrashedKafkaConsumer(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 2)
	_, err := f.kjoin(f.alice, "hg", "m-a")
	require.NoError(t, err)
	f.endBlock(1100 * time.Millisecond) // generation 1 forms; then the consumer is killed
	require.Equal(t, types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE, f.kstate("hg").Group.State)
	g, err := f.k.Groups.Get(f.ctx, "hg")
	require.NoError(t, err)
	require.Equal(t, types.GROUP_KIND_KAFKA, g.Kind)

	_, err = f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: f.alice, GroupId: "hg"})
	require.ErrorIs(t, err, types.ErrGroupNotEmpty)
	require.ErrorContains(t, err, "Kafka members")
	_, err = f.msgs.ResetOffsets(f.ctx, &types.MsgResetOffsets{Authority: f.alice, GroupId: "hg", Topic: "orders", To: types.OFFSET_SPEC_EARLIEST})
	require.ErrorIs(t, err, types.ErrGroupNotEmpty)

	f.newBlock()
	f.endBlock(11 * time.Second) // the session (10 s) ends: the member expires
	require.Empty(t, skipped(t, f.ctx))
	require.Empty(t, f.kstate("hg").Members)
	_, err = f.msgs.ResetOffsets(f.ctx, &types.MsgResetOffsets{Authority: f.alice, GroupId: "hg", Topic: "orders", To: types.OFFSET_SPEC_EARLIEST})
	require.NoError(t, err)
	f.deleteLeavingNothing(f.alice, "hg")
	// The id is free again, for either kind.
	f.join(f.alice, "hg", "orders")
	g, err = f.k.Groups.Get(f.ctx, "hg")
	require.NoError(t, err)
	require.Equal(t, types.GROUP_KIND_NATIVE, g.Kind)
}

// The admin need not wait for a crashed Kafka consumer's session: removing its account removes
// its members, and the group can be deleted at once, leaving nothing behind.
func TestAdminRemovesACrashedKafkaConsumer(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 2)
	f.open(f.alice, "hg")
	_, err := f.kjoin(f.bob, "hg", "m-b1")
	require.NoError(t, err)
	_, err = f.kjoin(f.bob, "hg", "m-b2")
	require.NoError(t, err)
	_, err = f.kjoin(f.alice, "hg", "m-a")
	require.NoError(t, err)
	f.endBlock(1100 * time.Millisecond)
	require.Len(t, f.kstate("hg").Members, 3)

	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.bob, GroupId: "hg", Member: f.alice})
	require.ErrorIs(t, err, types.ErrGroupAuthorization, "only the admin removes members")
	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.alice, GroupId: "hg", Member: f.carol})
	require.ErrorIs(t, err, types.ErrUnknownMember)
	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.alice, GroupId: "hg", Member: f.bob})
	require.NoError(t, err)
	st := f.kstate("hg")
	require.Equal(t, []string{"m-a"}, memberIDs(st.Members), "both of bob's members went")
	require.Equal(t, types.KAFKA_GROUP_STATE_PREPARING_REBALANCE, st.Group.State, "the rest rebalance")
	_, err = f.kjoin(f.bob, "hg", "m-b3")
	require.NoError(t, err, "an open group admits bob again (he was not on an allowlist)")

	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.alice, GroupId: "hg", Member: f.bob})
	require.NoError(t, err)
	_, err = f.msgs.RemoveGroupMember(f.ctx, &types.MsgRemoveGroupMember{Authority: f.alice, GroupId: "hg", Member: f.alice})
	require.NoError(t, err)
	f.deleteLeavingNothing(f.alice, "hg")
}

// A group with members refuses a member of the other kind; an empty native group becomes a
// Kafka group at a Kafka client's join, but a Kafka group stays one even when empty (a
// gateway's simple commit, which joins natively, would otherwise lock its Kafka consumers out
// for a session); deleting it frees the id for either kind.
func TestGroupKindFollowsItsMembers(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 2)
	f.open(f.alice, "g")
	g, err := f.k.Groups.Get(f.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, types.GROUP_KIND_UNSPECIFIED, g.Kind, "nobody joined yet")

	f.join(f.bob, "g", "orders")
	_, err = f.kjoin(f.alice, "g", "m-a")
	require.ErrorIs(t, err, types.ErrInconsistentGroupProtocol)
	_, err = f.msgs.LeaveGroup(f.ctx, &types.MsgLeaveGroup{Member: f.bob, GroupId: "g"})
	require.NoError(t, err)

	_, err = f.kjoin(f.alice, "g", "m-a")
	require.NoError(t, err, "an empty native group becomes a Kafka group")
	g, err = f.k.Groups.Get(f.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, types.GROUP_KIND_KAFKA, g.Kind)
	require.Greater(t, g.Generation, uint64(0))
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: "g", Topics: []string{"orders"}})
	require.ErrorIs(t, err, types.ErrInconsistentGroupProtocol)
	_, err = f.msgs.KafkaLeaveGroup(f.ctx, &types.MsgKafkaLeaveGroup{Owner: f.alice, GroupId: "g", MemberIds: []string{"m-a"}})
	require.NoError(t, err)
	_, err = f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: "g", Topics: []string{"orders"}})
	require.ErrorIs(t, err, types.ErrInconsistentGroupProtocol, "an empty Kafka group stays a Kafka group")

	_, err = f.msgs.DeleteGroup(f.ctx, &types.MsgDeleteGroup{Authority: f.alice, GroupId: "g"})
	require.NoError(t, err)
	f.join(f.bob, "g", "orders")
	g, err = f.k.Groups.Get(f.ctx, "g")
	require.NoError(t, err)
	require.Equal(t, types.GROUP_KIND_NATIVE, g.Kind, "a deleted Kafka group's id is free for native members")
}

// State the bug left on chains before this fix — Kafka members, their expiry entries and the
// Kafka group state of a deleted group — is cleaned up by the EndBlocker as the members
// expire, instead of halting it.
func TestEndBlockerCleansUpOrphanedKafkaState(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 2)
	_, err := f.kjoin(f.alice, "hg", "m-a")
	require.NoError(t, err)
	f.endBlock(1100 * time.Millisecond)
	require.NoError(t, f.k.Groups.Remove(f.ctx, "hg")) // what the old DeleteGroup did

	f.newBlock()
	f.endBlock(11 * time.Second)
	require.Empty(t, skipped(t, f.ctx))
	f.requireNoGroupState("hg")
}

// The last line of defence: work the EndBlocker cannot do on some group is skipped with an
// event, its writes dropped, and the rest of the block's work is done. Here the Kafka group
// state of "a" has lost its group (as a defect might leave it) while a join phase is due; "b"'s
// generation forms in the same block.
func TestAttackEndBlockerSkipsWhatItCannotDo(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 2)
	_, err := f.kjoin(f.alice, "a", "m-a")
	require.NoError(t, err)
	_, err = f.kjoin(f.bob, "b", "m-b")
	require.NoError(t, err)
	require.NoError(t, f.k.Groups.Remove(f.ctx, "a"))

	f.newBlock()
	f.endBlock(1100 * time.Millisecond)
	require.Equal(t, []string{"kafka_rebalance a"}, skipped(t, f.ctx))
	require.Equal(t, int32(1), f.kstate("b").Group.Generation, "b's generation formed in the same block")
	kg, err := f.k.KafkaGroups.Get(f.ctx, "a")
	require.NoError(t, err)
	require.Equal(t, types.KAFKA_GROUP_STATE_PREPARING_REBALANCE, kg.State, "a's failed work left its state as it was")
	// ...and is tried again later, not every block and not never: its deadline moved.
	now := f.ctx.BlockTime().UnixMilli()
	require.Equal(t, now+keeper.KafkaRebalanceRetryMs, kg.DeadlineMs)
	due, err := f.k.KafkaRebalanceDue.Has(f.ctx, collections.Join(kg.DeadlineMs, "a"))
	require.NoError(t, err)
	require.True(t, due)
	t.Logf("skipped: %v; retried at +%d ms", skipped(t, f.ctx), keeper.KafkaRebalanceRetryMs)
	f.newBlock()
	f.endBlock(time.Second)
	require.Empty(t, skipped(t, f.ctx), "not retried at once")

	// When a's member expires, what is left of it goes.
	f.newBlock()
	f.endBlock(25 * time.Second)
	f.requireNoGroupState("a")
}

// isolate drops a failed or panicking piece of work with its writes and events; only a failure
// of the node's own storage stops the block.
func TestAttackIsolateDropsFailedWork(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 1)
	write := func(ctx context.Context, name string) {
		require.NoError(t, f.k.TopicPurges.Set(ctx, name, types.TopicPurge{Name: name, Partitions: 1}))
		require.NoError(t, sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventTopicDeleted{Name: name}))
	}
	has := func(name string) bool {
		ok, err := f.k.TopicPurges.Has(f.ctx, name)
		require.NoError(t, err)
		return ok
	}
	f.newBlock()
	require.NoError(t, f.k.Isolate(f.ctx, "test", "ok", func(ctx context.Context) error { write(ctx, "ok"); return nil }))
	require.NoError(t, f.k.Isolate(f.ctx, "test", "fails", func(ctx context.Context) error {
		write(ctx, "fails")
		return errors.New("boom")
	}))
	require.NoError(t, f.k.Isolate(f.ctx, "test", "panics", func(ctx context.Context) error {
		write(ctx, "panics")
		var m map[string]int
		m["x"]++ //nolint:staticcheck // a nil map on purpose: a defect's panic
		return nil
	}))
	require.True(t, has("ok"))
	require.False(t, has("fails"))
	require.False(t, has("panics"))
	require.Equal(t, []string{"test fails", "test panics"}, skipped(t, f.ctx))
	deleted := 0
	for _, e := range f.ctx.EventManager().Events() {
		if e.Type == "bftlog.topics.v1.EventTopicDeleted" {
			deleted++
		}
	}
	require.Equal(t, 1, deleted, "only the kept work's events")

	err := f.k.Isolate(f.ctx, "test", "disk", func(context.Context) error {
		return fmt.Errorf("reading: %w", keeper.ErrStorage)
	})
	require.ErrorIs(t, err, keeper.ErrStorage, "the node's own storage failing stops it")
	require.PanicsWithError(t, keeper.ErrStorage.Error(), func() {
		_ = f.k.Isolate(f.ctx, "test", "disk", func(context.Context) error { panic(keeper.ErrStorage) })
	})
}

// MsgDeleteRecords leaves the batches below the log start offsets it moves to the EndBlocker.
// Whatever happens to their topics meanwhile — deleted (the purge takes the batches), switched
// to compact alone (they still go: nothing reads them), compact,delete with a compaction pass
// under way (the pass goes on from the log start offset), retention by time moving past them —
// the blocks skip nothing, log start offsets never move back, every batch wholly below one
// goes, and the records from each log start offset on are all there.
func TestDeleteRecordsCleanupNeverHalts(t *testing.T) {
	f := newFixture(t)
	f.setParams(func(p *types.Params) {
		p.RetentionBatchesPerBlock, p.RetentionPartitionsPerBlock, p.CompactionRecordsPerBlock = 3, 2, 6
	})
	f.createTopic("gone", 2)
	f.createTopic("switched", 1)
	f.createTopic("timed", 1)
	f.createCompacted("cd", 1, func(c *types.TopicConfig) { c.CleanupPolicy = types.CleanupPolicyCompactDelete })
	latest := map[string]uint64{} // cd: each key's latest offset
	for i := 0; i < 10; i++ {
		f.produceBatches("gone", 0, 1, 3)
		f.produceBatches("gone", 1, 1, 3)
		f.produceBatches("switched", 0, 1, 3)
		f.produceBatches("timed", 0, 1, 3)
		var recs []types.BatchRecord
		for j := 0; j < 3; j++ {
			key := fmt.Sprintf("k%d", (3*i+j)%4)
			recs = append(recs, kv(key, str("v")))
			latest[key] = uint64(3*i + j)
		}
		_, err := f.produce(f.bob, pb{Topic: "cd", Records: recs})
		require.NoError(t, err)
		f.advance(time.Second)
	}
	f.newBlock()
	f.endBlock(time.Second) // cd's first compaction pass starts and runs out of budget
	st, err := f.k.Compactions.Get(f.ctx, types.TopicPartition{Topic: "cd"})
	require.NoError(t, err)
	require.True(t, st.InPass, "a pass under way")
	require.Less(t, st.PassOffset, uint64(13))

	_, err = f.deleteRecords(f.alice,
		types.DeleteRecordsPartition{Topic: "gone", Partition: 0, Offset: 16},
		types.DeleteRecordsPartition{Topic: "gone", Partition: 1, ToHighWatermark: true},
		types.DeleteRecordsPartition{Topic: "switched", Offset: 20},
		types.DeleteRecordsPartition{Topic: "timed", Offset: 7},
		types.DeleteRecordsPartition{Topic: "cd", Offset: 13})
	require.NoError(t, err)
	_, err = f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "gone"})
	require.NoError(t, err)
	cfg := anyone()
	cfg.CleanupPolicy = types.CleanupPolicyCompact
	_, err = f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "switched", Config: cfg})
	require.NoError(t, err)
	setRetention(t, f, "timed", 4_000, -1)

	starts := map[types.TopicPartition]uint64{}
	clean := func() bool {
		done := true
		require.NoError(t, f.k.Partitions.Walk(f.ctx, nil, func(tp types.TopicPartition, p types.Partition) (bool, error) {
			require.GreaterOrEqual(t, p.LogStartOffset, starts[tp], "%s/%d: the log start offset moved back", tp.Topic, tp.Partition)
			starts[tp] = p.LogStartOffset
			require.Equal(t, storedBytes(t, f, tp.Topic, tp.Partition), p.ByteCount)
			if lasts := f.batchLasts(tp.Topic, tp.Partition); len(lasts) > 0 && lasts[0] < p.LogStartOffset {
				done = false
			}
			return false, nil
		}))
		purging, err := f.k.TopicPurges.Has(f.ctx, "gone")
		require.NoError(t, err)
		return done && !purging
	}
	blocks := 0
	for !clean() {
		blocks++
		require.LessOrEqual(t, blocks, 40, "the cleanup must end")
		f.newBlock()
		f.endBlock(300 * time.Millisecond)
		require.Empty(t, skipped(t, f.ctx))
	}
	t.Logf("every batch below a log start offset deleted in %d blocks (3 keys per block)", blocks)
	require.Empty(t, f.batchLasts("gone", 0))
	require.Empty(t, f.batchLasts("gone", 1))
	require.Equal(t, []uint64{20, 21, 22, 23, 24, 25, 26, 27, 28, 29}, offsets(f.readAll("switched", 0)), "a batch holding the log start offset stays whole")
	require.Equal(t, uint64(20), f.partitions("switched")[0].LogStartOffset, "not moved to the batch's end")
	timed := f.partitions("timed")[0]
	require.GreaterOrEqual(t, timed.LogStartOffset, uint64(7))
	t.Logf("timed: log start offset %d, %d records left", timed.LogStartOffset, timed.RecordCount)

	f.compactUntilIdle(20)
	got := f.readAll("cd", 0)
	var want []uint64
	for _, off := range latest {
		if off >= 13 {
			want = append(want, off)
		}
	}
	for _, r := range got {
		require.GreaterOrEqual(t, r.Offset, uint64(13), "nothing below the log start offset is read")
	}
	have := map[uint64]bool{}
	for _, r := range got {
		have[r.Offset] = true
	}
	for _, off := range want {
		require.True(t, have[off], "the latest record of its key at %d survives", off)
	}
}
