package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	cmtservice "github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"

	"github.com/cosmos/cosmos-sdk/client"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

func numCPU() int { return runtime.NumCPU() }

// runT lets the process harness of testutil/node run outside `go test`.
type runT struct {
	dir      string
	cleanups []func()
}

func (r *runT) Helper()                           {}
func (r *runT) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (r *runT) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (r *runT) Cleanup(f func())                  { r.cleanups = append(r.cleanups, f) }
func (r *runT) TempDir() string {
	d, err := os.MkdirTemp(r.dir, "t")
	if err != nil {
		panic(err)
	}
	return d
}
func (r *runT) close() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	os.RemoveAll(r.dir)
}

// pending is a submitted transaction waiting for its block.
type pending struct {
	records  int
	enqueued time.Time     // when its first record was handed to the producer
	done     chan struct{} // closed when the tx's block is seen
}

// tracker matches committed transactions (from block results) to what producers submitted.
type tracker struct {
	mu        sync.Mutex
	byHash    map[string]pending
	committed atomic.Int64
	failed    atomic.Int64
	first     time.Time
	last      time.Time
	lat       *latencies
}

func newTracker() *tracker { return &tracker{byHash: map[string]pending{}, lat: &latencies{}} }

func (tr *tracker) submitted(hash string, p pending) {
	tr.mu.Lock()
	tr.byHash[hash] = p
	tr.mu.Unlock()
}

