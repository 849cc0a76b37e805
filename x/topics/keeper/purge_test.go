package keeper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	storetypes "cosmossdk.io/store/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// topicKeys counts the keys a topic still has in the batch, metadata and producer-state
// collections.
func topicKeys(t *testing.T, f *fixture, topic string, partitions uint32) (batches, metas, producers int) {
	t.Helper()
	for i := uint32(0); i < partitions; i++ {
		tp := types.TopicPartition{Topic: topic, Partition: i}
		for _, c := range []struct {
			n    *int
			walk func() error
		}{
			{&batches, func() error {
				return f.k.Batches.Walk(f.ctx, collections.NewPrefixedPairRange[types.TopicPartition, uint64](tp), func(collections.Pair[types.TopicPartition, uint64], types.RecordBatch) (bool, error) {
					batches++
					return false, nil
				})
			}},
			{&metas, func() error {
				return f.k.BatchMetas.Walk(f.ctx, collections.NewPrefixedPairRange[types.TopicPartition, uint64](tp), func(collections.Pair[types.TopicPartition, uint64], types.BatchMeta) (bool, error) {
					metas++
					return false, nil
				})
			}},
			{&producers, func() error {
				return f.k.ProducerStates.Walk(f.ctx, collections.NewPrefixedPairRange[types.TopicPartition, string](tp), func(collections.Pair[types.TopicPartition, string], types.ProducerState) (bool, error) {
					producers++
					return false, nil
				})
			}},
		} {
			require.NoError(t, c.walk())
		}
	}
	return batches, metas, producers
}

// requireGone checks that nothing of a deleted topic can be read or written.
func requireGone(t *testing.T, f *fixture, topic string) {
	t.Helper()
	_, err := f.query.Topic(f.ctx, &types.QueryTopicRequest{Name: topic})
	require.ErrorIs(t, err, types.ErrUnknownTopic)
	_, err = f.query.Partitions(f.ctx, &types.QueryPartitionsRequest{Name: topic})
	require.ErrorIs(t, err, types.ErrUnknownTopic)
	for _, p := range []uint32{0, 2} {
		_, err = f.fetch(topic, p, 0, 0, 0)
		require.ErrorIs(t, err, types.ErrUnknownTopic)
		_, err = f.query.Record(f.ctx, &types.QueryRecordRequest{Topic: topic, Partition: p, Offset: 1})
		require.ErrorIs(t, err, types.ErrUnknownTopic)
		_, err = f.query.ListOffsets(f.ctx, &types.QueryListOffsetsRequest{Topic: topic, Partition: p, Spec: types.OFFSET_SPEC_EARLIEST})
		require.ErrorIs(t, err, types.ErrUnknownTopic)
		_, err = f.query.ProducerStates(f.ctx, &types.QueryProducerStatesRequest{Topic: topic, Partition: p})
		require.ErrorIs(t, err, types.ErrUnknownTopic)
	}
	_, err = f.produce(f.alice, pb{Topic: topic, Partition: 0, Records: []types.BatchRecord{rec("", "late")}})
	require.ErrorIs(t, err, types.ErrUnknownTopic)
}

