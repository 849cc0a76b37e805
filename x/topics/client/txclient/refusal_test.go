package txclient_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cometbft/cometbft/libs/bytes"
	rpcclient "github.com/cometbft/cometbft/rpc/client"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	cmttypes "github.com/cometbft/cometbft/types"
	"github.com/stretchr/testify/require"

	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/client/tx"
	"github.com/cosmos/cosmos-sdk/crypto/hd"
	"github.com/cosmos/cosmos-sdk/crypto/keyring"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// node is a CometBFT RPC that answers simulations, CheckTx and committed results as told.
type node struct {
	client.CometRPC
	mu sync.Mutex
	// simulations are the answers to "/app/simulate" in order (the last one repeats).
	simulations []abci.ResponseQuery
	simulated   int
	check       abci.ResponseCheckTx
	deliver     abci.ExecTxResult
	txs         map[string]cmttypes.Tx
	broadcast   []cmttypes.Tx
}

func (n *node) ABCIQueryWithOptions(_ context.Context, path string, _ bytes.HexBytes, _ rpcclient.ABCIQueryOptions) (*coretypes.ResultABCIQuery, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if path != "/app/simulate" {
		return nil, fmt.Errorf("unexpected query %s", path)
	}
	res := n.simulations[min(n.simulated, len(n.simulations)-1)]
	n.simulated++
	return &coretypes.ResultABCIQuery{Response: res}, nil
}

func (n *node) BroadcastTxSync(_ context.Context, t cmttypes.Tx) (*coretypes.ResultBroadcastTx, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.broadcast = append(n.broadcast, t)
	if n.check.Code == 0 {
		n.txs[hex.EncodeToString(t.Hash())] = t
	}
	return &coretypes.ResultBroadcastTx{Code: n.check.Code, Codespace: n.check.Codespace, Log: n.check.Log, Hash: t.Hash()}, nil
}

func (n *node) Tx(_ context.Context, hash []byte, _ bool) (*coretypes.ResultTx, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.txs[hex.EncodeToString(hash)]
	if !ok {
		return nil, errors.New("tx not found")
	}
	return &coretypes.ResultTx{Hash: hash, Height: 12, Tx: t, TxResult: n.deliver}, nil
}

func (n *node) Block(_ context.Context, h *int64) (*coretypes.ResultBlock, error) {
	return &coretypes.ResultBlock{Block: &cmttypes.Block{Header: cmttypes.Header{Height: *h, Time: time.Now()}}}, nil
}

// account answers the signer's account number and a sequence that tests move.
type account struct {
	mu  sync.Mutex
	seq uint64
}

func (a *account) GetAccount(client.Context, sdk.AccAddress) (client.Account, error) {
	return nil, errors.New("unused")
}

func (a *account) GetAccountWithHeight(client.Context, sdk.AccAddress) (client.Account, int64, error) {
	return nil, 0, errors.New("unused")
}
func (a *account) EnsureExists(client.Context, sdk.AccAddress) error { return nil }
func (a *account) GetAccountNumberSequence(client.Context, sdk.AccAddress) (uint64, uint64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return 4, a.seq, nil
}

func simulated(gasUsed uint64) abci.ResponseQuery {
	return abci.ResponseQuery{Value: fmt.Appendf(nil, `{"gas_info":{"gas_wanted":"0","gas_used":"%d"},"result":{"data":null,"log":"","events":[],"msg_responses":[]}}`, gasUsed)}
}

func refused(e *errorsmod.Error, log string) abci.ResponseQuery {
	return abci.ResponseQuery{Codespace: e.Codespace(), Code: e.ABCICode(), Log: log}
}

type fixture struct {
	node    *node
	account *account
	signer  *txclient.Signer
	ctx     client.Context
	msg     *types.MsgProduce
}

