package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
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
	if os.Getenv("BFTLOG_BENCH_KEEP") != "" { // the nodes' homes and logs, to look into a run
		fmt.Fprintln(os.Stderr, "kept", r.dir)
		return
	}
	os.RemoveAll(r.dir)
}

// inTempDir runs f with a runT rooted in a new temporary directory: the process harness's
// failures (its Fatal panics) become errors, and every process it started is stopped.
func inTempDir(prefix string, f func(t *runT) error) (err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return err
	}
	t := &runT{dir: dir}
	defer t.close()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return f(t)
}

// pending is a submitted transaction waiting for its block.
type pending struct {
	records  int
	payload  int64         // value bytes of its records
	enqueued time.Time     // when its first record was handed to the producer
	done     chan struct{} // closed when the tx's block is seen
}

// tracker matches committed transactions (from block results) to what producers submitted.
type tracker struct {
	mu        sync.Mutex
	byHash    map[string]pending
	committed atomic.Int64
	payload   atomic.Int64 // committed value bytes
	failed    atomic.Int64
	failure   string // the first failed transaction's log, for the error
	first     time.Time
	last      time.Time
	lat       *latencies
	blocks    blockStats
}

// blockStats describes the blocks that carried a load's transactions: how often they came, how
// full they were and how many needed more than one consensus round.
type blockStats struct {
	count, txs, maxTxs, laterRounds int
	// absent counts validators' precommits missing from the blocks' last commits: a node moved
	// on before they arrived (slashing counts them as downtime).
	absent              int
	bytes               int64
	firstTime, lastTime time.Time
}

func (b *blockStats) add(t time.Time, txs [][]byte, lastCommit *cmtproto.Commit) {
	if b.count == 0 {
		b.firstTime = t
	}
	b.count++
	b.lastTime = t
	b.txs += len(txs)
	b.maxTxs = max(b.maxTxs, len(txs))
	for _, tx := range txs {
		b.bytes += int64(len(tx))
	}
	if lastCommit.GetRound() > 0 {
		b.laterRounds++
	}
	for _, sig := range lastCommit.GetSignatures() {
		if sig.BlockIdFlag == cmtproto.BlockIDFlagAbsent {
			b.absent++
		}
	}
}

// interval is the mean time between the blocks (0 for fewer than two).
func (b blockStats) interval() time.Duration {
	if b.count < 2 {
		return 0
	}
	return b.lastTime.Sub(b.firstTime) / time.Duration(b.count-1)
}

func (b blockStats) String() string {
	if b.count < 2 {
		return fmt.Sprintf("%d block(s)", b.count)
	}
	return fmt.Sprintf("%d blocks %d ms apart, %.1f txs (%.1f MB) per block, at most %d; %d commits took more than one round; %d precommits missing from last commits",
		b.count, b.interval().Milliseconds(), float64(b.txs)/float64(b.count), float64(b.bytes)/float64(b.count)/1e6, b.maxTxs, b.laterRounds, b.absent)
}

func newTracker() *tracker { return &tracker{byHash: map[string]pending{}, lat: &latencies{}} }

func (tr *tracker) blockStats() blockStats {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.blocks
}

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
				// Not served yet: retry this height (break skips the loop's h++).
				time.Sleep(20 * time.Millisecond)
				break
			}
			now := time.Now()
			tr.mu.Lock()
			if len(tr.byHash) > 0 || tr.blocks.count > 0 {
				tr.blocks.add(block.SdkBlock.Header.Time, block.SdkBlock.Data.Txs, block.SdkBlock.LastCommit)
			}
			tr.mu.Unlock()
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
				if r := results.TxsResults[i]; r.Code != 0 {
					tr.failed.Add(int64(p.records))
					tr.mu.Lock()
					if tr.failure == "" {
						tr.failure = fmt.Sprintf("code %d (%s): %s", r.Code, r.Codespace, r.Log)
					}
					tr.mu.Unlock()
					continue
				}
				tr.mu.Lock()
				if tr.first.IsZero() {
					tr.first = now
				}
				tr.last = now
				tr.mu.Unlock()
				tr.committed.Add(int64(p.records))
				tr.payload.Add(p.payload)
				tr.lat.add(now.Sub(p.enqueued))
			}
		}
	}
}

