package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"cosmossdk.io/log"
	"github.com/cometbft/cometbft/mempool"

	"github.com/cosmos/cosmos-sdk/client"
)

// PushPath takes transactions another node admitted from its clients: POST a body of frames, each
// a big-endian uint32 length and a transaction. Each goes to this node's mempool as if a client
// had sent it (CheckTx decides), so the endpoint needs no more trust than broadcast_tx. The answer
// is one byte per frame: '1' this node holds it (admitted now, or already in its mempool's
// cache), '0' refused.
//
// With ordering.by-digest on, a node sends each transaction its own clients gave it once to each
// of its ordering.peers, and the mempool does not gossip (mempool.broadcast = false): gossip
// delivers a batch once per peer that relays it, through 1 KB encrypted frames, and CometBFT 0.38
// formats every duplicate as hex for a debug line. A transaction that came by push is not sent
// on, so each validator receives each batch once. A proposer names a batch once more than two
// thirds of it and its peers hold it by their answers, or when the node that took it pushed it
// here (pool.go forProposal); a validator the push missed (paused, queue full) fetches what a
// proposal names before its vote.
const PushPath = "/bftlog/pool"

// HeldPath takes a peer's word that more than two thirds of the validators hold transactions it
// pushed: POST a body of SHA-256 hashes, 32 bytes each. The node that took a batch from its
// client learns that from its peers' answers, and tells them; a proposer other than that node
// then names the batch at once instead of carrying it until minNameAge has passed. Taken from
// ordering peers only: a false word costs what a bad proposal costs, a round (the others fetch
// what they lack before their vote, or vote against).
const HeldPath = "/bftlog/held"

// maxHeldRequestBytes bounds a HeldPath body.
const maxHeldRequestBytes = 32 << 15

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
	pool   *txPool // counts the peers' answers

	mu sync.Mutex
	// incoming are the transactions a push handler is giving to CheckTx right now, by tailKey:
	// CheckTx does not send those on.
	incoming map[string]int
	// mempoolQueue is what peers pushed, waiting for this node's mempool (toMempool).
	mempoolQueue []queuedTx
	mempoolBytes int
	mempoolNode  client.CometRPC
	mempoolWake  chan struct{}
	lastHeight   func() int64
	// mempoolTx stages a peer's transaction and gives what goes to the mempool in its place
	// (App.mempoolTx: a stub, or the transaction itself).
	mempoolTx func(bz []byte, fromPeer bool) (tx []byte, hash [32]byte, staged, created, full bool)
	// peerHosts are the hosts of the ordering peers. A push from any other address is taken as
	// a client's: sent on to the peers, and named only once they hold it. Otherwise a client
	// could give a batch to one validator alone and have its proposal name what no other holds.
	peerHosts map[string]bool
}

type queuedTx struct {
	tx   []byte
	size int
}

type pushQueue struct {
	peer string

	mu      sync.Mutex
	txs     [][]byte
	bytes   int
	dropped int
	held    [][32]byte // hashes more than two thirds hold, for HeldPath
	wake    chan struct{}
}

func newTxPush(peers []string, pool *txPool, logger log.Logger) *txPush {
	p := &txPush{
		logger:      logger,
		pool:        pool,
		client:      &http.Client{Timeout: pushTimeout},
		incoming:    map[string]int{},
		peerHosts:   map[string]bool{},
		mempoolWake: make(chan struct{}, 1),
		lastHeight:  func() int64 { return 0 },
		mempoolTx: func(bz []byte, _ bool) ([]byte, [32]byte, bool, bool, bool) {
			return bz, [32]byte{}, false, false, false
		},
	}
	for _, peer := range pool.peers {
		if u, err := url.Parse(peer); err == nil && u.Hostname() != "" {
			p.peerHosts[u.Hostname()] = true
		}
	}
	for _, peer := range peers {
		q := &pushQueue{peer: strings.TrimSuffix(peer, "/"), wake: make(chan struct{}, 1)}
		p.queues = append(p.queues, q)
		go p.run(q)
	}
	return p
}

// fromPeer tells CheckTx that a push handler is giving it bz: a peer pushed it.
func (p *txPush) fromPeer(bz []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.incoming) == 0 {
		return false
	}
	_, ok := p.incoming[tailKey(bz)]
	return ok
}

