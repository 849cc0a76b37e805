package app

import (
	abci "github.com/cometbft/cometbft/abci/types"
	cmttypes "github.com/cometbft/cometbft/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authsigning "github.com/cosmos/cosmos-sdk/x/auth/signing"

	"github.com/bftlog/bftlog/app/dataplane"
)

// prepareProposal takes the mempool's transactions in its order while they fit the block's
// bytes and gas, as the SDK's default does, with one difference: once a transaction of an
// account is left out, so are that account's later ones. The default skips a transaction
// that does not fit and goes on, so a smaller, later transaction of the same producer
// (sequence n+1) could enter the block without sequence n and fail there, its bytes carried
// for nothing and the producer told "account sequence mismatch" (seen in the benchmark at half
// load, where batch sizes vary). The transactions it takes are kept decoded for the proposer's
// own ProcessProposal and FinalizeBlock (decode_cache.go). With ordering.by-digest on, a
// transaction every validator should hold travels as a reference (ordering.go); the block's
// bytes and gas are still counted on the transactions themselves, as ProcessProposal counts.
func (app *App) prepareProposal(ctx sdk.Context, req *abci.RequestPrepareProposal) (*abci.ResponsePrepareProposal, error) {
	maxBytes := uint64(max(req.MaxTxBytes, 0))
	maxGas := app.GetMaximumBlockGas(ctx)
	var bytes, gas uint64
	held := map[string]bool{} // signers with a transaction left out of this block
	out := make([][]byte, 0, len(req.Txs))
	for _, bz := range req.Txs {
		if hash, _, ok := parseStub(bz); ok { // the mempool's stand-in (stub.go)
			if bz, ok = app.plane.Get(hash); !ok {
				continue // dropped since CheckTx; recheck drops the stub
			}
		}
		tx, err := app.proposalTxs.Decode(bz)
		if err != nil {
			continue // CheckTx decoded it; a mempool does not change bytes
		}
		var signers [][]byte
		if sigTx, ok := tx.(authsigning.SigVerifiableTx); ok {
			if signers, err = sigTx.GetSigners(); err != nil {
				continue
			}
		}
		if anyHeld(held, signers) {
			hold(held, signers)
			continue
		}
		size := uint64(cmttypes.ComputeProtoSizeForTxs([]cmttypes.Tx{bz}))
		var txGas uint64
		if gasTx, ok := tx.(interface{ GetGas() uint64 }); ok {
			txGas = gasTx.GetGas()
		}
		if bytes+size > maxBytes || (maxGas > 0 && (txGas > maxGas || gas > maxGas-txGas)) {
			hold(held, signers)
			continue
		}
		ref, full := app.namedInProposal(bz, signers, req.Height)
		if ref == nil && full != nil {
			continue // named by a block already; the mempool's recheck drops it
		}
		bytes += size
		gas += txGas
		if ref != nil {
			out = append(out, ref)
			app.proposalTxs.keep(full, tx)
		} else {
			out = append(out, bz)
			app.proposalTxs.keep(bz, tx)
		}
		if app.orderByDigest {
			dataplane.CountProposed(ref != nil, len(bz))
		}
		if bytes >= maxBytes || (maxGas > 0 && gas >= maxGas) {
			break
		}
	}
	return &abci.ResponsePrepareProposal{Txs: app.byz.proposal(out, req.Height)}, nil
}

func anyHeld(held map[string]bool, signers [][]byte) bool {
	for _, s := range signers {
		if held[string(s)] {
			return true
		}
	}
	return false
}

func hold(held map[string]bool, signers [][]byte) {
	for _, s := range signers {
		held[string(s)] = true
	}
}

// namedInProposal is the reference a proposal at height carries for bz and the pool's copy of
// the bytes it names (ordering.go), or nil, nil to carry bz itself; nil and bz when a block
// named bz already.
func (app *App) namedInProposal(bz []byte, signers [][]byte, height int64) (ref, full []byte) {
	if !app.orderByDigest {
		return nil, nil
	}
	if app.plane.OrderedBytes(bz) {
		return nil, bz
	}
	hash, full, ok := app.plane.ForProposal(bz, height)
	if !ok || len(signers) == 0 {
		return nil, nil
	}
	return TxRef(hash, len(bz), sdk.AccAddress(signers[0]).String()), full
}
