// Package txclient signs, broadcasts and waits for x/topics transactions from Go: the CLI,
// the group consumer and tests share it.
package txclient

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	rpcclient "github.com/cometbft/cometbft/rpc/client"
	"github.com/cosmos/gogoproto/proto"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"

	"github.com/bftlog/bftlog/app/ordering"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// CommitTimeout bounds how long Wait waits for a transaction to land in a block.
const CommitTimeout = 60 * time.Second

// commitTimeout is CommitTimeout, shortened by tests.
var commitTimeout = CommitTimeout

// ErrNotCommitted is a transaction the node accepted into its mempool that was not found in a
// block within CommitTimeout: its outcome is unknown (it may still be committed). Wait's error
// matches it with errors.Is.
var ErrNotCommitted = errors.New("not committed")

// Stage is where the chain refused a transaction.
type Stage int

const (
	// Simulated: the gas simulation before broadcast failed (it runs the messages, so a
	// module's refusal usually shows here).
	Simulated Stage = iota + 1
	// Checked: the node's CheckTx refused it (ante handler: sequence, fees, gas, size) or
	// its mempool did not take it.
	Checked
	// Delivered: it was committed in a block and failed there.
	Delivered
)

// TxError is a transaction the chain refused, with the codespace and code of the error that
// refused it. It unwraps to errorsmod.ABCIError(codespace, code, Log), so errors.Is matches the
// registered error (types.ErrX, sdkerrors.ErrX) the chain refused it with, and
// errorsmod.ABCIInfo reads its codespace and code.
type TxError struct {
	Stage  Stage
	TxHash string // unset for a simulation
	Height int64  // set when Delivered
	// Log is the chain's log of the refusal (the error's message).
	Log       string
	codespace string
	code      uint32
	abci      error
}

// NewTxError is the error of a transaction refused with (codespace, code).
func NewTxError(stage Stage, hash string, height int64, codespace string, code uint32, log string) *TxError {
	return &TxError{Stage: stage, TxHash: hash, Height: height, Log: log, codespace: codespace, code: code,
		abci: errorsmod.ABCIError(codespace, code, log)}
}

func (e *TxError) Error() string {
	switch e.Stage {
	case Simulated:
		return fmt.Sprintf("transaction refused in simulation: %s (codespace %s, code %d)", e.Log, e.codespace, e.code)
	case Delivered:
		return fmt.Sprintf("transaction %s failed in block %d: %s (codespace %s, code %d)", e.TxHash, e.Height, e.Log, e.codespace, e.code)
	default:
		return fmt.Sprintf("transaction rejected: %s (codespace %s, code %d)", e.Log, e.codespace, e.code)
	}
}

// Unwrap is the ABCI error: the registered error of (codespace, code) wrapped with Log.
func (e *TxError) Unwrap() error { return e.abci }

// Cause is Unwrap for errorsmod's helpers, which follow Cause.
func (e *TxError) Cause() error { return e.abci }

// Codespace is the module (or "sdk") that registered the error.
func (e *TxError) Codespace() string { return e.codespace }

// ABCICode is the error's code within its codespace.
func (e *TxError) ABCICode() uint32 { return e.code }

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
	// unordered signs SDK v0.53 unordered transactions (no account sequence); lastTimeout is
	// the last timeout timestamp used, which is also the transaction's nonce on chain.
	unordered   bool
	lastTimeout time.Time
	// timeoutSpread, drawn once per signer below a millisecond, is added to every timeout: two
	// processes signing with one key at the same instant (two gateways answering one block)
	// would otherwise pick the same nonce where the clock is coarse.
	timeoutSpread time.Duration
	// nodes, when set, carries every transaction and its wait, failing over between nodes.
	nodes *Nodes
}

// UnorderedTTL is how long an unordered transaction stays valid (the chain allows at most 10
// minutes); it is also how long the chain remembers its nonce.
const UnorderedTTL = 5 * time.Minute

// UseUnordered signs every transaction as an SDK v0.53 unordered transaction: no account
// sequence, so several processes can sign with one key (two gateways, a gateway and the CLI)
// without invalidating each other's transactions. On a chain that does not enable them the
// signer falls back to sequences on the first refusal.
func (s *Signer) UseUnordered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unordered = true
	s.txf = s.txf.WithUnordered(true).WithSequence(0)
	var b [8]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	s.timeoutSpread = time.Duration(binary.BigEndian.Uint64(b[:]) % uint64(time.Millisecond))
}

