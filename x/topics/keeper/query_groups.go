package keeper

import (
	"context"
	"math"
	"sort"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/bftlog/bftlog/x/topics/types"
)

func (q queryServer) Groups(ctx context.Context, req *types.QueryGroupsRequest) (*types.QueryGroupsResponse, error) {
	if req == nil {
		req = &types.QueryGroupsRequest{}
	}
	groups, page, err := query.CollectionPaginate(ctx, q.k.Groups, req.Pagination,
		func(_ string, g types.Group) (types.Group, error) { return g, nil })
	if err != nil {
		return nil, err
	}
	return &types.QueryGroupsResponse{Groups: groups, Pagination: page}, nil
}

func (q queryServer) Group(ctx context.Context, req *types.QueryGroupRequest) (*types.QueryGroupResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateGroupID(req.GroupId); err != nil {
		return nil, err
	}
	g, err := q.k.GetGroup(ctx, req.GroupId)
	if err != nil {
		return nil, err
	}
	members, err := q.k.GroupMembers(ctx, req.GroupId)
	if err != nil {
		return nil, err
	}
	return &types.QueryGroupResponse{Group: g, Members: members}, nil
}

// KafkaGroup returns a Kafka-protocol group's state and members: what every gateway reads to
// answer JoinGroup, SyncGroup and Heartbeat.
func (q queryServer) KafkaGroup(ctx context.Context, req *types.QueryKafkaGroupRequest) (*types.QueryKafkaGroupResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateGroupID(req.GroupId); err != nil {
		return nil, err
	}
	kg, members, err := q.k.KafkaGroupState(ctx, req.GroupId)
	if err != nil {
		return nil, err
	}
	return &types.QueryKafkaGroupResponse{Group: kg, Members: members}, nil
}

func (q queryServer) GroupOffsets(ctx context.Context, req *types.QueryGroupOffsetsRequest) (*types.QueryGroupOffsetsResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateGroupID(req.GroupId); err != nil {
		return nil, err
	}
	if _, err := q.k.GetGroup(ctx, req.GroupId); err != nil {
		return nil, err
	}
	offsets, err := q.k.groupOffsets(ctx, req.GroupId, req.Topic)
	if err != nil {
		return nil, err
	}
	out := make([]types.GroupOffset, 0, len(offsets))
	for _, o := range offsets {
		p, err := q.k.Partitions.Get(ctx, types.TopicPartition{Topic: o.Topic, Partition: o.Partition})
		if isNotFound(err) {
			continue // a deleted topic's, left to the EndBlocker's purge
		} else if err != nil {
			return nil, err
		}
		out = append(out, types.GroupOffset{Committed: o, BelowLogStart: o.Offset < p.LogStartOffset})
	}
	return &types.QueryGroupOffsetsResponse{Offsets: out}, nil
}

