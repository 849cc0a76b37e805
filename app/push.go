package app

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"cosmossdk.io/log"
	"github.com/cometbft/cometbft/mempool"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app/ordering"
)

// PushPath takes transactions another node admitted from its clients: POST a body of frames, each
// a big-endian uint32 length and a transaction (at least minPushFrameBytes, at most
// maxPushFrames in a request). The answer is one byte per frame: '1' this node holds it, '0'
// refused, signed by this node's validator key when it has one (dataplane_keys.go).
//
// A push signed by a validator of the chain is held at once and answered before CheckTx (which
// waits while the node executes a block), counted against that validator's own budget
// (maxPeerStagedBytes held, maxPushQueueBytes waiting for the mempool); what CheckTx then
// refuses is dropped and counted against its sender. An unsigned push is a client's: each
// transaction goes through CheckTx first, against the clients' budget, as broadcast_tx would,
// and is sent on to the peers. A push naming a validator whose signature fails is refused
// whole (403). Nothing here depends on where a request comes from.
//
// With ordering.by-digest on, a node sends each transaction its own clients gave it once to each
// of its ordering.peers, and the mempool does not gossip (mempool.broadcast = false): gossip
// delivers a batch once per peer that relays it, through 1 KB encrypted frames, and CometBFT 0.38
// formats every duplicate as hex for a debug line. A transaction that came by push is not sent
// on, so each validator receives each batch once. A proposer names a batch once more than two
// thirds of it and its peers hold it by their answers, or when the node that took it pushed it
// here (pool.go forProposal); a validator the push missed (paused, queue full) fetches what a
// proposal names before its vote.
const PushPath = ordering.PushPath

// HeldPath takes a peer's word that more than two thirds of the voting power hold transactions
// it pushed, with the receipts that show it (dataplane_receipts.go: encodeHeld). The node that
// took a batch from its client learns that from its peers' signed answers, and tells them; a
// proposer other than that node then names the batch at once instead of carrying it until
// minNameAge has passed. Taken only when signed by the validator whose push brought the batch
// here, and only for the hashes its receipts prove: a word alone proves nothing.
const HeldPath = ordering.HeldPath

// maxHeldRequestBytes bounds a HeldPath body: claims and receipts, each receipt with its
// request's frame hashes (up to 8,192 × 33 bytes); maxHeldClaims the hashes waiting for one.
// maxHeldReceipts bounds the receipts of one word, so that checking their signatures (about
// 50 µs each) costs a receiver at most ~50 ms per request, within the sender's own slots.
const (
	maxHeldRequestBytes = 4 << 20
	maxHeldClaims       = 1 << 15
	maxHeldReceipts     = 1024
)

const (
	// maxPushQueueBytes bounds what waits for one peer; past it a transaction is not pushed to
	// that peer (it fetches it if a proposal names it). It also bounds what one validator's
	// pushes may have waiting for this node's mempool.
	maxPushQueueBytes = 64 << 20
	// maxPushRequestBytes is what one request's body carries, frames' headers included, several
	// transactions in one; a transaction larger than that goes alone.
	maxPushRequestBytes = 8 << 20
	// maxPushBodyBytes is what the endpoint reads of a body: a full request, or one transaction
	// of the largest size the ingress takes.
	maxPushBodyBytes = 4 + maxRawTxBytes
	// minPushFrameBytes: no signed SDK transaction is smaller (a signature alone is 64 bytes);
	// a body of tiny frames would cost an allocation and a CheckTx per few bytes.
	minPushFrameBytes = 64
	// maxPushFrames bounds the transactions of one request.
	maxPushFrames = 8192
	pushTimeout   = 5 * time.Second
	// pushRetries and pushBackoff: a request that failed is sent again, after 100 ms, 200 ms, …
	// up to pushRetries times, before its transactions are given up for that peer (logged and
	// counted; the peer fetches what a proposal names).
	pushRetries = 5
	pushBackoff = 100 * time.Millisecond
)

