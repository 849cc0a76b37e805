package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"

	errorsmod "cosmossdk.io/errors"

	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	authsigning "github.com/cosmos/cosmos-sdk/x/auth/signing"

	"github.com/bftlog/bftlog/app/dataplane"
	"github.com/bftlog/bftlog/app/ordering"
)

// Ordering by digest (docs/digest-ordering.md): a block names a transaction that the
// validators already hold — the node that took it pushed it to each of them and each keeps it
// in its pool (app/dataplane) — by a reference of ~130 bytes (MsgOrderedTx) instead of
// carrying it.
// CometBFT then moves, writes to its WAL and block store and indexes the reference, not the
// record batch.
//
//   - PrepareProposal names a transaction when more than two thirds of this node and its peers
//     answered that they hold it, or when a peer pushed it here before the last commit or
//     150 ms ago (dataplane/pool.go minNameAge; ordering.by-digest in app.toml, on for new
//     nodes). Others travel whole.
//   - ProcessProposal fetches what a proposal names and this node lacks from its peers (at most
//     500 ms), votes against a proposal naming anything it still lacks, and syncs what it names
//     to disk before voting for it. A block is therefore committed only when more than 2/3 of
//     the voting power hold its transactions, so at least one honest validator can serve each.
//   - FinalizeBlock runs the named transactions' bytes, fetched from a peer if this node voted
//     against the block or was away. The app hash commits the same state as if the block had
//     carried the bytes; results are told under the transactions' own hashes (results.go).
//
// Every node understands references, whatever its own setting, so validators may turn it on
// one by one once all run a binary that has this file.

// maxTxRefBytes bounds what is parsed as a reference: a reference is ~130 bytes.
const maxTxRefBytes = 512

// ErrTxOrdered answers CheckTx's recheck of a transaction a block named: CometBFT's mempool
// keeps it (the block carried its reference, not it), and this removes it.
var ErrTxOrdered = errorsmod.Register("bftlog", 2, "transaction already ordered by a block that named its digest")

// TxRef is the block transaction naming a transaction by its SHA-256: an unsigned SDK
// transaction whose one message is a MsgOrderedTx, so that explorers decode it. It is never
// executed: FinalizeBlock runs the named transaction in its place, and alone it would fail
// before any fee, as no handler takes MsgOrderedTx.
func TxRef(hash [32]byte, size int, signer string) []byte {
	msg, err := (&ordering.MsgOrderedTx{TxHash: hash[:], TxBytes: uint64(size), Signer: signer}).Marshal()
	if err != nil {
		panic(err) // a message of fixed fields always marshals
	}
	body, err := (&txtypes.TxBody{Messages: []*codectypes.Any{{TypeUrl: ordering.TypeURL, Value: msg}}}).Marshal()
	if err != nil {
		panic(err)
	}
	raw, err := (&txtypes.TxRaw{BodyBytes: body}).Marshal()
	if err != nil {
		panic(err)
	}
	return raw
}

// ParseTxRef returns the hash a block transaction names, if it is a reference.
func ParseTxRef(bz []byte) ([32]byte, bool) {
	ref, ok := parseTxRef(bz)
	if !ok {
		return [32]byte{}, false
	}
	return [32]byte(ref.TxHash), true
}

// parseTxRef reads a reference: a transaction of one MsgOrderedTx and nothing else.
func parseTxRef(bz []byte) (*ordering.MsgOrderedTx, bool) {
	if len(bz) > maxTxRefBytes || !bytes.Contains(bz, []byte(ordering.TypeURL)) {
		return nil, false
	}
	var raw txtypes.TxRaw
	if raw.Unmarshal(bz) != nil || len(raw.AuthInfoBytes) != 0 || len(raw.Signatures) != 0 {
		return nil, false
	}
	var body txtypes.TxBody
	if body.Unmarshal(raw.BodyBytes) != nil || len(body.Messages) != 1 || body.Messages[0].TypeUrl != ordering.TypeURL ||
		body.Memo != "" || body.TimeoutHeight != 0 || len(body.ExtensionOptions) != 0 || len(body.NonCriticalExtensionOptions) != 0 {
		return nil, false
	}
	var ref ordering.MsgOrderedTx
	if ref.Unmarshal(body.Messages[0].Value) != nil || len(ref.TxHash) != 32 {
		return nil, false
	}
	return &ref, true
}

// namedBytes is what a block's references say their transactions weigh, added up.
func namedBytes(refs []*ordering.MsgOrderedTx) (n uint64) {
	for _, ref := range refs {
		if ref != nil {
			n += min(ref.TxBytes, maxRawTxBytes+1)
		}
	}
	return n
}

