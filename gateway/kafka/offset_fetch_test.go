package kafka

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// offsetsChain holds committed offsets by group; a group without any is unknown to it.
type offsetsChain struct {
	keeperChainless
	byGroup map[string][]types.CommittedOffset
}

func (c *offsetsChain) commitOffsets(context.Context, *types.MsgCommitOffsets) (landing, error) {
	return nil, nil
}

func (c *offsetsChain) commit(context.Context, string, []string, []types.OffsetCommit) (landing, error) {
	return nil, nil
}

func (c *offsetsChain) offsets(_ context.Context, group string) (*types.QueryGroupOffsetsResponse, error) {
	os, ok := c.byGroup[group]
	if !ok {
		return nil, types.ErrUnknownGroup
	}
	res := &types.QueryGroupOffsetsResponse{}
	for _, o := range os {
		res.Offsets = append(res.Offsets, types.GroupOffset{Committed: o})
	}
	return res, nil
}

// OffsetFetch v8+ answers several groups at once, each as v0-v7 answers one: the partitions
// asked (-1 where nothing is committed, an unknown group included), or every committed partition
// when no topics are given. v9's member id and epoch (KIP-848) do not change a classic group's
// answer.
func TestOffsetFetchBatchesGroups(t *testing.T) {
	chain := &offsetsChain{byGroup: map[string][]types.CommittedOffset{
		"billing":  {{Topic: "orders", Partition: 0, Offset: 5, Metadata: "m"}, {Topic: "orders", Partition: 2, Offset: 9}},
		"shipping": {{Topic: "parcels", Partition: 1, Offset: 3}},
	}}
	c := newCoordinator(chain)
	t.Cleanup(c.close)
	ctx := context.Background()

	// v7: one group.
	single := kmsg.NewPtrOffsetFetchRequest()
	single.SetVersion(7)
	single.Group = "billing"
	st := kmsg.NewOffsetFetchRequestTopic()
	st.Topic, st.Partitions = "orders", []int32{0, 1}
	single.Topics = append(single.Topics, st)
	one := c.offsetFetch(ctx, single).(*kmsg.OffsetFetchResponse)
	require.Zero(t, one.ErrorCode)
	require.EqualValues(t, 5, one.Topics[0].Partitions[0].Offset)
	require.Equal(t, "m", *one.Topics[0].Partitions[0].Metadata)
	require.EqualValues(t, -1, one.Topics[0].Partitions[1].Offset)

	for _, v := range []int16{8, 9} {
		r := kmsg.NewPtrOffsetFetchRequest()
		r.SetVersion(v)
		billing := kmsg.NewOffsetFetchRequestGroup()
		billing.Group = "billing"
		bt := kmsg.NewOffsetFetchRequestGroupTopic()
		bt.Topic, bt.Partitions = "orders", []int32{0, 1}
		billing.Topics = append(billing.Topics, bt)
		shipping := kmsg.NewOffsetFetchRequestGroup() // all its partitions
		shipping.Group = "shipping"
		if v >= 9 {
			shipping.MemberID, shipping.MemberEpoch = kmsg.StringPtr("m-1"), 7
		}
		nobody := kmsg.NewOffsetFetchRequestGroup()
		nobody.Group = "nobody"
		nt := kmsg.NewOffsetFetchRequestGroupTopic()
		nt.Topic, nt.Partitions = "orders", []int32{0}
		nobody.Topics = append(nobody.Topics, nt)
		r.Groups = []kmsg.OffsetFetchRequestGroup{billing, shipping, nobody}

		res := c.offsetFetch(ctx, r).(*kmsg.OffsetFetchResponse)
		back := kmsg.NewPtrOffsetFetchResponse() // through the wire, as a client reads it
		back.SetVersion(v)
		require.NoError(t, back.ReadFrom(res.AppendTo(nil)))
		require.Len(t, back.Groups, 3, "v%d", v)
		g := back.Groups[0]
		require.Equal(t, "billing", g.Group)
		require.Zero(t, g.ErrorCode)
		require.Equal(t, "orders", g.Topics[0].Topic)
		require.EqualValues(t, 5, g.Topics[0].Partitions[0].Offset)
		require.Equal(t, "m", *g.Topics[0].Partitions[0].Metadata)
		require.EqualValues(t, -1, g.Topics[0].Partitions[0].LeaderEpoch)
		require.EqualValues(t, -1, g.Topics[0].Partitions[1].Offset)
		g = back.Groups[1]
		require.Equal(t, "shipping", g.Group)
		require.Len(t, g.Topics, 1)
		require.Equal(t, "parcels", g.Topics[0].Topic)
		require.Equal(t, int32(1), g.Topics[0].Partitions[0].Partition)
		require.EqualValues(t, 3, g.Topics[0].Partitions[0].Offset)
		g = back.Groups[2]
		require.Equal(t, "nobody", g.Group)
		require.Zero(t, g.ErrorCode, "as Kafka: an unknown group has no offsets, not an error")
		require.EqualValues(t, -1, g.Topics[0].Partitions[0].Offset)
	}
}

// A group whose offsets cannot be read is that group's error; the others of the batch are
// answered.
func TestOffsetFetchBatchErrorsPerGroup(t *testing.T) {
	c := newCoordinator(&failingOffsets{offsetsChain{byGroup: map[string][]types.CommittedOffset{"ok": {{Topic: "t", Offset: 1}}}}})
	t.Cleanup(c.close)
	r := kmsg.NewPtrOffsetFetchRequest()
	r.SetVersion(8)
	for _, g := range []string{"ok", "broken"} {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		r.Groups = append(r.Groups, rg)
	}
	res := c.offsetFetch(context.Background(), r).(*kmsg.OffsetFetchResponse)
	require.Zero(t, res.Groups[0].ErrorCode)
	require.EqualValues(t, 1, res.Groups[0].Topics[0].Partitions[0].Offset)
	require.Equal(t, kerr.CoordinatorNotAvailable.Code, res.Groups[1].ErrorCode)
}

type failingOffsets struct{ offsetsChain }

func (c *failingOffsets) offsets(ctx context.Context, group string) (*types.QueryGroupOffsetsResponse, error) {
	if group == "broken" {
		return nil, context.DeadlineExceeded
	}
	return c.offsetsChain.offsets(ctx, group)
}
