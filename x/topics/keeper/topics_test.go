package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

func TestCreateTopic(t *testing.T) {
	f := newFixture(t)
	f.createTopic("orders.v1_eu-west", 3)

	res, err := f.query.Topic(f.ctx, &types.QueryTopicRequest{Name: "orders.v1_eu-west"})
	require.NoError(t, err)
	require.Equal(t, types.Topic{Name: "orders.v1_eu-west", Partitions: 3, Owner: f.alice, Config: anyone().WithDefaults(), CreatedHeight: 7}, res.Topic)
	parts := f.partitions("orders.v1_eu-west")
	require.Len(t, parts, 3)
	for i, p := range parts {
		require.Equal(t, types.Partition{Topic: "orders.v1_eu-west", Partition: uint32(i)}, p)
	}
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventTopicCreated")
}

func TestCreateTopicErrors(t *testing.T) {
	f := newFixture(t)
	f.createTopic("taken", 1)
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	cases := []struct {
		name string
		msg  types.MsgCreateTopic
		err  error
	}{
		{"exists", types.MsgCreateTopic{Owner: f.alice, Name: "taken", Partitions: 1, Config: anyone()}, types.ErrTopicExists},
		{"empty name", types.MsgCreateTopic{Owner: f.alice, Name: "", Partitions: 1}, types.ErrInvalidTopicName},
		{"250 chars", types.MsgCreateTopic{Owner: f.alice, Name: string(long), Partitions: 1}, types.ErrInvalidTopicName},
		{"slash", types.MsgCreateTopic{Owner: f.alice, Name: "a/b", Partitions: 1}, types.ErrInvalidTopicName},
		{"space", types.MsgCreateTopic{Owner: f.alice, Name: "a b", Partitions: 1}, types.ErrInvalidTopicName},
		{"unicode", types.MsgCreateTopic{Owner: f.alice, Name: "tópico", Partitions: 1}, types.ErrInvalidTopicName},
		{"dot", types.MsgCreateTopic{Owner: f.alice, Name: ".", Partitions: 1}, types.ErrInvalidTopicName},
		{"dotdot", types.MsgCreateTopic{Owner: f.alice, Name: "..", Partitions: 1}, types.ErrInvalidTopicName},
		{"zero partitions", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 0}, types.ErrInvalidPartitionCount},
		{"too many partitions", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: types.DefaultMaxPartitionsPerTopic + 1}, types.ErrTooManyPartitions},
		{"bad owner", types.MsgCreateTopic{Owner: "cosmos1xyz", Name: "z", Partitions: 1}, types.ErrInvalidAddress},
		{"negative retention", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 1, Config: types.TopicConfig{RetentionMs: -2}}, types.ErrInvalidConfig},
		{"negative retention bytes", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 1, Config: types.TopicConfig{RetentionBytes: -5}}, types.ErrInvalidConfig},
		{"record limit above module", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 1, Config: types.TopicConfig{MaxRecordBytes: types.DefaultMaxRecordBytes + 1}}, types.ErrInvalidConfig},
		{"allowlist without policy", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 1, Config: types.TopicConfig{AllowedProducers: []string{f.bob}}}, types.ErrInvalidConfig},
		{"bad allowlisted address", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 1, Config: types.TopicConfig{ProducerPolicy: types.PRODUCER_POLICY_ALLOWLIST, AllowedProducers: []string{"nope"}}}, types.ErrInvalidConfig},
		{"duplicate allowlisted", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 1, Config: types.TopicConfig{ProducerPolicy: types.PRODUCER_POLICY_ALLOWLIST, AllowedProducers: []string{f.bob, f.bob}}}, types.ErrInvalidConfig},
		{"unknown policy", types.MsgCreateTopic{Owner: f.alice, Name: "z", Partitions: 1, Config: types.TopicConfig{ProducerPolicy: 9}}, types.ErrInvalidConfig},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.msgs.CreateTopic(f.ctx, &tc.msg)
			require.ErrorIs(t, err, tc.err)
			has, herr := f.k.Topics.Has(f.ctx, "z")
			require.NoError(t, herr)
			require.False(t, has, "a rejected create must not leave a topic behind")
		})
	}
	// 249 characters is Kafka's maximum and is accepted.
	_, err := f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: string(long[:249]), Partitions: 1})
	require.NoError(t, err)
}

