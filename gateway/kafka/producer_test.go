package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	errorsmod "cosmossdk.io/errors"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

func refusal(stage txclient.Stage, e *errorsmod.Error, log string) error {
	return txclient.NewTxError(stage, "ABCD", 0, e.Codespace(), e.ABCICode(), log)
}

// refusedConnection is what dialling a closed port returns.
func refusedConnection(t *testing.T) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = http.Post("http://"+addr+"/", "application/octet-stream", nil)
	require.Error(t, err)
	return fmt.Errorf("post failed: %w", err)
}

// An append is sent again only when its outcome is unknown or its refusal passing, decided by
// the error's code and type, never by its words.
func TestRetryable(t *testing.T) {
	notCommitted := fmt.Errorf("transaction ABCD %w after 1m0s: %w", txclient.ErrNotCommitted, errors.New("tx not found"))
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"not committed in time":                  {notCommitted, true},
		"wrong sequence at CheckTx":              {refusal(txclient.Checked, sdkerrors.ErrWrongSequence, "account sequence mismatch, expected 9, got 8: incorrect account sequence"), true},
		"wrong sequence in simulation":           {refusal(txclient.Simulated, sdkerrors.ErrWrongSequence, "account sequence mismatch"), true},
		"mempool full":                           {refusal(txclient.Checked, sdkerrors.ErrMempoolIsFull, "mempool is full"), true},
		"connection refused":                     {refusedConnection(t), true},
		"no node of the list answered":           {fmt.Errorf("%w: node tcp://127.0.0.1:1: %w", txclient.ErrUnreachable, txclient.ErrUnresponsive), true},
		"the ingress could not pass it on (502)": {fmt.Errorf("%w: ingress: 502 Bad Gateway: post failed", txclient.ErrIngressUnavailable), true},
		"connection closed":                      {fmt.Errorf("post failed: %w", &net.OpError{Op: "read", Net: "tcp", Err: io.EOF}), true},
		"gRPC unavailable":                       {status.Error(codes.Unavailable, "connection error"), true},
		"deadline":                               {fmt.Errorf("query: %w", context.DeadlineExceeded), true},
		"module refusal":                         {refusal(txclient.Delivered, types.ErrInvalidPartition, "partition out of range"), false},
		"out of gas":                             {refusal(txclient.Delivered, sdkerrors.ErrOutOfGas, "out of gas"), false},
		"unknown code":                           {txclient.NewTxError(txclient.Checked, "ABCD", 0, "other", 77, "timed out; connection refused"), false},
		// The words of a retryable error decide nothing.
		"words only":     {errors.New("transaction ABCD not committed after 1m0s: connection refused: EOF: Unavailable: incorrect account sequence"), false},
		"gRPC Unknown":   {status.Error(codes.Unknown, "account sequence mismatch: incorrect account sequence"), false},
		"signing failed": {errors.New("key not found"), false},
	} {
		require.Equal(t, c.want, retryable(c.err), name)
	}
}

// What a lane does after a failed append.
func TestAfterFailure(t *testing.T) {
	outOfOrder := refusal(txclient.Simulated, types.ErrOutOfOrderSequence, "orders/0 expects sequence 8 from x (last accepted 7), got 3")
	require.Equal(t, resyncAndResend, afterFailure(outOfOrder, 1, 0, 0))
	require.Equal(t, resyncAndResend, afterFailure(outOfOrder, 1, maxResyncs-1, 0), "another process with the key took the sequence again")
	require.Equal(t, giveUp, afterFailure(outOfOrder, 1, maxResyncs, 0), "resynced maxResyncs times already")
	require.Equal(t, splitByPartition, afterFailure(outOfOrder, 2, 0, 0))
	bad := refusal(txclient.Delivered, types.ErrRecordTooLarge, "record too large")
	require.Equal(t, splitByPartition, afterFailure(bad, 3, 0, 0))
	require.Equal(t, giveUp, afterFailure(bad, 1, 0, 0))
	// An SDK refusal is not the module's: no split (as before), final unless passing.
	require.Equal(t, giveUp, afterFailure(refusal(txclient.Checked, sdkerrors.ErrOutOfGas, "out of gas"), 2, 0, 0))
	unknown := fmt.Errorf("transaction ABCD %w after 1m0s: %w", txclient.ErrNotCommitted, errors.New("tx not found"))
	require.Equal(t, resend, afterFailure(unknown, 2, 0, 0))
	require.Equal(t, resend, afterFailure(unknown, 2, 0, 29))
	require.Equal(t, giveUp, afterFailure(unknown, 2, 0, 30))
	// The text of the out-of-order error alone is no refusal.
	require.Equal(t, giveUp, afterFailure(errors.New(outOfOrder.Error()), 1, 0, 0))
}

// fetchFunc answers the Fetch query.
type fetchFunc func(*types.QueryFetchRequest) (*types.QueryFetchResponse, error)

func (f fetchFunc) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	return f(req)
}

