package cli

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"
	"github.com/cosmos/gogoproto/proto"

	"github.com/bftlog/bftlog/x/topics/types"
)

// commitTimeout bounds how long a command waits for its transaction to land in a block.
const commitTimeout = 60 * time.Second

// signer signs and broadcasts transactions of one account, keeping the account sequence
// locally so that several transactions can be in flight at once.
type signer struct {
	clientCtx client.Context
	txf       tx.Factory
	autoGas   bool
}

func newSigner(clientCtx client.Context, fs *pflag.FlagSet) (*signer, error) {
	txf, err := tx.NewFactoryCLI(clientCtx, fs)
	if err != nil {
		return nil, err
	}
	if txf, err = txf.Prepare(clientCtx); err != nil {
		return nil, err
	}
	// Record batches need far more gas than the SDK's 200000 default: simulate unless --gas is set.
	autoGas := txf.SimulateAndExecute() || !fs.Changed(flags.FlagGas)
	if txf.GasAdjustment() <= 1 {
		txf = txf.WithGasAdjustment(1.3)
	}
	return &signer{clientCtx: clientCtx, txf: txf, autoGas: autoGas}, nil
}

// submit signs and broadcasts msgs in sync mode (the mempool has accepted the tx when it
// returns) and returns the tx hash.
func (s *signer) submit(msgs ...sdk.Msg) (string, error) {
	txf := s.txf
	if s.autoGas {
		_, gas, err := tx.CalculateGas(s.clientCtx, txf, msgs...)
		if err != nil {
			return "", PlainError(err)
		}
		txf = txf.WithGas(gas)
	}
	txb, err := txf.BuildUnsignedTx(msgs...)
	if err != nil {
		return "", err
	}
	if err := tx.Sign(context.Background(), txf, s.clientCtx.FromName, txb, true); err != nil {
		return "", err
	}
	bz, err := s.clientCtx.TxConfig.TxEncoder()(txb.GetTx())
	if err != nil {
		return "", err
	}
	res, err := s.clientCtx.BroadcastTxSync(bz)
	if err != nil {
		return "", err
	}
	if res.Code != 0 {
		return "", fmt.Errorf("transaction rejected: %s (codespace %s, code %d)", res.RawLog, res.Codespace, res.Code)
	}
	s.txf = s.txf.WithSequence(s.txf.Sequence() + 1)
	return res.TxHash, nil
}

// waitCommitted polls until the tx is in a block (acks=all) and fails if it did not succeed.
func waitCommitted(clientCtx client.Context, hash string) (*sdk.TxResponse, error) {
	deadline := time.Now().Add(commitTimeout)
	for {
		res, err := authtx.QueryTx(clientCtx, hash)
		if err == nil {
			if res.Code != 0 {
				return res, fmt.Errorf("transaction %s failed in block %d: %s (codespace %s, code %d)", hash, res.Height, res.RawLog, res.Codespace, res.Code)
			}
			return res, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("transaction %s not committed after %s: %w", hash, commitTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// produceResponses decodes the MsgProduce responses of a committed tx.
func produceResponses(clientCtx client.Context, res *sdk.TxResponse) ([]types.MsgProduceResponse, error) {
	raw, err := hex.DecodeString(res.Data)
	if err != nil {
		return nil, err
	}
	var data sdk.TxMsgData
	if err := clientCtx.Codec.Unmarshal(raw, &data); err != nil {
		return nil, err
	}
	var out []types.MsgProduceResponse
	for _, a := range data.MsgResponses {
		if a.TypeUrl != "/"+proto.MessageName(&types.MsgProduceResponse{}) {
			continue
		}
		var r types.MsgProduceResponse
		if err := r.Unmarshal(a.Value); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// sendAndWait submits msgs and waits for the block.
func sendAndWait(clientCtx client.Context, fs *pflag.FlagSet, msgs ...sdk.Msg) (*sdk.TxResponse, error) {
	s, err := newSigner(clientCtx, fs)
	if err != nil {
		return nil, err
	}
	hash, err := s.submit(msgs...)
	if err != nil {
		return nil, err
	}
	return waitCommitted(clientCtx, hash)
}