func TestUpdateTopicConfig(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	cfg := types.TopicConfig{RetentionMs: 60_000, RetentionBytes: 1 << 20, MaxRecordBytes: 100, ProducerPolicy: types.PRODUCER_POLICY_ALLOWLIST, AllowedProducers: []string{f.bob}}

	_, err := f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.bob, Name: "t", Config: cfg})
	require.ErrorIs(t, err, types.ErrUnauthorized)
	_, err = f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "nope", Config: cfg})
	require.ErrorIs(t, err, types.ErrUnknownTopic)
	_, err = f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "t", Config: types.TopicConfig{RetentionMs: -3}})
	require.ErrorIs(t, err, types.ErrInvalidConfig)

	_, err = f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "t", Config: cfg})
	require.NoError(t, err)
	got, err := f.k.GetTopic(f.ctx, "t")
	require.NoError(t, err)
	require.Equal(t, cfg.WithDefaults(), got.Config, "stored with its cleanup policy")
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventTopicConfigUpdated")

	// The gov authority may change any topic.
	cfg.RetentionMs = -1
	_, err = f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.gov, Name: "t", Config: cfg})
	require.NoError(t, err)
	got, _ = f.k.GetTopic(f.ctx, "t")
	require.Equal(t, int64(-1), got.Config.RetentionMs)
}

func TestAddPartitions(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	_, err := f.produce(f.alice, pb{Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "x")}})
	require.NoError(t, err)

	for _, n := range []uint32{1, 2} {
		_, err = f.msgs.AddPartitions(f.ctx, &types.MsgAddPartitions{Authority: f.alice, Name: "t", Partitions: n})
		require.ErrorIs(t, err, types.ErrPartitionsNotIncrease)
	}
	_, err = f.msgs.AddPartitions(f.ctx, &types.MsgAddPartitions{Authority: f.alice, Name: "t", Partitions: types.DefaultMaxPartitionsPerTopic + 1})
	require.ErrorIs(t, err, types.ErrTooManyPartitions)
	_, err = f.msgs.AddPartitions(f.ctx, &types.MsgAddPartitions{Authority: f.bob, Name: "t", Partitions: 3})
	require.ErrorIs(t, err, types.ErrUnauthorized)
	_, err = f.msgs.AddPartitions(f.ctx, &types.MsgAddPartitions{Authority: f.alice, Name: "u", Partitions: 3})
	require.ErrorIs(t, err, types.ErrUnknownTopic)

	_, err = f.msgs.AddPartitions(f.ctx, &types.MsgAddPartitions{Authority: f.alice, Name: "t", Partitions: 4})
	require.NoError(t, err)
	parts := f.partitions("t")
	require.Len(t, parts, 4)
	require.Equal(t, uint64(1), parts[1].HighWatermark, "existing partitions keep their records")
	require.Equal(t, types.Partition{Topic: "t", Partition: 3}, parts[3])
	_, err = f.msgs.AddPartitions(f.ctx, &types.MsgAddPartitions{Authority: f.gov, Name: "t", Partitions: 5})
	require.NoError(t, err)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventPartitionsAdded")
}

func TestDeleteTopic(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	f.createTopic("keep", 1)
	for i := 0; i < 3; i++ {
		_, err := f.produce(f.alice,
			pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("", "a"), rec("", "b")}},
			pb{Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "c")}},
			pb{Topic: "keep", Partition: 0, Records: []types.BatchRecord{rec("", "d")}})
		require.NoError(t, err)
	}
	_, err := f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.bob, Name: "t"})
	require.ErrorIs(t, err, types.ErrUnauthorized)
	_, err = f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "nope"})
	require.ErrorIs(t, err, types.ErrUnknownTopic)

	_, err = f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "t"})
	require.NoError(t, err)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventTopicDeleted")
	_, err = f.fetch("t", 0, 0, 0, 0)
	require.ErrorIs(t, err, types.ErrUnknownTopic)
	// The name stays taken until the EndBlocker has purged the old batches.
	_, err = f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: "t", Partitions: 1, Config: anyone()})
	require.ErrorIs(t, err, types.ErrTopicBeingDeleted)
	require.NoError(t, f.k.EndBlocker(f.ctx))
	n := 0
	require.NoError(t, f.k.Batches.Walk(f.ctx, nil, func(k collections.Pair[types.TopicPartition, uint64], _ types.RecordBatch) (bool, error) {
		require.Equal(t, "keep", k.K1().Topic)
		n++
		return false, nil
	}))
	require.Equal(t, 3, n, "only the other topic's batches remain")

	// A new topic of the same name starts from offset 0.
	f.createTopic("t", 1)
	res, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("", "new")}})
	require.NoError(t, err)
	require.Equal(t, uint64(0), res.Results[0].BaseOffset)

	// The gov authority may delete any topic.
	_, err = f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.gov, Name: "keep"})
	require.NoError(t, err)
}
