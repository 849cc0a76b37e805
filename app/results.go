package app

import (
	"context"
	"crypto/sha256"
	"sync"

	abci "github.com/cometbft/cometbft/abci/types"

	storetypes "cosmossdk.io/store/types"
)

// recentResults keeps the results of the transactions the node committed last, by hash, for
// the ingress's result endpoint (ingress.go): a producer learns its offsets from
// the node's memory at the moment its block commits, without CometBFT's tx index, which stores
// every transaction a second time beside the block store (docs/performance.md, disk), and
// without decoding the whole stored transaction back out of it. It is an ABCI listener: a
// block's results are taken at FinalizeBlock and published at Commit, so nothing is answered
// before it is committed. Not state: a node restarted, or asked about an older transaction,
// answers from the tx index when it keeps one.
type recentResults struct {
	mu      sync.RWMutex
	pending []committedTx // the last FinalizeBlock's, until its Commit
	byHash  map[[32]byte]committedTx
	order   [][32]byte // insertion order, oldest first, for eviction
	bytes   int        // what byHash holds, as committedTx.size counts it
	// hash is a transaction's SHA-256; the pool knows those it holds without hashing them
	// again (dataplane/pool.go HashOf).
	hash func([]byte) [32]byte
}

// maxRecentResultBytes bounds the memory of results, oldest forgotten first. It is counted in
// bytes, not results: a result's events and log are the transaction's to shape (a Kafka
// group's members' metadata, a refusal's message), so a count bounded nothing.
const maxRecentResultBytes = 64 << 20

// resultOverhead is what one kept result costs beside its bytes: its map entry, its place in
// order and its structs.
const resultOverhead = 256

type committedTx struct {
	hash   [32]byte
	height int64
	// result holds only what the endpoint answers: code, codespace, log and data (no events).
	result *abci.ExecTxResult
	size   int
}

func newCommittedTx(hash [32]byte, height int64, res *abci.ExecTxResult) committedTx {
	kept := &abci.ExecTxResult{Code: res.Code, Codespace: res.Codespace, Log: res.Log, Data: res.Data}
	return committedTx{hash: hash, height: height, result: kept,
		size: resultOverhead + len(kept.Codespace) + len(kept.Log) + len(kept.Data)}
}

func newRecentResults() *recentResults {
	return &recentResults{byHash: map[[32]byte]committedTx{}, hash: sha256.Sum256}
}

// get returns a committed transaction's height and result.
func (r *recentResults) get(hash [32]byte) (int64, *abci.ExecTxResult, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	tx, ok := r.byHash[hash]
	return tx.height, tx.result, ok
}

// ListenFinalizeBlock implements storetypes.ABCIListener.
func (r *recentResults) ListenFinalizeBlock(_ context.Context, req abci.RequestFinalizeBlock, res abci.ResponseFinalizeBlock) error {
	pending := make([]committedTx, 0, len(req.Txs))
	for i, tx := range req.Txs {
		if i < len(res.TxResults) {
			pending = append(pending, newCommittedTx(r.hash(tx), req.Height, res.TxResults[i]))
		}
	}
	r.mu.Lock()
	r.pending = pending
	r.mu.Unlock()
	return nil
}

// ListenCommit implements storetypes.ABCIListener: the block of the last FinalizeBlock is
// committed, so its results may be told.
func (r *recentResults) ListenCommit(context.Context, abci.ResponseCommit, []*storetypes.StoreKVPair) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, tx := range r.pending {
		if tx.size > maxRecentResultBytes {
			continue // larger than the whole memory: answered from the tx index, if any
		}
		if old, ok := r.byHash[tx.hash]; ok {
			r.bytes -= old.size
		} else {
			r.order = append(r.order, tx.hash)
		}
		r.byHash[tx.hash] = tx
		r.bytes += tx.size
	}
	r.pending = nil
	over := 0
	for ; r.bytes > maxRecentResultBytes; over++ {
		r.bytes -= r.byHash[r.order[over]].size
		delete(r.byHash, r.order[over])
	}
	r.order = r.order[over:] // append reallocates (and frees the evicted) as it grows
	return nil
}