// txPush sends admitted transactions to the peers, one queue and one sender per peer, so a paused
// peer delays only its own.
type txPush struct {
	logger log.Logger
	client *http.Client
	qmu    sync.Mutex
	queues []*pushQueue // one per peer (setPeers)
	pool   *txPool      // counts the peers' answers
	keys   *dataPlaneKeys
	byz    *byzantine // nil: a node that follows the protocol

	mu sync.Mutex
	// incoming are the transactions a validator's push is giving to CheckTx right now, by
	// tailKey (compared whole): CheckTx does not send those on, and knows their sender.
	incoming map[string][]queuedTx
	// mempoolQueue is what peers pushed, waiting for this node's mempool (toMempool), and
	// mempoolBytes what each sender has in it.
	mempoolQueue []queuedTx
	mempoolBytes map[string]int
	mempoolNode  client.CometRPC
	mempoolWake  chan struct{}
	lastHeight   func() int64
	// mempoolTx stages a transaction of this hash that a validator (sender) pushed and gives
	// what goes to the mempool in its place (App.stageTx: a stub, or the transaction itself).
	mempoolTx func(bz []byte, hash [32]byte, sender string) (tx []byte, staged, created, full bool)
}

type queuedTx struct {
	tx     []byte
	size   int
	sender string
}

// pushed is a transaction waiting for a peer, with its hash (a push's signature covers it).
type pushed struct {
	tx   []byte
	hash [32]byte
}

type pushQueue struct {
	peer string

	mu      sync.Mutex
	txs     []pushed
	bytes   int
	dropped int
	held    [][32]byte // hashes more than two thirds hold, for HeldPath
	wake    chan struct{}
	stop    chan struct{} // closed when the peer is no longer one
}

func newTxPush(peers []string, pool *txPool, logger log.Logger) *txPush {
	p := &txPush{
		logger:       logger,
		pool:         pool,
		keys:         pool.keys,
		client:       &http.Client{Timeout: pushTimeout},
		incoming:     map[string][]queuedTx{},
		mempoolBytes: map[string]int{},
		mempoolWake:  make(chan struct{}, 1),
		lastHeight:   func() int64 { return 0 },
		mempoolTx: func(bz []byte, _ [32]byte, _ string) ([]byte, bool, bool, bool) {
			return bz, false, false, false
		},
	}
	p.setPeers(peers)
	return p
}

// peerQueues are the queues of the current peers.
func (p *txPush) peerQueues() []*pushQueue {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return p.queues
}

// setPeers makes peers the nodes pushed to: a new one gets a queue and a sender, one that is
// no longer a peer has its sender stopped and what waited for it dropped (what a proposal
// names and it lacks, it fetches).
func (p *txPush) setPeers(peers []string) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	keep := map[string]*pushQueue{}
	for _, q := range p.queues {
		keep[q.peer] = q
	}
	var queues []*pushQueue
	for _, peer := range peers {
		peer = strings.TrimSuffix(peer, "/")
		q, ok := keep[peer]
		if !ok {
			q = &pushQueue{peer: peer, wake: make(chan struct{}, 1), stop: make(chan struct{})}
			go p.run(q)
		}
		delete(keep, peer)
		queues = append(queues, q)
	}
	for _, q := range keep {
		close(q.stop)
	}
	p.queues = queues
}

// fromPeer tells CheckTx which validator's push is giving it bz ("" if none).
func (p *txPush) fromPeer(bz []byte) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.incoming) == 0 {
		return ""
	}
	for _, in := range p.incoming[tailKey(bz)] {
		if bytes.Equal(in.tx, bz) {
			return in.sender
		}
	}
	return ""
}

// admitted queues a transaction this node's own client gave it for every peer.
func (p *txPush) admitted(bz []byte, hash [32]byte) {
	queues, claim := p.byz.pushTo(p.peerQueues())
	for _, q := range queues {
		q.add(pushed{bz, hash})
		if claim {
			q.tell(hash)
		}
	}
}

func (q *pushQueue) add(tx pushed) {
	q.mu.Lock()
	if q.bytes+len(tx.tx) > maxPushQueueBytes {
		q.dropped++
		q.mu.Unlock()
		return
	}
	// CometBFT's mempool keeps the slice and never writes to it: no copy.
	q.txs = append(q.txs, tx)
	q.bytes += len(tx.tx)
	q.mu.Unlock()
	q.signal()
}