// Issue "Hostile accounts" item 5: DeleteTopic was one transaction over every batch. With a
// finite gas cap (max_tx_gas) a big topic could never be deleted: clearing this topic's batches
// in one transaction runs out of gas. Now the delete tx costs what the partitions cost, the topic
// is unreadable and unwritable at once, its name is refused until the EndBlocker has purged the
// batches and producer states within the shared per-block budget, and retention elsewhere keeps
// running during the purge.
func TestAttackDeleteBigTopicIsBoundedAndPurgedOverBlocks(t *testing.T) {
	f := newFixture(t)
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	const parts = 3
	f.createTopic("big", parts)
	f.createTopic("keep", 1)
	setRetention(t, f, "keep", 1000, -1)
	_, err = f.produce(f.bob, pb{Topic: "keep", Partition: 0, Records: []types.BatchRecord{rec("", "old")}})
	require.NoError(t, err)
	// 120 batches of one 1,000,000-byte record on partitions 0 and 1 (idempotent, so producer
	// states exist), and 1,200 one-record batches on partition 2 from three producers.
	value := string(make([]byte, 1_000_000))
	for i := 0; i < 60; i++ {
		for p := uint32(0); p < 2; p++ {
			_, err := f.produce(f.alice, pb{Topic: "big", Partition: p, Sequence: uint64(i + 1), Records: []types.BatchRecord{rec("", value)}})
			require.NoError(t, err)
		}
	}
	for i := 0; i < 400; i++ {
		for _, who := range []string{f.alice, f.bob, f.carol} {
			_, err := f.produce(who, pb{Topic: "big", Partition: 2, Sequence: uint64(i + 1), Records: []types.BatchRecord{rec("", fmt.Sprint(i))}})
			require.NoError(t, err)
		}
	}
	batches, metas, producers := topicKeys(t, f, "big", parts)
	require.Equal(t, []int{1320, 1320, 5}, []int{batches, metas, producers})
	var stored uint64
	for _, p := range f.partitions("big") {
		stored += p.ByteCount
	}

	// The old delete, replayed: clearing the batches in one transaction capped at max_tx_gas.
	cache, _ := f.ctx.CacheContext()
	cache = cache.WithGasMeter(storetypes.NewGasMeter(params.MaxTxGas))
	outOfGas := func() (out bool) {
		defer func() { _, out = recover().(storetypes.ErrorOutOfGas) }()
		for p := uint32(0); p < parts; p++ {
			// It read every batch, bytes included, as it removed it.
			rng := collections.NewPrefixedPairRange[types.TopicPartition, uint64](types.TopicPartition{Topic: "big", Partition: p})
			it, err := f.k.Batches.Iterate(cache, rng)
			require.NoError(t, err)
			for ; it.Valid(); it.Next() {
				key, err := it.Key()
				require.NoError(t, err)
				_, _ = f.k.RecordBytes.Get(cache, key)
				_ = f.k.RecordBytes.Remove(cache, key)
			}
			_ = it.Close()
			_ = f.k.Batches.Clear(cache, rng)
		}
		return false
	}()
	require.True(t, outOfGas, "clearing %d stored bytes in one tx exceeds max_tx_gas", stored)

	// The delete: bounded by the partition count, well within the cap.
	ctx := f.ctx.WithGasMeter(storetypes.NewGasMeter(params.MaxTxGas))
	start := time.Now()
	_, err = f.msgs.DeleteTopic(ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "big"})
	require.NoError(t, err)
	gas, took := ctx.GasMeter().GasConsumed(), time.Since(start)
	require.Less(t, gas, uint64(200_000), "the delete tx does not touch the batches")
	t.Logf("delete of a topic with %d batches (%d stored bytes, %d producer states): %d gas (max_tx_gas %d), %s; the old one-tx delete ran out of gas",
		batches, stored, producers, gas, params.MaxTxGas, took.Round(time.Microsecond))
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventTopicDeleted")

	requireGone(t, f, "big")
	blocks := 0
	var slowest time.Duration
	for {
		has, err := f.k.TopicPurges.Has(f.ctx, "big")
		require.NoError(t, err)
		if !has {
			break
		}
		_, err = f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.bob, Name: "big", Partitions: 1, Config: anyone()})
		require.ErrorIs(t, err, types.ErrTopicBeingDeleted, "block %d", blocks)
		before, _, _ := topicKeys(t, f, "big", parts)
		f.advance(time.Second)
		start := time.Now()
		require.NoError(t, f.k.EndBlocker(f.ctx))
		slowest = max(slowest, time.Since(start))
		blocks++
		after, _, _ := topicKeys(t, f, "big", parts)
		require.LessOrEqual(t, before-after, int(params.RetentionBatchesPerBlock), "per-block key budget")
		requireGone(t, f, "big")
		require.Less(t, blocks, 20, "the purge must end")
	}
	batches, metas, producers = topicKeys(t, f, "big", parts)
	require.Equal(t, []int{0, 0, 0}, []int{batches, metas, producers}, "nothing of the topic is left")
	require.Equal(t, uint64(1), f.partitions("keep")[0].LogStartOffset, "retention ran during the purge")
	t.Logf("purged in %d blocks (retention_batches_per_block %d, cleanup_bytes_per_block %d), slowest EndBlocker %s",
		blocks, params.RetentionBatchesPerBlock, params.CleanupBytesPerBlock, slowest.Round(time.Microsecond))
	require.GreaterOrEqual(t, blocks, 3, "more than one block's budget of work")

	// Purged: the name is free and the new topic starts empty, with fresh producer state.
	_, err = f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.bob, Name: "big", Partitions: 1, Config: anyone()})
	require.NoError(t, err)
	res, err := f.fetch("big", 0, 0, 0, 0)
	require.NoError(t, err)
	require.Empty(t, res.Records)
	out, err := f.produce(f.alice, pb{Topic: "big", Partition: 0, Sequence: 1, Records: []types.BatchRecord{rec("", "new")}})
	require.NoError(t, err)
	require.Equal(t, uint64(0), out.Results[0].BaseOffset)
	require.False(t, out.Results[0].Duplicate)
}

