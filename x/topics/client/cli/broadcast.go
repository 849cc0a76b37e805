package cli

import (
	"github.com/spf13/pflag"

	"github.com/cosmos/cosmos-sdk/client"
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
