package consumer

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// partition is one partition's log: records at [start, start+len(values)).
type partition struct {
	start  uint64
	values []string
}

// fakeQuery answers Fetch and Partitions from logs; Fetch outside a log fails as the node's
// gRPC does, with a status whose text the consumer must not need. Fetch answers as the node
// does for FETCH_FORMAT_BATCHES: whole stored batches of batchSize records from the log start,
// the first holding the requested offset.
type fakeQuery struct {
	types.QueryClient
	logs []partition
}

const batchSize = 3

func (q *fakeQuery) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	if req.Format != types.FETCH_FORMAT_BATCHES {
		return nil, status.Error(codes.InvalidArgument, "the consumer decodes batches itself")
	}
	l := q.logs[req.Partition]
	hw := l.start + uint64(len(l.values))
	if req.Offset < l.start || req.Offset > hw {
		return nil, status.Error(codes.OutOfRange, "no words to go by")
	}
	res := &types.QueryFetchResponse{HighWatermark: hw, LogStartOffset: l.start, NextOffset: req.Offset}
	var n uint64
	for base := l.start; base < hw; base += batchSize {
		end := min(base+batchSize, hw)
		if end <= req.Offset {
			continue
		}
		if len(res.Batches) > 0 && n+end-base > uint64(req.MaxRecords) {
			break
		}
		var recs []types.BatchRecord
		for o := base; o < end; o++ {
			recs = append(recs, types.BatchRecord{Value: types.NewBytes([]byte(l.values[o-l.start]))})
		}
		bz, err := types.EncodeRecordBatch(recs, kbatch.CompressionNone)
		if err != nil {
			return nil, err
		}
		res.Batches = append(res.Batches, types.RecordBatch{BaseOffset: base, RecordCount: uint32(len(recs)), RecordBatch: kbatch.WithBaseOffset(bz, base)})
		n += end - max(base, req.Offset)
		res.NextOffset = end
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
		res.Batches, res.NextOffset = nil, res.HighWatermark
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

func values(recs []types.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value.Data)
	}
	return out
}

// FetchRecords decodes the stored batches: the records of the first batch before the offset
// are skipped and whole batches come back; Truncate cuts an answer so that the rest is fetched
// next; a batch that does not hold the records it claims is refused.
func TestFetchRecordsDecodesBatches(t *testing.T) {
	q := &fakeQuery{logs: []partition{{start: 0, values: []string{"a", "b", "c", "d", "e", "f", "g"}}}}
	ctx := context.Background()

	res, err := FetchRecords(ctx, q, &types.QueryFetchRequest{Topic: "t", Offset: 1, MaxRecords: 100})
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c", "d", "e", "f", "g"}, values(res.Records))
	require.Equal(t, uint64(1), res.Records[0].Offset)
	require.Equal(t, uint64(7), res.NextOffset)
	require.Empty(t, res.Batches)

	res, err = FetchRecords(ctx, q, &types.QueryFetchRequest{Topic: "t", Offset: 1, MaxRecords: 1})
	require.NoError(t, err)
	require.Equal(t, []string{"b", "c"}, values(res.Records), "the first batch whole, from the offset")
	require.Equal(t, uint64(3), res.NextOffset)
	Truncate(res, 1)
	require.Equal(t, []string{"b"}, values(res.Records))
	require.Equal(t, uint64(2), res.NextOffset, "the rest of the batch is read next")
	Truncate(res, 5)
	require.Equal(t, []string{"b"}, values(res.Records))
	require.Equal(t, uint64(2), res.NextOffset)

	res, err = FetchRecords(ctx, q, &types.QueryFetchRequest{Topic: "t", Offset: 7, MaxRecords: 10})
	require.NoError(t, err)
	require.Empty(t, res.Records)
	require.Equal(t, uint64(7), res.NextOffset)

	_, err = FetchRecords(ctx, &miscounting{*q}, &types.QueryFetchRequest{Topic: "t", Offset: 0, MaxRecords: 10})
	require.ErrorIs(t, err, types.ErrInvalidRecordBatch)
}

// A poll never returns more than asked, though the node answers with whole batches.
func TestPollCutsBatches(t *testing.T) {
	q := &fakeQuery{logs: []partition{{start: 0, values: []string{"a", "b", "c", "d", "e"}}}}
	c := &GroupConsumer{query: q, assignment: []types.TopicPartitions{{Topic: "t", Partitions: []uint32{0}}},
		positions: map[tp]uint64{{"t", 0}: 0}, dirty: map[tp]bool{}}
	var got []string
	for _, n := range []uint32{2, 2, 2} {
		recs, err := c.Poll(context.Background(), n)
		require.NoError(t, err)
		require.LessOrEqual(t, len(recs), int(n))
		for _, r := range recs {
			got = append(got, string(r.Value.Data))
		}
	}
	require.Equal(t, []string{"a", "b", "c", "d", "e"}, got)
	require.Equal(t, uint64(5), c.positions[tp{"t", 0}])
}

// miscounting serves batches whose record count says one record more than they hold.
type miscounting struct{ fakeQuery }

func (q *miscounting) Fetch(ctx context.Context, req *types.QueryFetchRequest, opts ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	res, err := q.fakeQuery.Fetch(ctx, req, opts...)
	if err == nil {
		res.Batches[0].RecordCount++
	}
	return res, err
}