// Retention and purges share one budget: together they never delete more keys per block than
// retention_batches_per_block, and neither starves the other (they take turns going first).
func TestPurgeAndRetentionShareTheBudget(t *testing.T) {
	f := newFixture(t)
	f.setParams(func(p *types.Params) { p.RetentionBatchesPerBlock = 10 })
	f.createTopic("r", 1)
	f.createTopic("d", 1)
	for i := 0; i < 30; i++ {
		_, err := f.produce(f.alice,
			pb{Topic: "r", Partition: 0, Records: []types.BatchRecord{rec("", "x")}},
			pb{Topic: "d", Partition: 0, Records: []types.BatchRecord{rec("", "y")}})
		require.NoError(t, err)
	}
	setRetention(t, f, "r", 1000, -1)
	_, err := f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "d"})
	require.NoError(t, err)
	f.advance(time.Hour)
	total := func() int {
		n := 0
		require.NoError(t, f.k.BatchMetas.Walk(f.ctx, nil, func(collections.Pair[types.TopicPartition, uint64], types.BatchMeta) (bool, error) {
			n++
			return false, nil
		}))
		return n
	}
	var perBlock []int
	for blocks := 0; total() > 0; blocks++ {
		require.Less(t, blocks, 20)
		before := total()
		f.advance(time.Second)
		require.NoError(t, f.k.EndBlocker(f.ctx))
		perBlock = append(perBlock, before-total())
		require.LessOrEqual(t, before-total(), 10, "one budget for both")
		if blocks == 1 {
			left, _, _ := topicKeys(t, f, "d", 1)
			require.Less(t, left, 30, "the purge progressed")
			require.Positive(t, f.partitions("r")[0].LogStartOffset, "retention progressed")
		}
	}
	has, err := f.k.TopicPurges.Has(f.ctx, "d")
	require.NoError(t, err)
	if has { // the last partition's end is noticed with budget to spare
		require.NoError(t, f.k.EndBlocker(f.ctx))
		has, err = f.k.TopicPurges.Has(f.ctx, "d")
		require.NoError(t, err)
	}
	require.False(t, has)
	require.Equal(t, uint64(30), f.partitions("r")[0].LogStartOffset)
	t.Logf("60 batches (30 due, 30 purged) at retention_batches_per_block 10: deleted per block %v", perBlock)
}

