package cli

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	clienttx "github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// sendAndWait submits msgs as one transaction and waits for the block.
func sendAndWait(clientCtx client.Context, fs *pflag.FlagSet, msgs ...sdk.Msg) (*sdk.TxResponse, error) {
	s, err := txclient.NewSignerFromFlags(clientCtx, fs)
	if err != nil {
		return nil, err
	}
	res, err := s.SubmitAndWait(msgs...)
	if err != nil {
		return nil, PlainError(err)
	}
	return res, nil
}

// viaSDK tells whether a command's flags ask for the SDK's transaction conventions rather than
// bftlog's fast sign-and-wait path: --generate-only (print the unsigned transaction: for a
// multisig account, or a proposal's message), --dry-run (simulate), --offline, a fee payer
// (who must sign too). Those are served by the SDK's generate-or-broadcast path, as in every
// Cosmos chain. A fee granter signs nothing: the fast path puts it in each transaction it
// signs (the factory reads --fee-granter), with the gas simulated and batches in flight, where
// the SDK's path gives every transaction 200,000 gas unless told more.
func viaSDK(clientCtx client.Context, fs *pflag.FlagSet) bool {
	if clientCtx.GenerateOnly || clientCtx.Simulate || clientCtx.Offline {
		return true
	}
	for _, f := range []string{flags.FlagGenerateOnly, flags.FlagDryRun, flags.FlagOffline, flags.FlagFeePayer} {
		if fs.Changed(f) {
			return true
		}
	}
	return false
}

// sdkTx runs msgs through the SDK's generate-or-broadcast path, printing to out.
func sdkTx(clientCtx client.Context, fs *pflag.FlagSet, out io.Writer, msgs ...sdk.Msg) error {
	return clienttx.GenerateOrBroadcastTxCLI(clientCtx.WithOutput(out), fs, msgs...)
}
