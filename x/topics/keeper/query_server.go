package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/bftlog/bftlog/x/topics/types"
)

type queryServer struct{ k Keeper }

var _ types.QueryServer = queryServer{}

// NewQueryServer returns the gRPC query service of x/topics.
func NewQueryServer(k Keeper) types.QueryServer { return queryServer{k} }

func (q queryServer) Params(ctx context.Context, _ *types.QueryParamsRequest) (*types.QueryParamsResponse, error) {
	p, err := q.k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	return &types.QueryParamsResponse{Params: p}, nil
}

func (q queryServer) Topic(ctx context.Context, req *types.QueryTopicRequest) (*types.QueryTopicResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateTopicName(req.Name); err != nil {
		return nil, err
	}
	t, err := q.k.GetTopic(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return &types.QueryTopicResponse{Topic: t}, nil
}

func (q queryServer) Topics(ctx context.Context, req *types.QueryTopicsRequest) (*types.QueryTopicsResponse, error) {
	if req == nil {
		req = &types.QueryTopicsRequest{}
	}
	topics, page, err := query.CollectionPaginate(ctx, q.k.Topics, req.Pagination,
		func(_ string, t types.Topic) (types.Topic, error) { return t, nil })
	if err != nil {
		return nil, err
	}
	return &types.QueryTopicsResponse{Topics: topics, Pagination: page}, nil
}

func (q queryServer) Partitions(ctx context.Context, req *types.QueryPartitionsRequest) (*types.QueryPartitionsResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateTopicName(req.Name); err != nil {
		return nil, err
	}
	t, err := q.k.GetTopic(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	out := make([]types.Partition, 0, t.Partitions)
	for i := uint32(0); i < t.Partitions; i++ {
		p, err := q.k.GetPartition(ctx, req.Name, i)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return &types.QueryPartitionsResponse{Partitions: out}, nil
}

func (q queryServer) Fetch(ctx context.Context, req *types.QueryFetchRequest) (*types.QueryFetchResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	fetch := q.k.Fetch
	switch req.Format {
	case types.FETCH_FORMAT_BATCHES:
	case types.FETCH_FORMAT_RECORDS:
		fetch = q.k.FetchRecords
	default:
		return nil, errorsmod.Wrapf(types.ErrInvalidRequest, "unknown fetch format %d", req.Format)
	}
	res, err := fetch(ctx, req.Topic, req.Partition, req.Offset, req.MaxRecords, req.MaxBytes)
	if err != nil {
		return nil, err
	}
	out := &types.QueryFetchResponse{
		HighWatermark:  res.Partition.HighWatermark,
		LogStartOffset: res.Partition.LogStartOffset,
		NextOffset:     res.NextOffset,
	}
	if req.Format == types.FETCH_FORMAT_BATCHES {
		out.Batches = res.Batches
	} else {
		out.Records = res.Records
	}
	if o := q.k.fetchObserver(); o != nil {
		o.ObserveFetch(int(out.NextOffset - req.Offset))
	}
	return out, nil
}

func (q queryServer) Record(ctx context.Context, req *types.QueryRecordRequest) (*types.QueryRecordResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	r, err := q.k.GetRecord(ctx, req.Topic, req.Partition, req.Offset)
	if err != nil {
		return nil, err
	}
	if o := q.k.fetchObserver(); o != nil {
		o.ObserveRecord()
	}
	return &types.QueryRecordResponse{Record: r}, nil
}

func (q queryServer) ListOffsets(ctx context.Context, req *types.QueryListOffsetsRequest) (*types.QueryListOffsetsResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	res, err := q.k.ListOffsets(ctx, req.Topic, req.Partition, req.Spec, req.TimestampMs)
	if err != nil {
		return nil, err
	}
	return &types.QueryListOffsetsResponse{Offset: res.Offset, TimestampMs: res.TimestampMs}, nil
}

// KafkaProducerStates lists a partition's Kafka idempotent producers, a page at a time.
func (q queryServer) KafkaProducerStates(ctx context.Context, req *types.QueryKafkaProducerStatesRequest) (*types.QueryKafkaProducerStatesResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateTopicName(req.Topic); err != nil {
		return nil, err
	}
	if _, err := q.k.GetPartition(ctx, req.Topic, req.Partition); err != nil {
		return nil, err
	}
	producers, page, err := query.CollectionPaginate(ctx, q.k.KafkaProducers, req.Pagination,
		func(_ collections.Triple[types.TopicPartition, string, int64], s types.KafkaProducerState) (types.KafkaProducerState, error) {
			return s, nil
		},
		func(o *query.CollectionsPaginateOptions[collections.Triple[types.TopicPartition, string, int64]]) {
			prefix := collections.TriplePrefix[types.TopicPartition, string, int64](types.TopicPartition{Topic: req.Topic, Partition: req.Partition})
			o.Prefix = &prefix
		})
	if err != nil {
		return nil, err
	}
	return &types.QueryKafkaProducerStatesResponse{Producers: producers, Pagination: page}, nil
}

func (q queryServer) ProducerStates(ctx context.Context, req *types.QueryProducerStatesRequest) (*types.QueryProducerStatesResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "empty request")
	}
	if err := types.ValidateTopicName(req.Topic); err != nil {
		return nil, err
	}
	if _, err := q.k.GetPartition(ctx, req.Topic, req.Partition); err != nil {
		return nil, err
	}
	if req.Producer != "" {
		if err := q.k.validAddress(req.Producer, "producer"); err != nil {
			return nil, err
		}
		state, err := q.k.ProducerStates.Get(ctx, collections.Join(types.TopicPartition{Topic: req.Topic, Partition: req.Partition}, req.Producer))
		if isNotFound(err) {
			return &types.QueryProducerStatesResponse{}, nil
		}
		if err != nil {
			return nil, err
		}
		return &types.QueryProducerStatesResponse{States: []types.ProducerState{state}}, nil
	}
	states, page, err := query.CollectionPaginate(ctx, q.k.ProducerStates, req.Pagination,
		func(_ collections.Pair[types.TopicPartition, string], s types.ProducerState) (types.ProducerState, error) {
			return s, nil
		},
		func(o *query.CollectionsPaginateOptions[collections.Pair[types.TopicPartition, string]]) {
			prefix := collections.PairPrefix[types.TopicPartition, string](types.TopicPartition{Topic: req.Topic, Partition: req.Partition})
			o.Prefix = &prefix
		})
	if err != nil {
		return nil, err
	}
	return &types.QueryProducerStatesResponse{States: states, Pagination: page}, nil
}
