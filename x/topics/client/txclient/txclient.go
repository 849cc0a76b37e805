// Package txclient signs, broadcasts and waits for x/topics transactions from Go: the CLI,
// the group consumer and tests share it.
package txclient

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/cosmos/gogoproto/proto"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"
)

// CommitTimeout bounds how long Wait waits for a transaction to land in a block.
const CommitTimeout = 60 * time.Second

// Signer signs and broadcasts transactions of one account. It keeps the account sequence
// itself so that several transactions can be in flight at once.
type Signer struct {
	// mu serialises signing: the account sequence is shared by every caller.
	mu        sync.Mutex
	clientCtx client.Context
	txf       tx.Factory
	autoGas   bool
	fixedGas  bool
	// txService, when set, broadcasts over the node's gRPC (binary protobuf) instead of
	// CometBFT's JSON-RPC, which spends most of a node's CPU parsing large transactions.
	txService txtypes.ServiceClient
	rawURL    string
}

// UseRawIngress broadcasts by POSTing the signed bytes to a node's binary ingress URL
// (bftlogd serves it at /bftlog/tx/raw on its API server).
func (s *Signer) UseRawIngress(url string) { s.rawURL = url }

// UseGRPC broadcasts through the node's gRPC tx service on conn.
func (s *Signer) UseGRPC(conn grpc.ClientConnInterface) { s.txService = txtypes.NewServiceClient(conn) }

// NewSignerFromFlags builds a signer from a command's standard tx flags; gas is simulated
// unless --gas is set.
func NewSignerFromFlags(clientCtx client.Context, fs *pflag.FlagSet) (*Signer, error) {
	txf, err := tx.NewFactoryCLI(clientCtx, fs)
	if err != nil {
		return nil, err
	}
	return NewSigner(clientCtx, txf, txf.SimulateAndExecute() || !fs.Changed(flags.FlagGas))
}

// NewSigner prepares txf (account number and sequence) for clientCtx.FromName. With autoGas,
// each transaction's gas is simulated; record batches need far more than a fixed default.
func NewSigner(clientCtx client.Context, txf tx.Factory, autoGas bool) (*Signer, error) {
	txf, err := txf.Prepare(clientCtx)
	if err != nil {
		return nil, err
	}
	if txf.GasAdjustment() <= 1 {
		txf = txf.WithGasAdjustment(1.3)
	}
	return &Signer{clientCtx: clientCtx, txf: txf, autoGas: autoGas}, nil
}

// Address is the signer's account address.
func (s *Signer) Address() string { return s.clientCtx.GetFromAddress().String() }

// Submit signs msgs as one transaction and broadcasts it in sync mode (it returns once the
// mempool accepted it) and returns its hash.
func (s *Signer) Submit(msgs ...sdk.Msg) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	txf := s.txf
	if s.autoGas {
		_, gas, err := tx.CalculateGas(s.clientCtx, txf, msgs...)
		for wait := 50 * time.Millisecond; s.aheadOfNode(err) && wait <= time.Second; wait *= 2 {
			// A simulation is a query: it does not wait for the mempool, and right after a
			// commit it can run on the new state before the node has re-applied our pending
			// transactions, so it expects the sequence of one of them (seen in CI). Ask again.
			time.Sleep(wait)
			_, gas, err = tx.CalculateGas(s.clientCtx, txf, msgs...)
		}
		if err != nil {
			return "", err
		}
		txf = txf.WithGas(gas)
	}
	if s.fixedGas {
		var size int
		for _, m := range msgs {
			if pm, ok := m.(interface{ Size() int }); ok {
				size += pm.Size()
			}
		}
		// Store writes cost 30 gas per byte and the tx 10 per byte; 60 per byte leaves room
		// for key bytes, reads and events.
		txf = txf.WithGas(uint64(300_000 + 60*size))
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
	var res *sdk.TxResponse
	if s.rawURL != "" {
		if res, err = postRaw(s.rawURL, bz); err != nil {
			return "", err
		}
	} else if s.txService != nil {
		out, err := s.txService.BroadcastTx(context.Background(), &txtypes.BroadcastTxRequest{TxBytes: bz, Mode: txtypes.BroadcastMode_BROADCAST_MODE_SYNC})
		if err != nil {
			return "", err
		}
		res = out.TxResponse
	} else if res, err = s.clientCtx.BroadcastTxSync(bz); err != nil {
		return "", err
	}
	if res.Code != 0 {
		if res.Codespace == sdkerrors.ErrWrongSequence.Codespace() && res.Code == sdkerrors.ErrWrongSequence.ABCICode() {
			// The local sequence drifted (a tx accepted but lost, or one whose answer was lost):
			// re-read the account so the next submission can succeed.
			if txf, err := s.txf.WithAccountNumber(0).WithSequence(0).Prepare(s.clientCtx); err == nil {
				s.txf = txf
			}
		}
		return "", fmt.Errorf("transaction rejected: %s (codespace %s, code %d)", res.RawLog, res.Codespace, res.Code)
	}
	s.txf = s.txf.WithSequence(s.txf.Sequence() + 1)
	return res.TxHash, nil
}

