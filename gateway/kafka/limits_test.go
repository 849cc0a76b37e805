package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// serve starts a gateway of cfg on a free port; setup, if given, runs before it serves.
func serve(t *testing.T, cfg Config, setup func(*Server)) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	s, err := Listen(cfg)
	require.NoError(t, err)
	if setup != nil {
		setup(s)
	}
	go func() { _ = s.Serve() }()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// heapBytes is the live heap after a collection.
func heapBytes() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

const mib = 1 << 20

// requireHeapWithin fails once the heap has grown past bound since base, naming what it was
// doing.
func requireHeapWithin(t *testing.T, base, bound int64, doing string) int64 {
	t.Helper()
	grew := heapBytes() - base
	require.LessOrEqual(t, grew, bound, "heap grew %.1f MiB (bound %d MiB) %s", float64(grew)/mib, bound/mib, doing)
	return grew
}

// 200 connections that each announce a 100 MiB request and trickle bytes (one in four sends
// nothing at all) hold little memory: a frame's buffer grows with the bytes that arrive and
// its size is reserved from the gateway's buffer budget first (without --users), and before
// SASL authentication a frame larger than the handshake needs closes the connection (with
// --users). A client that behaves is still answered.
func TestAttackSlowConnectionsStayWithinTheMemoryBound(t *testing.T) {
	const slow, bound = 200, 32 * mib
	for _, withUsers := range []bool{false, true} {
		cfg := Config{Signer: &txclient.Signer{}}
		mode := "without --users"
		if withUsers {
			cfg.Users, mode = []User{{Name: "alice", Password: "alice-secret", Signer: &txclient.Signer{}}}, "with --users"
		}
		s := serve(t, cfg, nil)
		base := heapBytes()
		var conns []net.Conn
		for i := 0; i < slow; i++ {
			c := dial(t, s)
			if i%4 != 0 {
				_, err := c.Write(binary.BigEndian.AppendUint32(nil, 100*mib))
				require.NoError(t, err)
			}
			conns = append(conns, c)
			if i%20 == 19 {
				time.Sleep(20 * time.Millisecond) // let the gateway read what was sent
				requireHeapWithin(t, base, bound, fmt.Sprintf("with %d slow connections %s", i+1, mode))
			}
		}
		for round := 0; round < 10; round++ {
			for i, c := range conns {
				if i%4 != 0 {
					_, _ = c.Write(make([]byte, 100)) // refused connections are closed already
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		grew := requireHeapWithin(t, base, bound, fmt.Sprintf("with %d slow connections %s", slow, mode))
		require.Zero(t, roundTrip(t, dial(t, s), 1, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode)
		if withUsers {
			requireClosed(t, conns[1])
		}
		t.Logf("%s: %d connections announcing 100 MiB each and trickling 1,000 bytes: heap grew %.1f MiB (bound %d MiB)", mode, slow, float64(grew)/mib, bound/mib)
	}
}

// Beyond MaxConnections a new connection is closed as it is accepted, and admitted again once
// one closes; a connection whose request stops arriving is closed after RequestTimeout, an idle
// one after IdleTimeout, and one that does not authenticate (with --users) after RequestTimeout;
// before authentication a frame larger than the SASL handshake needs closes it at once.
func TestAttackConnectionCapAndReadDeadlines(t *testing.T) {
	s := serve(t, Config{MaxConnections: 10, RequestTimeout: 300 * time.Millisecond, IdleTimeout: time.Second}, nil)
	var served []net.Conn
	for i := 0; i < 10; i++ {
		c := dial(t, s)
		require.Zero(t, roundTrip(t, c, 1, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse).ErrorCode)
		served = append(served, c)
	}
	requireClosed(t, dial(t, s))
	require.NoError(t, served[0].Close())
	require.Eventually(t, func() bool {
		c := dial(t, s)
		_ = c.SetDeadline(time.Now().Add(time.Second))
		return roundTripErr(c, 1, kmsg.NewPtrApiVersionsRequest()) == nil
	}, 5*time.Second, 50*time.Millisecond, "a slot freed by a closed connection is not given to a new one")
	for _, c := range served[1:] {
		require.NoError(t, c.Close())
	}

	timeToClose := func(s *Server, send []byte) time.Duration {
		t.Helper()
		c := dial(t, s)
		start := time.Now()
		if send != nil {
			_, err := c.Write(send)
			require.NoError(t, err)
		}
		requireClosed(t, c)
		return time.Since(start)
	}
	stalled := timeToClose(s, binary.BigEndian.AppendUint32(nil, 1000))
	idle := timeToClose(s, nil)

	users := serve(t, Config{RequestTimeout: 300 * time.Millisecond, Users: []User{{Name: "alice", Password: "alice-secret", Signer: &txclient.Signer{}}}}, nil)
	large := timeToClose(users, binary.BigEndian.AppendUint32(nil, maxHandshakeFrame+1))
	quiet := timeToClose(users, nil)
	t.Logf("11th of 10 connections refused; closed: a stalled request after %v (RequestTimeout 300ms), an idle connection after %v (IdleTimeout 1s), "+
		"an unauthenticated one after %v, a %d-byte frame before authentication after %v", stalled.Round(time.Millisecond), idle.Round(time.Millisecond),
		quiet.Round(time.Millisecond), maxHandshakeFrame+1, large.Round(time.Millisecond))
}

// bigFetches answers every Fetch with one stored batch of its size, whatever the offset.
type bigFetches struct {
	types.QueryClient
	batch []byte
	calls atomic.Int64
}

func (q *bigFetches) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	q.calls.Add(1)
	return &types.QueryFetchResponse{HighWatermark: req.Offset + 1, NextOffset: req.Offset + 1,
		Batches: []types.RecordBatch{{BaseOffset: req.Offset, RecordCount: 1, RecordBatch: q.batch}}}, nil
}

func fetchOf(topic string, partitions []int32, maxBytes, minBytes, maxWaitMs int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.SetVersion(11)
	r.MaxBytes, r.MinBytes, r.MaxWaitMillis = maxBytes, minBytes, maxWaitMs
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for _, p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, maxBytes
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	return r
}

// Clients that pipeline fetches (max bytes 2 GiB) and never read the answers hold at most
// MaxRequestBytes each and MaxBufferedBytes together: the gateway stops reading them.
func TestAttackUnreadAnswersStayWithinTheBufferBound(t *testing.T) {
	const clients, perConn, total, slack = 4, 4 * mib, 16 * mib, 8 * mib
	q := &bigFetches{batch: make([]byte, mib)}
	s := serve(t, Config{MaxRequestBytes: perConn, MaxBufferedBytes: total}, func(s *Server) { s.query = q })
	base := heapBytes()
	req := fetchOf("orders", []int32{0}, math.MaxInt32, 0, 0)
	frame := requestFrame(1, req)
	var wg sync.WaitGroup
	var conns []net.Conn
	for i := 0; i < clients; i++ {
		c := dial(t, s)
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetWriteDeadline(time.Now().Add(3 * time.Second))
			for j := 0; j < 300; j++ {
				if _, err := c.Write(frame); err != nil {
					return // the gateway stopped reading: our send buffer is full
				}
			}
		}()
	}
	wg.Wait()
	// Until the gateway stops answering into the full sockets.
	for last := int64(-1); last != q.calls.Load(); time.Sleep(300 * time.Millisecond) {
		last = q.calls.Load()
	}
	grew := requireHeapWithin(t, base, total+slack, fmt.Sprintf("with %d clients not reading", clients))
	// The bound held while answers were served: at least as many 1 MiB answers as fill the
	// buffer budget were made (a gateway that answered nothing would pass the bound alone), and a
	// client that starts reading gets a whole answer holding the batch.
	require.GreaterOrEqual(t, q.calls.Load(), int64(total/mib), "fewer 1 MiB answers than MaxBufferedBytes holds: the bound was not reached")
	// Answers made while the buffer budget was spent may hold no batch (the gateway fits an
	// answer to what is left); reading frees the budget, and a later answer holds the batch.
	require.NoError(t, conns[0].SetReadDeadline(time.Now().Add(20*time.Second)))
	var served []byte
	read := 0
	for ; read < 300 && len(served) == 0; read++ {
		var size int32
		require.NoError(t, binary.Read(conns[0], binary.BigEndian, &size))
		answer := make([]byte, size)
		_, err := io.ReadFull(conns[0], answer)
		require.NoError(t, err)
		require.Equal(t, int32(1), int32(binary.BigEndian.Uint32(answer)), "correlation id")
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.SetVersion(req.GetVersion())
		require.NoError(t, resp.ReadFrom(answer[4:]))
		require.Len(t, resp.Topics, 1)
		require.Len(t, resp.Topics[0].Partitions, 1)
		require.Zero(t, resp.Topics[0].Partitions[0].ErrorCode)
		served = resp.Topics[0].Partitions[0].RecordBatches
	}
	require.True(t, bytes.Equal(q.batch, served), "an answer holds the stored 1 MiB batch: %d bytes after %d answers", len(served), read)
	t.Logf("%d clients pipelining 2 GiB fetches of a 1 MiB batch without reading: %d answered, heap grew %.1f MiB (MaxBufferedBytes %d MiB, MaxRequestBytes %d MiB per connection); the reader got the batch in answer %d",
		clients, q.calls.Load(), float64(grew)/mib, total/mib, perConn/mib, read)
}

// emptyFetches counts Fetch queries and the most bytes one asked for; nothing is stored.
type emptyFetches struct {
	types.QueryClient
	calls    atomic.Int64
	maxAsked atomic.Uint64
}

func (q *emptyFetches) Fetch(_ context.Context, req *types.QueryFetchRequest, _ ...grpc.CallOption) (*types.QueryFetchResponse, error) {
	q.calls.Add(1)
	for {
		m := q.maxAsked.Load()
		if req.MaxBytes <= m || q.maxAsked.CompareAndSwap(m, req.MaxBytes) {
			break
		}
	}
	return &types.QueryFetchResponse{NextOffset: req.Offset}, nil
}

// A fetch naming one partition 1,000 times and waiting 500 ms for data queries it once per
// poll and answers it once, as a broker does; 2 GiB max bytes are asked of the node as
// MaxFetchBytes at most.
func TestAttackFetchQueriesARepeatedPartitionOnce(t *testing.T) {
	q := &emptyFetches{}
	s := serve(t, Config{}, func(s *Server) { s.query = q })
	parts := make([]int32, 1000)
	c := dial(t, s)
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	resp := roundTrip(t, c, 1, fetchOf("orders", parts, math.MaxInt32, 1, 500)).(*kmsg.FetchResponse)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	require.LessOrEqual(t, q.calls.Load(), int64(10), "a poll every 100 ms for 500 ms, one query each")
	require.LessOrEqual(t, q.maxAsked.Load(), uint64(DefaultMaxFetchBytes))
	t.Logf("1 partition named 1,000 times, 500 ms wait: %d queries, at most %d bytes asked (max bytes 2 GiB)", q.calls.Load(), q.maxAsked.Load())
}

// transactionalBatch is a transactional record batch of producer id/epoch with one value.
func transactionalBatch(t *testing.T, producerID int64, epoch int16, value []byte) []byte {
	return withHeader(encode(t, kbatch.CompressionNone, types.BatchRecord{Value: &types.Bytes{Data: value}}), func(h []byte) {
		h[22] |= 0x10 // transactional
		binary.BigEndian.PutUint64(h[43:51], uint64(producerID))
		binary.BigEndian.PutUint16(h[51:53], uint16(epoch))
	})
}

func initTxn(t *testing.T, c net.Conn, id string, timeout time.Duration) *kmsg.InitProducerIDResponse {
	t.Helper()
	r := kmsg.NewPtrInitProducerIDRequest()
	r.SetVersion(4)
	r.TransactionalID, r.TransactionTimeoutMillis = kmsg.StringPtr(id), int32(timeout.Milliseconds())
	return roundTrip(t, c, 1, r).(*kmsg.InitProducerIDResponse)
}

func produceTxn(t *testing.T, c net.Conn, id string, batch []byte) int16 {
	t.Helper()
	r := kmsg.NewPtrProduceRequest()
	r.SetVersion(7)
	r.TransactionID, r.Acks, r.TimeoutMillis = kmsg.StringPtr(id), -1, 30_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "orders"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	r.Topics = append(r.Topics, rt)
	return roundTrip(t, c, 2, r).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// 1,000 transactional ids, each with an open transaction of 512 KiB, hold at most
// MaxTransactionBytes (64 MiB by default): past it, new records and new ids are refused with
// THROTTLING_QUOTA_EXCEEDED. TxnOffsetCommit counts against the same bounds, and a
// transaction open past its timeout is aborted (its producer fenced), as Kafka's coordinator
// does, which gives its bytes back.
func TestAttackTransactionalIDsStayWithinTheMemoryBound(t *testing.T) {
	const ids, bound = 1000, DefaultMaxTransactionBytes + 32*mib
	s := serve(t, Config{Signer: &txclient.Signer{}}, nil)
	c := dial(t, s)
	value := make([]byte, 512<<10)
	base := heapBytes()
	kept, refused := 0, 0
	for i := 0; i < ids; i++ {
		id := fmt.Sprintf("txn-%d", i)
		init := initTxn(t, c, id, time.Minute)
		code := init.ErrorCode
		if code == 0 {
			code = produceTxn(t, c, id, transactionalBatch(t, init.ProducerID, init.ProducerEpoch, value))
		}
		if code != 0 {
			require.Equal(t, kerr.ThrottlingQuotaExceeded.Code, code)
			refused++
		} else {
			kept++
		}
		if i%50 == 49 {
			requireHeapWithin(t, base, bound, fmt.Sprintf("after %d transactional ids", i+1))
		}
	}
	grew := requireHeapWithin(t, base, bound, fmt.Sprintf("after %d transactional ids", ids))
	require.NotZero(t, refused)
	t.Logf("%d transactional ids with 512 KiB each: %d kept, %d refused (THROTTLING_QUOTA_EXCEEDED); heap grew %.1f MiB (bound %d MiB)",
		ids, kept, refused, float64(grew)/mib, bound/mib)

	// TxnOffsetCommit: 1 MiB of metadata a time, at most a transaction's 4 MiB kept.
	s = serve(t, Config{Signer: &txclient.Signer{}}, nil)
	c = dial(t, s)
	init := initTxn(t, c, "offsets", time.Minute)
	require.Zero(t, init.ErrorCode)
	accepted := 0
	for i := 0; i < 50; i++ {
		r := kmsg.NewPtrTxnOffsetCommitRequest()
		r.SetVersion(3)
		r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.MemberID = "offsets", "g", init.ProducerID, init.ProducerEpoch, "m"
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "orders"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset, rp.Metadata = 1, kmsg.StringPtr(string(value)+string(value))
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		if roundTrip(t, c, 3, r).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode == 0 {
			accepted++
		}
	}
	require.LessOrEqual(t, accepted, maxTxnBytes/mib)

	// A transaction open past its timeout is aborted: its producer is fenced.
	short := initTxn(t, c, "short", 500*time.Millisecond)
	require.Zero(t, short.ErrorCode)
	require.Zero(t, produceTxn(t, c, "short", transactionalBatch(t, short.ProducerID, short.ProducerEpoch, []byte("v"))))
	time.Sleep(time.Second)
	require.Equal(t, kerr.ProducerFenced.Code, produceTxn(t, c, "short", transactionalBatch(t, short.ProducerID, short.ProducerEpoch, []byte("w"))))
	t.Logf("TxnOffsetCommit of 1 MiB metadata: %d of 50 kept; a transaction open past its 500 ms timeout was aborted (PRODUCER_FENCED)", accepted)
}