// buildFunc makes producer pi's next MsgProduce of about n records (its records next, next+1,
// ...) and returns it with the records and value bytes it carries.
type buildFunc func(producer string, pi, next, n int, now time.Time) (*types.MsgProduce, int, int64, error)

// workload is what the measured producers send: record values, used in turn, and the codec
// the producer compresses its batches with.
type workload struct {
	values      [][]byte
	compression types.Compression
}

// randomValues is the classic load: records of cfg.RecordBytes random bytes (4,096 distinct
// values used in turn), so that no store's compression makes the disk figures look better than
// a real, incompressible payload would.
func randomValues(cfg Config) workload {
	values := make([][]byte, 4096)
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	for i := range values {
		values[i] = make([]byte, cfg.RecordBytes)
		for j := range values[i] {
			values[i][j] = byte(rng.Uint32())
		}
	}
	return workload{values: values}
}

// builder spreads a message's records evenly over the topic's partitions, starting at a
// partition that differs per producer: one batch per partition, each encoded (and compressed)
// once here, on the client, as a Kafka producer does before it sends.
func (w workload) builder(topic string, partitions int) buildFunc {
	return func(producer string, pi, next, n int, now time.Time) (*types.MsgProduce, int, int64, error) {
		msg := &types.MsgProduce{Producer: producer}
		per := (n + partitions - 1) / partitions
		var payload int64
		for p, i := 0, 0; i < n; p++ {
			recs := make([]types.BatchRecord, min(per, n-i))
			for j := range recs {
				v := w.values[(next+i+j)%len(w.values)]
				recs[j] = types.BatchRecord{Value: &types.Bytes{Data: v}, CreateTimeMs: now.UnixMilli()}
				payload += int64(len(v))
			}
			b, err := types.NewProduceBatch(topic, uint32((p+pi)%partitions), recs, w.compression)
			if err != nil {
				return nil, 0, 0, err
			}
			msg.Batches = append(msg.Batches, b)
			i += len(recs)
		}
		return msg, n, payload, nil
	}
}

