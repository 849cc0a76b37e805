package sim

import (
	"testing"
	"time"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"
	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// The invariants catch what they are for: each corruption below, written straight into a
// committed state that passes them, is reported.
func TestInvariantsCatchBrokenState(t *testing.T) {
	c, err := newChain(t.TempDir(), 2, time.Unix(1_760_000_000, 0).UTC(), false, nil)
	require.NoError(t, err)
	alice := c.addrs[0].String()
	batch, err := types.NewProduceBatch("t", 0, []types.BatchRecord{{Key: types.NewBytes([]byte("k")), Value: types.NewBytes([]byte("v"))}}, kbatch.CompressionNone)
	require.NoError(t, err)
	msgs := []sdk.Msg{
		&types.MsgCreateTopic{Owner: alice, Name: "t", Partitions: 1, Config: types.TopicConfig{RetentionMs: -1, RetentionBytes: -1}},
		&types.MsgProduce{Producer: alice, Batches: []types.ProduceBatch{batch}},
		&types.MsgKafkaJoinGroup{Owner: alice, GroupId: "kg", MemberId: "m", ProtocolType: "consumer", Protocols: []types.KafkaProtocol{{Name: "range"}}, SessionTimeoutMs: 60_000},
		&types.MsgJoinGroup{Member: alice, GroupId: "ng", Topics: []string{"t"}},
		&types.MsgConsumerGroupHeartbeat{Owner: alice, GroupId: "cg", MemberId: "c1", SubscribedTopicNames: []string{"t"}},
		&types.MsgConsumerGroupHeartbeat{Owner: alice, GroupId: "cg", MemberId: "c2", SubscribedTopicNames: []string{"t"}},
	}
	tx, err := c.sign(0, msgs)
	require.NoError(t, err)
	res, err := c.block([][]byte{tx}, c.time.Add(time.Second))
	require.NoError(t, err)
	require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
	require.NoError(t, checkState(c.main.app, c.ctx(), c.main))

	k := c.main.app.TopicsKeeper
	tp := types.TopicPartition{Topic: "t", Partition: 0}
	for _, tc := range []struct {
		name    string
		corrupt func(sdk.Context)
		want    string
	}{
		{"a deleted group's Kafka state left behind", func(ctx sdk.Context) { require.NoError(t, k.Groups.Remove(ctx, "kg")) }, `Kafka group state of "kg"`},
		{"a member without its expiry entry", func(ctx sdk.Context) {
			m, err := k.Members.Get(ctx, collections.Join("ng", alice))
			require.NoError(t, err)
			require.NoError(t, k.MemberExpiry.Remove(ctx, collections.Join3(m.ExpiresAtMs, "ng", alice)))
		}, "has no expiry entry"},
		{"a partition held by two consumer members", func(ctx sdk.Context) {
			for _, id := range []string{"c1", "c2"} {
				m, err := k.ConsumerMembers.Get(ctx, collections.Join("cg", id))
				require.NoError(t, err)
				m.Assigned = []types.TopicPartitions{{Topic: "t", Partitions: []uint32{0}}}
				require.NoError(t, k.ConsumerMembers.Set(ctx, collections.Join("cg", id), m))
			}
		}, "held by both"},
		{"a high watermark behind its batches", func(ctx sdk.Context) {
			p, err := k.Partitions.Get(ctx, tp)
			require.NoError(t, err)
			p.HighWatermark, p.RecordCount = 0, 5
			require.NoError(t, k.Partitions.Set(ctx, tp, p))
		}, "the high watermark is 0"},
		{"a batch without its record bytes' pointer", func(ctx sdk.Context) {
			require.NoError(t, k.Batches.Set(ctx, collections.Join(tp, uint64(9)), types.RecordBatch{BaseOffset: 9, RecordCount: 1}))
			require.NoError(t, k.BatchMetas.Set(ctx, collections.Join(tp, uint64(9)), types.BatchMeta{BaseOffset: 9}))
		}, "has no record pointer"},
		{"a deposit nobody claims", func(ctx sdk.Context) {
			coins := sdk.NewCoins(sdk.NewCoin(sdk.DefaultBondDenom, sdkmath.NewInt(7)))
			require.NoError(t, c.main.app.BankKeeper.SendCoinsFromAccountToModule(ctx, c.addrs[1], types.ModuleName, coins))
		}, "module account holds"},
		{"a committed offset past the high watermark", func(ctx sdk.Context) {
			require.NoError(t, k.Offsets.Set(ctx, collections.Join("ng", tp), types.CommittedOffset{GroupId: "ng", Topic: "t", Offset: 99}))
			require.NoError(t, k.GroupTopics.Set(ctx, collections.Join("t", "ng"), true))
		}, "above its high watermark"},
	} {
		ctx, _ := c.ctx().CacheContext() // each corruption on its own branch of the good state
		tc.corrupt(ctx)
		err := checkState(c.main.app, ctx, c.main)
		require.ErrorContains(t, err, tc.want, tc.name)
		t.Logf("%s: %v", tc.name, err)
	}
}
