package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/bftlog/bftlog/x/topics/types"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator answers this gateway for groups and transactional ids: v0-v3 one key, v4+
// every key of the batch in its own entry (KIP-699). Share groups (v6's key type 2), or any
// other type, are INVALID_REQUEST with Kafka's "no node".
func TestFindCoordinatorBatchesKeys(t *testing.T) {
	s := &Server{host: "gw.example", port: 9093}
	for _, v := range []int16{0, 3} {
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.SetVersion(v)
		r.CoordinatorKey = "billing"
		res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
		require.Zero(t, res.ErrorCode)
		require.Equal(t, []any{int32(brokerID), "gw.example", int32(9093)}, []any{res.NodeID, res.Host, res.Port}, "v%d", v)
	}
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.SetVersion(3)
	r.CoordinatorType, r.CoordinatorKey = 2, "share"
	res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
	require.Equal(t, kerr.InvalidRequest.Code, res.ErrorCode)
	require.EqualValues(t, -1, res.NodeID)

	for _, v := range []int16{4, 5, 6} {
		for _, typ := range []int8{coordinatorGroup, coordinatorTransaction} {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.SetVersion(v)
			r.CoordinatorType, r.CoordinatorKeys = typ, []string{"billing", "shipping", "txn-1"}
			res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
			require.Len(t, res.Coordinators, 3)
			for i, c := range res.Coordinators {
				require.Equal(t, r.CoordinatorKeys[i], c.Key)
				require.Zero(t, c.ErrorCode)
				require.Equal(t, []any{int32(brokerID), "gw.example", int32(9093)}, []any{c.NodeID, c.Host, c.Port})
			}
			// Encoded and read back as a client would: the batch survives the wire.
			back := kmsg.NewPtrFindCoordinatorResponse()
			back.SetVersion(v)
			require.NoError(t, back.ReadFrom(res.AppendTo(nil)))
			require.Len(t, back.Coordinators, 3)
		}
		r := kmsg.NewPtrFindCoordinatorRequest()
		r.SetVersion(v)
		r.CoordinatorType, r.CoordinatorKeys = 2, []string{"share-a", "share-b"}
		res := s.findCoordinator(r).(*kmsg.FindCoordinatorResponse)
		require.Len(t, res.Coordinators, 2)
		for _, c := range res.Coordinators {
			require.Equal(t, kerr.InvalidRequest.Code, c.ErrorCode)
			require.EqualValues(t, -1, c.NodeID)
		}
	}
}

// DescribeTopicPartitions (KIP-966) pages what Metadata shows: topics sorted by name, at most
// response_partition_limit partitions per answer, and a cursor that the next request starts
// at; followed to the end, the pages list every partition once. Named topics: an unknown one
// is UNKNOWN_TOPIC_OR_PARTITION; a cursor on a topic not named makes every topic
// INVALID_REQUEST, as Kafka answers.
func TestDescribeTopicPartitionsPages(t *testing.T) {
	ctx := context.Background()
	q := &topicsChain{topics: map[string]types.Topic{}}
	for _, tp := range []types.Topic{{Name: "orders", CreatedHeight: 5, Partitions: 3}, {Name: "audit", CreatedHeight: 6, Partitions: 2}, {Name: "zeta", CreatedHeight: 7, Partitions: 1}} {
		q.set(tp)
	}
	s := &Server{query: q}
	describe := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
		r := kmsg.NewPtrDescribeTopicPartitionsRequest()
		r.ResponsePartitionLimit, r.Cursor = limit, cursor
		for _, name := range topics {
			r.Topics = append(r.Topics, kmsg.DescribeTopicPartitionsRequestTopic{Topic: name})
		}
		res := s.dispatch(ctx, r).(*kmsg.DescribeTopicPartitionsResponse)
		back := kmsg.NewPtrDescribeTopicPartitionsResponse() // as a client reads it off the wire
		require.NoError(t, back.ReadFrom(res.AppendTo(nil)))
		return back
	}

	var seen []string
	var pages int
	var cursor *kmsg.DescribeTopicPartitionsRequestCursor
	for {
		require.Less(t, pages, 10, "the cursor moves on")
		res := describe(2, cursor)
		pages++
		n := 0
		for _, tp := range res.Topics {
			require.Zero(t, tp.ErrorCode)
			require.Equal(t, topicID(q.topics[*tp.Topic]), tp.TopicID)
			for _, p := range tp.Partitions {
				require.Equal(t, []int32{brokerID}, p.Replicas)
				require.EqualValues(t, brokerID, p.LeaderID)
				seen = append(seen, fmt.Sprintf("%s/%d", *tp.Topic, p.Partition))
				n++
			}
		}
		require.LessOrEqual(t, n, 2, "within the limit")
		if res.NextCursor == nil {
			break
		}
		cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: res.NextCursor.Topic, Partition: res.NextCursor.Partition}
	}
	require.Equal(t, []string{"audit/0", "audit/1", "orders/0", "orders/1", "orders/2", "zeta/0"}, seen)
	require.Equal(t, 3, pages)

	res := describe(0, nil, "zeta", "missing", "orders")
	var names []string
	for _, tp := range res.Topics {
		names = append(names, *tp.Topic)
	}
	require.Equal(t, []string{"missing", "orders", "zeta"}, names)
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, res.Topics[0].ErrorCode)
	require.Len(t, res.Topics[1].Partitions, 3)
	require.Nil(t, res.NextCursor)

	res = describe(1, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "orders", Partition: 2}, "orders", "zeta")
	require.Len(t, res.Topics, 1, "the page ends with the limit")
	require.EqualValues(t, 2, res.Topics[0].Partitions[0].Partition, "from the cursor's partition")
	require.Equal(t, "zeta", res.NextCursor.Topic, "the next page starts at the next topic")
	require.Zero(t, res.NextCursor.Partition)

	res = describe(0, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "audit"}, "orders", "zeta")
	require.Len(t, res.Topics, 2)
	for _, tp := range res.Topics {
		require.Equal(t, kerr.InvalidRequest.Code, tp.ErrorCode)
	}
}
