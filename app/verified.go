package app

import (
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Signatures verified once per validator. The SDK's ante handler verifies a transaction's
// signatures at CheckTx and again when a block executes it; for a record batch each
// verification marshals a sign doc holding the whole batch and hashes it (14% of a validator's
// CPU at N=4 with both, docs/performance.md). When this node's CheckTx admitted exactly these
// bytes, FinalizeBlock runs the ante handler with the SDK's sigverify switch off, which skips
// the two checks that are functions of the bytes, the chain and the signers' accounts alone:
// that each public key the transaction carries is its signer's, and the signatures. The
// chain ID is fixed, and an account's number and public key never change once set, so they
// give the same answer now as at CheckTx. Everything else runs as before, gas included (the
// SDK consumes signature gas in its own decorator, whatever the switch), so a validator that
// never saw the transaction in its mempool, and verifies, reaches the same state.

// skipVerified returns ctx with signature verification off when this node's CheckTx admitted
// the transaction being executed, byte for byte; counted in app.sigsReused.
func (app *App) skipVerified(ctx sdk.Context, simulate bool) sdk.Context {
	if simulate || ctx.IsCheckTx() || ctx.IsReCheckTx() || !app.pool.sigsVerified(ctx.TxBytes()) {
		return ctx
	}
	app.sigsReused.Add(1)
	return ctx.WithIsSigverifyTx(false)
}
