//go:build soak

package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	evidencetypes "cosmossdk.io/x/evidence/types"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/testutil/soak"
	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

const (
	validators = 4
	// partitions is also the number of producers: producer p alone writes partition p, so its
	// idempotent sequence is the partition's and offset o of partition p must hold its record o.
	partitions  = 8
	consumers   = 3
	topic       = "soak"
	group       = "soak"
	valueBytes  = 100
	maxBatch    = 5000   // records per transaction, for catching up after a stall
	pollRecords = 40_000 // per poll, over the member's partitions: a commit waits for a block, so a poll must cover a block interval of load
	// sessionMs is the group's session timeout: short, so that a member whose node is down
	// for a while expires and the group rebalances, as the checks want to see.
	sessionMs = 10_000
)

// config is one run, from the environment (make soak passes it through).
type config struct {
	duration, bin time.Duration
	rate          float64
	seed          uint64
	results       string
	// kinds, when set (BFTLOG_SOAK_FAULTS=partition,kill), are the only faults injected: to
	// study one kind. The seeded draws stay the same; a kind left out becomes the next allowed.
	kinds []string
}

// defaultRate is what four validators, the group and the nemesis keep up with on the 2-core
// machine the figures come from: at 11,400/s (half the N=4 peak in docs/performance.md) a
// 30-minute run saturated it (producers blocked 280 s on average, p99 31 s over the run), which
// leaves per-fault ratios meaningless; 4,000/s was acknowledged in full (docs/reliability.md).
const defaultRate = 4_000

func loadConfig(t *testing.T) config {
	c := config{duration: 30 * time.Minute, rate: defaultRate, seed: uint64(time.Now().UnixNano()), results: "results"}
	var err error
	if v := os.Getenv("BFTLOG_SOAK_DURATION"); v != "" {
		if c.duration, err = time.ParseDuration(v); err != nil {
			t.Fatalf("BFTLOG_SOAK_DURATION: %v", err)
		}
	}
	if v := os.Getenv("BFTLOG_SOAK_RATE"); v != "" {
		if c.rate, err = strconv.ParseFloat(v, 64); err != nil || c.rate <= 0 {
			t.Fatalf("BFTLOG_SOAK_RATE %q: want records per second", v)
		}
	}
	if v := os.Getenv("BFTLOG_SOAK_SEED"); v != "" {
		if c.seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("BFTLOG_SOAK_SEED: %v", err)
		}
	}
	// A minute per bin, or a tenth of a shorter run so that the chart has several points.
	c.bin = time.Minute
	if c.duration < 10*time.Minute {
		c.bin = max(5*time.Second, (c.duration / 10).Round(time.Second))
	}
	if v := os.Getenv("BFTLOG_SOAK_BIN"); v != "" {
		if c.bin, err = time.ParseDuration(v); err != nil || c.bin <= 0 {
			t.Fatalf("BFTLOG_SOAK_BIN %q: want a duration", v)
		}
	}
	if v := os.Getenv("BFTLOG_SOAK_RESULTS"); v != "" {
		c.results = v
	}
	if v := os.Getenv("BFTLOG_SOAK_FAULTS"); v != "" {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); !slices.Contains(faultKinds, k) {
				t.Fatalf("BFTLOG_SOAK_FAULTS: %q is none of %v", k, faultKinds)
			}
			c.kinds = append(c.kinds, k)
		}
	}
	return c
}

// recordKey and recordValue are producer p's record n: derived, not stored, so the whole
// history can be checked without keeping every value in memory. The value is pseudo-random
// so that no store's compression flatters the disk figure.
func recordKey(p int, n uint64) []byte { return fmt.Appendf(nil, "p%d-%d", p, n) }

func recordValue(p int, n uint64) []byte {
	out := make([]byte, valueBytes)
	x := uint64(p)<<48 ^ n
	for i := 0; i < len(out); i += 8 {
		// splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		for j := 0; j < 8 && i+j < len(out); j++ {
			out[i+j] = byte(z >> (8 * j))
		}
	}
	return out
}

// parseKey is recordKey's inverse.
func parseKey(k []byte) (p int, n uint64, ok bool) {
	ps, ns, found := strings.Cut(strings.TrimPrefix(string(k), "p"), "-")
	if !found || !strings.HasPrefix(string(k), "p") {
		return 0, 0, false
	}
	pi, err1 := strconv.Atoi(ps)
	nn, err2 := strconv.ParseUint(ns, 10, 64)
	return pi, nn, err1 == nil && err2 == nil
}

// endpoint is one node's client connections. Ports survive restarts, so they are made once;
// the RPC client has a timeout so that a call to a killed or isolated node fails instead of
// waiting (a paused node's calls wait until it resumes, as a real client's would).
type endpoint struct {
	index int
	rpc   *rpchttp.HTTP
	uri   string
	conn  *grpc.ClientConn
	api   string
}

// account is a funded key and the client context that signs with it (keyring in memory).
type account struct {
	name string
	base client.Context
}

// connect gives a client context and signer for acct on ep; fixedGas skips simulation (the
// producers' batches), as the benchmark's load does.
func connect(acct account, ep *endpoint, fixedGas bool) (client.Context, *txclient.Signer, error) {
	ctx := acct.base.WithClient(ep.rpc).WithNodeURI(ep.uri).WithGRPCClient(ep.conn)
	txf := tx.Factory{}.WithChainID(node.ChainID).WithKeybase(ctx.Keyring).WithTxConfig(ctx.TxConfig).
		WithAccountRetriever(authtypes.AccountRetriever{}).WithSignMode(signing.SignMode_SIGN_MODE_DIRECT)
	s, err := txclient.NewSigner(ctx, txf, !fixedGas)
	if err != nil {
		return ctx, nil, err
	}
	if fixedGas {
		s.SetFixedGas()
		s.UseRawIngress(ep.api + app.RawTxPath)
	}
	return ctx, s, nil
}

