package keeper_test

import (
	"testing"

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