// nextTimeout is a timeout timestamp later than any this signer used: the chain refuses a
// second unordered transaction of one signer with the same timeout (it is the nonce).
func (s *Signer) nextTimeout() time.Time {
	t := time.Now().Add(UnorderedTTL + s.timeoutSpread)
	if !t.After(s.lastTimeout) {
		t = s.lastTimeout.Add(time.Nanosecond)
	}
	s.lastTimeout = t
	return t
}

// UseRawIngress broadcasts by POSTing the signed bytes to a node's binary ingress URL
// (bftlogd serves it at /bftlog/tx/raw on its API server).
func (s *Signer) UseRawIngress(url string) { s.rawURL = url }

// UseNodes sends through a list of nodes, failing over between them (Nodes): each
// transaction goes to the current node's ingress (or RPC, for a node without an API address),
// its commit is waited for there, and when that node stops answering the transaction is looked
// up by hash on the next one and handed to it, the same bytes, if it does not have it. The
// signer's simulations and account reads go through the list too. A signer whose client
// context's Client is a *Nodes uses it from the start.
func (s *Signer) UseNodes(n *Nodes) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = n
	s.clientCtx = s.clientCtx.WithClient(n)
}

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
	if txf.Fees().IsZero() && txf.GasPrices().IsZero() {
		txf = txf.WithGasPrices(ChainGasPrice(clientCtx))
	}
	nodes, _ := clientCtx.Client.(*Nodes)
	return &Signer{clientCtx: clientCtx, txf: txf, autoGas: autoGas, nodes: nodes}, nil
}

// ChainGasPrice is the chain's consensus minimum gas price (x/topics param min_gas_price) as
// a --gas-prices value, or "" when the chain sets none or cannot be asked: every transaction
// must pay gas limit x that price, so a client that sets no fee of its own pays exactly it.
func ChainGasPrice(clientCtx client.Context) string {
	res, err := types.NewQueryClient(clientCtx).Params(context.Background(), &types.QueryParamsRequest{})
	if err != nil || !res.Params.HasMinGasPrice() {
		return ""
	}
	return res.Params.MinGasPrice.String()
}

// Address is the signer's account address.
func (s *Signer) Address() string { return s.clientCtx.GetFromAddress().String() }

// Submit signs msgs as one transaction and broadcasts it in sync mode (it returns once the
// mempool accepted it) and returns its hash. SubmitAndWait also sees it through to a block,
// across nodes with UseNodes.
func (s *Signer) Submit(msgs ...sdk.Msg) (string, error) {
	txn, err := s.send(0, msgs...)
	return txn.hash, err
}

// send is Submit, returning what the node list (if any) needs to see the transaction through.
// A gas limit other than 0 is used as given, without simulation.
func (s *Signer) send(gas uint64, msgs ...sdk.Msg) (sent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	txn, err := s.submit(gas, msgs...)
	// A refusal of the account sequence, in simulation or in CheckTx, means another process
	// signed with this key (or a transaction was lost): never keep the stale sequence.
	for retry := 0; retry < 2 && s.recover(err); retry++ {
		txn, err = s.submit(gas, msgs...)
	}
	return txn, err
}

// recover prepares the signer to send again after err and tells whether it is worth it.
func (s *Signer) recover(err error) bool {
	switch {
	case s.unordered && errors.Is(err, sdkerrors.ErrNotSupported):
		// The chain does not enable unordered transactions: sign with sequences.
		s.unordered = false
		s.txf = s.txf.WithUnordered(false).WithTimeoutTimestamp(time.Time{})
		return s.resync() == nil
	case !s.unordered && errors.Is(err, sdkerrors.ErrWrongSequence):
		return s.resync() == nil
	}
	// A timeout the key used already (an unordered transaction's nonce) is refused with
	// sdkerrors.ErrInvalidRequest, and is not signed again here: the same refusal answers a
	// node that is handed this very transaction after it committed elsewhere (UseNodes), and
	// signing it anew would run it twice. timeoutSpread keeps two signers of one key apart.
	return false
}

// resync re-reads the account number and sequence from the chain.
func (s *Signer) resync() error {
	txf, err := s.txf.WithAccountNumber(0).WithSequence(0).Prepare(s.clientCtx)
	if err != nil {
		return err
	}
	s.txf = txf
	return nil
}