// connectNodes gives a signer for acct that sends through nodes (fixed gas, the binary
// ingress; queries and account reads through nodes too).
func connectNodes(acct account, nodes *txclient.Nodes) (*txclient.Signer, error) {
	ctx := acct.base.WithClient(nodes).WithNodeURI(nodes.Node(0).RPC)
	txf := tx.Factory{}.WithChainID(node.ChainID).WithKeybase(ctx.Keyring).WithTxConfig(ctx.TxConfig).
		WithAccountRetriever(authtypes.AccountRetriever{}).WithSignMode(signing.SignMode_SIGN_MODE_DIRECT)
	s, err := txclient.NewSigner(ctx, txf, false)
	if err != nil {
		return nil, err
	}
	s.SetFixedGas()
	return s, nil
}

// run is the state shared by the load, the nemesis and the checks.
type run struct {
	t     *testing.T
	cfg   config
	start time.Time
	net   *node.Network
	eps   []*endpoint
	rec   *soak.Recorder
	// stopAt is when records stop arriving at the producers (nanoseconds since start; 0: not yet).
	stopAt atomic.Int64
	// problems are invariant violations found by the goroutines, reported at the end.
	mu       sync.Mutex
	problems []string
	nProblem int
	// unacked counts, per node, committed records whose acknowledgement the producers gave up on.
	unacked []uint64
	prods   []*producer
	group   *groupLog
	// restartDelays are, per restart of every node, how long after the first new block the
	// slowest producer was acknowledged again (ackedAgain).
	restartDelays []time.Duration
	// Sampling state, touched by the test's goroutine only.
	samples    int
	lastSample time.Time
	loggedBin  int
	peakHWM    []uint64
}

func (r *run) logf(format string, args ...any) {
	r.t.Logf("[%7.1fs] %s", time.Since(r.start).Seconds(), fmt.Sprintf(format, args...))
}

func (r *run) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.nProblem++
	first := len(r.problems) < 50
	if first {
		r.problems = append(r.problems, msg)
	}
	r.mu.Unlock()
	if first {
		r.logf("PROBLEM: %s", msg)
	}
}

// ackBatch is one acknowledged batch: records first..first+count-1 of its producer at offsets
// base..base+count-1.
type ackBatch struct {
	base, first uint64
	count       uint32
	at          time.Time // when it was acknowledged
}

// producer p writes partition p. Records arrive at a steady rate (rate/partitions each); the
// producer sends everything that has arrived as one batch with the next idempotent sequence,
// waits for its commit, and sends the same batch again until it is acknowledged, so a lost
// answer never duplicates a record (one batch in flight, as Kafka's idempotent producer with
// max.in.flight=1). It is given every validator (txclient.Nodes, starting at node p mod 4):
// when its node stops answering, the transaction is looked up and handed on to the next. At most bufferSecs of records wait: beyond that
// the application blocks, as on a full Kafka buffer.memory, and the arrival schedule slips,
// so a stall or a chain slower than the target costs throughput, not an unbounded backlog.
type producer struct {
	r       *run
	p       int
	rate    float64
	acct    account
	nodes   *txclient.Nodes
	mu      sync.Mutex
	acked   []ackBatch
	next    uint64 // records acknowledged so far (record n is the n-th to arrive)
	lags    []lagSeg
	retries int
	dups    int
}

const bufferSecs = 10

// slowBatch is a batch's submit-to-commit time worth a line in the log.
const slowBatch = 4 * time.Second

// lagSeg is a slip of the arrival schedule: from record `from` on, records arrive lag later.
type lagSeg struct {
	from uint64
	lag  time.Duration
}

func (pr *producer) lag(n uint64) time.Duration {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for i := len(pr.lags) - 1; i >= 0; i-- {
		if pr.lags[i].from <= n {
			return pr.lags[i].lag
		}
	}
	return 0
}

// blocked is how long the application was blocked on a full buffer in all.
func (pr *producer) blocked() time.Duration { return pr.lag(^uint64(0)) }

// arrived is how many records had arrived by now (or by the stop time).
func (pr *producer) arrived(now time.Time) uint64 {
	el := now.Sub(pr.r.start)
	if s := pr.r.stopAt.Load(); s > 0 && el > time.Duration(s) {
		el = time.Duration(s)
	}
	el -= pr.blocked()
	return uint64(max(el.Seconds(), 0) * pr.rate)
}

// arrival is when record n arrived.
func (pr *producer) arrival(n uint64) time.Time {
	return pr.r.start.Add(pr.lag(n) + time.Duration(float64(n+1)/pr.rate*float64(time.Second)))
}