// admitted queues a transaction this node's own client gave it for every peer.
func (p *txPush) admitted(bz []byte) {
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

// tell queues word that more than two thirds hold hash.
func (q *pushQueue) tell(hash [32]byte) {
	q.mu.Lock()
	if len(q.held) < maxHeldRequestBytes/32 {
		q.held = append(q.held, hash)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// takeHeld returns the queued word of held hashes, as a HeldPath body.
func (q *pushQueue) takeHeld() []byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	body := make([]byte, 0, 32*len(q.held))
	for _, h := range q.held {
		body = append(body, h[:]...)
	}
	q.held = q.held[:0]
	return body
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
				// After the pushes, in the same order: a peer hears that a batch is held only
				// after this node sent it the batch.
				if held := q.takeHeld(); len(held) > 0 {
					if _, err := peerCall(context.Background(), p.client, q.peer+HeldPath, held, 0); err != nil {
						p.logger.Debug("pool: telling a peer what the others hold failed", "peer", q.peer, "err", err)
					}
					continue
				}
				break
			}
			buf.Reset()
			var hdr [4]byte
			for _, tx := range txs {
				binary.BigEndian.PutUint32(hdr[:], uint32(len(tx)))
				buf.Write(hdr[:])
				buf.Write(tx)
			}
			// The client's timeout (pushTimeout) bounds a paused peer.
			held, err := peerCall(context.Background(), p.client, q.peer+PushPath, buf.Bytes(), maxPushRequestBytes)
			if err != nil || len(held) != len(txs) {
				p.logger.Error("pool: push to a peer failed; a proposal carries these transactions whole unless enough other peers hold them",
					"peer", q.peer, "txs", len(txs), "err", err)
				continue
			}
			for i, tx := range txs {
				if held[i] != '1' {
					continue
				}
				if hash, quorum := p.pool.acked(tx); quorum {
					for _, other := range p.queues {
						other.tell(hash)
					}
				}
			}
		}
	}
}

// handler serves PushPath: each transaction goes to the node's mempool through CometBFT (its
// cache turns away one already held, before CheckTx).
func (p *txPush) handler(clientCtx client.Context) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if clientCtx.Client == nil {
			http.Error(w, "this node's API server has no CometBFT client", http.StatusServiceUnavailable)
			return
		}
		body := bufio.NewReader(http.MaxBytesReader(w, r.Body, maxPushRequestBytes+maxRawTxBytes+4<<10))
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fromPeer := p.peerHosts[host]
		var txs [][]byte
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
			txs = append(txs, tx)
		}
		held := make([]byte, len(txs))
		for i, tx := range txs {
			held[i] = '0'
			switch {
			case fromPeer:
				// A peer's push: held once in the pool, answered at once. Its mempool entry
				// follows (CheckTx waits while the node executes a block), in arrival order,
				// so that an account's sequence stays in order.
				held[i] = '1'
				if stub, _, staged, _, _ := p.mempoolTx(tx, true); staged {
					p.toMempool(clientCtx.Client, stub, len(tx))
					continue
				}
				p.pool.admit(tx, p.lastHeight(), true, nil, false)
				p.toMempool(clientCtx.Client, tx, len(tx))
			case p.pool.holds(tx):
				held[i] = '1' // already: its mempool entry may be a stub (stub.go), not these bytes
			case p.deliver(r.Context(), clientCtx.Client, tx, false):
				held[i] = '1'
			}
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(held)
	}
}

// heldHandler serves HeldPath.
func (p *txPush) heldHandler(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	if !p.peerHosts[host] {
		http.Error(w, "only ordering peers tell what the validators hold", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHeldRequestBytes))
	if err != nil || len(body)%32 != 0 {
		http.Error(w, "want SHA-256 hashes, 32 bytes each, at most "+strconv.Itoa(maxHeldRequestBytes/32), http.StatusBadRequest)
		return
	}
	for i := 0; i < len(body); i += 32 {
		p.pool.heldByQuorum([32]byte(body[i : i+32]))
	}
	w.WriteHeader(http.StatusOK)
}

// toMempool queues a peer's transaction for this node's mempool; past maxPushQueueBytes it is
// only in the pool (this node votes for and executes a block naming it, but does not propose it).
// A stub counts as the size of what it stands for.
func (p *txPush) toMempool(node client.CometRPC, tx []byte, size int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mempoolBytes+size > maxPushQueueBytes {
		return
	}
	p.mempoolBytes += size
	p.mempoolQueue = append(p.mempoolQueue, queuedTx{tx, size})
	if p.mempoolNode == nil {
		p.mempoolNode = node
		go p.runMempool()
	}
	select {
	case p.mempoolWake <- struct{}{}:
	default:
	}
}

func (p *txPush) runMempool() {
	for range p.mempoolWake {
		for {
			p.mu.Lock()
			if len(p.mempoolQueue) == 0 {
				p.mu.Unlock()
				break
			}
			q := p.mempoolQueue[0]
			p.mempoolQueue = p.mempoolQueue[1:]
			p.mempoolBytes -= q.size
			node := p.mempoolNode
			p.mu.Unlock()
			// A stub's CheckTx finds in the pool that a peer pushed it: no mark needed.
			_, _, isStub := parseStub(q.tx)
			p.deliver(context.Background(), node, q.tx, !isStub)
		}
	}
}

func (p *txPush) deliver(ctx context.Context, node client.CometRPC, tx []byte, fromPeer bool) bool {
	if fromPeer {
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
	}
	// Sync: CheckTx has run when it returns, so the mark above is still there when it looks.
	res, err := node.BroadcastTxSync(ctx, tx)
	if errors.Is(err, mempool.ErrTxInCache) {
		return true
	}
	return err == nil && res.Code == 0
}
