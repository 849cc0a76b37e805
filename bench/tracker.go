package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	rpchttp "github.com/cometbft/cometbft/rpc/client/http"

	cmtservice "github.com/cosmos/cosmos-sdk/client/grpc/cmtservice"

	"github.com/bftlog/bftlog/app"
)

// pending is a submitted transaction waiting for its block.
type pending struct {
	records  int
	payload  int64     // value bytes of its records
	enqueued time.Time // when its first record was handed to the producer
	// created, when set, says when each of its records was created (an open-loop producer's):
	// latency is then each record's, from its creation, not the transaction's.
	created []created
	done    chan struct{} // closed when the tx's block is seen
}

// tracker matches committed transactions (from block results) to what producers submitted.
type tracker struct {
	mu        sync.Mutex
	byHash    map[string]pending
	committed atomic.Int64
	payload   atomic.Int64 // committed value bytes
	failed    atomic.Int64
	failure   string // the first failed transaction's log, for the error
	first     time.Time
	last      time.Time
	lat       *latencies
	blocks    blockStats
}

// blockStats describes the blocks that carried a load's transactions: how often they came, how
// full they were and how many needed more than one consensus round.
type blockStats struct {
	count, txs, maxTxs, laterRounds int
	// empty counts blocks without a transaction while submitted ones waited: a proposer whose
	// mempool had none of them (mempool gossip did not reach it).
	empty int
	// absent counts validators' precommits missing from the blocks' last commits: a node moved
	// on before they arrived (slashing counts them as downtime).
	absent              int
	bytes               int64
	firstTime, lastTime time.Time
}

func (b *blockStats) add(t time.Time, txs [][]byte, lastCommit *cmtproto.Commit, waiting bool) {
	if b.count == 0 {
		b.firstTime = t
	}
	b.count++
	b.lastTime = t
	b.txs += len(txs)
	b.maxTxs = max(b.maxTxs, len(txs))
	if len(txs) == 0 && waiting {
		b.empty++
	}
	for _, tx := range txs {
		b.bytes += int64(len(tx))
	}
	if lastCommit.GetRound() > 0 {
		b.laterRounds++
	}
	for _, sig := range lastCommit.GetSignatures() {
		if sig.BlockIdFlag == cmtproto.BlockIDFlagAbsent {
			b.absent++
		}
	}
}

// interval is the mean time between the blocks (0 for fewer than two).
func (b blockStats) interval() time.Duration {
	if b.count < 2 {
		return 0
	}
	return b.lastTime.Sub(b.firstTime) / time.Duration(b.count-1)
}

func (b blockStats) String() string {
	if b.count < 2 {
		return fmt.Sprintf("%d block(s)", b.count)
	}
	return fmt.Sprintf("%d blocks %d ms apart, %.1f txs (%.1f MB) per block, at most %d, %d empty; %d commits took more than one round; %d precommits missing from last commits",
		b.count, b.interval().Milliseconds(), float64(b.txs)/float64(b.count), float64(b.bytes)/float64(b.count)/1e6, b.maxTxs, b.empty, b.laterRounds, b.absent)
}

func newTracker() *tracker { return &tracker{byHash: map[string]pending{}, lat: &latencies{}} }

func (tr *tracker) blockStats() blockStats {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.blocks
}

func (tr *tracker) submitted(hash string, p pending) {
	tr.mu.Lock()
	tr.byHash[hash] = p
	tr.mu.Unlock()
}

// watch reads every block from start and counts the records of successful transactions.
func (tr *tracker) watch(ctx context.Context, rpc *rpchttp.HTTP, blocks cmtservice.ServiceClient, start int64) {
	h := start
	for ctx.Err() == nil {
		st, err := rpc.Status(ctx)
		if err != nil || st.SyncInfo.LatestBlockHeight < h {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for ; h <= st.SyncInfo.LatestBlockHeight && ctx.Err() == nil; h++ {
			block, err1 := blocks.GetBlockByHeight(ctx, &cmtservice.GetBlockByHeightRequest{Height: h})
			results, err2 := rpc.BlockResults(ctx, &h)
			if err1 != nil || err2 != nil {
				// Not served yet: retry this height (break skips the loop's h++).
				time.Sleep(20 * time.Millisecond)
				break
			}
			now := time.Now()
			tr.mu.Lock()
			if len(tr.byHash) > 0 || tr.blocks.count > 0 {
				tr.blocks.add(block.SdkBlock.Header.Time, block.SdkBlock.Data.Txs, block.SdkBlock.LastCommit, len(tr.byHash) > 0)
			}
			tr.mu.Unlock()
			for i, raw := range block.SdkBlock.Data.Txs {
				sum, named := app.ParseTxRef(raw) // a block may name a transaction by its hash
				if !named {
					sum = sha256.Sum256(raw)
				}
				hash := strings.ToUpper(hex.EncodeToString(sum[:]))
				tr.mu.Lock()
				p, ok := tr.byHash[hash]
				delete(tr.byHash, hash)
				tr.mu.Unlock()
				if !ok {
					continue
				}
				close(p.done)
				if r := results.TxsResults[i]; r.Code != 0 {
					tr.failed.Add(int64(p.records))
					tr.mu.Lock()
					if tr.failure == "" {
						tr.failure = fmt.Sprintf("code %d (%s): %s", r.Code, r.Codespace, r.Log)
					}
					tr.mu.Unlock()
					continue
				}
				tr.mu.Lock()
				if tr.first.IsZero() {
					tr.first = now
				}
				tr.last = now
				tr.mu.Unlock()
				tr.committed.Add(int64(p.records))
				tr.payload.Add(p.payload)
				if p.created == nil {
					tr.lat.add(now.Sub(p.enqueued))
				}
				for _, c := range p.created {
					tr.lat.addN(now.Sub(c.at), c.n)
				}
			}
		}
	}
}
