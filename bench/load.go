package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	cmtservice "github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// load drives `records` records from the signers as fast as inFlight transactions per signer
// allow (a closed loop), batchRecords per transaction built by build, and waits until all of
// them are committed or failed. Paced loads are open loops (openLoad).
func load(ctx context.Context, cfg Config, c *chain, signers []*txclient.Signer, build buildFunc,
	records, batchRecords, inFlight int) (*tracker, time.Duration, error) {
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
			for sent < perProducer && ctx.Err() == nil {
				n := min(batchRecords, perProducer-sent)
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