func (pr *producer) run(ctx context.Context) {
	r := pr.r
	var signer *txclient.Signer
	var seq uint64
	for ctx.Err() == nil {
		now := time.Now()
		have := pr.arrived(now)
		if have <= pr.next {
			if r.stopAt.Load() > 0 {
				return // every record that arrived is acknowledged
			}
			time.Sleep(max(time.Until(pr.arrival(pr.next)), time.Millisecond))
			continue
		}
		if buf := uint64(pr.rate * bufferSecs); have > pr.next+buf {
			// The buffer is full: record next+buf arrives only now.
			from := pr.next + buf
			pr.mu.Lock()
			pr.lags = append(pr.lags, lagSeg{from: from, lag: now.Sub(r.start) - time.Duration(float64(from)/pr.rate*float64(time.Second))})
			pr.mu.Unlock()
			have = from
		}
		n := min(have-pr.next, maxBatch)
		recs := make([]types.BatchRecord, n)
		for i := range recs {
			id := pr.next + uint64(i)
			recs[i] = types.BatchRecord{Key: &types.Bytes{Data: recordKey(pr.p, id)}, Value: &types.Bytes{Data: recordValue(pr.p, id)},
				CreateTimeMs: pr.arrival(id).UnixMilli()}
		}
		batch, err := types.NewProduceBatch(topic, uint32(pr.p), recs, kbatch.CompressionNone)
		if err != nil {
			r.problem("producer %d: encode batch: %v", pr.p, err)
			return
		}
		batch.Sequence = seq + 1
		for ctx.Err() == nil {
			if signer == nil {
				var err error
				if signer, err = connectNodes(pr.acct, pr.nodes); err != nil {
					time.Sleep(300 * time.Millisecond) // no node answered the account query
					continue
				}
			}
			msg := &types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}}
			sentAt, sentTo := time.Now(), pr.nodes.Current()
			res, err := signer.SubmitAndWait(msg)
			if took := time.Since(sentAt); took > slowBatch {
				// The p99 of a fault comes from such batches: say where each waited.
				_, nsw := pr.nodes.Switches()
				r.logf("producer %d: batch of sequence %d took %.1fs: sent to node %d, now on node %d (%d switches so far), err %v",
					pr.p, batch.Sequence, took.Seconds(), sentTo, pr.nodes.Current(), nsw, err)
			}
			if err != nil {
				pr.mu.Lock()
				pr.retries++
				pr.mu.Unlock()
				if errors.Is(err, sdkerrors.ErrMempoolIsFull) {
					time.Sleep(200 * time.Millisecond) // back-pressure: same node again
					continue
				}
				var txe *txclient.TxError
				if errors.As(err, &txe) && txe.Codespace() == types.ModuleName {
					// The chain refused the batch itself (not the node, not the fee): with
					// sequences resent only until acknowledged, that is a bug.
					r.problem("producer %d: batch of sequence %d refused: %v", pr.p, batch.Sequence, err)
					return
				}
				// No node answered, or the transaction was not committed in time: its outcome
				// is unknown, and the same batch goes again (a duplicate if the chain has it).
				time.Sleep(100 * time.Millisecond)
				continue
			}
			acked := time.Now()
			out, err := txclient.Responses[types.MsgProduceResponse](pr.acct.base, res)
			if err != nil || len(out) != 1 || len(out[0].Results) != 1 {
				r.problem("producer %d: produce response %v: %v", pr.p, out, err)
				return
			}
			res0 := out[0].Results[0]
			if res0.Partition != uint32(pr.p) || res0.Count != uint32(n) {
				r.problem("producer %d: batch of %d acknowledged as %d records in partition %d", pr.p, n, res0.Count, res0.Partition)
				return
			}
			lat := make([]time.Duration, n)
			for i := range lat {
				lat[i] = acked.Sub(pr.arrival(pr.next + uint64(i)))
			}
			r.rec.Acked(acked, lat)
			pr.mu.Lock()
			pr.acked = append(pr.acked, ackBatch{base: res0.BaseOffset, first: pr.next, count: uint32(n), at: acked})
			pr.next += n
			if res0.Duplicate {
				pr.dups++
			}
			pr.mu.Unlock()
			seq++
			break
		}
	}
}

// idAt is the producer's record id acknowledged at offset, if any.
func (pr *producer) idAt(offset uint64) (uint64, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	lo, hi := 0, len(pr.acked)
	for lo < hi { // first batch ending after offset
		m := (lo + hi) / 2
		if b := pr.acked[m]; b.base+uint64(b.count) <= offset {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(pr.acked) || pr.acked[lo].base > offset {
		return 0, false
	}
	b := pr.acked[lo]
	return b.first + offset - b.base, true
}

// sample records every validator's resident set (and, every fifth call, its data directory).
func (r *run) sample() {
	rss := make([]uint64, validators)
	var disk []uint64
	r.samples++
	if r.samples%5 == 1 {
		disk = make([]uint64, validators)
	}
	for i, n := range r.net.Nodes {
		if pid := n.Pid(); pid > 0 {
			rss[i] = node.ProcStatus(pid, "VmRSS")
			r.peakHWM[i] = max(r.peakHWM[i], n.PeakRSS())
		}
		if disk != nil {
			disk[i] = n.DataBytes()
		}
	}
	r.rec.Sample(time.Now(), rss, disk)
	if bin := int(time.Since(r.start) / r.cfg.bin); bin > r.loggedBin {
		r.loggedBin = bin
		r.progress()
	}
}

// progress logs the figures so far, once per bin.
func (r *run) progress() {
	tot := r.rec.Totals()
	var waiting uint64
	var blocked time.Duration
	for _, pr := range r.prods {
		pr.mu.Lock()
		next := pr.next
		pr.mu.Unlock()
		have := pr.arrived(time.Now())
		waiting += min(have-min(next, have), uint64(pr.rate*bufferSecs)) // a full buffer blocks the rest
		blocked += pr.blocked()
	}
	r.group.mu.Lock()
	delivered, gen := r.group.deliveries, r.group.maxGen
	r.group.mu.Unlock()
	r.logf("progress: %d acknowledged (%.0f/s mean), p99 %.0f ms, %d waiting in producers, producers blocked %.1fs on average; group: %d delivered, generation %d; RSS MiB %.0f",
		tot.Acked, float64(tot.Acked)/time.Since(r.start).Seconds(), tot.P99Ms, waiting, blocked.Seconds()/float64(len(r.prods)), delivered, gen, tot.PeakRSSMiB)
}

// idle waits d, sampling every 2 s. Only the test's goroutine touches the nodes (the
// nemesis, the samples, the checks), so the harness's Fatal calls end the test cleanly.
func (r *run) idle(d time.Duration) {
	end := time.Now().Add(d)
	for {
		if time.Since(r.lastSample) >= 2*time.Second {
			r.sample()
			r.lastSample = time.Now()
		}
		left := time.Until(end)
		if left <= 0 {
			return
		}
		time.Sleep(min(left, 2*time.Second-time.Since(r.lastSample)))
	}
}

// waitUntil idles until cond holds or timeout passes, and tells which.
func (r *run) waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		r.idle(500 * time.Millisecond)
	}
	return true
}

