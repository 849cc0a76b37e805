package kafka

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bftlog/bftlog/x/topics/types"
)

// A topic's ID is derived from its name and creation height alone: every gateway computes the
// same, now and in later versions (the golden value), and a topic recreated under its name
// (a later height) has another.
func TestTopicIDIsDerivedFromTheTopicsCreation(t *testing.T) {
	orders := types.Topic{Name: "orders", CreatedHeight: 7, Partitions: 3, Owner: "bftlog1owner"}
	id := topicID(orders)
	require.Equal(t, "e70e22e4ab3b8f679da6bc8e2b912b62", hex.EncodeToString(id[:]), "the derivation is part of the protocol: never change it")
	other := orders
	other.Partitions, other.Owner, other.Config.RetentionMs = 9, "bftlog1else", 1 // not part of the ID
	require.Equal(t, id, topicID(other))
	require.NotEqual(t, id, topicID(types.Topic{Name: "orders", CreatedHeight: 8}), "recreated later: another ID")
	require.NotEqual(t, id, topicID(types.Topic{Name: "orderz", CreatedHeight: 7}))

	seen := map[[16]byte]bool{}
	for i := range 5000 {
		id := topicID(types.Topic{Name: fmt.Sprintf("t-%d", i), CreatedHeight: int64(i % 7)})
		require.False(t, seen[id], "IDs are unique")
		seen[id] = true
		require.NotEqual(t, [16]byte{}, id, "never Kafka's zero ID")
		require.Equal(t, byte(0x80), id[6]&0xf0, "RFC 9562 version 8")
		require.Equal(t, byte(0x80), id[8]&0xc0, "RFC 9562 variant")
		require.NotEqual(t, byte('-'), base64.RawURLEncoding.EncodeToString(id[:])[0], "as Kafka's, never a leading '-'")
	}
}

// topicsChain answers the Topic and Topics queries from a set of topics that tests create and
// delete, counting the listings.
type topicsChain struct {
	types.QueryClient
	mu       sync.Mutex
	topics   map[string]types.Topic
	listings int
	fetched  []string
}

func (q *topicsChain) set(t types.Topic) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.topics[t.Name] = t
}

func (q *topicsChain) remove(name string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.topics, name)
}

func (q *topicsChain) Topic(_ context.Context, req *types.QueryTopicRequest, _ ...grpc.CallOption) (*types.QueryTopicResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.topics[req.Name]
	if !ok {
		return nil, status.Error(codes.NotFound, "unknown topic")
	}
	return &types.QueryTopicResponse{Topic: t}, nil
}

func (q *topicsChain) Topics(context.Context, *types.QueryTopicsRequest, ...grpc.CallOption) (*types.QueryTopicsResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.listings++
	res := &types.QueryTopicsResponse{}
	for _, t := range q.topics {
		res.Topics = append(res.Topics, t)
	}
	return res, nil
}

func (q *topicsChain) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.fetched = append(q.fetched, req.Topic)
	return &types.QueryFetchResponse{HighWatermark: 4, NextOffset: req.Offset}, nil
}

func (q *topicsChain) listed() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.listings
}

// An ID resolves to its topic while that topic exists: one shown in Metadata at once, one
// shown by another gateway of the fleet after a listing of the chain's topics (at most one a
// second, whatever clients send); the ID of a deleted topic, or of a topic since recreated
// under its name, resolves to nothing.
func TestTopicByID(t *testing.T) {
	ctx := context.Background()
	q := &topicsChain{topics: map[string]types.Topic{}}
	s := &Server{query: q}
	orders := types.Topic{Name: "orders", CreatedHeight: 5, Partitions: 1}
	q.set(orders)

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	res := s.metadata(ctx, md).(*kmsg.MetadataResponse)
	require.Equal(t, topicID(orders), res.Topics[0].TopicID)
	got, found, err := s.topicByID(ctx, topicID(orders))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "orders", got.Name)
	require.Zero(t, q.listed(), "learned from Metadata: no listing")

	// Created and shown elsewhere: found by listing.
	billing := types.Topic{Name: "billing", CreatedHeight: 9, Partitions: 2}
	q.set(billing)
	got, found, err = s.topicByID(ctx, topicID(billing))
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "billing", got.Name)
	require.Equal(t, 1, q.listed())

	// Unknown IDs list the chain at most once per relistEvery.
	for i := range 10 {
		_, found, err = s.topicByID(ctx, [16]byte{byte(i + 1)})
		require.NoError(t, err)
		require.False(t, found)
	}
	require.Equal(t, 1, q.listed(), "listed within the last second already")

	// Deleted, then recreated under its name: the old ID is unknown, the new one resolves.
	q.remove("orders")
	_, found, err = s.topicByID(ctx, topicID(orders))
	require.NoError(t, err)
	require.False(t, found)
	again := types.Topic{Name: "orders", CreatedHeight: 12, Partitions: 1}
	q.set(again)
	_, found, err = s.topicByID(ctx, topicID(orders))
	require.NoError(t, err)
	require.False(t, found, "the old ID does not name the new topic")
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}} // as a client refreshing
	res = s.metadata(ctx, md).(*kmsg.MetadataResponse)
	require.Equal(t, topicID(again), res.Topics[0].TopicID)
	md.Topics = []kmsg.MetadataRequestTopic{{TopicID: topicID(orders)}, {TopicID: topicID(again)}}
	res = s.metadata(ctx, md).(*kmsg.MetadataResponse)
	require.Equal(t, kerr.UnknownTopicID.Code, res.Topics[0].ErrorCode)
	require.Nil(t, res.Topics[0].Topic)
	require.Equal(t, topicID(orders), res.Topics[0].TopicID)
	require.Zero(t, res.Topics[1].ErrorCode)
	require.Equal(t, "orders", *res.Topics[1].Topic)
	require.Equal(t, topicID(again), res.Topics[1].TopicID)
}