// submit is one attempt of Submit, with s.mu held.
func (s *Signer) submit(gas uint64, msgs ...sdk.Msg) (sent, error) {
	txf := s.txf
	if s.unordered {
		txf = txf.WithTimeoutTimestamp(s.nextTimeout())
	}
	if gas > 0 {
		txf = txf.WithGas(gas)
	} else if s.autoGas {
		gas, err := s.simulate(txf, msgs...)
		for wait := 50 * time.Millisecond; s.aheadOfNode(err) && wait <= time.Second; wait *= 2 {
			// A simulation is a query: it does not wait for the mempool, and right after a
			// commit it can run on the new state before the node has re-applied our pending
			// transactions, so it expects the sequence of one of them (seen in CI). Ask again.
			time.Sleep(wait)
			gas, err = s.simulate(txf, msgs...)
		}
		if err != nil {
			return sent{}, err
		}
		txf = txf.WithGas(gas)
	}
	if s.fixedGas && gas == 0 {
		txf = txf.WithGas(FixedGas(msgs...))
	}
	txb, err := txf.BuildUnsignedTx(msgs...)
	if err != nil {
		return sent{}, err
	}
	if err := tx.Sign(context.Background(), txf, s.clientCtx.FromName, txb, true); err != nil {
		return sent{}, err
	}
	bz, err := s.clientCtx.TxConfig.TxEncoder()(txb.GetTx())
	if err != nil {
		return sent{}, err
	}
	var res *sdk.TxResponse
	var at *endpoint
	if s.nodes != nil {
		if res, at, err = s.nodes.broadcast(bz); err != nil {
			return sent{}, err
		}
	} else if s.rawURL != "" {
		if res, err = postRaw(s.rawURL, bz); err != nil {
			return sent{}, err
		}
	} else if s.txService != nil {
		out, err := s.txService.BroadcastTx(context.Background(), &txtypes.BroadcastTxRequest{TxBytes: bz, Mode: txtypes.BroadcastMode_BROADCAST_MODE_SYNC})
		if err != nil {
			return sent{}, err
		}
		res = out.TxResponse
	} else if res, err = s.clientCtx.BroadcastTxSync(bz); err != nil {
		return sent{}, err
	}
	if res.Code != 0 {
		return sent{}, NewTxError(Checked, res.TxHash, 0, res.Codespace, res.Code, res.RawLog)
	}
	if !s.unordered {
		s.txf = s.txf.WithSequence(s.txf.Sequence() + 1)
	}
	return sent{hash: res.TxHash, tx: bz, at: at, gas: txf.Gas()}, nil
}

// simulate runs msgs as a transaction of txf on the node's current state and returns the gas
// to give it. It asks the node's ABCI query "/app/simulate", which answers a refusal with the
// error's codespace and code (the tx service's Simulate keeps only its text): a refusal is a
// *TxError of stage Simulated.
func (s *Signer) simulate(txf tx.Factory, msgs ...sdk.Msg) (uint64, error) {
	if txf.Fees().IsZero() && !txf.GasPrices().IsZero() {
		// With gas prices a simulation carries no fee (its gas is 0), so it leaves out the gas
		// of deducting the fee (bank writes) and a small transaction then runs out of gas.
		// Simulate with a token fee in each price's denom: the deduction costs the same.
		var fee sdk.Coins
		for _, p := range txf.GasPrices() {
			fee = fee.Add(sdk.NewCoin(p.Denom, math.OneInt()))
		}
		txf = txf.WithGasPrices("").WithFees(fee.String())
	}
	node, err := s.clientCtx.GetNode()
	if err != nil {
		// No CometBFT RPC client, only gRPC: the tx service is the one way to simulate.
		_, gas, err := tx.CalculateGas(s.clientCtx, txf, msgs...)
		return gas, err
	}
	txBytes, err := txf.BuildSimTx(msgs...)
	if err != nil {
		return 0, err
	}
	res, err := node.ABCIQueryWithOptions(context.Background(), "/app/simulate", txBytes, rpcclient.ABCIQueryOptions{})
	if err != nil {
		return 0, err
	}
	if !res.Response.IsOK() {
		return 0, NewTxError(Simulated, "", 0, res.Response.Codespace, res.Response.Code, res.Response.Log)
	}
	// The answer is sdk.SimulationResponse in proto JSON; only the gas is needed (uint64 is a
	// decimal string there).
	var sim struct {
		GasInfo struct {
			GasUsed uint64 `json:"gas_used,string"`
		} `json:"gas_info"`
	}
	if err := json.Unmarshal(res.Response.Value, &sim); err != nil {
		return 0, fmt.Errorf("simulation answer: %w", err)
	}
	return uint64(txf.GasAdjustment() * float64(sim.GasInfo.GasUsed)), nil
}