// load drives `records` records from the signers, batchRecords per transaction built by
// build, at most ratePerSec records/s in total (0: as fast as possible), and waits until all
// of them are committed or failed.
func load(ctx context.Context, cfg Config, c *chain, signers []*txclient.Signer, build buildFunc,
	records, batchRecords, inFlight int, ratePerSec float64) (*tracker, time.Duration, error) {
	rpc, err := rpchttp.New(c.n0.RPC, "/websocket")
	if err != nil {
		return nil, 0, err
	}
	start, err := c.n0.Height()
	if err != nil {
		return nil, 0, err
	}
	tr := newTracker()
	// The watcher outlives ctx (which only stops the producers) to see the last commits.
	wctx, stop := context.WithCancel(context.Background())
	defer stop()
	go tr.watch(wctx, rpc, cmtservice.NewServiceClient(c.cctxs[0].GRPCClient), start+1)

	began := time.Now()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	var sentTotal atomic.Int64
	var encodeNanos atomic.Int64
	var messages atomic.Int64
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
				msg, n, payload, err := build(s.Address(), pi, pi*perProducer+sent, n, enq)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				encodeNanos.Add(int64(time.Since(enq)))
				messages.Add(1)
				var hash string
				for {
					select {
					case inflight <- struct{}{}:
					case <-ctx.Done():
						return
					}
					// A full mempool is back-pressure: the same encoded message is resent.
					if hash, err = s.Submit(msg); err == nil || !errors.Is(err, sdkerrors.ErrMempoolIsFull) {
						break
					}
					<-inflight
					time.Sleep(50 * time.Millisecond)
				}
				if err != nil {
					<-inflight
					if ctx.Err() == nil {
						firstErr.CompareAndSwap(nil, err)
					}
					return
				}
				done := make(chan struct{})
				tr.submitted(hash, pending{records: n, payload: payload, enqueued: enq, done: done})
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
	if m := messages.Load(); m > 0 {
		cfg.Log("  client-side batch encoding: %.1f ms per message (%d messages)", float64(encodeNanos.Load())/1e6/float64(m), m)
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
	elapsed, failure := tr.last.Sub(began), tr.failure
	tr.mu.Unlock()
	cfg.Log("  %s", tr.blockStats())
	if tr.failed.Load() > 0 {
		return tr, elapsed, &failedInBlocksError{records: tr.failed.Load(), first: failure}
	}
	return tr, elapsed, nil
}

// failedInBlocksError says that some submitted transactions failed in their blocks: fatal for
// a measured bftlog run, a footnote for the one-record-per-tx peer, whose thousands of
// sequenced transactions in flight can overtake each other between four validators' mempools.
type failedInBlocksError struct {
	records int64
	first   string
}

func (e *failedInBlocksError) Error() string {
	return fmt.Sprintf("%d records failed in their blocks, the first with %s", e.records, e.first)
}

// chain is a running bftlog network with funded producer accounts, all clients on node 0.
type chain struct {
	net     *node.Network
	n0      *node.Node
	signers []*txclient.Signer
	cctxs   []client.Context
}

// startChain starts n validators with `accounts` producer accounts prod0, prod1, ...
func startChain(t *runT, cfg Config, n, accounts int) (*chain, error) {
	return startNetwork(t, cfg, node.NetworkOptions{Validators: n}, accounts)
}

// startNetwork is startChain for a network shaped by opts (its Accounts are the producers').
func startNetwork(t *runT, cfg Config, opts node.NetworkOptions, accounts int) (*chain, error) {
	names := make([]string, accounts)
	for i := range names {
		names[i] = fmt.Sprintf("prod%d", i)
	}
	cfg.Log("starting %d validator(s)", opts.Validators)
	opts.Accounts = names
	net := node.StartNetwork(t, opts)
	c := &chain{net: net, n0: net.Nodes[0], signers: make([]*txclient.Signer, accounts), cctxs: make([]client.Context, accounts)}
	// Producers submit through the node's binary ingress and readers use its gRPC, as a
	// production client should: JSON-RPC and the SDK's gRPC interceptor spend most of the
	// node's CPU on large transactions (README, Performance).
	conn, err := grpc.NewClient(c.n0.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { conn.Close() })
	for i, a := range names {
		c.cctxs[i], c.signers[i] = c.n0.ClientContext(c.n0.Home, a)
		c.cctxs[i] = c.cctxs[i].WithGRPCClient(conn)
		c.signers[i].SetFixedGas()
		c.signers[i].UseRawIngress(c.n0.API + app.RawTxPath)
	}
	return c, nil
}

func (c *chain) createTopic(name string, partitions int) error {
	_, err := c.signers[0].SubmitAndWait(&types.MsgCreateTopic{Owner: c.signers[0].Address(), Name: name, Partitions: uint32(partitions)})
	return err
}

// diskPerRecord is node 0's data directory per record of a log of `records` records, in all
// and by database (logged), so a disk figure says what holds the bytes.
func (c *chain) diskPerRecord(cfg Config, records uint64) (float64, map[string]float64) {
	by := map[string]float64{}
	var total uint64
	names := []string{}
	for name, b := range c.n0.DataBreakdown() {
		total += b
		by[name] = float64(b) / float64(records)
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		if by[name] >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, by[name]))
		}
	}
	cfg.Log("  disk of node 0 per record: %.0f B (%s)", float64(total)/float64(records), strings.Join(parts, ", "))
	return float64(total) / float64(records), by
}