// Metadata asks by ID from v12 only, as Kafka: v10 and v11 have the field but an ID there, or
// no name, is INVALID_REQUEST. Below v10 nothing of IDs is encoded.
func TestMetadataTopicIDsByVersion(t *testing.T) {
	ctx := context.Background()
	q := &topicsChain{topics: map[string]types.Topic{}}
	orders := types.Topic{Name: "orders", CreatedHeight: 5, Partitions: 2}
	q.set(orders)
	s := &Server{query: q}
	for _, v := range []int16{10, 11} {
		md := kmsg.NewPtrMetadataRequest()
		md.SetVersion(v)
		md.Topics = []kmsg.MetadataRequestTopic{{TopicID: topicID(orders), Topic: kmsg.StringPtr("orders")}, {Topic: kmsg.StringPtr("orders")}}
		res := s.metadata(ctx, md).(*kmsg.MetadataResponse)
		require.Equal(t, kerr.InvalidRequest.Code, res.Topics[0].ErrorCode, "v%d", v)
		require.Zero(t, res.Topics[1].ErrorCode)
		require.Equal(t, topicID(orders), res.Topics[1].TopicID)
		require.Len(t, res.Topics[1].Partitions, 2)
		require.EqualValues(t, -2147483648, res.Topics[1].AuthorizedOperations, "not asked for")
	}
	all := kmsg.NewPtrMetadataRequest()
	all.SetVersion(13)
	res := s.metadata(ctx, all).(*kmsg.MetadataResponse)
	require.Len(t, res.Topics, 1)
	require.Equal(t, topicID(orders), res.Topics[0].TopicID)
	require.Zero(t, res.ErrorCode)
}

// Fetch v13+ names topics by ID only: a known ID is read under its topic's name and echoed in
// the answer; an unknown one is UNKNOWN_TOPIC_ID in each of its partitions, answered without
// waiting for data when nothing else was asked.
func TestFetchByTopicID(t *testing.T) {
	ctx := context.Background()
	q := &topicsChain{topics: map[string]types.Topic{}}
	orders := types.Topic{Name: "orders", CreatedHeight: 5, Partitions: 1}
	q.set(orders)
	s := &Server{query: q}
	fetch := func(ids ...[16]byte) *kmsg.FetchResponse {
		r := kmsg.NewPtrFetchRequest()
		r.SetVersion(17)
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 60_000, 1, 1<<20
		for _, id := range ids {
			rt := kmsg.NewFetchRequestTopic()
			rt.TopicID = id
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes = 1 << 20
			rt.Partitions = append(rt.Partitions, rp)
			r.Topics = append(r.Topics, rt)
		}
		return s.fetch(ctx, r).(*kmsg.FetchResponse)
	}
	unknown := [16]byte{1, 2, 3}
	res := fetch(unknown) // would wait a minute for data
	require.Len(t, res.Topics, 1)
	require.Equal(t, unknown, res.Topics[0].TopicID)
	require.Equal(t, kerr.UnknownTopicID.Code, res.Topics[0].Partitions[0].ErrorCode)
	require.EqualValues(t, -1, res.Topics[0].Partitions[0].HighWatermark)
	require.Empty(t, q.fetched)

	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(13)
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = topicID(orders)
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	r.MinBytes = 0
	res = s.fetch(ctx, r).(*kmsg.FetchResponse) // at once
	require.Equal(t, topicID(orders), res.Topics[0].TopicID)
	require.Zero(t, res.Topics[0].Partitions[0].ErrorCode)
	require.EqualValues(t, 4, res.Topics[0].Partitions[0].HighWatermark)
	require.Equal(t, []string{"orders"}, q.fetched)
}

// DeleteTopics v6 checks its entries as Kafka's controller does before deleting anything.
func TestDeleteTopicsByIDRefusals(t *testing.T) {
	ctx := context.Background()
	q := &topicsChain{topics: map[string]types.Topic{}}
	s := &Server{query: q}
	dup := [16]byte{9}
	r := kmsg.NewPtrDeleteTopicsRequest()
	r.SetVersion(6)
	r.Topics = []kmsg.DeleteTopicsRequestTopic{
		{}, // neither
		{Topic: kmsg.StringPtr("a"), TopicID: [16]byte{1}}, // both
		{TopicID: dup}, {TopicID: dup}, // twice
		{TopicID: [16]byte{7}}, // no such topic
	}
	res := s.deleteTopics(ctx, r).(*kmsg.DeleteTopicsResponse)
	require.Len(t, res.Topics, 5)
	for i, code := range []int16{kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, kerr.UnknownTopicID.Code} {
		require.Equal(t, code, res.Topics[i].ErrorCode, "entry %d", i)
	}
	require.Nil(t, res.Topics[4].Topic)
	require.Equal(t, [16]byte{7}, res.Topics[4].TopicID)
}