// watch reads every block from start and counts the records of successful transactions.
func (tr *tracker) watch(ctx context.Context, rpc *rpchttp.HTTP, blocks cmtservice.ServiceClient, start int64) {
	h := start
	for ctx.Err() == nil {
		st, err := rpc.Status(ctx)
		if err != nil || st.SyncInfo.LatestBlockHeight < h {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for ; h <= st.SyncInfo.LatestBlockHeight && ctx.Err() == nil; h++ {
			block, err1 := blocks.GetBlockByHeight(ctx, &cmtservice.GetBlockByHeightRequest{Height: h})
			results, err2 := rpc.BlockResults(ctx, &h)
			if err1 != nil || err2 != nil {
				h--
				time.Sleep(20 * time.Millisecond)
				break
			}
			now := time.Now()
			for i, raw := range block.SdkBlock.Data.Txs {
				sum := sha256.Sum256(raw)
				hash := strings.ToUpper(hex.EncodeToString(sum[:]))
				tr.mu.Lock()
				p, ok := tr.byHash[hash]
				delete(tr.byHash, hash)
				tr.mu.Unlock()
				if !ok {
					continue
				}
				close(p.done)
				if results.TxsResults[i].Code != 0 {
					tr.failed.Add(int64(p.records))
					continue
				}
				tr.mu.Lock()
				if tr.first.IsZero() {
					tr.first = now
				}
				tr.last = now
				tr.mu.Unlock()
				tr.committed.Add(int64(p.records))
				tr.lat.add(now.Sub(p.enqueued))
			}
		}
	}
}

// load drives `records` records from cfg.Producers accounts, batchRecords per transaction
// spread over the partitions, at most ratePerSec records/s in total (0: as fast as possible),
// and waits until all of them are committed or failed.
func load(ctx context.Context, cfg Config, n0 *node.Node, signers []*txclient.Signer, cctxs []client.Context, topic string,
	records, batchRecords, inFlight int, ratePerSec float64) (*tracker, time.Duration, error) {
	rpc, err := rpchttp.New(n0.RPC, "/websocket")
	if err != nil {
		return nil, 0, err
	}
	start, err := n0.Height()
	if err != nil {
		return nil, 0, err
	}
	tr := newTracker()
	// The watcher outlives ctx (which only stops the producers) to see the last commits.
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go tr.watch(wctx, rpc, cmtservice.NewServiceClient(cctxs[0].GRPCClient), start+1)

	value := make([]byte, cfg.RecordBytes)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	began := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	var sentTotal atomic.Int64
	perProducer := records / len(signers)
	for pi, s := range signers {
		wg.Add(1)
		go func(pi int, s *txclient.Signer) {
			defer wg.Done()
			inflight := make(chan struct{}, inFlight)
			sent := 0
			// Kafka's producer sends a batch when it is full or when linger has passed since its
			// first record: under a paced load, a batch holds what arrives within linger.
			size := batchRecords
			if ratePerSec > 0 && cfg.Linger > 0 {
				size = max(1, min(batchRecords, int(ratePerSec/float64(len(signers))*cfg.Linger.Seconds())))
			}
			for sent < perProducer && ctx.Err() == nil {
				n := min(size, perProducer-sent)
				if ratePerSec > 0 {
					// Pace this producer's share of the target rate.
					due := began.Add(time.Duration(float64(sent+n) / (ratePerSec / float64(len(signers))) * float64(time.Second)))
					if d := time.Until(due); d > 0 {
						time.Sleep(d)
					}
				}
				enq := time.Now()
				msg := &types.MsgProduce{Producer: s.Address()}
				per := (n + cfg.Partitions - 1) / cfg.Partitions
				for p, left := 0, n; left > 0; p++ {
					k := min(per, left)
					b := types.ProduceBatch{Topic: topic, Partition: int32((p + pi) % cfg.Partitions), Records: make([]types.BatchRecord, k)}
					for j := range b.Records {
						b.Records[j] = types.BatchRecord{Value: &types.Bytes{Data: value}, CreateTimeMs: enq.UnixMilli()}
					}
					msg.Batches = append(msg.Batches, b)
					left -= k
				}
				select {
				case inflight <- struct{}{}:
				case <-ctx.Done():
					return
				}
				hash, err := s.Submit(msg)
				if err != nil {
					<-inflight
					if errors.Is(err, sdkerrors.ErrMempoolIsFull) {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					if ctx.Err() != nil {
						return
					}
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done := make(chan struct{})
				tr.submitted(hash, pending{records: n, enqueued: enq, done: done})
				sent += n
				sentTotal.Add(int64(n))
				// Release the in-flight slot when the tx's block is seen (committed or failed).
				go func() {
					select {
					case <-done:
					case <-wctx.Done():
					}
					<-inflight
				}()
			}
		}(pi, s)
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return tr, 0, e.(error)
	}
	total := sentTotal.Load()
	deadline := time.Now().Add(60 * time.Second)
	for tr.committed.Load()+tr.failed.Load() < total && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if lost := total - tr.committed.Load() - tr.failed.Load(); lost > 0 {
		cfg.Log("%d submitted records were not committed within 60 s", lost)
	}
	tr.mu.Lock()
	elapsed := tr.last.Sub(began)
	tr.mu.Unlock()
	if tr.failed.Load() > 0 {
		return tr, elapsed, fmt.Errorf("%d records failed in their blocks", tr.failed.Load())
	}
	return tr, elapsed, nil
}

// runChain measures bftlog on n validators, then the one-record-per-tx design on the same chain.
func runChain(cfg Config, n int) (Result, *Result, error) {
	dir, err := os.MkdirTemp("", "bftlogbench-")
	if err != nil {
		return Result{}, nil, err
	}
	t := &runT{dir: dir}
	defer t.close()
	var res Result
	var peer *Result
	err = func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("%v", r)
			}
		}()
		accounts := make([]string, max(cfg.Producers, cfg.PeerProducers))
		for i := range accounts {
			accounts[i] = fmt.Sprintf("prod%d", i)
		}
		cfg.Log("starting %d validator(s)", n)
		net := node.StartNetwork(t, node.NetworkOptions{Validators: n, Accounts: accounts})
		n0 := net.Nodes[0]
		signers := make([]*txclient.Signer, len(accounts))
		cctxs := make([]client.Context, len(accounts))
		// Producers submit through the node's binary ingress and readers use its gRPC, as a
		// production client should: JSON-RPC and the SDK's gRPC interceptor spend most of the
		// node's CPU on large transactions (README, Performance).
		conn, err := grpc.NewClient(n0.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
		if err != nil {
			return err
		}
		defer conn.Close()
		for i, a := range accounts {
			cctxs[i], signers[i] = n0.ClientContext(n0.Home, a)
			cctxs[i] = cctxs[i].WithGRPCClient(conn)
			signers[i].SetFixedGas()
			signers[i].UseRawIngress(n0.API + app.RawTxPath)
		}
		ctx := context.Background()
		if _, err := signers[0].SubmitAndWait(&types.MsgCreateTopic{Owner: signers[0].Address(), Name: "bench", Partitions: uint32(cfg.Partitions)}); err != nil {
			return err
		}
		cfg.Log("bftlog N=%d: %d records of %d B, %d producers, %d records per tx", n, cfg.Records, cfg.RecordBytes, cfg.Producers, cfg.BatchRecords)
		main := signers[:cfg.Producers]
		tr, elapsed, err := load(ctx, cfg, n0, main, cctxs, "bench", cfg.Records, cfg.BatchRecords, cfg.InFlight, 0)
		if err != nil {
			return err
		}
		committed := int(tr.committed.Load())
		// Cross-check against chain state: the high watermarks must add up. A block's results
		// are visible before the app has committed it, so read the state one block later.
		if h, err := n0.Height(); err == nil {
			_ = n0.WaitForHeight(h+1, 30*time.Second)
		}
		var hwm uint64
		parts, err := types.NewQueryClient(cctxs[0]).Partitions(ctx, &types.QueryPartitionsRequest{Name: "bench"})
		if err != nil {
			return err
		}
		for _, p := range parts.Partitions {
			hwm += p.HighWatermark
		}
		if hwm != uint64(committed) {
			return fmt.Errorf("committed %d records by block results, but high watermarks add to %d", committed, hwm)
		}
		secs := elapsed.Seconds()
		res = Result{
			System: "bftlog", Validators: n, Records: committed, Seconds: secs,
			RecordsPerSec: float64(committed) / secs, MBPerSec: float64(committed*cfg.RecordBytes) / secs / 1e6,
			LatencyP50Ms: tr.lat.pct(50), LatencyP95Ms: tr.lat.pct(95), LatencyP99Ms: tr.lat.pct(99),
		}
		var extra uint64 // records appended after the main run
		if cfg.HalfLoad {
			cfg.Log("bftlog N=%d: latency at half load (%.0f records/s)", n, res.RecordsPerSec/2)
			half, _, err := load(ctx, cfg, n0, main, cctxs, "bench", cfg.Records/2, cfg.BatchRecords, cfg.InFlight, res.RecordsPerSec/2)
			if err != nil {
				return err
			}
			res.HalfLoadP99Ms = half.lat.pct(99)
			extra += uint64(half.committed.Load())
		}
		if cfg.PeerRecords > 0 {
			cfg.Log("one record per tx on N=%d: up to %d records or %s", n, cfg.PeerRecords, cfg.PeerDuration)
			pctx, cancel := context.WithTimeout(ctx, cfg.PeerDuration)
			ptr, pel, err := load(pctx, cfg, n0, signers[:max(1, cfg.PeerProducers)], cctxs, "bench", cfg.PeerRecords, 1, cfg.PeerInFlight, 0)
			cancel()
			if err != nil {
				return err
			}
			pc := int(ptr.committed.Load())
			peer = &Result{
				System: "one record per tx", Validators: n, Records: pc, Seconds: pel.Seconds(),
				RecordsPerSec: float64(pc) / pel.Seconds(), MBPerSec: float64(pc*cfg.RecordBytes) / pel.Seconds() / 1e6,
				LatencyP50Ms: ptr.lat.pct(50), LatencyP95Ms: ptr.lat.pct(95), LatencyP99Ms: ptr.lat.pct(99),
				Note: "the seed design: same chain, one MsgProduce with one record per transaction",
			}
			extra += uint64(pc)
		}
		res.FetchPerSec, err = measureFetch(ctx, cctxs[0], cfg)
		if err != nil {
			return err
		}
		res.DiskBytesPerRec = float64(n0.DataBytes()) / float64(hwm+extra)
		for _, v := range net.Nodes {
			res.PeakRSSMiB = append(res.PeakRSSMiB, int(v.PeakRSS()>>20))
		}
		return nil
	}()
	return res, peer, err
}

// measureFetch reads the whole topic from one node through gRPC-over-RPC queries.
func measureFetch(ctx context.Context, cctx client.Context, cfg Config) (float64, error) {
	q := types.NewQueryClient(cctx)
	parts, err := q.Partitions(ctx, &types.QueryPartitionsRequest{Name: "bench"})
	if err != nil {
		return 0, err
	}
	began := time.Now()
	var got int
	for _, p := range parts.Partitions {
		for off := p.LogStartOffset; off < p.HighWatermark; {
			res, err := q.Fetch(ctx, &types.QueryFetchRequest{Topic: "bench", Partition: p.Partition, Offset: off, MaxRecords: uint32(cfg.FetchRecords)})
			if err != nil {
				return 0, err
			}
			got += len(res.Records)
			off = res.NextOffset
		}
	}
	return float64(got) / time.Since(began).Seconds(), nil
}
