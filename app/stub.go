package app

import (
	"bytes"
	"crypto/sha256"

	abci "github.com/cometbft/cometbft/abci/types"

	errorsmod "cosmossdk.io/errors"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/app/dataplane"
)

// Stubs in the mempool. With ordering by digest and push (ordering.peers), a record batch
// that reaches this node through the ingress or a peer's push waits in the pool (app/dataplane),
// and CometBFT's mempool holds a stub of ~100 bytes in its place: a reference without a
// signer, TxRef(hash, size, ""). CheckTx of the stub runs the SDK's CheckTx on the held
// transaction, so admission is unchanged; the proposer puts the reference or the transaction
// itself in its block (proposal.go), never the stub.
//
// CometBFT's mempool hashes each transaction it holds some eight times (its cache, its map,
// the callbacks, recheck and the RPC answer) and keeps it in memory beside the pool: 13% of
// a validator's CPU at N=4 before this (docs/performance.md). A stub costs that on 100 bytes;
// the pool hashes the batch once, at the ingress or on the push's arrival.
//
// A stub is taken only for a transaction the pool staged for it, once: a client cannot make
// the mempool hold a second entry for one transaction, nor one for bytes the node lacks. A
// stub in a proposal is voted down (its reference names no signer, processProposal).

// ErrTxNotHeld answers CheckTx of a stub whose transaction this node's pool does not hold.
var ErrTxNotHeld = errorsmod.Register("bftlog", 3, "stub of a transaction this node does not hold")

// stubOf is what the mempool holds for a transaction of size bytes and this hash.
func stubOf(hash [32]byte, size int) []byte { return TxRef(hash, size, "") }

// parseStub is the hash and size a stub stands for; only the bytes stubOf makes are a stub.
func parseStub(bz []byte) ([32]byte, int, bool) {
	ref, ok := parseTxRef(bz)
	if !ok || ref.Signer != "" || ref.TxBytes > maxRawTxBytes {
		return [32]byte{}, 0, false
	}
	hash, size := [32]byte(ref.TxHash), int(ref.TxBytes)
	if !bytes.Equal(bz, stubOf(hash, size)) {
		return [32]byte{}, 0, false
	}
	return hash, size, true
}

// stubs says whether this node's mempool holds stubs: ordering by digest with push.
func (app *App) stubs() bool { return app.orderByDigest && app.plane.Pushes() }

// mempoolTx is what goes to CometBFT's mempool for bz, which a client gave this node (the
// ingress), and bz's hash; see stageTx.
func (app *App) mempoolTx(bz []byte) (tx []byte, hash [32]byte, staged, created, full bool) {
	if !app.stubs() || len(bz) < dataplane.MinRefBytes {
		return bz, hash, false, false, false
	}
	hash = sha256.Sum256(bz)
	tx, staged, created, full = app.stageTx(bz, hash, "")
	return tx, hash, staged, created, full
}

// stageTx is what goes to CometBFT's mempool for bz of this hash, which a client (sender "")
// or a validator's push gave this node. staged is false when bz goes itself (no stubs, or too
// small to name); created when this call staged it (else it was held already); full when the
// pool holds as much of its clients' transactions as the mempool would, or as much of the
// sender's pushes as its budget allows (the caller answers "mempool is full", or '0').
func (app *App) stageTx(bz []byte, hash [32]byte, sender string) (tx []byte, staged, created, full bool) {
	if !app.stubs() || len(bz) < dataplane.MinRefBytes {
		return bz, false, false, false
	}
	ok, created := app.plane.Stage(bz, hash, app.LastBlockHeight(), sender)
	if !ok {
		return nil, false, false, true
	}
	return stubOf(hash, len(bz)), true, created, false
}

// checkStub is CheckTx of a stub: the SDK's CheckTx on the transaction it stands for.
func (app *App) checkStub(req *abci.RequestCheckTx, hash [32]byte, size int) (*abci.ResponseCheckTx, error) {
	isNew := req.Type == abci.CheckTxType_New
	bz, _, fromPeer, staged, admitted, ordered := app.plane.Stubbed(hash, isNew)
	switch {
	case ordered:
		return checkTxError(ErrTxOrdered), nil
	case bz == nil || len(bz) != size:
		return checkTxError(ErrTxNotHeld), nil
	case isNew && !staged && admitted:
		// Its stub taken once already and admitted: a second copy. Only then: a copy this
		// node holds but never admitted (fetched for a proposal) is checked now, or a client
		// resending it would be told "in the mempool" while it is in no mempool.
		return checkTxError(sdkerrors.ErrTxInMempoolCache), nil
	case len(bz) > app.maxTxBytes:
		app.plane.Checked(hash, false, nil)
		return checkTxError(sdkerrors.ErrTxTooLarge.Wrapf("%d bytes, mempool.max_tx_bytes is %d", len(bz), app.maxTxBytes)), nil
	}
	var res *abci.ResponseCheckTx
	decoded, err := app.proposalTxs.check(bz, func() (err error) {
		res, err = app.App.CheckTx(&abci.RequestCheckTx{Tx: bz, Type: req.Type})
		return err
	})
	ok := err == nil && res.Code == abci.CodeTypeOK
	switch {
	case isNew:
		// Refused, a validator's push is dropped like a client's, and counted against it.
		if sender := app.plane.Checked(hash, ok, decoded); !ok && sender != "" {
			app.plane.Refused(sender, "refused by CheckTx", 1)
		}
		if ok && !fromPeer {
			app.plane.Push(bz, hash)
		}
	case !ok:
		app.plane.Drop(bz) // the mempool lets the stub go on this answer
	}
	return res, err
}

func checkTxError(err error) *abci.ResponseCheckTx {
	space, code, log := errorsmod.ABCIInfo(err, false)
	return &abci.ResponseCheckTx{Codespace: space, Code: code, Log: log}
}
