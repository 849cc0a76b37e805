package dataplane

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
	"unsafe"

	"github.com/cometbft/cometbft/mempool"

	"github.com/cosmos/cosmos-sdk/client"
)

// Receiving pushes (PushPath) and held-words (HeldPath): a validator's push held at once and
// queued for the mempool within its sender's budget, a client's through CheckTx first; what
// CheckTx refuses counted against its sender.

// fromPeer tells CheckTx which validator's push is giving it bz ("" if none).
func (p *Pusher) fromPeer(bz []byte) string {
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
		if n < minPushFrameBytes || n > MaxTxBytes {
			return nil, fmt.Errorf("a transaction of %d bytes (want %d to %d)", n, minPushFrameBytes, MaxTxBytes)
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
func (p *Pusher) handler(clientCtx client.Context) http.HandlerFunc {
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
		digest := FramesDigest(hashes)
		if withholds(p.faults) {
			held := bytes.Repeat([]byte{'1'}, len(txs))
			p.keys.Sign(w.Header(), PushPath+answerPathSuffix, answerDigest(digest, held))
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
				stub, staged, created, full := p.host.StageTx(tx, hashes[i], sender)
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
						p.pool.Unstage(hashes[i])
					}
					p.refused(sender, "over budget", 1)
				}
			case r.Context().Err() != nil:
				// The client hung up: the rest of its body goes nowhere.
			case p.pool.holds(tx):
				held[i] = '1' // already: its mempool entry may be a stub (app/stub.go), not these bytes
			case p.deliver(r.Context(), clientCtx.Client, tx, ""):
				held[i] = '1'
			}
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		p.keys.Sign(w.Header(), PushPath+answerPathSuffix, answerDigest(digest, held))
		_, _ = w.Write(held)
	}
}

// refused logs and counts what a sender's push cost it.
func (p *Pusher) refused(sender, reason string, n int) {
	refusals.WithLabelValues(sender, reason).Add(float64(n))
	p.logger.Debug("pool: refused a push", "sender", sender, "reason", reason, "txs", n)
}

// heldHandler serves HeldPath: word signed by the validator that pushed each batch here.
func (p *Pusher) heldHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHeldRequestBytes))
	if err != nil {
		http.Error(w, "at most "+strconv.Itoa(maxHeldRequestBytes)+" bytes", http.StatusRequestEntityTooLarge)
		return
	}
	claims, receipts, err := decodeHeld(body)
	if err != nil {
		http.Error(w, "want claims and receipts (app/dataplane/receipts.go): "+err.Error(), http.StatusBadRequest)
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
	heldProven.WithLabelValues(sender).Add(float64(len(proven)))
	w.WriteHeader(http.StatusOK)
}

// toMempool queues a validator's transaction for this node's mempool, within that validator's
// maxPushQueueBytes; false past it. A stub counts as the size of what it stands for.
func (p *Pusher) toMempool(node client.CometRPC, sender string, tx []byte, size int) bool {
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

func (p *Pusher) runMempool() {
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
			// against its sender there (app/stub.go).
			hash, isStub := p.host.ParseStub(q.tx)
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
				p.pool.Unstage(hash)
			}
		}
	}
}

// deliver gives tx to the mempool through CometBFT; sender is the validator whose push brought
// it, for CheckTx (fromPeer), "" for a client's or a stub.
func (p *Pusher) deliver(ctx context.Context, node client.CometRPC, tx []byte, sender string) bool {
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