// logSize sums a topic's high watermarks and stored bytes (the partitions' byte counts).
func (c *chain) logSize(ctx context.Context, topic string) (records, bytes uint64, err error) {
	parts, err := types.NewQueryClient(c.cctxs[0]).Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range parts.Partitions {
		records += p.HighWatermark
		bytes += p.ByteCount
	}
	return records, bytes, nil
}

// waitCommitted waits one block past the current one: a block's results are visible before
// the app has committed it, so state read right after the tracker saw a block may lag it.
func (c *chain) waitCommitted() {
	if h, err := c.n0.Height(); err == nil {
		_ = c.n0.WaitForHeight(h+1, 30*time.Second)
	}
}

func (c *chain) pids() []int {
	out := make([]int, len(c.net.Nodes))
	for i, v := range c.net.Nodes {
		out[i] = v.Pid()
	}
	return out
}

// cpuTimes reads the CPU time used so far by every validator and by this process, and returns
// a function that gives what each used since. On a shared machine CPU per record moves far
// less between runs than records/s does.
func (c *chain) cpuTimes() func() (validators, harness time.Duration) {
	pids := c.pids()
	before := make([]time.Duration, len(pids))
	for i, pid := range pids {
		before[i] = node.ProcCPU(pid)
	}
	self := node.ProcCPU(os.Getpid())
	return func() (validators, harness time.Duration) {
		for i, pid := range pids {
			validators += node.ProcCPU(pid) - before[i]
		}
		return validators, node.ProcCPU(os.Getpid()) - self
	}
}

// resetPeakRSS starts a new peak-RSS window on every validator, so each measured phase
// reports its own peak rather than the largest since the node started.
func (c *chain) resetPeakRSS() { node.ResetPeakRSS(c.pids()...) }

// peakRSS is every validator's peak RSS in MiB since the last reset.
func (c *chain) peakRSS() []int {
	out := make([]int, len(c.net.Nodes))
	for i, v := range c.net.Nodes {
		out[i] = int(v.PeakRSS() >> 20)
	}
	return out
}