// A duplicate answer is acknowledged only when the chain holds exactly the batch sent at its
// offsets (the stored batch is the sent one with the base offset set): a second gateway with
// the same key may have used the sequence for others.
func TestDuplicateIsOursOnlyWithOurRecords(t *testing.T) {
	rec := func(v string, ts int64) types.BatchRecord {
		return types.BatchRecord{Key: &types.Bytes{Data: []byte("k")}, Value: &types.Bytes{Data: []byte(v)}, CreateTimeMs: ts}
	}
	batch := func(c kbatch.Compression, recs ...types.BatchRecord) []byte {
		b, err := types.EncodeRecordBatch(recs, c)
		require.NoError(t, err)
		return b
	}
	sent := batch(kbatch.CompressionLZ4, rec("a", 7), rec("b", 7), rec("c", 7))
	var asked []*types.QueryFetchRequest
	fetcher := fetchFunc(func(req *types.QueryFetchRequest) (*types.QueryFetchResponse, error) {
		asked = append(asked, req)
		stored := types.RecordBatch{BaseOffset: 10, RecordCount: 3, RecordBatch: kbatch.WithBaseOffset(sent, 10)}
		return &types.QueryFetchResponse{Batches: []types.RecordBatch{stored}, NextOffset: 13}, nil
	})
	l := &lane{p: &producer{records: fetcher}}
	k := partitionKey{"orders", 0}
	dup := types.ProduceResult{Topic: "orders", BaseOffset: 10, Count: 3, Duplicate: true}
	for name, c := range map[string]struct {
		sent []byte
		want bool
	}{
		"the same batch":                {sent, true},
		"the same batch, base offset 0": {kbatch.WithBaseOffset(sent, 0), true},
		"another gateway's records":     {batch(kbatch.CompressionLZ4, rec("a", 7), rec("b", 7), rec("x", 7)), false},
		"another timestamp":             {batch(kbatch.CompressionLZ4, rec("a", 7), rec("b", 7), rec("c", 8)), false},
		"the same records uncompressed": {batch(kbatch.CompressionNone, rec("a", 7), rec("b", 7), rec("c", 7)), false},
		"another count (never asked)":   {batch(kbatch.CompressionLZ4, rec("a", 7)), false},
	} {
		asked = nil
		got, err := l.ours(k, dup, c.sent)
		require.NoError(t, err, name)
		require.Equal(t, c.want, got, name)
		if c.want {
			require.Len(t, asked, 1, name)
			require.Equal(t, types.FETCH_FORMAT_BATCHES, asked[0].Format, name)
			require.EqualValues(t, 10, asked[0].Offset, name)
		}
	}

	// A duplicate whose offsets hold a batch starting elsewhere is not ours.
	l.p.records = fetchFunc(func(req *types.QueryFetchRequest) (*types.QueryFetchResponse, error) {
		return &types.QueryFetchResponse{Batches: []types.RecordBatch{{BaseOffset: 8, RecordCount: 5, RecordBatch: kbatch.WithBaseOffset(sent, 8)}}}, nil
	})
	got, err := l.ours(k, dup, sent)
	require.NoError(t, err)
	require.False(t, got)
	// Nothing at the duplicate's offsets: an error, not an acknowledgement.
	l.p.records = fetchFunc(func(*types.QueryFetchRequest) (*types.QueryFetchResponse, error) {
		return &types.QueryFetchResponse{}, nil
	})
	_, err = l.ours(k, dup, sent)
	require.Error(t, err)
}

// A transaction takes at most one batch per partition (the chain accepts one sequenced batch
// per partition in a message), keeps each partition's order, and stays within the message
// limits, the first request excepted.
func TestNextTxOneBatchPerPartition(t *testing.T) {
	a, b := partitionKey{"orders", 0}, partitionKey{"orders", 1}
	req := func(k partitionKey, size int, recs uint32) *appendReq {
		return &appendReq{key: k, batch: make([]byte, size), records: recs}
	}
	a1, a2, b1, a3 := req(a, 100, 1), req(a, 100, 1), req(b, 100, 1), req(a, 100, 1)
	tx, rest := nextTx([]*appendReq{a1, a2, b1, a3}, nil)
	require.Equal(t, []*appendReq{a1, b1}, tx)
	require.Equal(t, []*appendReq{a2, a3}, rest)
	tx, rest = nextTx(rest, nil)
	require.Equal(t, []*appendReq{a2}, tx)
	require.Equal(t, []*appendReq{a3}, rest)

	big, b2, c1 := req(a, maxTxBytes, 1), req(b, 1, 1), req(partitionKey{"orders", 2}, 1, 1)
	tx, rest = nextTx([]*appendReq{big, b2}, nil)
	require.Equal(t, []*appendReq{big}, tx, "the first is taken even alone too large")
	require.Equal(t, []*appendReq{b2}, rest)
	many := req(a, 10, maxTxRecs)
	tx, rest = nextTx([]*appendReq{many, b2, c1}, nil)
	require.Equal(t, []*appendReq{many}, tx)
	require.Equal(t, []*appendReq{b2, c1}, rest)
	require.True(t, full([]*appendReq{many}))
	require.False(t, full([]*appendReq{b2, c1}))
}