// unresolved are the indices of the references resolveHeld left unresolved. Decided by refs,
// not by a nil in out: an empty transaction in a block is nil too, and names nothing.
func unresolved(out [][]byte, refs []*ordering.MsgOrderedTx) []int {
	var idx []int
	for i, ref := range refs {
		if ref != nil && out[i] == nil {
			idx = append(idx, i)
		}
	}
	return idx
}

// lackingOf is what the references at these indices name, for a fetch.
func lackingOf(refs []*ordering.MsgOrderedTx, indices []int) []dataplane.Named {
	named := make([]dataplane.Named, len(indices))
	for j, i := range indices {
		named[j] = dataplane.Named{Hash: [32]byte(refs[i].TxHash), Size: int64(min(refs[i].TxBytes, maxRawTxBytes))}
	}
	return named
}

// resolveHeld replaces the references of a proposal by the transactions this node holds; held
// maps what was named to its bytes, refs[i] is the reference txs[i] was (nil if none) and
// missing counts the references left unresolved (nil in out).
func (app *App) resolveHeld(txs [][]byte) (out [][]byte, refs []*ordering.MsgOrderedTx, held map[[32]byte][]byte, missing int) {
	out = make([][]byte, len(txs))
	for i, bz := range txs {
		ref, ok := parseTxRef(bz)
		if !ok {
			out[i] = bz
			continue
		}
		if held == nil {
			held = map[[32]byte][]byte{}
			refs = make([]*ordering.MsgOrderedTx, len(txs))
		}
		refs[i] = ref
		hash := [32]byte(ref.TxHash)
		full, ok := app.plane.Get(hash)
		if !ok {
			missing++
			continue
		}
		out[i] = full
		held[hash] = full
	}
	return out, refs, held, missing
}

// proposalFetchWait bounds how long a validator asks its peers for what a proposal names and
// it lacks (gossip had not reached it, or reached it only through a peer that is down) before
// it votes against the proposal. The ABCI lock is held meanwhile, so CheckTx waits too.
const proposalFetchWait = 500 * time.Millisecond

// resolveProposal is resolveHeld for a proposal, fetching what this node lacks from its peers
// within proposalFetchWait; missing counts what none of them answered in time. Nothing is
// fetched when the references say they name more than maxBytes (> 0), a block's bytes: a
// proposer cannot make validators fetch and hold more than that.
func (app *App) resolveProposal(height int64, txs [][]byte, maxBytes int64) (out [][]byte, refs []*ordering.MsgOrderedTx, held map[[32]byte][]byte, missing int) {
	out, refs, held, missing = app.resolveHeld(txs)
	if missing == 0 || len(app.plane.Peers()) == 0 || (maxBytes > 0 && namedBytes(refs) > uint64(maxBytes)) {
		return out, refs, held, missing
	}
	ctx, cancel := context.WithTimeout(context.Background(), proposalFetchWait)
	defer cancel()
	began, fetched := time.Now(), 0
	// All at once (16 at a time): one after another, a proposal naming many transactions this
	// node lacks would spend its wait on round trips and be voted down.
	lacking := unresolved(out, refs)
	got := app.plane.FetchOnce(ctx, lackingOf(refs, lacking))
	for j, full := range got {
		if full == nil {
			continue
		}
		i := lacking[j]
		hash := [32]byte(refs[i].TxHash)
		app.plane.Keep(hash, full, height-1)
		out[i], held[hash] = full, full
		missing--
		fetched++
	}
	app.Logger().Info("proposal names transactions this node did not hold; fetched from peers",
		"height", height, "fetched", fetched, "missing", missing, "took", time.Since(began))
	return out, refs, held, missing
}

// resolveBlock is resolveHeld for a finalized block: whatever this node lacks is fetched, and
// it waits until it has it; skipping a transaction would fork it from the others.
// Without ordering.peers there is nobody to ask: the node stops with that error rather than
// wait for ever.
func (app *App) resolveBlock(height int64, txs [][]byte) ([][]byte, map[[32]byte][]byte, error) {
	out, refs, held, missing := app.resolveHeld(txs)
	if missing > 0 && len(app.plane.Peers()) == 0 {
		return nil, nil, fmt.Errorf("block %d names %d transactions this node does not hold, and ordering.peers in app.toml lists no node to fetch them from", height, missing)
	}
	// All at once, each from any peer that answers with its hash, retried until it comes.
	lacking := unresolved(out, refs)
	for j, full := range app.plane.FetchAll(context.Background(), lackingOf(refs, lacking)) {
		i := lacking[j]
		out[i] = full
		held[[32]byte(refs[i].TxHash)] = full
	}
	// On disk already when this node voted for the block; not when it got it by block sync or
	// fetched it. A replay after a crash should not have to ask again, and peers may ask.
	if err := app.plane.Persist(height, held); err != nil {
		app.Logger().Error("pool: writing named transactions", "height", height, "err", err)
	}
	return out, held, nil
}

