package app

import (
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app/ordering"
)

// slowPool answers as its pool does, after a pause: an expansion that takes a while, as a
// large one does on a loaded node.
type slowPool struct {
	poolOf
	pause time.Duration
}

func (p slowPool) Get(h [32]byte) ([]byte, bool) { time.Sleep(p.pause); return p.poolOf.Get(h) }

// TestAttackExplorerConcurrentBlocks: many clients ask at once for a block naming large
// produces. At most ordering.MaxExpanding answers are expanded at a time, the others go out
// unexpanded marked busy, so the memory the answers hold is bounded; without the bound every
// request would hold its copies at once. A request with named=false is never expanded.
func TestAttackExplorerConcurrentBlocks(t *testing.T) {
	const clients = 32
	f := newExplorerFixtureSized(t, 2<<20) // A and C held: 4 MiB shown per answer
	f.view.pool = slowPool{f.pool, 20 * time.Millisecond}
	path := strings.Replace(BlockByHeightPath, "{height}", "7", 1)

	run := func(slots int) (shown, busy int, peakHeap uint64, took time.Duration) {
		f.view.slots = make(chan struct{}, slots)
		f.view.peak.Store(0)
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		var peak atomic.Uint64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() { // the heap's peak, sampled
			defer close(sampled)
			var m runtime.MemStats
			for {
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > peak.Load() {
					peak.Store(m.HeapAlloc)
				}
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
			}
		}()
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec := f.serve(path)
				var answer struct {
					NamedTxs []ordering.NamedTx `json:"named_txs"`
					Status   string             `json:"named_txs_status"`
				}
				if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &answer) != nil {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if len(answer.NamedTxs) == 3 && answer.NamedTxs[0].Status == ordering.NamedShown {
					shown++
				}
				if answer.Status == ordering.NamedBusy {
					busy++
				}
			}()
		}
		wg.Wait()
		took = time.Since(start)
		close(stop)
		<-sampled
		if p := peak.Load(); p > base.HeapAlloc {
			peakHeap = p - base.HeapAlloc
		}
		return shown, busy, peakHeap, took
	}

	shown, busy, heap, took := run(ordering.MaxExpanding)
	peak := f.view.peak.Load()
	require.LessOrEqual(t, int(peak), ordering.MaxExpanding)
	require.Positive(t, shown)
	require.Positive(t, busy, "requests past the bound are answered unexpanded")
	require.Equal(t, clients, shown+busy)
	openShown, openBusy, openHeap, openTook := run(clients)
	openPeak := f.view.peak.Load()
	require.Zero(t, openBusy)
	t.Logf("%d concurrent blocks/7 naming 2×%d MiB held: bounded: peak %d expanding, %d shown, %d busy, heap peak +%d MiB, %v; "+
		"unbounded: peak %d expanding, %d shown, heap peak +%d MiB, %v",
		clients, len(f.produces[0])>>20, peak, shown, busy, heap>>20, took.Round(time.Millisecond),
		openPeak, openShown, openHeap>>20, openTook.Round(time.Millisecond))

	// named=false (what the topic console sends for the latest header): never expanded.
	f.view.slots = make(chan struct{}, ordering.MaxExpanding)
	f.view.peak.Store(0)
	var plain struct {
		Block struct {
			Data struct {
				Txs [][]byte `json:"txs"`
			} `json:"data"`
		} `json:"block"`
		NamedTxs []ordering.NamedTx `json:"named_txs"`
	}
	f.get(path+"?"+ordering.PlainParam+"=false", &plain)
	require.Equal(t, f.block(), plain.Block.Data.Txs)
	require.Empty(t, plain.NamedTxs)
	require.Zero(t, f.view.peak.Load())
}