func (q *pushQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// tell queues word that more than two thirds hold hash.
func (q *pushQueue) tell(hash [32]byte) {
	q.mu.Lock()
	if len(q.held) < maxHeldClaims {
		q.held = append(q.held, hash)
	}
	q.mu.Unlock()
	q.signal()
}

// heldBody takes the queued word of held hashes with the receipts that show it, as a HeldPath
// body of at most maxHeldRequestBytes; what does not fit waits for the next.
func (p *txPush) heldBody(q *pushQueue) []byte {
	q.mu.Lock()
	held := q.held
	q.held = nil
	q.mu.Unlock()
	if len(held) == 0 {
		return nil
	}
	var claims [][32]byte
	var receipts []*receipt
	size := 8
	included := map[*receipt]bool{}
	for n, h := range held {
		add := 32
		var more []*receipt
		for _, r := range p.pool.receiptsOf(h) {
			if !included[r] {
				more = append(more, r)
				add += r.heldSize()
			}
		}
		if len(claims) > 0 && (size+add > maxHeldRequestBytes || len(receipts)+len(more) > maxHeldReceipts) {
			q.mu.Lock()
			q.held = append(held[n:len(held):len(held)], q.held...)
			q.mu.Unlock()
			break
		}
		claims, size = append(claims, h), size+add
		for _, r := range more {
			included[r] = true
			receipts = append(receipts, r)
		}
	}
	return encodeHeld(claims, receipts)
}

// take returns what is queued for one request: a body of at most maxPushRequestBytes, frames'
// headers included, and maxPushFrames (at least one transaction).
func (q *pushQueue) take() ([]pushed, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n, size, body := 0, 0, 0
	for n < len(q.txs) && n < maxPushFrames && (n == 0 || body+4+len(q.txs[n].tx) <= maxPushRequestBytes) {
		size += len(q.txs[n].tx)
		body += 4 + len(q.txs[n].tx)
		n++
	}
	out := q.txs[:n:n]
	q.txs = q.txs[n:]
	q.bytes -= size
	dropped := q.dropped
	q.dropped = 0
	return out, dropped
}

// putBack returns a request's transactions to the front of the queue, to be sent again.
func (q *pushQueue) putBack(txs []pushed) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.txs = append(slices.Clip(txs), q.txs...)
	for _, tx := range txs {
		q.bytes += len(tx.tx)
	}
}

func (p *txPush) run(q *pushQueue) {
	var buf bytes.Buffer
	failures := 0
	for {
		select {
		case <-q.stop:
			return
		case <-q.wake:
		}
		for {
			select {
			case <-q.stop:
				return
			default:
			}
			txs, dropped := q.take()
			if dropped > 0 {
				p.logger.Info("pool: push queue full, a peer fetches these if a proposal names them", "peer", q.peer, "dropped", dropped)
			}
			if len(txs) == 0 {
				// After the pushes, in the same order: a peer hears that a batch is held only
				// after this node sent it the batch.
				if held := p.heldBody(q); len(held) > 0 {
					if _, _, _, _, err := p.call(q.peer, HeldPath, held, sha256.Sum256(held), 0); err != nil {
						p.logger.Debug("pool: telling a peer what the others hold failed", "peer", q.peer, "err", err)
					}
					continue
				}
				break
			}
			buf.Reset()
			var hdr [4]byte
			hashes := make([][32]byte, len(txs))
			for i, tx := range txs {
				binary.BigEndian.PutUint32(hdr[:], uint32(len(tx.tx)))
				buf.Write(hdr[:])
				buf.Write(tx.tx)
				hashes[i] = tx.hash
			}
			// The client's timeout (pushTimeout) bounds a paused peer.
			held, signer, power, header, err := p.call(q.peer, PushPath, buf.Bytes(), framesDigest(hashes), maxPushFrames)
			if err == nil && len(held) != len(txs) {
				err = fmt.Errorf("answered %d frames of %d", len(held), len(txs))
			}
			var refusal *refusedError
			if err != nil && !errors.As(err, &refusal) {
				if failures++; failures <= pushRetries {
					q.putBack(txs)
					time.Sleep(pushBackoff << (failures - 1))
					continue
				}
				p.logger.Error("pool: push to a peer failed; a proposal carries these transactions whole unless enough other validators hold them",
					"peer", q.peer, "txs", len(txs), "tries", failures, "err", err)
				failures = 0
				continue
			}
			failures = 0
			if power == 0 {
				continue // an answer no validator signed counts for no quorum
			}
			rc := receiptOf(header, hashes, held) // what the others are shown once it makes a quorum
			for i, tx := range txs {
				if held[i] == '1' && p.pool.acked(tx.hash, signer, power, rc) {
					for _, other := range p.peerQueues() {
						other.tell(tx.hash)
					}
				}
			}
		}
	}
}

