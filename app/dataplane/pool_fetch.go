package dataplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bftlog/bftlog/app/ordering"
)

// Fetching what this node lacks from its peers' data planes, and serving what it holds to them:
// content-addressed, so nothing here trusts who answers; the hash is checked.

// PoolPath serves this node's copy of a transaction by hash: GET /bftlog/pool/<hex sha256>.
// Content-addressed, so it needs no authentication: the receiver checks the hash.
const PoolPath = ordering.PoolPath

// Peers are the peers' data planes this node asks for what it lacks.
func (p *Pool) Peers() []string {
	if l := p.peers.Load(); l != nil {
		return *l
	}
	return nil
}

// setPeers replaces them: configured (ordering.peers) once, or the validators' endpoints on
// chain after each commit (Plane.SetValidators).
func (p *Pool) setPeers(peers []string) {
	l := slices.Clone(peers)
	p.peers.Store(&l)
}

// Named is a transaction a proposal or a block names and this node lacks: its SHA-256 and the
// size its reference gives, the most that is read of a peer's answer.
type Named struct {
	Hash [32]byte
	Size int64
}

// maxParallelFetches bounds the transactions fetched at once for one proposal or block.
const maxParallelFetches = 16

// fetchEach runs f(i) for each of these indices, at most maxParallelFetches at a time, and
// returns when all have.
func (p *Pool) fetchEach(indices []int, f func(i int)) {
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxParallelFetches)
	for _, i := range indices {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			f(i)
		}()
	}
	wg.Wait()
}

// FetchOnce asks the peers for each of named, all at once (at most maxParallelFetches), each
// in one attempt within ctx: what a proposal names, before this node votes. The answers are
// in named's order, nil for what no peer answered with bytes of its hash.
func (p *Pool) FetchOnce(ctx context.Context, named []Named) [][]byte {
	got := make([][]byte, len(named))
	p.fetchEach(indices(len(named)), func(i int) {
		if bz, ok := p.askPeers(ctx, txPath(named[i].Hash), named[i].Hash, named[i].Size); ok {
			got[i] = bz
		}
	})
	return got
}

// FetchAll fetches each of named, all at once (at most maxParallelFetches), each from any peer
// that answers with its hash, retried until it comes: what a finalized block names, which its
// execution cannot skip. The answers are in named's order; nil only once ctx is done.
func (p *Pool) FetchAll(ctx context.Context, named []Named) [][]byte {
	got := make([][]byte, len(named))
	p.fetchEach(indices(len(named)), func(i int) {
		got[i] = p.fetch(ctx, named[i].Hash, named[i].Size)
	})
	return got
}

func indices(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// txPath is where a peer serves the transaction of this hash.
func txPath(hash [32]byte) string { return PoolPath + strings.ToUpper(hex.EncodeToString(hash[:])) }

// fetch asks the peers for a transaction of at most size bytes, all at once, each attempt
// bounded by fetchAttemptTimeout (a paused peer accepts the connection and never answers),
// until one answers bytes with its hash. A block's execution cannot skip it: it waits, logging.
func (p *Pool) fetch(ctx context.Context, hash [32]byte, size int64) []byte {
	path := txPath(hash)
	for attempt := 0; ; attempt++ {
		if bz, ok := p.askPeers(ctx, path, hash, size); ok {
			return bz
		}
		if attempt%20 == 19 {
			p.logger.Error("pool: a block names a transaction this node does not hold and no peer answered it (ordering.peers in app.toml)",
				"hash", fmt.Sprintf("%X", hash), "peers", len(p.Peers()), "attempts", attempt+1)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// fetchAttemptTimeout, plus a second per MiB of the transaction asked for: a slow link still
// gets a large transaction through in one attempt.
const fetchAttemptTimeout = 5 * time.Second

// serveWriteTimeout bounds the answer to one PoolPath request (32 MiB at 4 MiB/s).
var serveWriteTimeout = 8 * time.Second

// askPeers reads at most size bytes of an answer (what the reference says the transaction is).
func (p *Pool) askPeers(ctx context.Context, path string, hash [32]byte, size int64) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(ctx, fetchAttemptTimeout+time.Duration(size>>20)*time.Second)
	defer cancel()
	peers := p.Peers()
	found := make(chan []byte, len(peers))
	for _, peer := range peers {
		go func() {
			bz, err := peerCall(ctx, p.client, strings.TrimSuffix(peer, "/")+path, nil, min(size, MaxTxBytes)+1)
			if err != nil || sha256.Sum256(bz) != hash {
				if ctx.Err() == nil || err == nil {
					fetchFailures.WithLabelValues(peer).Inc()
					p.logger.Debug("pool: a peer did not serve a named transaction", "peer", peer, "err", err)
				}
				bz = nil
			}
			found <- bz
		}()
	}
	for range peers {
		if bz := <-found; bz != nil {
			return bz, true
		}
	}
	return nil, false
}

// peerCall sends one request to a peer's API server (a GET without body, else a POST of body)
// and returns the body of a 200 answer, at most limit bytes.
func peerCall(ctx context.Context, cl *http.Client, url string, body []byte, limit int64) ([]byte, error) {
	method, reader := http.MethodGet, io.Reader(nil)
	if body != nil {
		method, reader = http.MethodPost, bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, reader)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	res, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, res.Status)
	}
	return io.ReadAll(io.LimitReader(res.Body, limit))
}

// serve answers PoolPath requests (Plane.TxHandler).
func (p *Pool) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := hex.DecodeString(strings.TrimPrefix(r.URL.Path, PoolPath))
	if err != nil || len(raw) != 32 {
		http.Error(w, "want "+PoolPath+"<the transaction's SHA-256 in hex>", http.StatusBadRequest)
		return
	}
	bz, ok := p.Get([32]byte(raw))
	if !ok || withholds(p.faults) {
		http.Error(w, "not held by this node", http.StatusNotFound)
		return
	}
	// A reader that never reads would pin the buffer and the connection: bounded in time.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(serveWriteTimeout))
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(bz)
}