func newFixture(t *testing.T) *fixture {
	enc := moduletestutil.MakeTestEncodingConfig()
	types.RegisterInterfaces(enc.InterfaceRegistry)
	kr := keyring.NewInMemory(enc.Codec)
	rec, _, err := kr.NewMnemonic("alice", keyring.English, sdk.FullFundraiserPath, keyring.DefaultBIP39Passphrase, hd.Secp256k1)
	require.NoError(t, err)
	addr, err := rec.GetAddress()
	require.NoError(t, err)
	producer, err := enc.InterfaceRegistry.SigningContext().AddressCodec().BytesToString(addr)
	require.NoError(t, err)
	batch, err := types.NewProduceBatch("demo", 7, []types.BatchRecord{{Value: &types.Bytes{Data: []byte("x")}}}, kbatch.CompressionNone)
	require.NoError(t, err)
	f := &fixture{
		node:    &node{simulations: []abci.ResponseQuery{simulated(100_000)}, txs: map[string]cmttypes.Tx{}},
		account: &account{seq: 3},
		msg:     &types.MsgProduce{Producer: producer, Batches: []types.ProduceBatch{batch}},
	}
	f.ctx = client.Context{}.WithCodec(enc.Codec).WithInterfaceRegistry(enc.InterfaceRegistry).WithTxConfig(enc.TxConfig).
		WithAccountRetriever(f.account).WithKeyring(kr).WithClient(f.node).WithChainID("test").
		WithBroadcastMode(flags.BroadcastSync).WithFromName("alice").WithFromAddress(addr)
	txf := tx.Factory{}.WithChainID("test").WithKeybase(kr).WithTxConfig(enc.TxConfig).
		WithAccountRetriever(f.account).WithSignMode(signing.SignMode_SIGN_MODE_DIRECT)
	f.signer, err = txclient.NewSigner(f.ctx, txf, true)
	require.NoError(t, err)
	return f
}

// requireRefusal checks that err is a refusal at stage carrying want's codespace and code, that
// errors.Is matches want (and not another registered error), and that ABCIInfo reads the code.
func requireRefusal(t *testing.T, err error, stage txclient.Stage, want *errorsmod.Error) *txclient.TxError {
	t.Helper()
	require.ErrorIs(t, err, want)
	require.NotErrorIs(t, err, types.ErrUnknownTopic)
	require.NotErrorIs(t, err, txclient.ErrNotCommitted)
	var txErr *txclient.TxError
	require.ErrorAs(t, err, &txErr)
	require.Equal(t, stage, txErr.Stage)
	codespace, code, _ := errorsmod.ABCIInfo(err, false)
	require.Equal(t, want.Codespace(), codespace)
	require.Equal(t, want.ABCICode(), code)
	require.Equal(t, want.Codespace(), txErr.Codespace())
	require.Equal(t, want.ABCICode(), txErr.ABCICode())
	return txErr
}

// A simulation that the module refuses keeps the module's codespace and code (the tx service's
// Simulate would flatten them into text); nothing is broadcast.
func TestSimulationRefusal(t *testing.T) {
	f := newFixture(t)
	log := "failed to simulate tx: failed to execute message; message index: 0: batch 0: topic \"demo\" has 3 partitions, asked for partition 7: partition out of range"
	f.node.simulations = []abci.ResponseQuery{refused(types.ErrInvalidPartition, log)}
	_, err := f.signer.Submit(f.msg)
	txErr := requireRefusal(t, err, txclient.Simulated, types.ErrInvalidPartition)
	require.Equal(t, log, txErr.Log)
	require.Equal(t, "transaction refused in simulation: "+log+" (codespace topics, code 5)", err.Error())
	require.Empty(t, f.node.broadcast)
}

// A CheckTx refusal: the codespace and code of the node's answer, the message as before.
func TestCheckTxRefusal(t *testing.T) {
	f := newFixture(t)
	f.node.check = abci.ResponseCheckTx{Codespace: types.ModuleName, Code: types.ErrUnauthorizedProducer.ABCICode(), Log: "not on the allow list: producer not authorized for topic"}
	_, err := f.signer.Submit(f.msg)
	requireRefusal(t, err, txclient.Checked, types.ErrUnauthorizedProducer)
	require.Equal(t, "transaction rejected: not on the allow list: producer not authorized for topic (codespace topics, code 10)", err.Error())
	require.Len(t, f.node.broadcast, 1)
	require.Equal(t, uint64(130_000), gasOf(t, f, f.node.broadcast[0]), "simulated gas with the 1.3 adjustment")
}

