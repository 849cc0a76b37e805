package app

import (
	"bytes"
	"sync"
	"sync/atomic"
	"unsafe"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// proposalTxs lets FinalizeBlock reuse the transactions ProcessProposal decoded. Without it a
// validator decodes each transaction of a block three times (ProcessProposal, then twice in
// the SDK's FinalizeBlock: once to test that it decodes, once to run it), copying every record
// batch's bytes each time (docs/performance.md). CometBFT hands both calls the same block, so
// the same slices: a transaction is found by its first byte's address and its length. The
// entry holds the slice, so that memory cannot be reused for other bytes while it is kept,
// and nobody writes into a block's transactions; a miss (a block received again, a replay)
// only decodes.
type proposalTxs struct {
	decode sdk.TxDecoder

	mu   sync.Mutex
	txs  map[*byte]decodedTx
	size int // bytes of the kept transactions
	// checking is the transaction CheckTx is running, whose decoding is kept in checked for
	// the pool (dataplane/pool.go), so that a block naming it does not decode it again.
	checking *byte
	checked  sdk.Tx
	// held is the pool's kept decoding of bytes it holds (dataplane/pool.go DecodedOf): the
	// proposer's selection, recheck and a block carrying a transaction this node admitted
	// reuse it.
	held func([]byte) sdk.Tx
	// reused counts the decodings Decode handed out again instead of decoding.
	reused atomic.Uint64
}

type decodedTx struct {
	bz   []byte
	tail []byte // a copy of bz's last bytes (the signatures): a check that nobody rewrote bz
	tx   sdk.Tx
}

// tailBytes is how much of a kept transaction's end is copied for the check.
const tailBytes = 64

func tailOf(bz []byte) []byte { return bz[max(0, len(bz)-tailBytes):] }

// maxProposalTxBytes bounds what is kept between ProcessProposal and FinalizeBlock: a few
// rounds' blocks (CometBFT's block max_bytes is 21 MiB by default, bftlog's lower).
const maxProposalTxBytes = 256 << 20

func newProposalTxs(decode sdk.TxDecoder) *proposalTxs {
	return &proposalTxs{decode: decode, txs: map[*byte]decodedTx{}}
}

// Decode is the app's TxDecoder: a kept transaction, or the bytes decoded.
func (p *proposalTxs) Decode(bz []byte) (sdk.Tx, error) {
	if len(bz) > 0 {
		p.mu.Lock()
		d, ok := p.txs[unsafe.SliceData(bz)]
		p.mu.Unlock()
		if ok && len(d.bz) == len(bz) && bytes.Equal(d.tail, tailOf(bz)) {
			p.reused.Add(1)
			return d.tx, nil
		}
		if p.held != nil {
			if tx := p.held(bz); tx != nil {
				p.reused.Add(1)
				return tx, nil
			}
		}
	}
	tx, err := p.decode(bz)
	if err == nil && len(bz) > 0 {
		p.mu.Lock()
		if p.checking == unsafe.SliceData(bz) {
			p.checked = tx
		}
		p.mu.Unlock()
	}
	return tx, err
}

// check runs checkTx on bz and returns what it decoded bz to along with its result.
func (p *proposalTxs) check(bz []byte, checkTx func() error) (sdk.Tx, error) {
	p.mu.Lock()
	p.checking, p.checked = unsafe.SliceData(bz), nil
	p.mu.Unlock()
	err := checkTx()
	p.mu.Lock()
	defer p.mu.Unlock()
	tx := p.checked
	p.checking, p.checked = nil, nil
	return tx, err
}

// decodeAndKeep decodes a proposal's transaction and keeps it for FinalizeBlock.
func (p *proposalTxs) decodeAndKeep(bz []byte) (sdk.Tx, error) {
	tx, err := p.Decode(bz)
	if err == nil {
		p.keep(bz, tx)
	}
	return tx, err
}

// keep remembers tx as the decoding of bz until forget.
func (p *proposalTxs) keep(bz []byte, tx sdk.Tx) {
	if len(bz) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	key := unsafe.SliceData(bz)
	if _, ok := p.txs[key]; !ok && p.size+len(bz) <= maxProposalTxBytes {
		p.txs[key] = decodedTx{bz: bz, tail: bytes.Clone(tailOf(bz)), tx: tx}
		p.size += len(bz)
	}
}

// forget drops every kept transaction: a block was finalized.
func (p *proposalTxs) forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.txs)
	p.size = 0
}
