package dataplane

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"cosmossdk.io/log"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Pool holds this node's copies of the transactions it admitted, by SHA-256 (CometBFT's tx
// hash), so that a block can name a transaction instead of carrying it (app/ordering.go). It is
// node-local and never enters the app hash.
//
// Admitted copies live in memory, bounded in bytes, oldest dropped first. A transaction a
// proposal names is written to <home>/data/pool/<height> and synced before this node votes
// for the proposal (ProcessProposal), so every validator that voted for a block can execute
// it again after a crash, and serve it to a peer that lacks it; those files are deleted
// keepHeights heights later (pool_disk.go).
type Pool struct {
	dir         string                   // "" keeps nothing on disk (an in-memory test chain)
	peers       atomic.Pointer[[]string] // other nodes' data planes, asked for a transaction this node lacks (setPeers)
	keepHeights int64
	keepBytes   int64
	minAge      time.Duration // minNameAge
	clientBytes int           // what the pool holds before it stages no more clients' transactions
	client      *http.Client
	logger      log.Logger

	mu  sync.Mutex
	mem map[[32]byte]*poolTx
	// byTail indexes mem by tailKey, to find a copy from the bytes alone without hashing them.
	// It is an index, not an identity: a candidate counts only if its bytes are equal, and a
	// key holds at most maxTailCandidates, the first ones, so look-alikes (another
	// transaction's tail on other bytes) can neither displace the one they imitate nor make a
	// lookup long. What is not indexed is still held, found by its hash.
	byTail   map[string][][32]byte
	fifo     [][32]byte // admission order, for eviction (may name dropped entries)
	memBytes int
	decBytes int // the bytes of the entries that keep their decoding
	// ordered are the transactions blocks named, by hash; orderedTail says which tails they
	// have, so that CheckTx's recheck hashes only bytes that may be one of them (a hit is
	// decided by the hash, never by the tail: a look-alike of a named transaction is not it).
	ordered     map[[32]byte]int64
	orderedTail map[string]int64
	orderedAt   map[int64][]orderedKeys // by height, to forget them without a scan
	// peerStaged is what each validator's pushes hold here that CheckTx has not judged yet
	// (push.go): a sender's own budget, so that one cannot crowd out the others or the clients.
	peerStaged      map[string]int
	peerStagedTotal int
	// fetchedBytes are the copies fetched for proposals (Keep), not the clients' either.
	fetchedBytes int
	keys         *Keys  // voting powers, for the quorum of answers
	faults       Faults // nil: a node that follows the protocol
	// disk indexes the height files: where each written transaction is.
	disk      map[[32]byte]diskTx
	byHeight  map[int64][][32]byte
	diskBytes map[int64]int64 // what each height file holds
	onDisk    int64
}

type poolTx struct {
	bz []byte
	// seenAt is the last committed height when it was admitted, and at the node's clock: a
	// proposer names a transaction a peer pushed here only once it was admitted before the last
	// commit or minNameAge ago, which gave the push time to reach the other validators (one
	// that lacks it fetches it or votes against the proposal). Only the proposer's choice
	// depends on them, never a vote.
	seenAt   int64
	admitted time.Time
	// fromPeer: a validator pushed it here, sending it to every validator (push.go); sender
	// is that validator's consensus address, and budget what it counts against the sender's
	// share until CheckTx judges it. ackedBy are the validators whose signed answers said they
	// hold it, after this node pushed it to them, and ackPower their voting power.
	fromPeer bool
	fetched  bool // fetched for a proposal (Keep)
	sender   string
	budget   int
	ackedBy  []string
	ackPower int64
	receipts []*Receipt // the signed answers behind ackedBy, shown to the others (HeldPath)
	// quorum: the peer that pushed it said more than two thirds of this node's peers and
	// itself answered that they hold it (push.go HeldPath).
	quorum bool
	// staged: taken with its stub on the way to CheckTx, which has not run yet (app/stub.go).
	staged bool
	// sigsVerified: this node's CheckTx admitted these bytes, signatures verified (app/verified.go).
	sigsVerified bool
	// decoded is what CheckTx decoded, reused by ProcessProposal and FinalizeBlock when a
	// block names the transaction (app/decode_cache.go): each validator decodes each batch once.
	decoded sdk.Tx
}