// measure is one measured load on topic: `records` records from cfg.Producers producers as
// fast as they go (for at most dur, unless 0), cross-checked against the high watermarks;
// optionally latency at half that rate (half the records, at most dur/2); then a read of the
// whole topic. Peak RSS is each validator's over these phases.
func (c *chain) measure(cfg Config, topic string, wl workload, records int, dur time.Duration, halfLoad bool) (Result, error) {
	ctx := context.Background()
	within := func(d time.Duration) (context.Context, context.CancelFunc) {
		if dur == 0 {
			return context.WithCancel(ctx)
		}
		return context.WithTimeout(ctx, d)
	}
	c.resetPeakRSS()
	producers := c.signers[:cfg.Producers]
	build := wl.builder(topic, cfg.Partitions)
	before, _, err := c.logSize(ctx, topic)
	if err != nil {
		return Result{}, err
	}
	heap := c.profile(cfg, topic+"-"+wl.compression.String())
	steps := c.consensusTimings()
	cpu := c.cpuTimes()
	lctx, cancel := within(dur)
	tr, elapsed, err := load(lctx, cfg, c, producers, build, records, cfg.BatchRecords, cfg.InFlight, 0)
	cancel()
	cfg.Log("  %s", steps())
	nodeCPU, harnessCPU := cpu()
	heap()
	if err != nil {
		return Result{}, err
	}
	committed := int(tr.committed.Load())
	// Cross-check against chain state: the high watermarks must add up.
	c.waitCommitted()
	hwm, _, err := c.logSize(ctx, topic)
	if err != nil {
		return Result{}, err
	}
	if hwm-before != uint64(committed) {
		return Result{}, fmt.Errorf("committed %d records by block results, but high watermarks grew by %d", committed, hwm-before)
	}
	secs := elapsed.Seconds()
	cfg.Log("  CPU: validators %.1f s (%.1f µs per record), this harness %.1f s (%.1f µs per record)", nodeCPU.Seconds(),
		float64(nodeCPU.Microseconds())/float64(committed), harnessCPU.Seconds(), float64(harnessCPU.Microseconds())/float64(committed))
	res := Result{
		Records: committed, Seconds: secs,
		NodeCPUMicrosPerRec: float64(nodeCPU.Microseconds()) / float64(committed),
		RecordsPerSec:       float64(committed) / secs, MBPerSec: float64(tr.payload.Load()) / secs / 1e6,
		LatencyP50Ms: tr.lat.pct(50), LatencyP95Ms: tr.lat.pct(95), LatencyP99Ms: tr.lat.pct(99),
		PayloadBytesPerRec: float64(tr.payload.Load()) / float64(committed),
	}
	blocks := tr.blockStats()
	res.Blocks, res.LaterRoundBlocks, res.AbsentPrecommits = blocks.count, blocks.laterRounds, blocks.absent
	res.BlockIntervalMs = float64(blocks.interval().Microseconds()) / 1000
	if halfLoad {
		cfg.Log("  latency at half load (%.0f records/s)", res.RecordsPerSec/2)
		hctx, cancel := within(dur / 2)
		half, _, err := load(hctx, cfg, c, producers, build, records/2, cfg.BatchRecords, cfg.InFlight, res.RecordsPerSec/2)
		cancel()
		if err != nil {
			return Result{}, err
		}
		res.HalfLoadP99Ms = half.lat.pct(99)
	}
	if res.FetchPerSec, err = c.measureFetch(ctx, cfg, topic); err != nil {
		return Result{}, err
	}
	res.PeakRSSMiB = c.peakRSS()
	res.PeakRSSOf = "validators"
	return res, nil
}

// runChain measures bftlog on n validators, then the one-record-per-tx design on the same chain.
func runChain(cfg Config, n int) (res Result, peer *Result, err error) {
	err = inTempDir("bftlogbench-", func(t *runT) error {
		c, err := startChain(t, cfg, n, max(cfg.Producers, cfg.PeerProducers))
		if err != nil {
			return err
		}
		if err := c.createTopic("bench", cfg.Partitions); err != nil {
			return err
		}
		cfg.Log("bftlog N=%d: %d records of %d B, %d producers, %d records per tx", n, cfg.Records, cfg.RecordBytes, cfg.Producers, cfg.BatchRecords)
		if res, err = c.measure(cfg, "bench", randomValues(cfg), cfg.Records, 0, cfg.HalfLoad); err != nil {
			return err
		}
		res.System, res.Validators = "bftlog", n
		// Disk per record before the peer runs: its one-record transactions cost far more
		// block store per record and would blur the batched figure.
		total, stored, err := c.logSize(context.Background(), "bench")
		if err != nil {
			return err
		}
		res.DiskBytesPerRec, res.DiskBreakdown = c.diskPerRecord(cfg, total)
		res.LogBytesPerRec = float64(stored) / float64(total)
		if cfg.PeerRecords > 0 {
			cfg.Log("one record per tx on N=%d: up to %d records or %s", n, cfg.PeerRecords, cfg.PeerDuration)
			c.resetPeakRSS()
			pctx, cancel := context.WithTimeout(context.Background(), cfg.PeerDuration)
			build := randomValues(cfg).builder("bench", cfg.Partitions)
			ptr, pel, err := load(pctx, cfg, c, c.signers[:max(1, cfg.PeerProducers)], build, cfg.PeerRecords, 1, cfg.PeerInFlight, 0)
			cancel()
			note := "the seed design: same chain, one MsgProduce with one record per transaction"
			var failed *failedInBlocksError
			if errors.As(err, &failed) {
				// Only committed records count; the failed ones are said, not counted.
				cfg.Log("  %v", err)
				note += fmt.Sprintf("; %d records failed in their blocks (not counted)", failed.records)
			} else if err != nil {
				return err
			}
			pc := int(ptr.committed.Load())
			peer = &Result{
				System: "one record per tx", Validators: n, Records: pc, Seconds: pel.Seconds(),
				RecordsPerSec: float64(pc) / pel.Seconds(), MBPerSec: float64(ptr.payload.Load()) / pel.Seconds() / 1e6,
				LatencyP50Ms: ptr.lat.pct(50), LatencyP95Ms: ptr.lat.pct(95), LatencyP99Ms: ptr.lat.pct(99),
				PayloadBytesPerRec: float64(cfg.RecordBytes), PeakRSSMiB: c.peakRSS(), PeakRSSOf: "validators",
				Note: note,
			}
		}
		return nil
	})
	return res, peer, err
}