// aheadOfNode tells whether err refused this signer's next sequence because the node's account
// is behind it: the node expects the sequence of a transaction already accepted from us. The
// account's sequence is read from the node, not from the error's text.
func (s *Signer) aheadOfNode(err error) bool {
	if !errors.Is(err, sdkerrors.ErrWrongSequence) {
		return false
	}
	retriever := s.txf.AccountRetriever()
	if retriever == nil {
		retriever = s.clientCtx.AccountRetriever
	}
	if retriever == nil {
		return false
	}
	_, seq, qerr := retriever.GetAccountNumberSequence(s.clientCtx, s.clientCtx.GetFromAddress())
	return qerr == nil && seq < s.txf.Sequence()
}

// SubmitAndWait submits msgs and waits until they are committed.
func (s *Signer) SubmitAndWait(msgs ...sdk.Msg) (*sdk.TxResponse, error) {
	p, err := s.SubmitAdmitted(0, msgs...)
	if err != nil {
		return nil, err
	}
	return p.Wait()
}

// Admitted is a transaction a node's CheckTx accepted: in its mempool, not yet in a block.
type Admitted struct {
	Hash string
	// Gas is the transaction's gas limit: simulated (with the gas adjustment) or as given.
	Gas uint64
	s   *Signer
	txn sent
}

// SubmitAdmitted is Submit returning what Wait needs to see the transaction through to its
// block later, from another goroutine if the caller answers its own client first. A gas limit
// other than 0 is used as given: no simulation round trip, and a refusal by the messages
// themselves shows only in the block.
func (s *Signer) SubmitAdmitted(gas uint64, msgs ...sdk.Msg) (*Admitted, error) {
	txn, err := s.send(gas, msgs...)
	if err != nil {
		return nil, err
	}
	return &Admitted{Hash: txn.hash, Gas: txn.gas, s: s, txn: txn}, nil
}

// Wait waits until the transaction is committed, as SubmitAndWait does.
func (a *Admitted) Wait() (*sdk.TxResponse, error) {
	switch {
	case a.txn.at != nil:
		return a.s.nodes.await(a.txn)
	case a.s.rawURL != "":
		return waitRaw(resultURL(a.s.rawURL), a.txn.hash)
	}
	return Wait(a.s.clientCtx, a.txn.hash)
}

// resultURL is the ingress's result endpoint (app.RawTxResultPath) beside its tx endpoint
// (app.RawTxPath).
func resultURL(rawURL string) string { return strings.TrimSuffix(rawURL, "/raw") + "/result" }

// waitRaw is Wait through the ingress's result endpoint: the node waits for the commit and
// answers with the result alone, not the whole transaction.
func waitRaw(url, hash string) (*sdk.TxResponse, error) {
	cl := &http.Client{Timeout: 20 * time.Second}
	return waitFor(hash, func() (*sdk.TxResponse, time.Duration, error) {
		res, err := getResult(cl, url+"?hash="+hash+"&wait=10s")
		if errors.Is(err, errNotInBlock) {
			return nil, 0, err // the node waited already
		}
		return res, 100 * time.Millisecond, err // else unreachable or restarting
	})
}

var errNotInBlock = errors.New("not in a block yet")

func getResult(cl *http.Client, url string) (*sdk.TxResponse, error) {
	resp, err := cl.Get(url)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound {
		resp.Body.Close()
		return nil, errNotInBlock
	}
	return ingressAnswer(resp)
}

// Wait polls until the tx is in a block (acks=all) and fails if it did not succeed: with a
// *TxError (stage Delivered) when it failed in its block, with an error matching
// ErrNotCommitted when it is not in a block after CommitTimeout.
func Wait(clientCtx client.Context, hash string) (*sdk.TxResponse, error) {
	return waitFor(hash, func() (*sdk.TxResponse, time.Duration, error) {
		res, err := authtx.QueryTx(clientCtx, hash)
		if err != nil {
			// A block that named it by digest: CometBFT indexed the reference's result.
			if found, serr := authtx.QueryTxsByEvents(clientCtx, 1, 1, OrderedQuery(hash), ""); serr == nil && found != nil && len(found.Txs) > 0 {
				res, err = found.Txs[0], nil
				res.TxHash = strings.ToUpper(hash)
			}
		}
		return res, 100 * time.Millisecond, err
	})
}

// OrderedQuery finds the result of a transaction a block named by its digest instead of
// carrying it (ordering.by-digest, app/ordering.go): CometBFT indexes that result under the
// reference's hash, with an "ordered" event naming the transaction's own.
func OrderedQuery(hash string) string { return ordering.OrderedQuery(hash) }