// While a transaction with a batch the gateway sequenced is in flight for a partition, the
// partition's next such batch waits (a resend after a lost answer must carry the partition's
// last sequence to be taken as a duplicate), and so does everything behind it; a Kafka
// idempotent producer's batch, which carries its own sequence, goes.
func TestNextTxWaitsForABusyPartition(t *testing.T) {
	a, b := partitionKey{"orders", 0}, partitionKey{"orders", 1}
	kafkaBatch := (&kmsg.RecordBatch{Magic: 2, ProducerID: 7, NumRecords: 1}).AppendTo(nil)
	require.True(t, kafkaIdempotent(kafkaBatch))
	a1 := &appendReq{key: a, batch: []byte("gateway-sequenced"), records: 1}
	aKafka := &appendReq{key: a, batch: kafkaBatch, records: 1}
	b1 := &appendReq{key: b, batch: kafkaBatch, records: 1}
	busy := map[partitionKey]int{a: 1}
	tx, rest := nextTx([]*appendReq{a1, aKafka, b1}, busy)
	require.Equal(t, []*appendReq{b1}, tx)
	require.Equal(t, []*appendReq{a1, aKafka}, rest, "a's Kafka batch keeps its place behind a1")
	tx, rest = nextTx([]*appendReq{aKafka, a1}, busy)
	require.Equal(t, []*appendReq{aKafka}, tx, "a Kafka idempotent batch goes while the partition is busy")
	require.Equal(t, []*appendReq{a1}, rest)
	tx, rest = nextTx([]*appendReq{a1}, busy)
	require.Empty(t, tx, "nothing to send until the partition's transaction settles")
	require.Equal(t, []*appendReq{a1}, rest)
	tx, _ = nextTx([]*appendReq{a1}, nil)
	require.Equal(t, []*appendReq{a1}, tx)
}

// producerStatesFunc answers the ProducerStates query.
type producerStatesFunc func(*types.QueryProducerStatesRequest) (*types.QueryProducerStatesResponse, error)

func (f producerStatesFunc) ProducerStates(_ context.Context, req *types.QueryProducerStatesRequest, _ ...grpc.CallOption) (*types.QueryProducerStatesResponse, error) {
	return f(req)
}

// resync takes the partition's sequence from the chain's producer state.
func TestResyncReadsTheChain(t *testing.T) {
	states := map[partitionKey]uint64{{"orders", 0}: 7}
	var asked []*types.QueryProducerStatesRequest
	p := &producer{signer: &txclient.Signer{}, log: func(string, ...any) {}, states: producerStatesFunc(func(req *types.QueryProducerStatesRequest) (*types.QueryProducerStatesResponse, error) {
		asked = append(asked, req)
		if req.Topic == "gone" {
			return nil, status.Error(codes.NotFound, "no such topic")
		}
		res := &types.QueryProducerStatesResponse{}
		if last, ok := states[partitionKey{req.Topic, int32(req.Partition)}]; ok {
			res.States = append(res.States, types.ProducerState{Topic: req.Topic, Partition: req.Partition, Producer: req.Producer, LastSequence: last})
		}
		return res, nil
	})}
	l := newLane(p)
	l.seq[partitionKey{"orders", 0}], l.seq[partitionKey{"orders", 1}] = 2, 5
	l.sent[partitionKey{"orders", 0}] = 9 // in flight when the chain refused one: sent again after what it holds
	require.True(t, l.resync(partitionKey{"orders", 0}))
	require.Equal(t, uint64(7), l.seq[partitionKey{"orders", 0}])
	require.Equal(t, uint64(7), l.sent[partitionKey{"orders", 0}])
	require.Equal(t, uint64(8), l.message([]*appendReq{{key: partitionKey{"orders", 0}, batch: []byte("not a kafka batch")}}).Batches[0].Sequence)
	require.True(t, l.resync(partitionKey{"orders", 1}))
	require.Equal(t, uint64(0), l.seq[partitionKey{"orders", 1}], "nothing accepted: the next sequence is 1")
	require.False(t, l.resync(partitionKey{"gone", 0}))
	require.Len(t, asked, 3)
	require.Equal(t, &types.QueryProducerStatesRequest{Topic: "orders", Partition: 0, Producer: p.signer.Address()}, asked[0])
}

// A closing gateway answers every batch still queued for a lane (errClosed) instead of
// leaving its client waiting, and the lane stops.
func TestClosingAnswersQueuedBatches(t *testing.T) {
	p := &producer{log: func(string, ...any) {}, stop: make(chan struct{})}
	l := newLane(p)
	for range laneDepth {
		l.slots <- struct{}{} // every slot taken: nothing more is sent
	}
	var reqs []*appendReq
	for range 3 {
		r := &appendReq{key: partitionKey{"orders", 0}, batch: []byte("b"), records: 1, done: make(chan appendRes, 1)}
		reqs = append(reqs, r)
		l.in <- r
	}
	close(p.stop)
	l.loop()
	for _, r := range reqs {
		require.ErrorIs(t, (<-r.done).err, errClosed)
	}
	_, open := <-l.flights
	require.False(t, open, "the lane's settler stops")
}