// maxDecodedBytes bounds the transactions whose decoding the pool keeps (a decoded batch holds
// copies of its bytes): the mempool's max_txs_bytes. Past it a block's execution decodes again.
const maxDecodedBytes = 128 << 20

// minNameAge: the node that took a transaction pushes it to every peer at once, and a peer
// holds it on arrival, so the others hold it milliseconds after this node does; one that lacks
// it fetches it before its vote, holding its ABCI lock meanwhile. At 150 ms about a sixth of
// the batches at N=4 travel whole; at 25 ms none did, but validators fetched before their
// votes and the same run measured 0.76x the records/s and 1.21x the CPU per GB (bench,
// 2026-12-03, bench-20261203T133050Z.json).
const minNameAge = 150 * time.Millisecond

type orderedKeys struct {
	hash [32]byte
	tail string
}

// orderedWindow is how long a named transaction is remembered as ordered: long enough for the
// mempools' recheck to drop it and for gossip still carrying it to die out; after that, its
// sequence refuses it anyway.
const orderedWindow = 100

// maxPoolMemBytes bounds the admitted copies in memory: twice the mempool's default
// max_txs_bytes (128 MiB), so a transaction the mempool still holds is rarely dropped here.
const maxPoolMemBytes = 256 << 20

// MinRefBytes: smaller transactions travel in the block; a reference costs ~130 bytes.
const MinRefBytes = 1024

// MaxTxBytes bounds a transaction on the data plane (a pushed frame, what a fetch reads): the
// ingress's bound on a request body (app/ingress.go); mempool.max_tx_bytes is the real limit.
const MaxTxBytes = 32 << 20

// maxTailCandidates bounds the copies byTail indexes under one tail.
const maxTailCandidates = 4

// maxPeerStagedBytes is each validator's budget of pushed transactions held here before
// CheckTx judges them: what one push queue holds.
const maxPeerStagedBytes = maxPushQueueBytes