// CheckTx keeps a copy of each admitted transaction for proposals that name it, and refuses a
// transaction a block has named.
func (app *App) CheckTx(req *abci.RequestCheckTx) (*abci.ResponseCheckTx, error) {
	// Recheck, or a peer gossiping it again after recheck dropped it from the mempool's cache:
	// answered before decoding a record batch that can only fail its sequence check.
	if hash, size, ok := parseStub(req.Tx); ok {
		return app.checkStub(req, hash, size)
	}
	if app.plane.OrderedBytes(req.Tx) {
		return &abci.ResponseCheckTx{Codespace: "bftlog", Code: ErrTxOrdered.ABCICode(), Log: ErrTxOrdered.Error()}, nil
	}
	var res *abci.ResponseCheckTx
	decoded, err := app.proposalTxs.check(req.Tx, func() (err error) {
		res, err = app.App.CheckTx(req)
		return err
	})
	switch {
	case err != nil:
	case res.Code == abci.CodeTypeOK && req.Type == abci.CheckTxType_New:
		// Kept for proposals that name it; a client's is pushed to the peers.
		app.plane.Admit(req.Tx, app.LastBlockHeight(), decoded)
	case res.Code != abci.CodeTypeOK && req.Type == abci.CheckTxType_Recheck:
		// The mempool lets it go; so does the pool, which holds no more than the mempool and
		// the blocks' window: an account whose transactions turn invalid cannot fill it.
		app.plane.Drop(req.Tx)
	}
	return res, err
}

// FinalizeBlock runs the block with its references resolved, then drops the transactions its
// ProcessProposal kept decoded (decode_cache.go).
func (app *App) FinalizeBlock(req *abci.RequestFinalizeBlock) (*abci.ResponseFinalizeBlock, error) {
	defer app.proposalTxs.forget()
	app.blockTxs.carried = len(req.Txs) > 0
	txs, named, err := app.resolveBlock(req.Height, req.Txs)
	if err != nil {
		return nil, err
	}
	defer app.plane.DropCarried(req.Txs)
	if named == nil {
		return app.App.FinalizeBlock(req)
	}
	resolved := *req
	resolved.Txs = txs
	res, err := app.App.FinalizeBlock(&resolved)
	if err != nil {
		return res, err
	}
	app.plane.MarkOrdered(req.Height, named)
	// CometBFT indexes a result under its block transaction's hash, the reference's; this
	// event names the transaction itself, so tx_search "ordered.tx_hash='<hash>'" and
	// explorers find it. Events are not part of the results hash, so this is node-local.
	for i, bz := range req.Txs {
		if hash, ok := ParseTxRef(bz); ok && i < len(res.TxResults) {
			res.TxResults[i].Events = append(res.TxResults[i].Events, abci.Event{Type: ordering.EventOrdered, Attributes: []abci.EventAttribute{
				{Key: ordering.AttributeTxHash, Value: ordering.HashHex(hash[:]), Index: true},
				{Key: ordering.AttributeTxBytes, Value: strconv.Itoa(len(txs[i])), Index: false},
			}})
		}
	}
	return res, nil
}

// Commit commits the block and lets the pool forget what is older than its window.
func (app *App) Commit() (*abci.ResponseCommit, error) {
	res, err := app.App.Commit()
	if err == nil {
		app.plane.Committed(app.LastBlockHeight())
		app.refreshDataPlaneKeys() // the validators whose signatures the data plane takes
	}
	return res, err
}

// DecodesReused is how many transactions this App's decoder handed out decoded before
// (decode_cache.go) instead of decoding them again: the simulation requires some.
func (app *App) DecodesReused() uint64 { return app.proposalTxs.reused.Load() }

// NameHeld is txs with each transaction this node's pool holds replaced by its reference,
// whatever its age: a proposal as a proposer with ordering.by-digest on could make it, for the
// simulation, which runs such blocks beside a twin given the transactions themselves.
func (app *App) NameHeld(txs [][]byte) [][]byte {
	out := make([][]byte, len(txs))
	for i, bz := range txs {
		out[i] = bz
		if len(bz) < dataplane.MinRefBytes {
			continue
		}
		hash := sha256.Sum256(bz)
		if _, ok := app.plane.Get(hash); !ok {
			continue
		}
		if tx, err := app.txConfig.TxDecoder()(bz); err == nil {
			if signer, ok := firstSigner(tx); ok {
				out[i] = TxRef(hash, len(bz), signer)
			}
		}
	}
	return out
}

// firstSigner is a transaction's first signer, as a reference names it.
func firstSigner(tx sdk.Tx) (string, bool) {
	sigTx, ok := tx.(authsigning.SigVerifiableTx)
	if !ok {
		return "", false
	}
	signers, err := sigTx.GetSigners()
	if err != nil || len(signers) == 0 {
		return "", false
	}
	return sdk.AccAddress(signers[0]).String(), true
}