// waitFor asks lookup until it finds the committed tx (then fails on a non-zero code) or
// CommitTimeout passes, pausing as long as lookup says between tries.
func waitFor(hash string, lookup func() (*sdk.TxResponse, time.Duration, error)) (*sdk.TxResponse, error) {
	deadline := time.Now().Add(commitTimeout)
	for {
		res, pause, err := lookup()
		if err == nil {
			if res.Code != 0 {
				return res, NewTxError(Delivered, hash, res.Height, res.Codespace, res.Code, res.RawLog)
			}
			return res, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("transaction %s %w after %s: %w", hash, ErrNotCommitted, commitTimeout, err)
		}
		time.Sleep(pause)
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

// compressedRecordBytes is what a MsgProduce's compressed batches decompress to (0 for other
// messages, uncompressed batches and batches the chain will refuse anyway).
func compressedRecordBytes(m sdk.Msg) uint64 {
	pm, ok := m.(*types.MsgProduce)
	if !ok {
		return 0
	}
	var n uint64
	for _, b := range pm.Batches {
		info, err := kbatch.CheckRecordBatch(b.RecordBatch, kbatch.BatchLimits{MaxRecordBytes: 1 << 40, MaxDecompressedBytes: 1 << 40, MaxHeaders: 1 << 30})
		if err == nil && info.Compression != kbatch.CompressionNone {
			n += info.RecordBytes
		}
	}
	return n
}

// FixedGas is a gas limit for msgs derived from their size, enough for x/topics messages,
// without a simulation: what SetFixedGas gives every transaction.
func FixedGas(msgs ...sdk.Msg) uint64 {
	var size, decompressed uint64
	for _, m := range msgs {
		if pm, ok := m.(interface{ Size() int }); ok {
			size += uint64(pm.Size())
		}
		decompressed += compressedRecordBytes(m)
	}
	// Store writes cost 30 gas per byte and the tx 10 per byte; 60 per byte leaves room for
	// key bytes, reads and events. A compressed batch also pays 12 gas per byte it
	// decompresses to (the keeper's RecordBytesGas + DecompressedBytesGas), which its size
	// does not show.
	return 300_000 + 60*size + 12*decompressed
}

// Simulates tells whether the signer simulates each transaction for its gas (no gas limit
// was given and SetFixedGas was not called).
func (s *Signer) Simulates() bool { return s.autoGas }

// SetFixedGas stops per-transaction simulation: the gas limit is then derived from the
// transaction's size (see fixedGas), enough for x/topics messages. Load generators use it to
// avoid a simulation round trip per batch.
func (s *Signer) SetFixedGas() { s.autoGas, s.fixedGas = false, true }

// ingressClient bounds a submission: the ingress answers after CheckTx, so a node that does not
// answer in this time (paused, partitioned) is treated as down rather than blocking its caller.
var ingressClient = &http.Client{Timeout: 30 * time.Second}

// postRaw sends tx bytes to a binary ingress and decodes its JSON answer.
func postRaw(url string, bz []byte) (*sdk.TxResponse, error) {
	resp, err := ingressClient.Post(url, "application/octet-stream", bytes.NewReader(bz))
	if err != nil {
		return nil, err
	}
	return ingressAnswer(resp)
}

// ErrIngressUnavailable is a submission the node's ingress took but could not pass on to
// CometBFT (it answered 502). The ingress runs in the node's process and fails before the
// mempool admits anything, but a caller cannot know that: it may send the messages again only
// where something on chain refuses a second copy (a produce's producer sequence).
var ErrIngressUnavailable = errors.New("the node's ingress could not pass the transaction on")

// maxAnswerBytes bounds what a client reads of an ingress or result answer.
const maxAnswerBytes = 4 << 20

// ingressAnswer decodes (and closes) an answer of the binary ingress: app.RawTxResponse or
// app.RawTxResult, whose fields are TxResponse's.
func ingressAnswer(resp *http.Response) (*sdk.TxResponse, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		err := fmt.Errorf("ingress: %s: %s", resp.Status, bytes.TrimSpace(msg))
		if resp.StatusCode == http.StatusBadGateway {
			// The node could not hand the transaction to CometBFT (ErrIngressUnavailable says
			// what a caller may do about it).
			err = fmt.Errorf("%w: %w", ErrIngressUnavailable, err)
		}
		return nil, err
	}
	var out ordering.RawTxResult // a RawTxResponse's fields are among its

	// Bounded: a result is a few hundred bytes plus the messages' responses.
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&out); err != nil {
		return nil, err
	}
	return &sdk.TxResponse{TxHash: out.TxHash, Height: out.Height, Code: out.Code, Codespace: out.Codespace, RawLog: out.RawLog, Data: out.Data}, nil
}
