package keeper_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Every message with hostile values fails with its specific error and leaves the whole module
// state (compared as exported genesis) exactly as it was.
func TestAttackHostileInputChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("k", "v")}})
	require.NoError(t, err)
	gen := f.join(f.alice, "g", "t").Generation

	name250 := strings.Repeat("x", 250)
	thousandHeaders := make([]types.Header, 5000)
	for i := range thousandHeaders {
		thousandHeaders[i] = types.Header{Key: "h", Value: []byte("v")}
	}
	huge := types.BatchRecord{Value: &types.Bytes{Data: make([]byte, types.DefaultMaxRecordBytes+1)}}
	manyRecords := make([]types.BatchRecord, types.DefaultMaxRecordsPerBatch+1)
	badAddrs := []string{"", "bftlog1", "cosmos1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", strings.Repeat("z", 500), "bftlog1\x00"}

	cases := []struct {
		name string
		run  func() error
		want error
	}{
		{"create: empty name", func() error { return f.k.CreateTopic(f.ctx, f.alice, "", 1, anyone()) }, types.ErrInvalidTopicName},
		{"create: 250-char name", func() error { return f.k.CreateTopic(f.ctx, f.alice, name250, 1, anyone()) }, types.ErrInvalidTopicName},
		{"create: NUL in name", func() error { return f.k.CreateTopic(f.ctx, f.alice, "a\x00b", 1, anyone()) }, types.ErrInvalidTopicName},
		{"create: newline in name", func() error { return f.k.CreateTopic(f.ctx, f.alice, "a\nb", 1, anyone()) }, types.ErrInvalidTopicName},
		{"create: MaxUint32 partitions", func() error { return f.k.CreateTopic(f.ctx, f.alice, "z", math.MaxUint32, anyone()) }, types.ErrTooManyPartitions},
		{"create: MinInt64 retention", func() error {
			return f.k.CreateTopic(f.ctx, f.alice, "z", 1, types.TopicConfig{RetentionMs: math.MinInt64})
		}, types.ErrInvalidConfig},
		{"create: MaxUint64 record limit", func() error {
			return f.k.CreateTopic(f.ctx, f.alice, "z", 1, types.TopicConfig{MaxRecordBytes: math.MaxUint64})
		}, types.ErrInvalidConfig},
		{"create: policy out of enum", func() error {
			return f.k.CreateTopic(f.ctx, f.alice, "z", 1, types.TopicConfig{ProducerPolicy: math.MaxInt32})
		}, types.ErrInvalidConfig},
		{"update: unknown topic", func() error { return f.k.UpdateTopicConfig(f.ctx, f.alice, "nope", anyone()) }, types.ErrUnknownTopic},
		{"add partitions: MaxUint32", func() error { return f.k.AddPartitions(f.ctx, f.alice, "t", math.MaxUint32) }, types.ErrTooManyPartitions},
		{"add partitions: zero", func() error { return f.k.AddPartitions(f.ctx, f.alice, "t", 0) }, types.ErrPartitionsNotIncrease},
		{"delete: 250-char name", func() error { return f.k.DeleteTopic(f.ctx, f.alice, name250) }, types.ErrInvalidTopicName},
		{"produce: MaxUint32 partition", func() error {
			_, err := f.produce(f.alice, pb{Topic: "t", Partition: math.MaxUint32, Records: []types.BatchRecord{rec("", "v")}})
			return err
		}, types.ErrInvalidPartition},
		{"produce: 5,000 headers", func() error {
			_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{{Headers: thousandHeaders}}})
			return err
		}, types.ErrTooManyHeaders},
		{"produce: record one byte over", func() error {
			_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{huge}})
			return err
		}, types.ErrRecordTooLarge},
		{"produce: one record too many", func() error {
			_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: manyRecords})
			return err
		}, types.ErrTooManyRecords},
		{"produce: MaxUint64 sequence", func() error {
			_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Sequence: math.MaxUint64, Records: []types.BatchRecord{rec("", "v")}})
			return err
		}, types.ErrOutOfOrderSequence},
		{"commit: MaxUint64 offset", func() error {
			_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "g", Generation: gen, Offsets: []types.OffsetCommit{{Topic: "t", Partition: 0, Offset: math.MaxUint64}}})
			return err
		}, types.ErrInvalidOffset},
		{"commit: MaxUint64 generation", func() error {
			_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "g", Generation: math.MaxUint64, Offsets: []types.OffsetCommit{{Topic: "t"}}})
			return err
		}, types.ErrIllegalGeneration},
		{"commit: partition MaxUint32", func() error {
			_, err := f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "g", Generation: gen, Offsets: []types.OffsetCommit{{Topic: "t", Partition: math.MaxUint32}}})
			return err
		}, types.ErrPartitionNotAssigned},
		{"join: session timeout MaxInt64", func() error {
			_, err := f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: "h", Topics: []string{"t"}, SessionTimeoutMs: math.MaxInt64})
			return err
		}, types.ErrInvalidSessionTimeout},
		{"join: negative session timeout", func() error {
			_, err := f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: "h", Topics: []string{"t"}, SessionTimeoutMs: -1})
			return err
		}, types.ErrInvalidSessionTimeout},
		{"join: 250-char group", func() error {
			_, err := f.msgs.JoinGroup(f.ctx, &types.MsgJoinGroup{Member: f.bob, GroupId: name250, Topics: []string{"t"}})
			return err
		}, types.ErrInvalidGroupID},
		{"reset: spec out of enum", func() error {
			_, err := f.msgs.ResetOffsets(f.ctx, &types.MsgResetOffsets{Authority: f.alice, GroupId: "g", Topic: "t", To: math.MaxInt32})
			return err
		}, types.ErrInvalidRequest},
		{"delete records: MaxUint64 offset", func() error {
			_, err := f.deleteRecords(f.alice, types.DeleteRecordsPartition{Topic: "t", Offset: math.MaxUint64})
			return err
		}, types.ErrOffsetOutOfRange},
		{"delete records: MaxUint32 partition", func() error {
			_, err := f.deleteRecords(f.alice, types.DeleteRecordsPartition{Topic: "t", Partition: math.MaxUint32})
			return err
		}, types.ErrInvalidPartition},
		{"delete records: another account's topic", func() error {
			_, err := f.deleteRecords(f.bob, types.DeleteRecordsPartition{Topic: "t", ToHighWatermark: true})
			return err
		}, types.ErrUnauthorized},
		{"delete records: one partition too many", func() error {
			_, err := f.deleteRecords(f.alice, make([]types.DeleteRecordsPartition, types.MaxDeleteRecordsPartitions+1)...)
			return err
		}, types.ErrTooManyPartitions},
		{"delete group offsets: MaxUint32 partition", func() error {
			return f.deleteGroupOffsets(f.alice, "g", gp("t", math.MaxUint32))
		}, types.ErrInvalidPartition},
		{"delete group offsets: the member's own subscribed topic", func() error {
			return f.deleteGroupOffsets(f.alice, "g", gp("t", 0))
		}, types.ErrGroupSubscribedToTopic},
		{"delete group offsets: another account's group", func() error {
			return f.deleteGroupOffsets(f.bob, "g", gp("t", 0))
		}, types.ErrGroupAuthorization},
		{"delete group offsets: one partition too many", func() error {
			return f.deleteGroupOffsets(f.alice, "g", make([]types.DeleteGroupOffsetsPartition, types.MaxDeleteGroupOffsetsPartitions+1)...)
		}, types.ErrTooManyPartitions},
		{"params: all zero", func() error {
			_, err := f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov})
			return err
		}, types.ErrInvalidParams},
	}
	for _, addr := range badAddrs {
		addr := addr
		cases = append(cases,
			struct {
				name string
				run  func() error
				want error
			}{"create: owner " + addr, func() error { return f.k.CreateTopic(f.ctx, addr, "z", 1, anyone()) }, types.ErrInvalidAddress},
			struct {
				name string
				run  func() error
				want error
			}{"produce: producer " + addr, func() error {
				_, err := f.produce(addr, pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("", "v")}})
				return err
			}, types.ErrInvalidAddress},
			struct {
				name string
				run  func() error
				want error
			}{"allowlist: " + addr, func() error {
				return f.k.UpdateTopicConfig(f.ctx, f.alice, "t", types.TopicConfig{ProducerPolicy: types.PRODUCER_POLICY_ALLOWLIST, AllowedProducers: []string{addr}})
			}, types.ErrInvalidConfig},
		)
	}
	for _, tc := range cases {
		before, err := f.k.ExportGenesis(f.ctx)
		require.NoError(t, err)
		require.ErrorIs(t, tc.run(), tc.want, tc.name)
		after, err := f.k.ExportGenesis(f.ctx)
		require.NoError(t, err)
		require.Equal(t, before, after, "%s changed state", tc.name)
	}
}

