package dataplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app/ordering"
)

// PushPath takes transactions another node admitted from its clients: POST a body of frames, each
// a big-endian uint32 length and a transaction (at least minPushFrameBytes, at most
// maxPushFrames in a request). The answer is one byte per frame: '1' this node holds it, '0'
// refused, signed by this node's validator key when it has one (keys.go).
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
// here (pool.go ForProposal); a validator the push missed (paused, queue full) fetches what a
// proposal names before its vote.
const PushPath = ordering.PushPath

// HeldPath takes a peer's word that more than two thirds of the voting power hold transactions
// it pushed, with the receipts that show it (receipts.go: encodeHeld). The node that
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
	maxPushBodyBytes = 4 + MaxTxBytes
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

// Pusher sends admitted transactions to the peers, one queue and one sender per peer, so a paused
// peer delays only its own.
type Pusher struct {
	logger log.Logger
	client *http.Client
	qmu    sync.Mutex
	queues []*pushQueue // one per peer (setPeers)
	pool   *Pool        // counts the peers' answers
	keys   *Keys
	host   Host   // stages what validators push, for the mempool (StageTx, ParseStub)
	faults Faults // nil: a node that follows the protocol

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

func newPusher(peers []string, pool *Pool, host Host, logger log.Logger) *Pusher {
	p := &Pusher{
		logger:       logger,
		pool:         pool,
		keys:         pool.keys,
		host:         host,
		client:       &http.Client{Timeout: pushTimeout},
		incoming:     map[string][]queuedTx{},
		mempoolBytes: map[string]int{},
		mempoolWake:  make(chan struct{}, 1),
	}
	p.setPeers(peers)
	return p
}

// peerQueues are the queues of the current peers.
func (p *Pusher) peerQueues() []*pushQueue {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	return p.queues
}

// setPeers makes peers the nodes pushed to: a new one gets a queue and a sender, one that is
// no longer a peer has its sender stopped and what waited for it dropped (what a proposal
// names and it lacks, it fetches).
func (p *Pusher) setPeers(peers []string) {
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

// admitted queues a transaction this node's own client gave it for every peer.
func (p *Pusher) admitted(bz []byte, hash [32]byte) {
	queues, claim := p.peerQueues(), false
	if p.faults != nil {
		var n int
		n, claim = p.faults.PushTo(len(queues))
		queues = queues[:n]
	}
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
func (p *Pusher) heldBody(q *pushQueue) []byte {
	q.mu.Lock()
	held := q.held
	q.held = nil
	q.mu.Unlock()
	if len(held) == 0 {
		return nil
	}
	var claims [][32]byte
	var receipts []*Receipt
	size := 8
	included := map[*Receipt]bool{}
	for n, h := range held {
		add := 32
		var more []*Receipt
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

func (p *Pusher) run(q *pushQueue) {
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
			held, signer, power, header, err := p.call(q.peer, PushPath, buf.Bytes(), FramesDigest(hashes), maxPushFrames)
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
func (p *Pusher) call(peer, path string, body []byte, digest [32]byte, limit int64) (answer []byte, signer string, power int64, header http.Header, err error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, peer+path, bytes.NewReader(body))
	if err != nil {
		return nil, "", 0, nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	p.keys.Sign(req.Header, path, digest)
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