// A wrong sequence at CheckTx makes the signer re-read its account and sign again (twice at
// most); while the node keeps refusing, the refusal is returned, and the next transaction is
// signed with the node's sequence.
func TestCheckTxWrongSequenceResyncs(t *testing.T) {
	f := newFixture(t)
	f.node.check = abci.ResponseCheckTx{Codespace: sdkerrors.ErrWrongSequence.Codespace(), Code: sdkerrors.ErrWrongSequence.ABCICode(), Log: "account sequence mismatch, expected 9, got 3: incorrect account sequence"}
	f.account.seq = 9
	_, err := f.signer.Submit(f.msg)
	requireRefusal(t, err, txclient.Checked, sdkerrors.ErrWrongSequence)
	require.Len(t, f.node.broadcast, 3, "the first try and two after re-reading the account")
	require.Equal(t, []uint64{3, 9, 9}, []uint64{sequenceOf(t, f, f.node.broadcast[0]), sequenceOf(t, f, f.node.broadcast[1]), sequenceOf(t, f, f.node.broadcast[2])})
	f.node.check = abci.ResponseCheckTx{}
	_, err = f.signer.Submit(f.msg)
	require.NoError(t, err)
	require.Equal(t, uint64(9), sequenceOf(t, f, f.node.broadcast[3]))
}

// Another process signed with this key (the CLI beside a gateway): the node's account is ahead
// and the simulation refuses the stale sequence. The signer re-reads the account in the same
// Submit instead of refusing every later transaction (the gateway used to wedge here).
func TestSimulationWrongSequenceResyncs(t *testing.T) {
	f := newFixture(t)
	wrong := refused(sdkerrors.ErrWrongSequence, "account sequence mismatch, expected 4, got 3: incorrect account sequence")
	f.node.simulations = []abci.ResponseQuery{wrong, simulated(50_000)}
	f.account.seq = 4
	_, err := f.signer.Submit(f.msg)
	require.NoError(t, err)
	require.Len(t, f.node.broadcast, 1)
	require.Equal(t, uint64(4), sequenceOf(t, f, f.node.broadcast[0]))
}

// An unordered signer carries no sequence: every transaction is unordered, with a distinct
// timeout within the chain's limit, signature sequence 0, and the signer's sequence never moves;
// a wrong-sequence refusal cannot happen to it.
func TestUnorderedSigner(t *testing.T) {
	f := newFixture(t)
	f.signer.UseUnordered()
	for i := 0; i < 3; i++ {
		_, err := f.signer.Submit(f.msg)
		require.NoError(t, err)
	}
	var last time.Time
	for _, raw := range f.node.broadcast {
		utx := decode(t, f, raw).(sdk.TxWithUnordered)
		require.True(t, utx.GetUnordered())
		require.Zero(t, sequenceOf(t, f, raw))
		timeout := utx.GetTimeoutTimeStamp()
		require.True(t, timeout.After(last), "each timeout is a new nonce")
		require.True(t, timeout.Before(time.Now().Add(10*time.Minute)), "within the chain's maximum TTL")
		last = timeout
	}
}

// A timeout the key used already is refused with ErrInvalidRequest. The signer does not sign
// again: a node handed this very transaction after it committed elsewhere answers the same, and
// a second signing would run it twice. The refusal is returned after one broadcast.
func TestUnorderedNonceTakenIsNotSignedAgain(t *testing.T) {
	f := newFixture(t)
	f.signer.UseUnordered()
	f.node.check = abci.ResponseCheckTx{Codespace: sdkerrors.ErrInvalidRequest.Codespace(), Code: sdkerrors.ErrInvalidRequest.ABCICode(),
		Log: "failed to add unordered nonce: sender has already used timeout: invalid request"}
	_, err := f.signer.Submit(f.msg)
	requireRefusal(t, err, txclient.Checked, sdkerrors.ErrInvalidRequest)
	require.Len(t, f.node.broadcast, 1)
}

// On a chain without unordered transactions (ErrNotSupported), the signer falls back to
// sequences at once.
func TestUnorderedFallsBack(t *testing.T) {
	f := newFixture(t)
	f.signer.UseUnordered()
	f.node.simulations = []abci.ResponseQuery{refused(sdkerrors.ErrNotSupported, "unordered transactions are not enabled"), simulated(50_000)}
	_, err := f.signer.Submit(f.msg)
	require.NoError(t, err)
	require.Len(t, f.node.broadcast, 1)
	require.False(t, decode(t, f, f.node.broadcast[0]).(sdk.TxWithUnordered).GetUnordered())
	require.Equal(t, uint64(3), sequenceOf(t, f, f.node.broadcast[0]))
}

