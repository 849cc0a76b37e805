package app

import (
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsigning "github.com/cosmos/cosmos-sdk/x/auth/signing"
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
//
// Only for SIGN_MODE_DIRECT signatures: its sign bytes are the transaction's own bytes and the
// chain's, read from no store. SIGN_MODE_TEXTUAL (on in this chain) reads the fee coins'
// metadata from the bank module to build its sign bytes, gas that a verifying validator would
// spend and a skipping one would not, so those, and any other mode, are verified again.

// skipVerified returns ctx with signature verification off when this node's CheckTx admitted
// the transaction being executed, byte for byte; counted in app.sigsReused.
func (app *App) skipVerified(ctx sdk.Context, tx sdk.Tx, simulate bool) sdk.Context {
	if simulate || ctx.IsCheckTx() || ctx.IsReCheckTx() || !onlySignModeDirect(tx) || !app.plane.SigsVerified(ctx.TxBytes()) {
		return ctx
	}
	app.sigsReused.Add(1)
	return ctx.WithIsSigverifyTx(false)
}

// onlySignModeDirect tells whether every signature of tx is a single SIGN_MODE_DIRECT one.
func onlySignModeDirect(tx sdk.Tx) bool {
	sigTx, ok := tx.(authsigning.SigVerifiableTx)
	if !ok {
		return false
	}
	sigs, err := sigTx.GetSignaturesV2()
	if err != nil || len(sigs) == 0 {
		return false
	}
	for _, sig := range sigs {
		single, ok := sig.Data.(*signing.SingleSignatureData)
		if !ok || single.SignMode != signing.SignMode_SIGN_MODE_DIRECT {
			return false
		}
	}
	return true
}
