package keeper_test

import (
	"testing"
	"time"

	"cosmossdk.io/collections"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Migrate1to2 (upgrade v2) gives topics stored before v2 — without a cleanup policy — "delete"
// and leaves everything else of them as it was, and gives params stored before v2 the
// compaction budgets; a config naming an unknown policy is refused with ErrInvalidConfig.
func TestMigrate1to2SetsCleanupPolicy(t *testing.T) {
	f := newFixture(t)
	f.createTopic("old", 2)
	f.createTopic("new", 1)
	v1, err := f.k.Topics.Get(f.ctx, "old")
	require.NoError(t, err)
	v1.Config.CleanupPolicy = "" // as a v1 node stored it
	v1.Config.RetentionMs = 60_000
	require.NoError(t, f.k.Topics.Set(f.ctx, "old", v1))

	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	params.CompactionBytesPerBlock, params.CompactionRecordsPerBlock = 0, 0 // as a v1 node stored them
	require.NoError(t, f.k.Params.Set(f.ctx, params))

	require.NoError(t, keeper.NewMigrator(f.k).Migrate1to2(f.ctx))
	params, err = f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	require.Equal(t, types.DefaultParams().CompactionBytesPerBlock, params.CompactionBytesPerBlock)
	require.Equal(t, types.DefaultParams().CompactionRecordsPerBlock, params.CompactionRecordsPerBlock)
	require.NoError(t, params.Validate())
	got, err := f.k.Topics.Get(f.ctx, "old")
	require.NoError(t, err)
	want := v1
	want.Config.CleanupPolicy = types.CleanupPolicyDelete
	require.Equal(t, want, got)
	n, err := f.k.Topics.Get(f.ctx, "new")
	require.NoError(t, err)
	require.Equal(t, types.CleanupPolicyDelete, n.Config.CleanupPolicy)

	_, err = f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: "table", Partitions: 1,
		Config: types.TopicConfig{CleanupPolicy: "compact,truncate"}})
	require.ErrorIs(t, err, types.ErrInvalidConfig)
}

// Migrate1to2 brings params v1 accepted within v2's bounds (so the upgraded chain's export
// validates and governance is not locked out), gives every group its kind from its members,
// and drops what v1's deletes left: the Kafka group state of a deleted group, and the Kafka group
// state beside a group recreated natively, empty or with a member whose session still runs.
func TestMigrate1to2BoundsParamsAndKindsGroups(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders", 2)
	params, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	params.MaxBatchBytes, params.MaxTxGas, params.CompactionRecordsPerBlock = 100<<20, 5_000_000, 1 // v1 took these
	require.NoError(t, f.k.Params.Set(f.ctx, params))

	// Groups as v1 left them: no kinds; "gone" deleted with its Kafka state left behind;
	// "mixed" recreated natively beside an empty Kafka group state, "live" beside one whose
	// member's session still runs.
	_, err = f.kjoin(f.alice, "kafka", "m-a")
	require.NoError(t, err)
	_, err = f.kjoin(f.alice, "gone", "m-g")
	require.NoError(t, err)
	_, err = f.kjoin(f.alice, "mixed", "m-x")
	require.NoError(t, err)
	_, err = f.msgs.KafkaLeaveGroup(f.ctx, &types.MsgKafkaLeaveGroup{Owner: f.alice, GroupId: "mixed", MemberIds: []string{"m-x"}})
	require.NoError(t, err)
	_, err = f.kjoin(f.alice, "live", "m-l")
	require.NoError(t, err)
	f.join(f.alice, "native", "orders")
	f.join(f.alice, "mixed-native", "orders")
	for _, id := range []string{"mixed", "live"} {
		mixed, err := f.k.Groups.Get(f.ctx, "mixed-native")
		require.NoError(t, err)
		mixed.GroupId = id
		require.NoError(t, f.k.Groups.Set(f.ctx, id, mixed))
		m, err := f.k.Members.Get(f.ctx, collections.Join("mixed-native", f.alice))
		require.NoError(t, err)
		m.GroupId = id
		require.NoError(t, f.k.Members.Set(f.ctx, collections.Join(id, f.alice), m))
		require.NoError(t, f.k.MemberExpiry.Set(f.ctx, collections.Join3(m.ExpiresAtMs, id, f.alice), true))
	}
	for _, id := range []string{"kafka", "native", "mixed", "live"} {
		g, err := f.k.Groups.Get(f.ctx, id)
		require.NoError(t, err)
		g.Kind = types.GROUP_KIND_UNSPECIFIED
		require.NoError(t, f.k.Groups.Set(f.ctx, id, g))
	}
	require.NoError(t, f.k.Groups.Remove(f.ctx, "gone"))

	require.NoError(t, keeper.NewMigrator(f.k).Migrate1to2(f.ctx))
	params, err = f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	require.NoError(t, params.Validate())
	require.Equal(t, uint64(types.MaxBatchBytesLimit), params.MaxBatchBytes)
	require.Equal(t, uint64(types.MinMaxTxGas), params.MaxTxGas)
	require.Equal(t, uint32(types.MinCompactionRecordsPerBlock), params.CompactionRecordsPerBlock)
	for id, want := range map[string]types.GroupKind{"kafka": types.GROUP_KIND_KAFKA, "native": types.GROUP_KIND_NATIVE, "mixed": types.GROUP_KIND_NATIVE, "live": types.GROUP_KIND_NATIVE} {
		g, err := f.k.Groups.Get(f.ctx, id)
		require.NoError(t, err)
		require.Equal(t, want, g.Kind, id)
	}
	for _, id := range []string{"gone", "mixed", "live"} {
		has, err := f.k.KafkaGroups.Has(f.ctx, id)
		require.NoError(t, err)
		require.False(t, has, "%s: Kafka state left by v1 dropped", id)
	}
	has, err := f.k.KafkaMembers.Has(f.ctx, collections.Join("live", "m-l"))
	require.NoError(t, err)
	require.False(t, has, "the live Kafka member of the deleted group went with its state")
	f.requireNoGroupState("gone")
	f.join(f.alice, "mixed", "orders") // its native member rejoins
	f.newBlock()
	f.endBlock(11 * time.Second) // every session ends: only native members expire, nothing skipped
	require.Empty(t, skipped(t, f.ctx))
	for _, id := range []string{"mixed", "live"} {
		g, err := f.query.Group(f.ctx, &types.QueryGroupRequest{GroupId: id})
		require.NoError(t, err)
		require.Empty(t, g.Members, id)
	}
}