// A transaction that fails in its block: the result's codespace and code, with hash and height.
func TestDeliverTxFailure(t *testing.T) {
	f := newFixture(t)
	f.node.deliver = abci.ExecTxResult{Codespace: types.ModuleName, Code: types.ErrInvalidPartition.ABCICode(),
		Log: "failed to execute message; message index: 0: batch 0: topic \"demo\" has 3 partitions, asked for partition 7: partition out of range"}
	res, err := f.signer.SubmitAndWait(f.msg)
	txErr := requireRefusal(t, err, txclient.Delivered, types.ErrInvalidPartition)
	require.NotNil(t, res)
	require.Equal(t, res.TxHash, txErr.TxHash)
	require.Equal(t, int64(12), txErr.Height)
	require.Equal(t, fmt.Sprintf("transaction %s failed in block 12: %s (codespace topics, code 5)", res.TxHash, f.node.deliver.Log), err.Error())

	f.node.deliver = abci.ExecTxResult{}
	res, err = f.signer.SubmitAndWait(f.msg)
	require.NoError(t, err)
	require.Zero(t, res.Code)
}

// A simulation right after a commit can expect the sequence of a transaction the node already
// accepted from us: when the node's account is behind the signer, the simulation is asked again.
// When it is not, the signer re-reads its account and signs again at once.
func TestSimulationAheadOfNode(t *testing.T) {
	f := newFixture(t)
	_, err := f.signer.Submit(f.msg) // the signer moves to sequence 4; the node's account stays at 3
	require.NoError(t, err)
	wrong := refused(sdkerrors.ErrWrongSequence, "account sequence mismatch, expected 3, got 4: incorrect account sequence")
	f.node.simulations, f.node.simulated = []abci.ResponseQuery{wrong, wrong, simulated(50_000)}, 0
	_, err = f.signer.Submit(f.msg)
	require.NoError(t, err)
	require.Equal(t, 3, f.node.simulated)
	require.Equal(t, uint64(4), sequenceOf(t, f, f.node.broadcast[1]))

	f.account.mu.Lock()
	f.account.seq = 9 // the node is ahead: asking again would not help
	f.account.mu.Unlock()
	f.node.simulations, f.node.simulated = []abci.ResponseQuery{wrong, simulated(50_000)}, 0
	_, err = f.signer.Submit(f.msg)
	require.NoError(t, err, "re-read the account and signed again")
	require.Equal(t, 2, f.node.simulated)
	require.Equal(t, uint64(9), sequenceOf(t, f, f.node.broadcast[2]))
}

func decode(t *testing.T, f *fixture, raw cmttypes.Tx) sdk.Tx {
	t.Helper()
	decoded, err := f.ctx.TxConfig.TxDecoder()(raw)
	require.NoError(t, err)
	return decoded
}

func gasOf(t *testing.T, f *fixture, raw cmttypes.Tx) uint64 {
	return decode(t, f, raw).(sdk.FeeTx).GetGas()
}

func sequenceOf(t *testing.T, f *fixture, raw cmttypes.Tx) uint64 {
	t.Helper()
	sigs, err := decode(t, f, raw).(interface {
		GetSignaturesV2() ([]signing.SignatureV2, error)
	}).GetSignaturesV2()
	require.NoError(t, err)
	require.Len(t, sigs, 1)
	return sigs[0].Sequence
}

// An ingress that took the transaction but could not hand it to CometBFT answers 502: the
// outcome is unknown, and the error says so by matching ErrIngressUnavailable (a gateway sends
// the same batches again), where any other failed answer does not.
func TestIngressUnavailable(t *testing.T) {
	f := newFixture(t)
	status := http.StatusBadGateway
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "post failed: connection refused", status)
	}))
	defer srv.Close()
	f.signer.UseRawIngress(srv.URL + "/bftlog/tx/raw")
	_, err := f.signer.Submit(f.msg)
	require.ErrorIs(t, err, txclient.ErrIngressUnavailable)
	status = http.StatusRequestEntityTooLarge
	_, err = f.signer.Submit(f.msg)
	require.Error(t, err)
	require.NotErrorIs(t, err, txclient.ErrIngressUnavailable)
}