// heights asks every running node for its height.
func (r *run) heights() ([]int64, error) {
	var hs []int64
	for i, n := range r.net.Nodes {
		if !n.Running() {
			continue
		}
		h, err := n.Height()
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// waitCaughtUp waits until every node answers, all of them have reached the height the
// highest had when they first all answered, and the chain has made a block since: only then
// is the network whole again and the next fault may start (never two faulty nodes at once).
func (r *run) waitCaughtUp(timeout time.Duration) error {
	target := int64(-1)
	var last []int64
	var lastErr error
	ok := r.waitUntil(timeout, func() bool {
		hs, err := r.heights()
		last, lastErr = hs, err
		if err != nil {
			return false
		}
		lo, hi := hs[0], hs[0]
		for _, h := range hs {
			lo, hi = min(lo, h), max(hi, h)
		}
		if target < 0 {
			target = hi
		}
		return lo >= target && hi > target
	})
	if !ok {
		return fmt.Errorf("nodes not caught up after %s: heights %v (target %d), last error %v", timeout, last, target, lastErr)
	}
	return nil
}

var faultKinds = []string{"kill", "pause", "partition", "restart-all"}

// nemesis injects one fault at a time on a seeded schedule: a healthy gap, a fault held for a
// while, its repair, and a wait until every node has caught up. The first four faults are the
// four crash/network kinds in a seeded order, later ones drawn at random; the double-signing
// twin comes at a seeded time between 60% and 80% of the run. The twin's validator is
// tombstoned, so from then on it is the one faulty node and every later fault hits it alone
// (the honest three tolerate none of their own).
type nemesis struct {
	r      *run
	rng    *mathrand.Rand
	counts map[string]int
	faulty int
	twin   map[string]any
	err    error
}

func (nm *nemesis) run(deadline time.Time) {
	r, rng := nm.r, nm.rng
	order := append([]string(nil), faultKinds...)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	twinAt := r.start.Add(time.Duration(float64(r.cfg.duration) * (0.6 + 0.2*rng.Float64())))
	twinNode := rng.IntN(validators)
	r.logf("nemesis: twin of validator %d due at %.0fs", twinNode, twinAt.Sub(r.start).Seconds())
	for i := 0; nm.err == nil; i++ {
		// Every draw happens each round, whatever is done with it, so a seed replays the
		// same sequence of faults.
		gap := time.Duration(5+rng.IntN(11)) * time.Second
		hold := time.Duration(5+rng.IntN(21)) * time.Second
		kind := faultKinds[rng.IntN(len(faultKinds))]
		if i < len(order) {
			kind = order[i]
		}
		target := rng.IntN(validators)
		kind = r.cfg.allowed(kind)
		r.idle(gap)
		if nm.faulty < 0 && time.Now().After(twinAt) {
			nm.doubleSign(twinNode)
			continue
		}
		if time.Now().Add(hold).After(deadline) {
			break
		}
		if nm.faulty >= 0 {
			target = nm.faulty
			if kind == "restart-all" {
				kind = "kill"
			}
		}
		nm.inject(kind, target, hold)
	}
	if nm.faulty < 0 && nm.err == nil {
		r.logf("nemesis: the run ended before the twin was due")
	}
}

// allowed is kind, or when BFTLOG_SOAK_FAULTS leaves it out, the next kind it allows.
func (c config) allowed(kind string) string {
	if len(c.kinds) == 0 || slices.Contains(c.kinds, kind) {
		return kind
	}
	i := slices.Index(faultKinds, kind)
	for j := 1; j < len(faultKinds); j++ {
		if k := faultKinds[(i+j)%len(faultKinds)]; slices.Contains(c.kinds, k) {
			return k
		}
	}
	return kind
}

func (nm *nemesis) inject(kind string, i int, hold time.Duration) {
	r, net := nm.r, nm.r.net
	from := time.Now()
	// After a restart of every node: a height no lower than the first new block's, and when the
	// nodes were started again.
	var restartHeight int64
	var restartedAt time.Time
	node := i
	if kind == "restart-all" {
		node = -1
	}
	r.logf("fault: %s node %d for %s", kind, node, hold)
	r.rec.FaultBegins(kind, from)
	switch kind {
	case "kill":
		net.Nodes[i].Kill()
		r.idle(hold)
		net.Nodes[i].Start()
	case "pause":
		net.Nodes[i].Pause()
		r.idle(hold)
		net.Nodes[i].Resume()
	case "partition":
		net.Isolate(i)
		r.idle(hold)
		net.Reconnect(i)
	case "restart-all":
		// All four crash at once (kill -9) and restart from disk: a crash of every node, not
		// a Byzantine one, so safety must hold; liveness returns with them.
		before, _ := r.heights()
		for _, n := range net.Nodes {
			n.Kill()
		}
		r.idle(hold / 5)
		for _, n := range net.Nodes {
			n.Start()
		}
		restartHeight, restartedAt = slices.Max(append(before, 0))+1, time.Now()
	}
	healed := time.Now()
	err := r.waitCaughtUp(3 * time.Minute)
	note := fmt.Sprintf("held %s; every node caught up %.1fs after the repair", hold, time.Since(healed).Seconds())
	if err != nil {
		nm.err = fmt.Errorf("after %s of node %d: %w", kind, i, err)
		note = err.Error()
	} else if restartHeight > 1 {
		note += "; " + r.ackedAgain(restartHeight, restartedAt)
	}
	if node >= 0 {
		note += "; " + r.switchDelays(node, from, healed)
	}
	r.rec.Fault(kind, node, from, healed, time.Now(), note)
	nm.counts[kind]++
	r.logf("fault: %s node %d repaired; %s", kind, node, note)
}

// doubleSign starts a twin of validator v (its key, a copy of its data, an empty sign
// state), waits until the chain has jailed v for the equivocation and stops the twin.
func (nm *nemesis) doubleSign(v int) {
	r, net := nm.r, nm.r.net
	from := time.Now()
	r.logf("fault: twin of validator %d", v)
	r.rec.FaultBegins("twin", from)
	valoper := strings.TrimSpace(net.Nodes[v].MustRun("keys", "show", fmt.Sprintf("val%d", v), "--bech", "val", "-a", "--keyring-backend", "test"))
	conn := r.eps[(v+1)%validators].conn
	staking := stakingtypes.NewQueryClient(conn)
	validator := func() (*stakingtypes.Validator, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := staking.Validator(ctx, &stakingtypes.QueryValidatorRequest{ValidatorAddr: valoper})
		if err != nil {
			return nil, err
		}
		return &res.Validator, nil
	}
	before, err := validator()
	if err != nil {
		nm.err = fmt.Errorf("twin: validator %d before: %w", v, err)
		return
	}
	twin := net.StartTwinFromCopy(v)
	started := time.Now()
	var after *stakingtypes.Validator
	jailed := r.waitUntil(3*time.Minute, func() bool {
		after, err = validator()
		return err == nil && after.Jailed
	})
	jailedIn := time.Since(started)
	twin.Stop()
	nm.counts["twin"]++
	nm.faulty = v
	out := map[string]any{"validator": v, "jailed": jailed, "jailed_after_twin_start_sec": jailedIn.Seconds()}
	note := fmt.Sprintf("validator %d not jailed within 3 min", v)
	if jailed {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ev, err := evidencetypes.NewQueryClient(conn).AllEvidence(ctx, &evidencetypes.QueryAllEvidenceRequest{})
		var eq evidencetypes.Equivocation
		if err == nil && len(ev.Evidence) > 0 && eq.Unmarshal(ev.Evidence[0].Value) == nil {
			out["equivocation_height"] = eq.Height
			info, err := slashingtypes.NewQueryClient(conn).SigningInfo(ctx, &slashingtypes.QuerySigningInfoRequest{ConsAddress: eq.ConsensusAddress})
			out["tombstoned"] = err == nil && info.ValSigningInfo.Tombstoned
		}
		out["tokens_before"], out["tokens_after"] = before.Tokens.String(), after.Tokens.String()
		note = fmt.Sprintf("equivocation at height %v; jailed %.1fs after the twin started; tombstoned %v; tokens %s -> %s",
			out["equivocation_height"], jailedIn.Seconds(), out["tombstoned"], before.Tokens, after.Tokens)
	} else {
		// A twin that votes as its original (same state, same proposals) signs nothing
		// conflicting, and there is nothing to punish; conflicting votes seen without a jailing
		// are a failure.
		seen := false
		for _, n := range net.Nodes {
			seen = seen || strings.Contains(n.Log(), "conflicting vote")
		}
		out["conflicting_votes_seen"] = seen
		if seen {
			r.problem("twin: conflicting votes of validator %d seen, but it was not jailed within 3 min", v)
		} else {
			note = fmt.Sprintf("validator %d's twin signed no conflicting vote within 3 min (no node logged one): nothing to punish", v)
		}
	}
	nm.twin = out
	stopped := time.Now()
	r.logf("fault: twin of validator %d stopped; %s", v, note)
	if err := r.waitCaughtUp(3 * time.Minute); err != nil {
		nm.err = fmt.Errorf("after the twin: %w", err)
	}
	r.rec.Fault("twin", v, from, stopped, time.Now(), note+"; "+r.switchDelays(v, from, stopped))
}

// restartTarget is the soak's target after a restart of every node: each producer's records
// acknowledged again within this long of the first new block.
const restartTarget = 10 * time.Second

// ackedAgain tells how soon after the first new block each producer had a batch acknowledged,
// waiting at most twice restartTarget, and records the slowest in r.restartDelays. The first
// new block is the first from height h on committed after the nodes were started again at
// restarted; a block's commit time is the next block's header time (CometBFT's BFT time: the
// median of the commit's precommit times).
func (r *run) ackedAgain(h int64, restarted time.Time) string {
	// The first new block's commit time is in the block after it: wait for two.
	_ = r.net.Nodes[0].WaitForHeight(h+2, 30*time.Second)
	top, err := r.net.Nodes[0].Height()
	if err != nil {
		return fmt.Sprintf("no height: %v", err)
	}
	var at time.Time
	for ; h < top; h++ {
		t, err := r.blockTime(h + 1)
		if err != nil {
			return fmt.Sprintf("no time for block %d: %v", h+1, err)
		}
		if t.After(restarted) {
			at = t
			break
		}
	}
	if at.IsZero() {
		return fmt.Sprintf("no block committed after the restart below height %d", top)
	}
	deadline := time.Now().Add(2 * restartTarget)
	var slowest time.Duration
	for _, pr := range r.prods {
		for {
			first, ok := pr.firstAckAfter(at)
			if ok {
				slowest = max(slowest, first.Sub(at))
				break
			}
			if time.Now().After(deadline) {
				slowest = max(slowest, time.Since(at))
				r.problem("producer %d: nothing acknowledged within %s of block %d, the first after a restart of every node", pr.p, time.Since(at).Round(time.Second), h)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	r.mu.Lock()
	r.restartDelays = append(r.restartDelays, slowest)
	r.mu.Unlock()
	return fmt.Sprintf("every producer acknowledged again within %.1fs of block %d, the first after the restart", slowest.Seconds(), h)
}

// firstAckAfter is when the producer's first batch acknowledged after t was.
func (pr *producer) firstAckAfter(t time.Time) (time.Time, bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for i := len(pr.acked) - 1; i >= 0 && pr.acked[i].at.After(t); i-- {
		if i == 0 || !pr.acked[i-1].at.After(t) {
			return pr.acked[i].at, true
		}
	}
	return time.Time{}, false
}

// blockTime is block h's time, as node 0 has it.
func (r *run) blockTime(h int64) (time.Time, error) {
	resp, err := http.Get(fmt.Sprintf("%s/block?height=%d", strings.Replace(r.net.Nodes[0].RPC, "tcp://", "http://", 1), h))
	if err != nil {
		return time.Time{}, err
	}
	defer resp.Body.Close()
	var b struct {
		Result struct {
			Block struct {
				Header struct {
					Time time.Time `json:"time"`
				} `json:"header"`
			} `json:"block"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		return time.Time{}, err
	}
	if b.Result.Block.Header.Time.IsZero() {
		return time.Time{}, fmt.Errorf("block %d: no such block", h)
	}
	return b.Result.Block.Header.Time, nil
}

// switchDelays tells how soon after from the producers using node i moved to another node
// (switches before to).
func (r *run) switchDelays(i int, from, to time.Time) string {
	var delays []time.Duration
	for _, pr := range r.prods {
		sw, _ := pr.nodes.Switches()
		for _, s := range sw {
			if s.From == i && !s.At.Before(from) && s.At.Before(to) {
				delays = append(delays, s.At.Sub(from))
				break
			}
		}
	}
	if len(delays) == 0 {
		return fmt.Sprintf("no producer left node %d", i)
	}
	slices.Sort(delays)
	return fmt.Sprintf("producers left node %d %.2f–%.2fs after the fault (%d of them)", i, delays[0].Seconds(), delays[len(delays)-1].Seconds(), len(delays))
}

// TestSoak is make soak: the load and the nemesis for the configured duration, then the
// checks of the whole history and the report.
func TestSoak(t *testing.T) {
	cfg := loadConfig(t)
	t.Logf("soak: %d validators, %s, target %.0f records/s, %s bins, seed %d (replay with BFTLOG_SOAK_SEED=%d)",
		validators, cfg.duration, cfg.rate, cfg.bin, cfg.seed, cfg.seed)
	var names []string
	for p := 0; p < partitions; p++ {
		names = append(names, fmt.Sprintf("prod%d", p))
	}
	for c := 0; c < consumers; c++ {
		names = append(names, fmt.Sprintf("cons%d", c))
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: validators, Accounts: names, Proxied: true})
	r := &run{t: t, cfg: cfg, net: net, peakHWM: make([]uint64, validators)}
	for i, n := range net.Nodes {
		rpc, err := rpchttp.NewWithTimeout(n.RPC, "/websocket", 20)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(n.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		r.eps = append(r.eps, &endpoint{index: i, rpc: rpc, uri: n.RPC, conn: conn, api: n.API})
	}
	accts := map[string]account{}
	for _, name := range names {
		base, _ := net.Nodes[0].ClientContext(net.Nodes[0].Home, name)
		accts[name] = account{name: name, base: base}
	}
	_, owner, err := connect(accts["prod0"], r.eps[0], false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owner.SubmitAndWait(&types.MsgCreateTopic{Owner: owner.Address(), Name: topic, Partitions: partitions,
		Config: types.TopicConfig{RetentionMs: -1, RetentionBytes: -1}}); err != nil {
		t.Fatal(err)
	}
	_, admin, err := connect(accts["cons0"], r.eps[0], false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SubmitAndWait(&types.MsgCreateGroup{Admin: admin.Address(), GroupId: group,
		JoinPolicy: types.JOIN_POLICY_ANYONE, SessionTimeoutMs: sessionMs}); err != nil {
		t.Fatal(err)
	}

	r.start = time.Now()
	r.rec = soak.NewRecorder(r.start, cfg.bin, validators)
	r.group = newGroupLog(r)
	loadCtx, stopLoad := context.WithCancel(context.Background())
	defer stopLoad()
	var prodWG, groupWG sync.WaitGroup
	for p := 0; p < partitions; p++ {
		var list []txclient.Node
		for _, n := range net.Nodes {
			list = append(list, txclient.Node{RPC: n.RPC, API: n.API})
		}
		nodes, err := txclient.NewNodes(list)
		if err != nil {
			t.Fatal(err)
		}
		nodes.SetCurrent(p % validators) // spread over the validators, as before
		pr := &producer{r: r, p: p, rate: cfg.rate / partitions, acct: accts[fmt.Sprintf("prod%d", p)], nodes: nodes}
		r.prods = append(r.prods, pr)
	}
	for _, pr := range r.prods {
		prodWG.Add(1)
		go func() { defer prodWG.Done(); pr.run(loadCtx) }()
	}
	groupCtx, stopGroup := context.WithCancel(context.Background())
	defer stopGroup()
	for c := 0; c < consumers; c++ {
		m := &member{r: r, acct: accts[fmt.Sprintf("cons%d", c)], epIdx: c % validators, churner: c == consumers-1,
			rng: mathrand.New(mathrand.NewPCG(cfg.seed, uint64(c)+1))}
		groupWG.Add(1)
		go func() { defer groupWG.Done(); m.run(groupCtx) }()
	}

	nm := &nemesis{r: r, rng: mathrand.New(mathrand.NewPCG(cfg.seed, 0)), counts: map[string]int{}, faulty: -1}
	nm.run(r.start.Add(cfg.duration))
	r.stopAt.Store(int64(time.Since(r.start)))
	r.rec.LoadStopped(time.Now())
	loadSecs := time.Duration(r.stopAt.Load()).Seconds()
	r.logf("load stopped; waiting for the producers' last acknowledgements")
	if nm.err != nil {
		r.problem("nemesis: %v", nm.err)
	}
	prodDone := make(chan struct{})
	go func() { prodWG.Wait(); close(prodDone) }()
	if !r.waitUntil(5*time.Minute, func() bool { return isClosed(prodDone) }) {
		r.problem("producers did not get their last records acknowledged within 5 minutes")
		stopLoad()
		<-prodDone
	}
	final := make([]uint64, partitions)
	var acked, arrived uint64
	retries, switches, dups := 0, 0, 0
	var blocked time.Duration
	for p, pr := range r.prods {
		blocked += pr.blocked()
		final[p] = pr.next
		acked += pr.next
		arrived += pr.arrived(time.Now())
		_, sw := pr.nodes.Switches()
		retries, switches, dups = retries+pr.retries, switches+sw, dups+pr.dups
	}
	r.logf("producers done: %d records acknowledged; waiting for the group to commit all of them", acked)
	if !r.waitUntil(5*time.Minute, func() bool { return r.group.committedAll(final) }) {
		r.problem("the group did not commit every partition's end within 5 minutes")
	}
	stopGroup()
	groupWG.Wait()
	end := time.Now()

	// Agreement: every node (the twin's validator included, now a full node) has the same
	// block and app hash at every height.
	hs, err := r.heights()
	if err != nil {
		t.Fatal(err)
	}
	var top int64
	for _, h := range hs {
		top = max(top, h)
	}
	net.WaitAllAt(top+1, 2*time.Minute)
	agreed := net.CheckAgreement()
	_, appHash, err := net.Nodes[0].BlockHashes(agreed)
	if err != nil {
		t.Fatal(err)
	}

	verified := make([]uint64, validators)
	r.unacked = make([]uint64, validators)
	for i, ep := range r.eps {
		verified[i] = r.verifyLog(i, ep, final)
		r.logf("node %d: %d acknowledged records verified exactly once at their offsets", i, verified[i])
	}
	missing, redelivered := r.group.atLeastOnce(final)

	tot := r.rec.Totals()
	peak := make([]float64, validators)
	for i, b := range r.peakHWM {
		peak[i] = float64(b) / (1 << 20)
	}
	g := r.group
	summary := map[string]any{
		"load_sec": loadSecs, "faults": nm.counts, "twin": nm.twin,
		"records_arrived": arrived, "records_acknowledged": acked, "records_verified_per_node": verified, "committed_unacknowledged_per_node": r.unacked,
		"producer_blocked_sec_mean": blocked.Seconds() / partitions, "producer_retries": retries, "producer_node_switches": switches, "duplicate_answers": dups,
		"mean_acked_records_per_sec": float64(acked) / loadSecs, "p50_ms": tot.P50Ms, "p99_ms": tot.P99Ms,
		"consumer_deliveries": g.deliveries, "consumer_missing": missing, "consumer_redelivered_records": redelivered,
		"consumer_violations": g.violations, "consumer_stale_generation_deliveries": g.zombies,
		"consumer_commits_acknowledged": g.commitsN, "consumer_rebalances_seen": g.rebalances, "consumer_joins": g.rejoins,
		"consumer_churn_leaves": g.churns, "group_generation": g.maxGen,
		"agreement_height": agreed, "app_hash": appHash,
		"peak_rss_mib": peak, "largest_sampled_rss_mib": tot.PeakRSSMiB, "disk_mib": tot.LastDiskMiB,
		"problems": r.nProblem, "problem_list": r.problems,
	}
	rep := r.rec.Report(cfg.seed, cfg.rate, end, summary)
	pngPath, jsonPath, err := rep.Write(cfg.results)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("soak result: load %.0fs, seed %d, faults %v; %d records acknowledged (%.0f records/s mean, p50 %.0f ms, p99 %.0f ms), verified exactly once on nodes %v; retries %d, node switches %d, duplicate answers %d",
		loadSecs, cfg.seed, nm.counts, acked, float64(acked)/loadSecs, tot.P50Ms, tot.P99Ms, verified, retries, switches, dups)
	t.Logf("soak result: group: %d deliveries, %d acknowledged records never delivered, %d delivered more than once, %d violations, %d stale-generation deliveries; %d commits acknowledged, %d rebalances seen, %d joins, %d churn leaves, generation %d",
		g.deliveries, missing, redelivered, g.violations, g.zombies, g.commitsN, g.rebalances, g.rejoins, g.churns, g.maxGen)
	t.Logf("soak result: blocks 1..%d agree on all %d nodes (app hash %s); twin %v; peak RSS MiB %.0f; disk MiB %.0f",
		agreed, validators, appHash, nm.twin, peak, tot.LastDiskMiB)
	t.Logf("soak result: producers per kind of fault, from its start until every node caught up after it (throughput: records acknowledged in that time; latency: records handed over in it):\n%s", rep.FaultTable())
	for _, f := range rep.ByFault {
		if f.Kind == "pause" || f.Kind == "kill" || f.Kind == "partition" {
			met := f.Acked > 0 && f.P99Ratio <= 2 && f.ThroughputRatio >= 0.7
			t.Logf("soak result: one validator %s: p99 %.2f× and throughput %.0f%% of fault-free (target ≤ 2×, ≥ 70%%): met %v", f.Kind, f.P99Ratio, 100*f.ThroughputRatio, met)
		}
	}
	if len(r.restartDelays) > 0 {
		t.Logf("soak result: restart of every node: every producer acknowledged again within %v of the first new block (each restart; target ≤ %s): met %v",
			r.restartDelays, restartTarget, slices.Max(r.restartDelays) <= restartTarget)
	}
	t.Logf("soak result: %s, %s", pngPath, jsonPath)
	if r.nProblem > 0 {
		t.Errorf("%d problems, the first: %s", r.nProblem, strings.Join(r.problems, "\n"))
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// verifyLog reads the whole topic from node i and checks it against the acknowledgements:
// each partition holds exactly its producer's acknowledged records, each once, at the offset
// it was acknowledged at, with its key and value, without gaps. It returns how many it checked.
func (r *run) verifyLog(i int, ep *endpoint, final []uint64) uint64 {
	q := types.NewQueryClient(ep.conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	parts, err := q.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if err != nil {
		r.problem("node %d: partitions: %v", i, err)
		return 0
	}
	var checked uint64
	for _, part := range parts.Partitions {
		p := int(part.Partition)
		// A batch whose acknowledgement was given up on (the producers' end-of-run timeout)
		// may still have been committed: Kafka allows an unacknowledged record in the log, not
		// a missing acknowledged one nor any record twice.
		if part.HighWatermark < final[p] || part.LogStartOffset != 0 {
			r.problem("node %d: %s/%d holds offsets [%d, %d), %d records were acknowledged", i, topic, p, part.LogStartOffset, part.HighWatermark, final[p])
		}
		r.mu.Lock()
		r.unacked[i] += part.HighWatermark - min(part.HighWatermark, final[p])
		r.mu.Unlock()
		var base uint64
		for _, b := range r.prods[p].acked {
			if b.base != base {
				r.problem("%s/%d: a batch was acknowledged at offset %d, the previous one ended at %d", topic, p, b.base, base)
			}
			base = b.base + uint64(b.count)
		}
		seen := make([]bool, max(final[p], part.HighWatermark))
		for off := part.LogStartOffset; off < part.HighWatermark; {
			res, err := consumer.FetchRecords(ctx, q, &types.QueryFetchRequest{Topic: topic, Partition: part.Partition, Offset: off, MaxRecords: 10_000})
			if err != nil {
				r.problem("node %d: fetch %s/%d at %d: %v", i, topic, p, off, err)
				return checked
			}
			if len(res.Records) == 0 {
				r.problem("node %d: fetch %s/%d at %d returned nothing below the high watermark %d", i, topic, p, off, part.HighWatermark)
				break
			}
			for _, rec := range res.Records {
				if rec.Offset != off {
					r.problem("node %d: %s/%d: offset %d where %d was due (a gap)", i, topic, p, rec.Offset, off)
				}
				off = rec.Offset + 1
				if err := r.checkRecord(p, rec); err != nil {
					r.problem("node %d: %v", i, err)
					continue
				}
				_, n, _ := parseKey(rec.Key.GetData())
				switch {
				case n >= uint64(len(seen)) || (rec.Offset >= final[p] && n != rec.Offset):
					// Past the acknowledged ones, the log may hold only the producer's next
					// records, in order.
					r.problem("node %d: %s/%d offset %d holds record %d, which was never sent there", i, topic, p, rec.Offset, n)
				case seen[n]:
					r.problem("node %d: %s/%d: record %d appears twice (again at offset %d)", i, topic, p, n, rec.Offset)
				default:
					seen[n] = true
					if rec.Offset < final[p] {
						checked++
					}
				}
			}
		}
		for n, ok := range seen[:final[p]] {
			if !ok {
				r.problem("node %d: %s/%d: acknowledged record %d is missing", i, topic, p, n)
				break
			}
		}
	}
	return checked
}

// atLeastOnce counts the acknowledged records the group was never handed and those it was
// handed more than once (allowed: at-least-once across rebalances and reconnections).
func (g *groupLog) atLeastOnce(final []uint64) (missing, redelivered uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for p, n := range final {
		d := g.delivered[p]
		for o := uint64(0); o < n; o++ {
			switch {
			case o >= uint64(len(d)) || d[o] == 0:
				missing++
			case d[o] > 1:
				redelivered++
			}
		}
	}
	if missing > 0 {
		g.r.problem("%d acknowledged records were never delivered to the group", missing)
	}
	return missing, redelivered
}
