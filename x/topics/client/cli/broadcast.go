package cli

import (
	"github.com/spf13/pflag"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// newSigner builds a signer from the standard tx flags; gas is simulated unless --gas is set.
func newSigner(clientCtx client.Context, fs *pflag.FlagSet) (*txclient.Signer, error) {
	txf, err := tx.NewFactoryCLI(clientCtx, fs)
	if err != nil {
		return nil, err
	}
	return txclient.NewSigner(clientCtx, txf, txf.SimulateAndExecute() || !fs.Changed(flags.FlagGas))
}

// sendAndWait submits msgs as one transaction and waits for the block.
func sendAndWait(clientCtx client.Context, fs *pflag.FlagSet, msgs ...sdk.Msg) (*sdk.TxResponse, error) {
	s, err := newSigner(clientCtx, fs)
	if err != nil {
		return nil, err
	}
	res, err := s.SubmitAndWait(msgs...)
	if err != nil {
		return nil, PlainError(err)
	}
	return res, nil
}