// FuzzProduce: arbitrary record shapes against the keeper either fail cleanly or append with
// contiguous offsets, and the module state stays valid either way.
func FuzzProduce(f *testing.F) {
	f.Add(uint32(0), []byte("k"), []byte("v"), "h", uint8(1), uint16(3), uint64(0))
	f.Add(uint32(4), []byte(nil), []byte(nil), "", uint8(0), uint16(1), uint64(1))
	f.Add(uint32(7), []byte("k"), bytes200(), "x", uint8(200), uint16(2), uint64(2))
	f.Fuzz(func(t *testing.T, partition uint32, key, value []byte, hkey string, headers uint8, n uint16, seq uint64) {
		fx := newFixture(t)
		fx.createTopic("t", 3)
		before := fx.partitions("t")
		r := types.BatchRecord{Key: types.NewBytes(key), Value: types.NewBytes(value)}
		for i := 0; i < int(headers); i++ {
			r.Headers = append(r.Headers, types.Header{Key: hkey, Value: value})
		}
		recs := make([]types.BatchRecord, int(n)%50)
		for i := range recs {
			recs[i] = r
		}
		res, err := fx.produce(fx.alice, pb{Topic: "t", Partition: partition, Sequence: seq % 3, Records: recs})
		gs, gerr := fx.k.ExportGenesis(fx.ctx)
		require.NoError(t, gerr)
		require.NoError(t, gs.Validate(fx.k.AddressCodec()))
		if err != nil {
			require.Equal(t, before, fx.partitions("t"))
			return
		}
		var total uint32
		for _, x := range res.Results {
			total += x.Count
		}
		require.Equal(t, uint32(len(recs)), total)
	})
}

func bytes200() []byte { return []byte(strings.Repeat("b", 200)) }