// call POSTs a signed body to a peer's path and returns its answer, at most limit bytes, and
// the validator that signed the answer with its power (0 when none of the chain's did).
func (p *txPush) call(peer, path string, body []byte, digest [32]byte, limit int64) (answer []byte, signer string, power int64, header http.Header, err error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, peer+path, bytes.NewReader(body))
	if err != nil {
		return nil, "", 0, nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	p.keys.sign(req.Header, path, digest)
	res, err := p.client.Do(req)
	if err != nil {
		return nil, "", 0, nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		err := fmt.Errorf("%s%s: %s: %s", peer, path, res.Status, bytes.TrimSpace(msg))
		if res.StatusCode >= 400 && res.StatusCode < 500 {
			return nil, "", 0, nil, &refusedError{err} // the same request would be refused again
		}
		return nil, "", 0, nil, err
	}
	if answer, err = io.ReadAll(io.LimitReader(res.Body, limit)); err != nil {
		return nil, "", 0, nil, err
	}
	if signer, power, err = p.keys.verify(res.Header, path+answerPathSuffix, answerDigest(digest, answer)); err != nil {
		p.logger.Debug("pool: a peer's answer is not signed by a validator", "peer", peer, "err", err)
		return answer, "", 0, nil, nil
	}
	return answer, signer, power, res.Header, nil
}

// refusedError is a peer's refusal of a request (4xx), which sending it again cannot change.
type refusedError struct{ error }

func (e *refusedError) Unwrap() error { return e.error }

// readFrames reads a push body: frames of at least minPushFrameBytes, at most maxPushFrames.
func readFrames(r io.Reader) ([][]byte, error) {
	body := bufio.NewReader(r)
	var txs [][]byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(body, hdr[:]); errors.Is(err, io.EOF) {
			return txs, nil
		} else if err != nil {
			return nil, fmt.Errorf("want frames of a big-endian uint32 length and a transaction: %w", err)
		}
		if len(txs) == maxPushFrames {
			return nil, fmt.Errorf("more than %d transactions in one request", maxPushFrames)
		}
		n := binary.BigEndian.Uint32(hdr[:])
		if n < minPushFrameBytes || n > maxRawTxBytes {
			return nil, fmt.Errorf("a transaction of %d bytes (want %d to %d)", n, minPushFrameBytes, maxRawTxBytes)
		}
		// Past 64 KiB, grown as the bytes arrive, not allocated from the header's word: a
		// 4-byte header must not cost 32 MiB before the bytes come.
		var tx []byte
		var err error
		if n <= 64<<10 {
			tx = make([]byte, n)
			_, err = io.ReadFull(body, tx)
		} else if tx, err = io.ReadAll(io.LimitReader(body, int64(n))); err == nil && len(tx) < int(n) {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, fmt.Errorf("a truncated transaction: %w", err)
		}
		txs = append(txs, tx)
	}
}

// handler serves PushPath: a validator's signed push is held and queued for the mempool, a
// client's goes through CheckTx first (through CometBFT, whose cache turns away one already held).
func (p *txPush) handler(clientCtx client.Context) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if clientCtx.Client == nil {
			http.Error(w, "this node's API server has no CometBFT client", http.StatusServiceUnavailable)
			return
		}
		sender := ""
		if signed(r.Header) {
			// Who it claims to be, and when, are checked before the body is read.
			if err := p.keys.known(r.Header); err != nil {
				p.refused("client", "unknown signer", 1)
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
		}
		txs, err := readFrames(http.MaxBytesReader(w, r.Body, maxPushBodyBytes))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		hashes := make([][32]byte, len(txs))
		for i, tx := range txs {
			hashes[i] = sha256.Sum256(tx)
		}
		digest := framesDigest(hashes)
		if p.byz.withholds() {
			held := bytes.Repeat([]byte{'1'}, len(txs))
			p.keys.sign(w.Header(), PushPath+answerPathSuffix, answerDigest(digest, held))
			_, _ = w.Write(held)
			return
		}
		if signed(r.Header) {
			addr, _, err := p.keys.verify(r.Header, PushPath, digest)
			if err == nil {
				err = p.keys.firstUse(r.Header, digest)
			}
			if err != nil {
				p.refused("client", "bad signature or replay", len(txs))
				http.Error(w, err.Error(), http.StatusForbidden)
				return
			}
			sender = addr
		}
		held := make([]byte, len(txs))
		for i, tx := range txs {
			held[i] = '0'
			switch {
			case sender != "":
				// A validator's push: held once in the pool, answered at once. Its mempool
				// entry follows (CheckTx waits while the node executes a block), in arrival
				// order, so that an account's sequence stays in order.
				stub, staged, created, full := p.mempoolTx(tx, hashes[i], sender)
				switch {
				case full:
					p.refused(sender, "over budget", 1)
				case staged && !created:
					// Held already (another's push, a client's, or this request replayed to
					// another node): nothing to queue, nothing charged.
					held[i] = '1'
				case p.toMempool(clientCtx.Client, sender, stub, len(tx)):
					held[i] = '1'
				default:
					if created {
						p.pool.unstage(hashes[i])
					}
					p.refused(sender, "over budget", 1)
				}
			case r.Context().Err() != nil:
				// The client hung up: the rest of its body goes nowhere.
			case p.pool.holds(tx):
				held[i] = '1' // already: its mempool entry may be a stub (stub.go), not these bytes
			case p.deliver(r.Context(), clientCtx.Client, tx, ""):
				held[i] = '1'
			}
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		p.keys.sign(w.Header(), PushPath+answerPathSuffix, answerDigest(digest, held))
		_, _ = w.Write(held)
	}
}

