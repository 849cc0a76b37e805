package consumer

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bftlog/bftlog/x/topics/types"
)

// partition is one partition's log: records at [start, start+len(values)).
type partition struct {
	start  uint64
	values []string
}

// fakeQuery answers Fetch and Partitions from logs; Fetch outside a log fails as the node's
// gRPC does, with a status whose text the consumer must not need.
type fakeQuery struct {
	types.QueryClient
	logs []partition
}

func (q *fakeQuery) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	l := q.logs[req.Partition]
	hw := l.start + uint64(len(l.values))
	if req.Offset < l.start || req.Offset > hw {
		return nil, status.Error(codes.OutOfRange, "no words to go by")
	}
	res := &types.QueryFetchResponse{HighWatermark: hw, LogStartOffset: l.start, NextOffset: req.Offset}
	for o := req.Offset; o < hw && uint32(len(res.Records)) < req.MaxRecords; o++ {
		res.Records = append(res.Records, types.Record{Offset: o, Value: &types.Bytes{Data: []byte(l.values[o-l.start])}})
		res.NextOffset = o + 1
	}
	return res, nil
}

func (q *fakeQuery) Partitions(_ context.Context, req *types.QueryPartitionsRequest, _ ...grpc.CallOption) (*types.QueryPartitionsResponse, error) {
	res := &types.QueryPartitionsResponse{}
	for i, l := range q.logs {
		res.Partitions = append(res.Partitions, types.Partition{Topic: req.Name, Partition: uint32(i), LogStartOffset: l.start, HighWatermark: l.start + uint64(len(l.values))})
	}
	return res, nil
}

// A position that retention passed jumps to the log start, decided by the partition's bounds;
// a failed fetch at a position inside the log is the caller's error.
func TestPollResetsPastRetention(t *testing.T) {
	q := &fakeQuery{logs: []partition{{start: 5, values: []string{"e", "f"}}}}
	c := &GroupConsumer{query: q, assignment: []types.TopicPartitions{{Topic: "t", Partitions: []uint32{0}}},
		positions: map[tp]uint64{{"t", 0}: 2}, dirty: map[tp]bool{}}
	recs, err := c.Poll(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.Equal(t, uint64(5), recs[0].Offset)
	require.Equal(t, uint64(7), c.positions[tp{"t", 0}])

	c.positions[tp{"t", 0}] = 9 // past the high watermark: not retention's doing
	_, err = c.Poll(context.Background(), 10)
	require.Equal(t, codes.OutOfRange, status.Code(err))
	require.Equal(t, uint64(9), c.positions[tp{"t", 0}], "a failed poll moves nothing")
}
