package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	cmtservice "github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// created is n records a producer created at one instant.
type created struct {
	at time.Time
	n  int
}

// accumulator is a Kafka producer's record accumulator reduced to what a load needs: the
// records created and not yet sent, oldest first.
type accumulator struct {
	mu      sync.Mutex
	queue   []created
	records int
	closed  bool
	wake    chan struct{}
}

func newAccumulator() *accumulator { return &accumulator{wake: make(chan struct{}, 1)} }

func (a *accumulator) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

func (a *accumulator) append(at time.Time, n int) (backlog int) {
	a.mu.Lock()
	a.queue = append(a.queue, created{at, n})
	a.records += n
	backlog = a.records
	a.mu.Unlock()
	a.signal()
	return backlog
}

func (a *accumulator) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.signal()
}

// next waits for a batch as Kafka's sender does — max records accumulated, or the oldest
// waiting linger, or the producer closing — and takes up to max records. ok is false once
// the accumulator is closed and empty, or stop is done.
func (a *accumulator) next(stop <-chan struct{}, max int, linger time.Duration) (batch []created, n int, ok bool) {
	for {
		a.mu.Lock()
		if a.records > 0 && (a.records >= max || a.closed || time.Since(a.queue[0].at) >= linger) {
			for n < max && len(a.queue) > 0 {
				c := a.queue[0]
				if take := min(c.n, max-n); take < c.n {
					a.queue[0].n -= take
					c.n = take
				} else {
					a.queue = a.queue[1:]
				}
				batch = append(batch, c)
				n += c.n
			}
			a.records -= n
			a.mu.Unlock()
			return batch, n, true
		}
		if a.closed {
			a.mu.Unlock()
			return nil, 0, false
		}
		wait := linger
		if a.records > 0 {
			wait = linger - time.Since(a.queue[0].at)
		}
		a.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-a.wake:
		case <-t.C:
		case <-stop:
			t.Stop()
			return nil, 0, false
		}
		t.Stop()
	}
}

// putBack returns a batch taken but not sent to the front of the queue.
func (a *accumulator) putBack(batch []created) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range batch {
		a.records += c.n
	}
	a.queue = append(append([]created(nil), batch...), a.queue...)
}

// left is what was never sent.
func (a *accumulator) left() []created {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]created(nil), a.queue...)
}

// backlogLimit is how far a producer may fall behind before a sweep's step counts as
// overloaded. Past it latency only grows; the sweep has its answer.
const backlogLimit = 2 * time.Second

