package consumer

import (
	"context"
	"errors"
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

// skipping is a node that answers every fetch with no records and the high watermark as the
// next offset, and claims a commit at the high watermark.
type skipping struct{ fakeQuery }

func (q *skipping) Fetch(ctx context.Context, req *types.QueryFetchRequest, opts ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	res, err := q.fakeQuery.Fetch(ctx, req, opts...)
	if err == nil {
		res.Records, res.NextOffset = nil, res.HighWatermark
	}
	return res, err
}

// proverOf proves from the true logs (what the validators signed) and a true commit.
type proverOf struct {
	logs      []partition
	committed uint64
	asked     int64 // the minimum height Start was asked for
}

var errGap = errors.New("not the proven range")

func (p *proverOf) Start(_ context.Context, minHeight int64, _, _ string, partition uint32) (uint64, bool, types.Partition, error) {
	p.asked = minHeight
	l := p.logs[partition]
	return p.committed, true, types.Partition{LogStartOffset: l.start, HighWatermark: l.start + uint64(len(l.values))}, nil
}

func (p *proverOf) CheckRange(_ context.Context, _ string, partition uint32, offset, next uint64, recs []types.Record) error {
	l := p.logs[partition]
	if next < offset || next-offset != uint64(len(recs)) || next > l.start+uint64(len(l.values)) {
		return errGap
	}
	for i, r := range recs {
		if r.Offset != offset+uint64(i) || string(r.Value.Data) != l.values[r.Offset-l.start] {
			return errGap
		}
	}
	return nil
}

func (p *proverOf) Partition(_ context.Context, _ string, partition uint32) (types.Partition, error) {
	l := p.logs[partition]
	return types.Partition{LogStartOffset: l.start, HighWatermark: l.start + uint64(len(l.values))}, nil
}

// With a prover, the consumer starts from the proven commit (not the node's word) and refuses a
// poll whose range it cannot prove: its position stays, so nothing can be committed past records
// it never saw. Without one, the same answers move it to the high watermark.
func TestProverRefusesASkippedRange(t *testing.T) {
	logs := []partition{{start: 0, values: []string{"a", "b", "c", "d"}}}
	assignment := []types.TopicPartitions{{Topic: "t", Partitions: []uint32{0}}}
	liar := &skipping{fakeQuery{logs: logs}}

	gullible := &GroupConsumer{query: liar, assignment: assignment, positions: map[tp]uint64{{"t", 0}: 1}, dirty: map[tp]bool{}}
	recs, err := gullible.Poll(context.Background(), 10)
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Equal(t, uint64(4), gullible.positions[tp{"t", 0}], "without proofs the lie moves the position past every record")

	p := &proverOf{logs: logs, committed: 1}
	c := &GroupConsumer{query: liar, group: "g", prover: p}
	require.NoError(t, c.adopt(context.Background(), 42, 1, assignment))
	require.Equal(t, int64(42), p.asked, "proven at or after the generation's height")
	require.Equal(t, uint64(1), c.positions[tp{"t", 0}], "starts at the proven commit")
	_, err = c.Poll(context.Background(), 10)
	require.ErrorIs(t, err, errGap)
	require.Equal(t, uint64(1), c.positions[tp{"t", 0}], "a refused poll moves nothing")
	require.Empty(t, c.dirty, "nothing to commit")

	honest := &GroupConsumer{query: &fakeQuery{logs: logs}, group: "g", prover: p}
	require.NoError(t, honest.adopt(context.Background(), 42, 1, assignment))
	recs, err = honest.Poll(context.Background(), 10)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	require.Equal(t, uint64(4), honest.positions[tp{"t", 0}])
}
