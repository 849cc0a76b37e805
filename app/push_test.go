package app_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtcrypto "github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/mempool"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	cmttypes "github.com/cometbft/cometbft/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app"
)

// mempoolOf stands for a node's CometBFT mempool: broadcast_tx runs the app's CheckTx, once per
// transaction (CometBFT's cache turns away a second copy before CheckTx).
type mempoolOf struct {
	client.CometRPC
	app *app.App

	mu   sync.Mutex
	seen map[string]bool
	got  [][]byte
}

func (m *mempoolOf) BroadcastTxSync(_ context.Context, tx cmttypes.Tx) (*coretypes.ResultBroadcastTx, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[string(tx)] {
		return nil, mempool.ErrTxInCache
	}
	m.seen[string(tx)] = true
	m.got = append(m.got, tx)
	res, err := m.app.CheckTx(&abci.RequestCheckTx{Tx: tx, Type: abci.CheckTxType_New})
	if err != nil {
		return nil, err
	}
	return &coretypes.ResultBroadcastTx{Code: res.Code, Log: res.Log, Hash: tx.Hash()}, nil
}

func (m *mempoolOf) received() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.got...)
}

// newValidatorChain is an ordering node of a chain whose validators (power 1 each) are made
// from the names in vals; it signs as self ("" for none) and pushes to peers.
func newValidatorChain(t *testing.T, self string, peers []string, vals ...string) *feeChain {
	t.Helper()
	a := newOrderingApp(dbm.NewMemDB(), t.TempDir(), true, peers...)
	if self != "" {
		a.UseValidatorKey(validatorKey(self))
	}
	var pks []cmtcrypto.PubKey
	for _, v := range vals {
		pks = append(pks, validatorKey(v).PubKey())
	}
	return newChainOf(t, a, orderingSecret, pks, 1e15, 1e15)
}

func frames(txs ...[]byte) []byte {
	var b bytes.Buffer
	for _, tx := range txs {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(tx)))
		b.Write(tx)
	}
	return b.Bytes()
}

func named(t *testing.T, c *feeChain, txs [][]byte) []bool {
	t.Helper()
	prep, err := c.app.PrepareProposal(&abci.RequestPrepareProposal{Height: c.height, MaxTxBytes: 1 << 30, Txs: txs})
	require.NoError(t, err)
	require.Len(t, prep.Txs, len(txs))
	out := make([]bool, len(txs))
	for i, bz := range prep.Txs {
		_, out[i] = app.ParseTxRef(bz)
	}
	return out
}