func newPool(dir string, peers []string, keepHeights, keepBytes int64, logger log.Logger) (*Pool, error) {
	p := &Pool{
		dir: dir, keepHeights: max(keepHeights, 2), keepBytes: keepBytes, minAge: minNameAge, logger: logger,
		clientBytes: maxPoolMemBytes / 2,
		client:      &http.Client{Timeout: 30 * time.Second},
		mem:         map[[32]byte]*poolTx{},
		byTail:      map[string][][32]byte{},
		peerStaged:  map[string]int{},
		keys:        NewKeys(),
		ordered:     map[[32]byte]int64{},
		orderedTail: map[string]int64{},
		orderedAt:   map[int64][]orderedKeys{},
		disk:        map[[32]byte]diskTx{},
		byHeight:    map[int64][][32]byte{},
		diskBytes:   map[int64]int64{},
	}
	p.setPeers(peers)
	if dir == "" {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return p, p.loadIndex()
}

// admit keeps a transaction CheckTx accepted, and its decoding; sender is the validator whose
// push brought it ("" for a client's). It keeps CometBFT's slice, not a copy: the mempool never writes into it, and
// holding it keeps that memory from being reused for other bytes.
// It returns bz's hash, or false when bz is too small or too large to be held.
func (p *Pool) admit(bz []byte, lastHeight int64, sender string, decoded sdk.Tx, checked bool) ([32]byte, bool) {
	if len(bz) < MinRefBytes || len(bz) > maxPoolMemBytes/4 {
		return [32]byte{}, false
	}
	p.mu.Lock()
	if h, ok := p.heldByTail(bz); ok {
		// A peer's push put it here (push.go), unhashed again; CheckTx has decoded it since.
		p.keepDecodedLocked(p.mem[h], decoded)
		p.mem[h].sigsVerified = p.mem[h].sigsVerified || checked
		p.mu.Unlock()
		return h, true
	}
	p.mu.Unlock()
	hash := sha256.Sum256(bz)
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.mem[hash]; ok {
		p.keepDecodedLocked(e, decoded)
		e.sigsVerified = e.sigsVerified || checked
		return hash, true
	}
	if _, ok := p.ordered[hash]; ok {
		return hash, true
	}
	e := &poolTx{bz: bz, seenAt: lastHeight, admitted: time.Now(), fromPeer: sender != "", sender: sender, sigsVerified: checked}
	p.keepDecodedLocked(e, decoded)
	p.addLocked(hash, e)
	return hash, true
}

// addLocked holds a new entry, dropping the oldest past maxPoolMemBytes.
func (p *Pool) addLocked(hash [32]byte, e *poolTx) {
	p.mem[hash] = e
	if k := tailKey(e.bz); len(p.byTail[k]) < maxTailCandidates {
		p.byTail[k] = append(p.byTail[k], hash)
	}
	p.fifo = append(p.fifo, hash)
	p.memBytes += len(e.bz)
	for p.memBytes > maxPoolMemBytes && len(p.fifo) > 0 {
		p.forgetLocked(p.fifo[0])
		p.fifo = p.fifo[1:]
	}
}

func (p *Pool) keepDecodedLocked(e *poolTx, decoded sdk.Tx) {
	if e.decoded == nil && decoded != nil && p.decBytes+len(e.bz) <= maxDecodedBytes {
		e.decoded = decoded
		p.decBytes += len(e.bz)
	}
}

// Stage holds a transaction whose stub goes to the mempool in its place (app/stub.go): one this
// node's client gave it (the ingress), or a peer pushed. A client's is refused (false) while
// the pool holds clientBytes or more, as CometBFT's mempool refuses past max_txs_bytes;
// a peer's push is not, its sender bounds it. One held already is not staged again: its
// stub's CheckTx answers for it.
// created says this call staged it (the caller may unstage it then, and only then).
// sender is the validator whose push brought it ("" for a client's): a push is refused while
// that validator's pushes not yet judged by CheckTx hold maxPeerStagedBytes here.
func (p *Pool) Stage(bz []byte, hash [32]byte, lastHeight int64, sender string) (ok, created bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.mem[hash]; ok {
		return true, false
	}
	if _, ok := p.ordered[hash]; ok {
		return true, false
	}
	fromPeer := sender != ""
	if !fromPeer && p.memBytes-p.peerStagedTotal-p.fetchedBytes+len(bz) > p.clientBytes {
		return false, false // what validators pushed or proposals named is not the clients' share
	}
	if fromPeer && p.peerStaged[sender]+len(bz) > maxPeerStagedBytes {
		return false, false
	}
	e := &poolTx{bz: bz, seenAt: lastHeight, admitted: time.Now(), fromPeer: fromPeer, staged: true}
	if fromPeer {
		e.sender, e.budget = sender, len(bz)
		p.peerStaged[sender] += len(bz)
		p.peerStagedTotal += len(bz)
	}
	p.addLocked(hash, e)
	return true, true
}

// releaseLocked gives back what e counted against its sender's budget.
func (p *Pool) releaseLocked(e *poolTx) {
	if e.budget == 0 {
		return
	}
	if p.peerStaged[e.sender] -= e.budget; p.peerStaged[e.sender] <= 0 {
		delete(p.peerStaged, e.sender)
	}
	p.peerStagedTotal -= e.budget
	e.budget = 0
}

// Stubbed is what CheckTx needs for a stub of hash: the held bytes and decoding, whether a
// peer pushed it, whether its stub was awaited (taken now when claim: a second stub of the
// same transaction finds it taken), whether this node's CheckTx admitted it already, and
// whether a block named it.
func (p *Pool) Stubbed(hash [32]byte, claim bool) (bz []byte, decoded sdk.Tx, fromPeer, staged, admitted, ordered bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ordered = p.ordered[hash]; ordered {
		return nil, nil, false, false, false, true
	}
	e, ok := p.mem[hash]
	if !ok {
		return nil, nil, false, false, false, false
	}
	staged = e.staged
	if claim {
		e.staged = false
	}
	return e.bz, e.decoded, e.fromPeer, staged, e.sigsVerified, false
}

// Checked records CheckTx's verdict on a staged transaction: admitted (kept with its decoding,
// its signatures verified) or forgotten, a peer's push too: what CheckTx refuses is held for
// nobody (a proposal naming it is fetched, as for anything this node lacks). It returns the
// validator whose push brought it, "" for a client's.
func (p *Pool) Checked(hash [32]byte, admitted bool, decoded sdk.Tx) (sender string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, held := p.mem[hash]
	if !held {
		return ""
	}
	sender = e.sender
	p.releaseLocked(e)
	switch {
	case admitted:
		p.keepDecodedLocked(e, decoded)
		e.sigsVerified = true
	default:
		if _, ordered := p.ordered[hash]; !ordered {
			p.forgetLocked(hash)
		}
	}
	return sender
}

// Unstage forgets a staged transaction whose stub never reached CheckTx (CometBFT's cache
// turned it away, or the node did not answer).
func (p *Pool) Unstage(hash [32]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.mem[hash]; ok && e.staged {
		p.forgetLocked(hash)
	}
}

// forgetLocked drops a copy from memory.
func (p *Pool) forgetLocked(hash [32]byte) {
	e, ok := p.mem[hash]
	if !ok {
		return
	}
	p.memBytes -= len(e.bz)
	if e.fetched {
		p.fetchedBytes -= len(e.bz)
	}
	p.dropDecodedLocked(e)
	p.releaseLocked(e)
	delete(p.mem, hash)
	k := tailKey(e.bz)
	if rest := slices.DeleteFunc(p.byTail[k], func(h [32]byte) bool { return h == hash }); len(rest) > 0 {
		p.byTail[k] = rest
	} else {
		delete(p.byTail, k)
	}
}

func (p *Pool) dropDecodedLocked(e *poolTx) {
	if e.decoded != nil {
		e.decoded = nil
		p.decBytes -= len(e.bz)
	}
}

// HashOf is bz's SHA-256: found by its signature bytes when the pool holds bz (compared, not
// hashed), computed otherwise.
func (p *Pool) HashOf(bz []byte) [32]byte {
	if len(bz) >= MinRefBytes {
		p.mu.Lock()
		hash, ok := p.heldByTail(bz)
		p.mu.Unlock()
		if ok {
			return hash
		}
	}
	return sha256.Sum256(bz)
}

// SigsVerified tells whether this node's CheckTx admitted exactly bz (app/verified.go).
func (p *Pool) SigsVerified(bz []byte) bool {
	_, verified := p.heldBytes(bz)
	return verified
}

// holds tells whether the pool holds bz in memory, without hashing it.
func (p *Pool) holds(bz []byte) bool {
	held, _ := p.heldBytes(bz)
	return held
}

func (p *Pool) heldBytes(bz []byte) (held, sigsVerified bool) {
	if len(bz) < MinRefBytes {
		return false, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.heldByTail(bz)
	return ok, ok && p.mem[h].sigsVerified
}

// DecodedOf is CheckTx's decoding of bz, if the pool kept it: found by its signature bytes.
func (p *Pool) DecodedOf(bz []byte) sdk.Tx {
	if len(bz) < MinRefBytes {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if hash, ok := p.heldByTail(bz); ok {
		return p.mem[hash].decoded
	}
	return nil
}

// heldByTail is the hash of a copy of bz in memory, found without hashing bz: a candidate
// under bz's tail whose bytes are bz's. A miss is only slower for the caller, never wrong.
func (p *Pool) heldByTail(bz []byte) ([32]byte, bool) {
	for _, h := range p.byTail[tailKey(bz)] {
		if e, ok := p.mem[h]; ok && bytes.Equal(e.bz, bz) {
			return h, true
		}
	}
	return [32]byte{}, false
}

// DropCarried forgets the copies of transactions a block carried whole: executed, they are
// never named, and a node whose proposals carry everything (by-digest off) would otherwise
// hold them until orderedWindow passed.
func (p *Pool) DropCarried(txs [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, bz := range txs {
		if len(bz) < MinRefBytes {
			continue
		}
		if h, ok := p.heldByTail(bz); ok {
			if _, ordered := p.ordered[h]; !ordered {
				p.forgetLocked(h)
			}
		}
	}
}

// acked counts a validator's signed answer that it holds hash, after this node pushed it there
// (each validator once, with its voting power); quorum says that this answer is the one that
// makes this node and the validators that answered more than two thirds of the voting power.
func (p *Pool) acked(hash [32]byte, validator string, power int64, rc *Receipt) (quorum bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.mem[hash]
	if !ok || power <= 0 || validator == p.keys.SelfAddress() || slices.Contains(e.ackedBy, validator) {
		return false // this node's own answer (its URL among its peers) counts once, as its own
	}
	was := p.quorumLocked(e.ackPower)
	e.ackedBy = append(e.ackedBy, validator)
	e.ackPower += power
	if rc != nil {
		e.receipts = append(e.receipts, rc)
	}
	return p.quorumLocked(e.ackPower) && !was
}

// receiptsOf are the receipts behind hash's acknowledgements.
func (p *Pool) receiptsOf(hash [32]byte) []*Receipt {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.mem[hash]; ok {
		return slices.Clone(e.receipts)
	}
	return nil
}

// quorumLocked: this node's voting power and acked, other validators', are more than two
// thirds of the validator set's. A node with no peers is a single validator's chain (or a
// node whose blocks name what it alone holds, which the others vote against): it holds enough.
func (p *Pool) quorumLocked(acked int64) bool {
	if len(p.Peers()) == 0 {
		return true
	}
	own, total := p.keys.powers()
	return total > 0 && 3*(own+acked) > 2*total
}

// heldByQuorum records a validator's word that more than two thirds of the voting power hold
// what it pushed here (push.go HeldPath): taken only from the validator that pushed it.
func (p *Pool) heldByQuorum(hash [32]byte, sender string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.mem[hash]; ok && e.fromPeer && e.sender == sender {
		e.quorum = true
	}
}

// ForProposal is a transaction's hash and the pool's copy if a proposal at height may name it
// instead of carrying it: held in memory, and either held by more than two thirds of this node
// and its peers by their own answers (push.go), or pushed here by the node that took it, which
// sent it to every peer, and admitted before the last commit or minNameAge ago. Otherwise (no
// push configured, peers unreachable) it is carried whole, as without ordering by digest: a
// validator that cannot fetch what a proposal names votes against it.
// It is found by its signature bytes, so the proposer does not hash every transaction again.
func (p *Pool) ForProposal(bz []byte, height int64) ([32]byte, []byte, bool) {
	if len(bz) < MinRefBytes {
		return [32]byte{}, nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	hash, ok := p.heldByTail(bz)
	if !ok {
		return hash, nil, false
	}
	e := p.mem[hash]
	switch {
	case p.quorumLocked(e.ackPower), e.quorum:
	case e.fromPeer && (e.seenAt < height-1 || time.Since(e.admitted) >= p.minAge):
	default:
		return hash, nil, false
	}
	return hash, e.bz, true
}

// OrderedBytes tells CheckTx's recheck that a block named these bytes: hashed only when a
// named transaction has their tail, and decided by the hash (a look-alike of a named
// transaction, with its signatures on other bytes, is not refused as ordered).
func (p *Pool) OrderedBytes(bz []byte) bool {
	if len(bz) < MinRefBytes {
		return false
	}
	p.mu.Lock()
	_, maybe := p.orderedTail[tailKey(bz)]
	p.mu.Unlock()
	if !maybe {
		return false
	}
	hash := sha256.Sum256(bz)
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.ordered[hash]
	return ok
}

// tailKey is what byTail indexes a transaction under: its length and last tailBytes bytes
// (its signatures).
func tailKey(bz []byte) string { return strconv.Itoa(len(bz)) + string(tailOf(bz)) }

// tailBytes is how much of a transaction's end tailKey takes.
const tailBytes = 64

func tailOf(bz []byte) []byte { return bz[max(0, len(bz)-tailBytes):] }

// Get returns a held transaction: from memory, else from the height files.
func (p *Pool) Get(hash [32]byte) ([]byte, bool) {
	p.mu.Lock()
	e, ok := p.mem[hash]
	d, onDisk := p.disk[hash]
	p.mu.Unlock()
	if ok {
		return e.bz, true
	}
	if !onDisk {
		return nil, false
	}
	bz, err := p.readDisk(d)
	if err != nil || sha256.Sum256(bz) != hash {
		p.logger.Error("pool: a written transaction cannot be read back", "hash", fmt.Sprintf("%X", hash), "err", err)
		return nil, false
	}
	return bz, true
}

// MarkOrdered records that a finalized block at height named these transactions.
func (p *Pool) MarkOrdered(height int64, txs map[[32]byte][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for h, bz := range txs {
		if e, ok := p.mem[h]; ok {
			p.dropDecodedLocked(e) // executed
		}
		k := orderedKeys{hash: h, tail: tailKey(bz)}
		p.ordered[h] = height
		p.orderedTail[k.tail] = height
		p.orderedAt[height] = append(p.orderedAt[height], k)
	}
}

// Committed forgets what is older than the kept windows: ordered copies leave memory a few
// heights after their block (they are on disk), height files after keepHeights heights or
// when they hold more than keepBytes, oldest first; an admitted copy no block named within
// orderedWindow heights is dropped (recheck normally drops it first: drop).
func (p *Pool) Committed(height int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for h, e := range p.mem {
		at, ordered := p.ordered[h]
		switch {
		case ordered && at < height-2 && p.dir != "",
			!ordered && e.seenAt < height-orderedWindow:
			p.forgetLocked(h)
		}
	}
	if len(p.fifo) > 2*len(p.mem)+1024 { // forgotten entries' hashes, dropped now and then
		live := make([][32]byte, 0, len(p.mem))
		for _, h := range p.fifo {
			if _, ok := p.mem[h]; ok {
				live = append(live, h)
			}
		}
		p.fifo = live
	}
	for at, keys := range p.orderedAt {
		if at >= height-orderedWindow {
			continue
		}
		for _, k := range keys {
			if p.ordered[k.hash] == at {
				delete(p.ordered, k.hash)
				p.forgetLocked(k.hash) // without height files memory was their only copy
			}
			if p.orderedTail[k.tail] == at {
				delete(p.orderedTail, k.tail)
			}
		}
		delete(p.orderedAt, at)
	}
	heights := make([]int64, 0, len(p.byHeight))
	for h := range p.diskBytes {
		heights = append(heights, h)
	}
	slices.Sort(heights)
	for _, h := range heights {
		if h >= height-p.keepHeights && (p.keepBytes <= 0 || p.onDisk <= p.keepBytes) {
			break
		}
		for _, x := range p.byHeight[h] {
			if p.disk[x].height == h {
				delete(p.disk, x)
			}
		}
		delete(p.byHeight, h)
		p.onDisk -= p.diskBytes[h]
		delete(p.diskBytes, h)
		if err := os.Remove(filepath.Join(p.dir, strconv.FormatInt(h, 10))); err != nil && !errors.Is(err, os.ErrNotExist) {
			p.logger.Error("pool: removing an old height file", "height", h, "err", err)
		}
	}
}

// Drop forgets an admitted copy the mempool let go (its recheck failed).
func (p *Pool) Drop(bz []byte) {
	if len(bz) < MinRefBytes {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if hash, ok := p.heldByTail(bz); ok {
		if _, ordered := p.ordered[hash]; !ordered {
			p.forgetLocked(hash)
		}
	}
}

// Keep holds a transaction fetched for a proposal, for the block's execution.
func (p *Pool) Keep(hash [32]byte, bz []byte, lastHeight int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.mem[hash]; !ok {
		p.addLocked(hash, &poolTx{bz: bz, seenAt: lastHeight, admitted: time.Now(), fetched: true})
		p.fetchedBytes += len(bz)
	}
}