var wrongSequence = regexp.MustCompile(`account sequence mismatch, expected (\d+), got (\d+)`)

// aheadOfNode tells whether err refused this signer's next sequence as too high: the node
// expects a sequence of a transaction already accepted from it.
func (s *Signer) aheadOfNode(err error) bool {
	if err == nil {
		return false
	}
	m := wrongSequence.FindStringSubmatch(err.Error())
	if m == nil {
		return false
	}
	expected, err1 := strconv.ParseUint(m[1], 10, 64)
	got, err2 := strconv.ParseUint(m[2], 10, 64)
	return err1 == nil && err2 == nil && got == s.txf.Sequence() && expected < got
}

// SubmitAndWait submits msgs and waits until they are committed.
func (s *Signer) SubmitAndWait(msgs ...sdk.Msg) (*sdk.TxResponse, error) {
	hash, err := s.Submit(msgs...)
	if err != nil {
		return nil, err
	}
	return Wait(s.clientCtx, hash)
}

// Wait polls until the tx is in a block (acks=all) and fails if it did not succeed.
func Wait(clientCtx client.Context, hash string) (*sdk.TxResponse, error) {
	deadline := time.Now().Add(CommitTimeout)
	for {
		res, err := authtx.QueryTx(clientCtx, hash)
		if err == nil {
			if res.Code != 0 {
				return res, fmt.Errorf("transaction %s failed in block %d: %s (codespace %s, code %d)", hash, res.Height, res.RawLog, res.Codespace, res.Code)
			}
			return res, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("transaction %s not committed after %s: %w", hash, CommitTimeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Responses decodes every Msg response of type T from a committed tx, in message order.
func Responses[T any, PT interface {
	*T
	proto.Message
	Unmarshal([]byte) error
}](clientCtx client.Context, res *sdk.TxResponse) ([]T, error) {
	raw, err := hex.DecodeString(res.Data)
	if err != nil {
		return nil, err
	}
	var data sdk.TxMsgData
	if err := clientCtx.Codec.Unmarshal(raw, &data); err != nil {
		return nil, err
	}
	url := "/" + proto.MessageName(PT(new(T)))
	var out []T
	for _, a := range data.MsgResponses {
		if a.TypeUrl != url {
			continue
		}
		var v T
		if err := PT(&v).Unmarshal(a.Value); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// SetFixedGas stops per-transaction simulation: the gas limit is then derived from the
// transaction's size (see fixedGas), enough for x/topics messages. Load generators use it to
// avoid a simulation round trip per batch.
func (s *Signer) SetFixedGas() { s.autoGas, s.fixedGas = false, true }

// postRaw sends tx bytes to a binary ingress and decodes its JSON answer.
func postRaw(url string, bz []byte) (*sdk.TxResponse, error) {
	resp, err := http.Post(url, "application/octet-stream", bytes.NewReader(bz))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("ingress: %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	var out struct {
		TxHash    string `json:"txhash"`
		Code      uint32 `json:"code"`
		Codespace string `json:"codespace"`
		RawLog    string `json:"raw_log"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return &sdk.TxResponse{TxHash: out.TxHash, Code: out.Code, Codespace: out.Codespace, RawLog: out.RawLog}, nil
}