// runEvents measures JSON event records compressed by the producer with codec on a fresh
// one-validator chain, so that its data directory holds only them: disk bytes per record
// against payload bytes per record is what compression saves end to end.
func runEvents(cfg Config, codec types.Compression) (res Result, err error) {
	err = inTempDir("bftlogbench-events-", func(t *runT) error {
		c, err := startChain(t, cfg, 1, cfg.Producers)
		if err != nil {
			return err
		}
		if err := c.createTopic("events", cfg.Partitions); err != nil {
			return err
		}
		wl := workload{values: eventValues(10_000, 1), compression: codec}
		cfg.Log("bftlog events (%s): %d JSON records, %d producers, %d records per tx", codec, cfg.EventsRecords, cfg.Producers, cfg.BatchRecords)
		if res, err = c.measure(cfg, "events", wl, cfg.EventsRecords, 0, false); err != nil {
			return err
		}
		res.System, res.Validators = "bftlog events "+codec.String(), 1
		total, stored, err := c.logSize(context.Background(), "events")
		if err != nil {
			return err
		}
		res.DiskBytesPerRec, res.DiskBreakdown = c.diskPerRecord(cfg, total)
		res.LogBytesPerRec = float64(stored) / float64(total)
		res.Note = fmt.Sprintf("JSON events of about 240 B, producer compression %s", codec)
		return nil
	})
	return res, err
}

// measureFetch reads the whole topic from one node through gRPC queries as a consumer does:
// stored batches (FETCH_FORMAT_BATCHES), decoded here, the client.
func (c *chain) measureFetch(ctx context.Context, cfg Config, topic string) (float64, error) {
	q := types.NewQueryClient(c.cctxs[0])
	parts, err := q.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if err != nil {
		return 0, err
	}
	began := time.Now()
	var got, want uint64
	for _, p := range parts.Partitions {
		want += p.HighWatermark - p.LogStartOffset
		for off := p.LogStartOffset; off < p.HighWatermark; {
			res, err := q.Fetch(ctx, &types.QueryFetchRequest{Topic: topic, Partition: p.Partition, Offset: off,
				MaxRecords: uint32(cfg.FetchRecords), Format: types.FETCH_FORMAT_BATCHES})
			if err != nil {
				return 0, err
			}
			for _, b := range res.Batches {
				recs, err := b.Records()
				if err != nil {
					return 0, err
				}
				// The first batch may start before the offset asked for, as in Kafka, and the
				// last may hold records committed after the partitions were read.
				for _, r := range recs {
					if r.Offset >= off && r.Offset < p.HighWatermark {
						got++
					}
				}
			}
			if res.NextOffset <= off {
				return 0, fmt.Errorf("fetch of %s/%d at offset %d made no progress", topic, p.Partition, off)
			}
			off = res.NextOffset
		}
	}
	if got != want {
		return 0, fmt.Errorf("fetched %d records of %s, the partitions hold %d", got, topic, want)
	}
	return float64(got) / time.Since(began).Seconds(), nil
}