// With ordering by digest, a transaction a node's client gave it is sent once to each peer,
// which admits it through its own CheckTx and does not send it on: each validator receives each
// batch once. The sender names it once its peers said they hold it; one whose peers refused it
// is carried whole, even after a commit; the receiver names it after a commit (the sender sent
// it to everyone). A recheck sends nothing. The endpoint takes only what CheckTx admits and
// refuses malformed bodies.
func TestAdmittedTransactionsPushedOnceToEachPeer(t *testing.T) {
	// The bytes pushed to a node that refuses everything, each transaction counted once (a
	// failed request is sent again with backoff, packed with what came since): the receiver
	// must send it nothing.
	var onward, retried atomic.Int64
	var seenMu sync.Mutex
	seen := map[[32]byte]bool{}
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seenMu.Lock()
		for len(body) >= 4 { // each transaction counted once, however its requests were packed
			n := int(binary.BigEndian.Uint32(body))
			if len(body) < 4+n {
				break
			}
			if h := sha256.Sum256(body[4 : 4+n]); seen[h] {
				retried.Add(1)
			} else {
				seen[h] = true
				onward.Add(int64(4 + n))
			}
			body = body[4+n:]
		}
		seenMu.Unlock()
		http.Error(w, "not taking any", http.StatusServiceUnavailable)
	}))
	defer sink.Close()
	// Two validators of equal power: the sender and the receiver, each signing with its key.
	receiver := newValidatorChain(t, "receiver", []string{sink.URL}, "sender", "receiver")
	receiver.app.NameOnlyAfterACommit()
	mempool := &mempoolOf{app: receiver.app, seen: map[string]bool{}}
	srv := httptest.NewServer(receiver.app.PushHandler(mempool))
	defer srv.Close()
	sender := newValidatorChain(t, "sender", []string{srv.URL}, "sender", "receiver")
	unheard := newValidatorChain(t, "sender", []string{sink.URL}, "sender", "receiver")

	txs := orderingLoad(t, sender)
	orderingLoad(t, receiver)
	orderingLoad(t, unheard)
	start := time.Now()
	for _, tx := range txs {
		require.Zero(t, checkTx(t, sender.app, abci.CheckTxType_New, tx).Code)
		require.Zero(t, checkTx(t, unheard.app, abci.CheckTxType_New, tx).Code)
	}
	require.Eventually(t, func() bool { return len(mempool.received()) == len(txs) }, 5*time.Second, time.Millisecond)
	pushed := time.Since(start)
	for _, tx := range txs {
		_, held := receiver.app.PoolHolds(tx)
		require.True(t, held, "the receiver holds what a peer pushed")
	}
	// Its mempool holds a stub of each, ~80 bytes, the pool the transaction (stub.go).
	var stubs [][]byte
	for _, tx := range txs {
		stubs = append(stubs, app.StubOf(tx))
	}
	require.ElementsMatch(t, stubs, mempool.received())
	require.Eventually(t, func() bool { return !slices.Contains(named(t, sender, txs), false) }, 5*time.Second, time.Millisecond,
		"the sender names what its peer said it holds")
	t.Logf("%d transactions of %d bytes pushed, admitted by the peer in %v, named by the sender %v after CheckTx", len(txs), len(txs[0]), pushed, time.Since(start))
	// The sender heard from its one peer, which makes more than two thirds of the two: it tells
	// the receiver, which names them before any commit.
	require.Eventually(t, func() bool { return !slices.Contains(named(t, receiver, txs), false) }, 5*time.Second, time.Millisecond,
		"the receiver names what the sender said all hold")
	t.Logf("named by the receiver %v after the sender's CheckTx", time.Since(start))

	// A client pushing to the endpoint itself, unsigned, from the very address the sender's
	// pushes come from: the receiver takes it as its own client's transaction and sends it on.
	msg := produceMsg(sender.addr(0), "digest", 20, 200)
	gas := uint64(300_000 + 60*msg.Size())
	sender.seqs[0]++ // after txs[0], which the receiver admitted
	direct := sender.tx(0, sender.fee(gas), gas, msg)
	fromElsewhere := http.DefaultClient
	res, err := fromElsewhere.Post(srv.URL+app.PushPath, "application/octet-stream", bytes.NewReader(frames(direct)))
	require.NoError(t, err)
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, "1", string(out))
	sentOn := int64(len(frames(txs...)) + len(frames(direct)))
	require.Eventually(t, func() bool { return onward.Load() == sentOn }, 5*time.Second, time.Millisecond,
		"sent on to the receiver's peer (the sink), beside the unheard node's two: %d of %d", onward.Load(), sentOn)
	require.Equal(t, []bool{false, false}, named(t, unheard, txs), "no peer holds it")

	receiver.block()
	unheard.block()
	require.Equal(t, []bool{true, true, false}, named(t, receiver, append(txs, direct)),
		"after a commit the receiver names what a peer's push brought, not what a client pushed that no peer holds")
	require.Equal(t, []bool{false, false}, named(t, unheard, txs), "no peer holds it: carried whole after a commit too")

	// A recheck at the sender sends nothing again; the receiver sent nothing on.
	for _, tx := range txs {
		checkTx(t, sender.app, abci.CheckTxType_Recheck, tx)
	}
	time.Sleep(200 * time.Millisecond)
	require.Len(t, mempool.received(), len(txs)+1, "a recheck is not pushed")
	require.Equal(t, sentOn, onward.Load(), "the receiver sent on nothing a peer pushed")

	// Hostile bodies: garbage, a length past the limit, a truncated frame, each refusing the
	// whole request; from a client, a well-framed transaction CheckTx refuses is answered '0'
	// and held nowhere, one already held '1'.
	for name, body := range map[string][]byte{
		"a short header":  {0, 1},
		"too long":        binary.BigEndian.AppendUint32(nil, 1<<30),
		"truncated frame": binary.BigEndian.AppendUint32(nil, 100),
		"an empty frame":  binary.BigEndian.AppendUint32(nil, 0),
	} {
		res, err := http.Post(srv.URL+app.PushPath, "application/octet-stream", bytes.NewReader(body))
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, name)
	}
	// Word of what the validators hold: signed by a validator only, well formed only (an empty
	// word is 8 zero bytes: no claims, no receipts).
	res, err = fromElsewhere.Post(srv.URL+app.HeldPath, "application/octet-stream", bytes.NewReader(make([]byte, 8)))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, "unsigned word")
	res, err = http.Post(srv.URL+app.HeldPath, "application/octet-stream", bytes.NewReader(make([]byte, 33)))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode, "a torn word")
	junk := bytes.Repeat([]byte{7}, 2048)
	res, err = fromElsewhere.Post(srv.URL+app.PushPath, "application/octet-stream", bytes.NewReader(frames(junk, txs[0])))
	require.NoError(t, err)
	out, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "01", string(out))
	require.Equal(t, sentOn, onward.Load())
	_, held := receiver.app.PoolHolds(junk)
	require.False(t, held, "what CheckTx refused from a client is held nowhere")
	require.Positive(t, retried.Load(), "a refused push is sent again")
	t.Logf("the refusing peer was sent %d bodies again", retried.Load())
}