// openLoad offers rate records/s in total from the signers for dur, as Kafka producers send:
// each producer creates its share of records at a constant rate whatever the chain does (an
// open loop); they accumulate and go out as one transaction when cfg.BatchRecords have
// accumulated or the oldest has waited cfg.Linger, with at most cfg.InFlight transactions in
// flight per producer. A record's latency runs from its creation to the block that commits
// it, so waiting for an in-flight slot or in a backlog counts.
//
// A step whose producer falls more than backlog behind (two seconds of its rate by default)
// is cut short as overloaded: past that latency only grows, the sweep has its answer.
func (c *chain) openLoad(cfg Config, signers []*txclient.Signer, build buildFunc, rate float64, dur, backlog time.Duration) (SweepPoint, error) {
	point := SweepPoint{OfferedPerSec: rate}
	rpc, err := rpchttp.New(c.n0.RPC, "/websocket")
	if err != nil {
		return point, err
	}
	start, err := c.n0.Height()
	if err != nil {
		return point, err
	}
	tr := newTracker()
	wctx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	defer func() { stopWatch(); <-watched }()
	go func() {
		defer close(watched)
		tr.watch(wctx, rpc, cmtservice.NewServiceClient(c.cctxs[0].GRPCClient), start+1)
	}()

	_, _, named0, carried0, scraped0 := c.proposed() // before the CPU window: scraping costs the validators some
	cpu := c.cpuTimes()
	per := rate / float64(len(signers))
	limit := int(per * backlog.Seconds())
	stop := make(chan struct{}) // closed on overload or a producer's error: senders stop
	var stopOnce sync.Once
	halt := func() { stopOnce.Do(func() { close(stop) }) }
	var (
		overloaded atomic.Bool
		firstErr   atomic.Value
		sent       atomic.Int64
		wg         sync.WaitGroup
		inflight   sync.WaitGroup
	)
	accs := make([]*accumulator, len(signers))
	began := time.Now()
	window := newRateWindow(tr, began, dur)
	// A transaction never seen in a block holds its slot for good: the step ends at its drain
	// deadline whatever happens.
	giveUp := time.AfterFunc(dur+drainWait(dur), halt)
	defer giveUp.Stop()
	for pi, s := range signers {
		acc := newAccumulator()
		accs[pi] = acc
		wg.Add(2)
		go func() { // the application: records at a constant rate
			defer wg.Done()
			defer acc.close()
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			end := time.NewTimer(dur)
			defer end.Stop()
			made := 0
			for {
				select {
				case <-end.C:
					return
				case <-stop:
					return
				case now := <-tick.C:
					due := int(per * now.Sub(began).Seconds())
					if due <= made {
						continue
					}
					// Stamped when the chunk's first record was due, not when this goroutine
					// woke: a creator delayed by a busy machine must not hide the delay.
					at := began.Add(time.Duration(float64(made+1) / per * float64(time.Second)))
					if acc.append(at, due-made) > limit {
						overloaded.Store(true)
						halt()
						return
					}
					made = due
				}
			}
		}()
		go func(pi int, s *txclient.Signer) { // the producer's sender
			defer wg.Done()
			slots := make(chan struct{}, cfg.InFlight)
			next := 0
			for {
				select {
				case slots <- struct{}{}:
				case <-stop:
					return
				}
				batch, n, ok := acc.next(stop, cfg.BatchRecords, cfg.Linger)
				if !ok {
					return
				}
				now := time.Now()
				msg, n, payload, err := build(s.Address(), pi, next, n, now)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					halt()
					return
				}
				var hash string
				for {
					// A full mempool is back-pressure: the same message is sent again.
					if hash, err = s.Submit(msg); err == nil || !errors.Is(err, sdkerrors.ErrMempoolIsFull) {
						break
					}
					select {
					case <-stop:
						acc.putBack(batch) // never sent: censored with what is left
						return
					case <-time.After(50 * time.Millisecond):
					}
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					halt()
					return
				}
				done := make(chan struct{})
				tr.submitted(hash, pending{records: n, payload: payload, enqueued: batch[0].at, created: batch, done: done})
				next += n
				sent.Add(int64(n))
				inflight.Add(1)
				go func() {
					defer inflight.Done()
					select {
					case <-done:
					case <-wctx.Done():
					}
					<-slots
				}()
			}
		}(pi, s)
	}
	wg.Wait()
	window.close()
	if e := firstErr.Load(); e != nil {
		return point, e.(error)
	}
	// Drain: what was sent commits, or the step gives up on it.
	deadline := time.Now().Add(drainWait(dur))
	for tr.committed.Load()+tr.failed.Load() < sent.Load() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	nodeCPU, _ := cpu()
	stopWatch()
	<-watched // no block is counted after the records still waiting are censored
	inflight.Wait()
	if tr.failed.Load() > 0 {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return point, &failedInBlocksError{records: tr.failed.Load(), first: tr.failure}
	}
	// Records never sent or never committed count at the moment the step gave up on them.
	gaveUp := time.Now()
	var unsent int64
	for _, acc := range accs {
		for _, c := range acc.left() {
			tr.lat.addN(gaveUp.Sub(c.at), c.n)
			unsent += int64(c.n)
		}
	}
	tr.mu.Lock()
	for _, p := range tr.byHash {
		for _, c := range p.created {
			tr.lat.addN(gaveUp.Sub(c.at), c.n)
		}
	}
	stuck := len(tr.byHash)
	tr.mu.Unlock()
	committed := tr.committed.Load()
	point.Records = int(committed)
	point.CommittedPerSec = window.rate()
	point.P50Ms, point.P99Ms = tr.lat.pct(50), tr.lat.pct(99)
	point.Overloaded = overloaded.Load() || unsent > 0 || stuck > 0
	if p := tr.payload.Load(); p > 0 {
		point.CPUSecondsPerGB = nodeCPU.Seconds() / (float64(p) / 1e9)
	}
	blocks := tr.blockStats()
	point.BlockIntervalMs = float64(blocks.interval().Microseconds()) / 1000
	point.LaterRoundBlocks, point.EmptyBlocks, point.AbsentPrecommits = blocks.laterRounds, blocks.empty, blocks.absent
	if _, _, named, carried, scraped := c.proposed(); scraped && scraped0 && named+carried > named0+carried0 {
		point.CarriedWholePct = 100 * (carried - carried0) / (named + carried - named0 - carried0)
	}
	return point, nil
}

// rateWindow measures what a step sustained once its pipeline filled: the records committed
// from a quarter into the step to its end (or to the moment it was cut short).
type rateWindow struct {
	mu       sync.Mutex
	tr       *tracker
	from, to int64
	fromAt   time.Time
	toAt     time.Time
	timers   [2]*time.Timer
}

func newRateWindow(tr *tracker, began time.Time, dur time.Duration) *rateWindow {
	w := &rateWindow{tr: tr, fromAt: began}
	w.timers[0] = time.AfterFunc(time.Until(began.Add(dur/4)), func() {
		w.mu.Lock()
		if w.toAt.IsZero() {
			w.from, w.fromAt = tr.committed.Load(), time.Now()
		}
		w.mu.Unlock()
	})
	w.timers[1] = time.AfterFunc(time.Until(began.Add(dur)), w.close)
	return w
}

// close ends the window now if it has not ended.
func (w *rateWindow) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.toAt.IsZero() {
		w.to, w.toAt = w.tr.committed.Load(), time.Now()
	}
}

func (w *rateWindow) rate() float64 {
	w.close()
	for _, t := range w.timers {
		t.Stop()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if secs := w.toAt.Sub(w.fromAt).Seconds(); secs > 0 {
		return float64(w.to-w.from) / secs
	}
	return 0
}

// drainWait is how long a step waits after its load for what was sent to commit.
func drainWait(dur time.Duration) time.Duration { return max(10*time.Second, dur) }