// Lag covers every partition of the topics the members subscribe to and every partition with a
// committed offset (optionally one topic), in (topic, partition) order. Without a topic the
// answer is bounded by max_group_subscribed_partitions: a larger one (offsets left from old
// subscriptions) is refused, to be asked per topic, so no query walks without bound.
func (q queryServer) Lag(ctx context.Context, req *types.QueryLagRequest) (*types.QueryLagResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateGroupID(req.GroupId); err != nil {
		return nil, err
	}
	if _, err := q.k.GetGroup(ctx, req.GroupId); err != nil {
		return nil, err
	}
	members, err := q.k.GroupMembers(ctx, req.GroupId)
	if err != nil {
		return nil, err
	}
	limit := uint64(math.MaxUint64) // one topic: bounded by its partition count
	if req.Topic == "" {
		params, err := q.k.Params.Get(ctx)
		if err != nil {
			return nil, err
		}
		limit = uint64(params.MaxGroupSubscribedPartitions)
	}
	tooLarge := errorsmod.Wrapf(types.ErrInvalidRequest, "the lag of group %q covers more than %d partitions; ask per topic", req.GroupId, limit)
	offsets, err := q.k.groupOffsetsUpTo(ctx, req.GroupId, req.Topic, limit)
	if err != nil {
		return nil, err
	}
	if uint64(len(offsets)) > limit {
		return nil, tooLarge
	}
	topicSet := map[string]bool{}
	owner := map[types.TopicPartition]string{}
	for _, m := range members {
		for _, t := range m.Topics {
			topicSet[t] = true
		}
		for _, tp := range m.Assignment {
			for _, p := range tp.Partitions {
				owner[types.TopicPartition{Topic: tp.Topic, Partition: p}] = m.Member
			}
		}
	}
	committed := map[types.TopicPartition]uint64{}
	for _, o := range offsets {
		topicSet[o.Topic] = true
		committed[types.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	}
	var topics []string
	for t := range topicSet {
		if req.Topic == "" || t == req.Topic {
			topics = append(topics, t)
		}
	}
	sort.Strings(topics)
	var out []types.PartitionLag
	for _, t := range topics {
		err := q.k.Partitions.Walk(ctx, types.PartitionsOfTopic(t), func(_ types.TopicPartition, p types.Partition) (bool, error) {
			if uint64(len(out)) >= limit {
				return true, tooLarge
			}
			id := types.TopicPartition{Topic: t, Partition: p.Partition}
			l := types.PartitionLag{Topic: t, Partition: p.Partition, Committed: -1, HighWatermark: p.HighWatermark, LogStartOffset: p.LogStartOffset, Member: owner[id]}
			pos := p.LogStartOffset
			if c, ok := committed[id]; ok {
				l.Committed = int64(c)
				l.BelowLogStart = c < p.LogStartOffset
				pos = c
			}
			if p.HighWatermark > pos {
				l.Lag = p.HighWatermark - pos
			}
			out = append(out, l)
			return false, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return &types.QueryLagResponse{Lags: out}, nil
}

// ConsumerGroup returns a KIP-848 consumer group's state and members: what every gateway reads
// to answer ConsumerGroupHeartbeat and ConsumerGroupDescribe.
func (q queryServer) ConsumerGroup(ctx context.Context, req *types.QueryConsumerGroupRequest) (*types.QueryConsumerGroupResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateGroupID(req.GroupId); err != nil {
		return nil, err
	}
	cg, members, err := q.k.ConsumerGroupState(ctx, req.GroupId)
	if err != nil {
		return nil, err
	}
	return &types.QueryConsumerGroupResponse{Group: cg, Members: members}, nil
}

// ShareGroup returns a KIP-932 share group's state and members.
func (q queryServer) ShareGroup(ctx context.Context, req *types.QueryShareGroupRequest) (*types.QueryShareGroupResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateGroupID(req.GroupId); err != nil {
		return nil, err
	}
	sg, members, err := q.k.ShareGroupState(ctx, req.GroupId)
	if err != nil {
		return nil, err
	}
	return &types.QueryShareGroupResponse{Group: sg, Members: members}, nil
}

// maxListedSharePartitions bounds one SharePartitions answer.
const maxListedSharePartitions = 10_000

// SharePartitions returns a share group's partitions with their in-flight records.
func (q queryServer) SharePartitions(ctx context.Context, req *types.QuerySharePartitionsRequest) (*types.QuerySharePartitionsResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateGroupID(req.GroupId); err != nil {
		return nil, err
	}
	out := &types.QuerySharePartitionsResponse{}
	err := q.k.SharePartitions.Walk(ctx, collections.NewPrefixedPairRange[string, types.TopicPartition](req.GroupId), func(_ collections.Pair[string, types.TopicPartition], sp types.SharePartition) (bool, error) {
		out.Partitions = append(out.Partitions, sp)
		return len(out.Partitions) >= maxListedSharePartitions, nil
	})
	return out, err
}
