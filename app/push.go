package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"cosmossdk.io/log"
	"github.com/cosmos/cosmos-sdk/client"
)

// PushPath takes transactions another node admitted from its clients: POST a body of frames, each
// a big-endian uint32 length and a transaction. Each goes to this node's mempool as if a client
// had sent it (CheckTx decides), so the endpoint needs no more trust than broadcast_tx.
//
// With ordering.by-digest on, a node sends each transaction its own clients gave it once to each
// of its ordering.peers, and the mempool does not gossip (mempool.broadcast = false): gossip
// delivers a batch once per peer that relays it, through 1 KB encrypted frames, and CometBFT 0.38
// formats every duplicate as hex for a debug line. A transaction that came by push is not sent
// on, so each validator receives each batch once. Blocks name the batches; a validator the push
// missed (paused, queue full) fetches what a proposal names before its vote (pool.go).
const PushPath = "/bftlog/pool"

const (
	// maxPushQueueBytes bounds what waits for one peer; past it a transaction is not pushed to
	// that peer (it fetches it if a proposal names it).
	maxPushQueueBytes = 64 << 20
	// maxPushRequestBytes is what one request carries, several transactions in one.
	maxPushRequestBytes = 8 << 20
	pushTimeout         = 5 * time.Second
)

// txPush sends admitted transactions to the peers, one queue and one sender per peer, so a paused
// peer delays only its own.
type txPush struct {
	logger log.Logger
	client *http.Client
	queues []*pushQueue

	mu sync.Mutex
	// incoming are the transactions a push handler is giving to CheckTx right now, by tailKey:
	// CheckTx does not send those on.
	incoming map[string]int
}

type pushQueue struct {
	peer string

	mu      sync.Mutex
	txs     [][]byte
	bytes   int
	dropped int
	wake    chan struct{}
}

func newTxPush(peers []string, logger log.Logger) *txPush {
	p := &txPush{
		logger:   logger,
		client:   &http.Client{Timeout: pushTimeout},
		incoming: map[string]int{},
	}
	for _, peer := range peers {
		q := &pushQueue{peer: strings.TrimSuffix(peer, "/"), wake: make(chan struct{}, 1)}
		p.queues = append(p.queues, q)
		go p.run(q)
	}
	return p
}

// admitted is called by CheckTx for a transaction it admitted; one a push brought is not sent on.
func (p *txPush) admitted(bz []byte) {
	if p == nil || len(p.queues) == 0 {
		return
	}
	p.mu.Lock()
	_, pushed := p.incoming[tailKey(bz)]
	p.mu.Unlock()
	if pushed {
		return
	}
	for _, q := range p.queues {
		q.add(bz)
	}
}

func (q *pushQueue) add(bz []byte) {
	q.mu.Lock()
	if q.bytes+len(bz) > maxPushQueueBytes {
		q.dropped++
		q.mu.Unlock()
		return
	}
	// CometBFT's mempool keeps the slice and never writes to it: no copy.
	q.txs = append(q.txs, bz)
	q.bytes += len(bz)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns what is queued, up to maxPushRequestBytes (at least one transaction).
func (q *pushQueue) take() ([][]byte, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, size := 0, 0
	for n < len(q.txs) && (n == 0 || size+len(q.txs[n]) <= maxPushRequestBytes) {
		size += len(q.txs[n])
		n++
	}
	out := q.txs[:n:n]
	q.txs = q.txs[n:]
	q.bytes -= size
	dropped := q.dropped
	q.dropped = 0
	return out, dropped
}

func (p *txPush) run(q *pushQueue) {
	var buf bytes.Buffer
	for range q.wake {
		for {
			txs, dropped := q.take()
			if dropped > 0 {
				p.logger.Info("pool: push queue full, a peer fetches these if a proposal names them", "peer", q.peer, "dropped", dropped)
			}
			if len(txs) == 0 {
				break
			}
			buf.Reset()
			var hdr [4]byte
			for _, tx := range txs {
				binary.BigEndian.PutUint32(hdr[:], uint32(len(tx)))
				buf.Write(hdr[:])
				buf.Write(tx)
			}
			if err := p.send(q.peer, buf.Bytes()); err != nil {
				p.logger.Debug("pool: push to a peer failed", "peer", q.peer, "txs", len(txs), "err", err)
			}
		}
	}
}

func (p *txPush) send(peer string, body []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), pushTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, peer+PushPath, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	res, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", peer, res.Status)
	}
	return nil
}

// handler serves PushPath: each transaction goes to the node's mempool through CometBFT (its
// cache turns away one already held, before CheckTx). It answers how many were admitted.
func (p *txPush) handler(clientCtx client.Context) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if clientCtx.Client == nil {
			http.Error(w, "this node's API server has no CometBFT client", http.StatusServiceUnavailable)
			return
		}
		body := bufio.NewReader(http.MaxBytesReader(w, r.Body, maxPushRequestBytes+maxRawTxBytes+4<<10))
		admitted, refused := 0, 0
		for {
			var hdr [4]byte
			if _, err := io.ReadFull(body, hdr[:]); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				http.Error(w, "want frames of a big-endian uint32 length and a transaction: "+err.Error(), http.StatusBadRequest)
				return
			}
			n := binary.BigEndian.Uint32(hdr[:])
			if n == 0 || n > maxRawTxBytes {
				http.Error(w, "a transaction of "+strconv.FormatUint(uint64(n), 10)+" bytes", http.StatusBadRequest)
				return
			}
			tx := make([]byte, n)
			if _, err := io.ReadFull(body, tx); err != nil {
				http.Error(w, "a truncated transaction: "+err.Error(), http.StatusBadRequest)
				return
			}
			if p.deliver(r.Context(), clientCtx.Client, tx) {
				admitted++
			} else {
				refused++
			}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = fmt.Fprintf(w, "admitted %d refused %d\n", admitted, refused)
	}
}

func (p *txPush) deliver(ctx context.Context, node client.CometRPC, tx []byte) bool {
	key := tailKey(tx)
	p.mu.Lock()
	p.incoming[key]++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		if p.incoming[key]--; p.incoming[key] <= 0 {
			delete(p.incoming, key)
		}
		p.mu.Unlock()
	}()
	// Sync: CheckTx has run when it returns, so the mark above is still there when it looks.
	res, err := node.BroadcastTxSync(ctx, tx)
	return err == nil && res.Code == 0
}
