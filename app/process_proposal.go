package app

import (
	abci "github.com/cometbft/cometbft/abci/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// processProposal rejects a proposal that carries a transaction breaking the fee rule, or whose
// gas limits add up to more than the block's max_gas. DeliverTx would refuse such transactions
// anyway, but the block would still hold their bytes for ever; with this check honest validators
// (more than two thirds) vote against it and the round moves on. CometBFT's mempool only offers
// transactions that passed CheckTx (which applies the same rule), so honest proposals pass.
func (app *App) processProposal(ctx sdk.Context, req *abci.RequestProcessProposal) (*abci.ResponseProcessProposal, error) {
	reject := &abci.ResponseProcessProposal{Status: abci.ResponseProcessProposal_REJECT}
	params, err := app.TopicsKeeper.Params.Get(ctx)
	if err != nil {
		return reject, nil
	}
	// Named transactions (ordering.go): a proposal naming one this node does not hold (and
	// could not fetch in time) is voted down, and what it names is on disk before this node
	// votes for it.
	maxBytes := int64(-1)
	if cp := ctx.ConsensusParams(); cp.Block != nil {
		maxBytes = cp.Block.MaxBytes
	}
	txs, refs, named, missing := app.resolveProposal(req.Height, req.Txs, maxBytes)
	if missing > 0 {
		app.Logger().Info("proposal names transactions this node does not hold; voting against it",
			"height", req.Height, "missing", missing, "named", len(named)+missing)
		return reject, nil
	}
	maxGas := app.GetMaximumBlockGas(ctx)
	var total uint64
	var size int64
	for i, bz := range txs {
		// A reference is small, what it names is not: the block's byte limit holds for the
		// transactions themselves, so naming them makes no block larger than carrying them.
		if size += int64(len(bz)); maxBytes > 0 && size > maxBytes {
			return reject, nil
		}
		tx, err := app.proposalTxs.decodeAndKeep(bz)
		if err != nil {
			return reject, nil
		}
		// What a reference says of the transaction it names is what explorers show.
		if refs != nil && refs[i] != nil {
			if signer, ok := firstSigner(tx); !ok || signer != refs[i].Signer || uint64(len(bz)) != refs[i].TxBytes {
				return reject, nil
			}
		}
		feeTx, ok := tx.(sdk.FeeTx)
		if !ok || CheckFee(params, feeTx.GetGas(), feeTx.GetFee()) != nil {
			return reject, nil
		}
		gas := feeTx.GetGas()
		if maxGas > 0 && (gas > maxGas || total > maxGas-gas) {
			return reject, nil
		}
		total += gas
	}
	if err := app.plane.Persist(req.Height, named); err != nil {
		app.Logger().Error("pool: cannot store a proposal's named transactions; voting against it", "height", req.Height, "err", err)
		return reject, nil
	}
	return &abci.ResponseProcessProposal{Status: abci.ResponseProcessProposal_ACCEPT}, nil
}
