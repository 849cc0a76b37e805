package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"

	"github.com/bftlog/bftlog/x/topics/types"
)

// topicsOnly answers the Topic and Topics queries from a fixed list.
type topicsOnly struct {
	types.QueryClient
	topics []types.Topic
}

func (q topicsOnly) Topic(_ context.Context, req *types.QueryTopicRequest, _ ...grpc.CallOption) (*types.QueryTopicResponse, error) {
	for _, t := range q.topics {
		if t.Name == req.Name {
			return &types.QueryTopicResponse{Topic: t}, nil
		}
	}
	return nil, types.ErrUnknownTopic
}

func (q topicsOnly) Topics(context.Context, *types.QueryTopicsRequest, ...grpc.CallOption) (*types.QueryTopicsResponse, error) {
	return &types.QueryTopicsResponse{Topics: q.topics}, nil
}

// Kafka 4.2's versions that name topics by ID: OffsetCommit v10 and OffsetFetch v10 reach the
// by-name handlers with the names, and answer with the IDs; an ID no topic has is
// UNKNOWN_TOPIC_ID, without reaching the chain. ApiVersions v5 and ListOffsets v11 too.
func TestTopicIDVersions(t *testing.T) {
	orders := types.Topic{Name: "orders", Partitions: 1, CreatedHeight: 7}
	s := &Server{query: topicsOnly{topics: []types.Topic{orders}}}
	id := topicID(orders)
	stranger := [16]byte{1, 2, 3}
	chain := &landingChain{onChain: map[partitionKey]uint64{}, blocks: make(chan bool, 1)}
	c := newCoordinator(chain)
	t.Cleanup(c.close)

	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.SetVersion(10)
	commit.Group, commit.Generation = "simple", -1
	for _, tid := range [][16]byte{id, stranger} {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 5
		rt.Partitions = append(rt.Partitions, rp)
		commit.Topics = append(commit.Topics, rt)
	}
	chain.blocks <- true
	resp := s.offsetCommitByID(context.Background(), commit, func(r *kmsg.OffsetCommitRequest) kmsg.Response {
		require.Len(t, r.Topics, 1, "the unknown ID never reaches the handler")
		require.Equal(t, "orders", r.Topics[0].Topic)
		return c.offsetCommit(context.Background(), r)
	}).(*kmsg.OffsetCommitResponse)
	codes := map[[16]byte]int16{}
	for _, rt := range resp.Topics {
		codes[rt.TopicID] = rt.Partitions[0].ErrorCode
	}
	require.Equal(t, map[[16]byte]int16{id: 0, stranger: kerr.UnknownTopicID.Code}, codes)
	require.Eventually(t, func() bool {
		chain.mu.Lock()
		defer chain.mu.Unlock()
		return chain.onChain[partitionKey{"orders", 0}] == 5
	}, 5*time.Second, 10*time.Millisecond)

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.SetVersion(10)
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "simple"
	for _, tid := range [][16]byte{id, stranger} {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.TopicID, rt.Partitions = tid, []int32{0}
		g.Topics = append(g.Topics, rt)
	}
	fetch.Groups = append(fetch.Groups, g)
	fres := s.offsetFetchByID(context.Background(), fetch, func(r *kmsg.OffsetFetchRequest) kmsg.Response {
		return c.offsetFetch(context.Background(), r)
	}).(*kmsg.OffsetFetchResponse)
	got := map[[16]byte]int64{}
	for _, rt := range fres.Groups[0].Topics {
		got[rt.TopicID] = rt.Partitions[0].Offset
		if rt.TopicID == stranger {
			require.Equal(t, kerr.UnknownTopicID.Code, rt.Partitions[0].ErrorCode)
		}
	}
	require.Equal(t, map[[16]byte]int64{id: 5, stranger: -1}, got)

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(5)
	av.ClusterID, av.NodeID = kmsg.StringPtr("other"), 0
	require.Equal(t, kerr.RebootstrapRequired.Code, apiVersions(av).(*kmsg.ApiVersionsResponse).ErrorCode)
	av.ClusterID = kmsg.StringPtr(clusterID)
	require.Zero(t, apiVersions(av).(*kmsg.ApiVersionsResponse).ErrorCode)

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.SetVersion(11)
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "orders"
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -6
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	lres := s.listOffsets(context.Background(), lo).(*kmsg.ListOffsetsResponse)
	require.Equal(t, int64(-1), lres.Topics[0].Partitions[0].Offset, "nothing is pending upload: nothing is tiered")
}