// refused logs and counts what a sender's push cost it.
func (p *txPush) refused(sender, reason string, n int) {
	dataPlaneRefusals.WithLabelValues(sender, reason).Add(float64(n))
	p.logger.Debug("pool: refused a push", "sender", sender, "reason", reason, "txs", n)
}

// heldHandler serves HeldPath: word signed by the validator that pushed each batch here.
func (p *txPush) heldHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHeldRequestBytes))
	if err != nil {
		http.Error(w, "at most "+strconv.Itoa(maxHeldRequestBytes)+" bytes", http.StatusRequestEntityTooLarge)
		return
	}
	claims, receipts, err := decodeHeld(body)
	if err != nil {
		http.Error(w, "want claims and receipts (app/dataplane_receipts.go): "+err.Error(), http.StatusBadRequest)
		return
	}
	sender, power, err := p.keys.verify(r.Header, HeldPath, sha256.Sum256(body))
	if err != nil {
		p.refused("client", "unsigned word", 1)
		http.Error(w, "only a validator tells what the validators hold: "+err.Error(), http.StatusForbidden)
		return
	}
	proven, bad := p.keys.provenHeld(claims, receipts, sender, power)
	if bad > 0 {
		p.refused(sender, "bad receipt", bad)
	}
	if n := len(claims) - len(proven); n > 0 {
		p.refused(sender, "held without receipts", n)
	}
	for _, h := range proven {
		p.pool.heldByQuorum(h, sender)
	}
	dataPlaneHeldProven.WithLabelValues(sender).Add(float64(len(proven)))
	w.WriteHeader(http.StatusOK)
}

// toMempool queues a validator's transaction for this node's mempool, within that validator's
// maxPushQueueBytes; false past it. A stub counts as the size of what it stands for.
func (p *txPush) toMempool(node client.CometRPC, sender string, tx []byte, size int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mempoolBytes[sender]+size > maxPushQueueBytes {
		return false
	}
	p.mempoolBytes[sender] += size
	p.mempoolQueue = append(p.mempoolQueue, queuedTx{tx: tx, size: size, sender: sender})
	if p.mempoolNode == nil {
		p.mempoolNode = node
		go p.runMempool()
	}
	select {
	case p.mempoolWake <- struct{}{}:
	default:
	}
	return true
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
			if p.mempoolBytes[q.sender] -= q.size; p.mempoolBytes[q.sender] <= 0 {
				delete(p.mempoolBytes, q.sender)
			}
			node := p.mempoolNode
			p.mu.Unlock()
			// A stub's CheckTx finds in the pool that a peer pushed it, and counts a refusal
			// against its sender there (stub.go).
			hash, _, isStub := parseStub(q.tx)
			sender := q.sender
			if isStub {
				sender = ""
			}
			if !p.deliver(context.Background(), node, q.tx, sender) && !isStub {
				p.refused(q.sender, "refused by CheckTx", 1)
			}
			if isStub {
				// Its CheckTx never ran (the mempool was full, the node did not answer): the
				// copy and what it counts against its sender are let go.
				p.pool.unstage(hash)
			}
		}
	}
}

// deliver gives tx to the mempool through CometBFT; sender is the validator whose push brought
// it, for CheckTx (fromPeer), "" for a client's or a stub.
func (p *txPush) deliver(ctx context.Context, node client.CometRPC, tx []byte, sender string) bool {
	if sender != "" {
		key := tailKey(tx)
		p.mu.Lock()
		p.incoming[key] = append(p.incoming[key], queuedTx{tx: tx, sender: sender})
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			rest := slices.DeleteFunc(p.incoming[key], func(in queuedTx) bool { return unsafe.SliceData(in.tx) == unsafe.SliceData(tx) })
			if len(rest) == 0 {
				delete(p.incoming, key)
			} else {
				p.incoming[key] = rest
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