// Any account's group may commit offsets to any topic, and deleting a topic removed every
// group's offsets on it in the delete transaction: an attacker's groups committing to a
// victim's topic made its delete cost what they committed, up to undeletable. The delete now
// costs the same whoever committed; the EndBlocker's budgeted purge removes the offsets, and a
// topic created again under the name starts with none.
func TestAttackDeleteTopicCostIgnoresOtherGroupsOffsets(t *testing.T) {
	const parts, groups = 4, 500
	deleteGas := func(f *fixture) uint64 {
		gas, _ := f.metered(func() {
			_, err := f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "victim"})
			require.NoError(t, err)
		})
		return gas
	}
	victim := func() *fixture {
		f := newFixture(t)
		f.createTopic("victim", parts)
		_, err := f.produce(f.alice, pb{Topic: "victim", Partition: 0, Records: []types.BatchRecord{rec("", "x")}})
		require.NoError(t, err)
		return f
	}
	alone := deleteGas(victim())

	f := victim()
	ids := make([]string, groups)
	for i := range ids {
		ids[i] = fmt.Sprintf("squat-%03d", i)
		f.open(f.bob, ids[i])
		_, err := f.msgs.ResetOffsets(f.ctx, &types.MsgResetOffsets{Authority: f.bob, GroupId: ids[i], Topic: "victim", To: types.OFFSET_SPEC_LATEST})
		require.NoError(t, err)
	}
	offsets := func() (n int) {
		require.NoError(t, f.k.Offsets.Walk(f.ctx, nil, func(_ collections.Pair[string, types.TopicPartition], o types.CommittedOffset) (bool, error) {
			if o.Topic == "victim" {
				n++
			}
			return false, nil
		}))
		return n
	}
	require.Equal(t, groups*parts, offsets())
	attacked := deleteGas(f)
	t.Logf("delete of a %d-partition topic: %d gas with no group's offsets, %d gas with %d groups' %d committed offsets on it",
		parts, alone, attacked, groups, groups*parts)
	require.Equal(t, alone, attacked, "the delete does not pay for other accounts' groups")

	// The offsets are not readable once the topic is gone, and go within the shared budget.
	res, err := f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: ids[0]})
	require.NoError(t, err)
	require.Empty(t, res.Offsets, "a deleted topic's offsets are not answered")
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate(f.k.AddressCodec()), "an export mid-purge leaves the offsets out")
	require.Empty(t, exported.Offsets)
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	var perBlock []int
	for blocks := 0; ; blocks++ {
		has, err := f.k.TopicPurges.Has(f.ctx, "victim")
		require.NoError(t, err)
		if !has {
			break
		}
		require.Less(t, blocks, 20, "the purge must end")
		_, err = f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.bob, Name: "victim", Partitions: 1, Config: anyone()})
		require.ErrorIs(t, err, types.ErrTopicBeingDeleted)
		before := offsets()
		f.advance(time.Second)
		require.NoError(t, f.k.EndBlocker(f.ctx))
		perBlock = append(perBlock, before-offsets())
		require.LessOrEqual(t, before-offsets(), int(params.RetentionBatchesPerBlock), "per-block key budget")
	}
	require.Zero(t, offsets())
	t.Logf("%d offsets purged by the EndBlocker over %d blocks (retention_batches_per_block %d): %v per block",
		groups*parts, len(perBlock), params.RetentionBatchesPerBlock, perBlock)
	n := 0
	require.NoError(t, f.k.GroupTopics.Walk(f.ctx, nil, func(collections.Pair[string, string], bool) (bool, error) {
		n++
		return false, nil
	}))
	require.Zero(t, n, "no group is indexed under the name")

	// A new topic of the name starts with no committed offsets.
	f.createTopic("victim", parts)
	for _, id := range []string{ids[0], ids[groups-1]} {
		res, err := f.query.GroupOffsets(f.ctx, &types.QueryGroupOffsetsRequest{GroupId: id, Topic: "victim"})
		require.NoError(t, err)
		require.Empty(t, res.Offsets, "no stale offset of group %s", id)
	}
}
