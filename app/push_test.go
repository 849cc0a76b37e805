package app_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
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
		return nil, io.ErrUnexpectedEOF
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

func frames(txs ...[]byte) []byte {
	var b bytes.Buffer
	for _, tx := range txs {
		_ = binary.Write(&b, binary.BigEndian, uint32(len(tx)))
		b.Write(tx)
	}
	return b.Bytes()
}

// With ordering by digest, a transaction a node's client gave it is sent once to each peer,
// which admits it through its own CheckTx and does not send it on: each validator receives each
// batch once. A recheck sends nothing. The endpoint takes only what CheckTx admits and refuses
// malformed bodies.
func TestAdmittedTransactionsPushedOnceToEachPeer(t *testing.T) {
	// What the receiver sends on, if anything.
	var onward atomic.Int64
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		onward.Add(1)
	}))
	defer sink.Close()
	receiver := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true, sink.URL), orderingSecret, 1e15, 1e15)
	mempool := &mempoolOf{app: receiver.app, seen: map[string]bool{}}
	srv := httptest.NewServer(receiver.app.PushHandler(mempool))
	defer srv.Close()
	sender := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true, srv.URL), orderingSecret, 1e15, 1e15)

	txs := orderingLoad(t, sender)
	orderingLoad(t, receiver)
	start := time.Now()
	for _, tx := range txs {
		require.Zero(t, checkTx(t, sender.app, abci.CheckTxType_New, tx).Code)
	}
	require.Eventually(t, func() bool { return len(mempool.received()) == len(txs) }, 5*time.Second, time.Millisecond)
	t.Logf("%d transactions of %d bytes pushed and admitted by the peer in %v", len(txs), len(txs[0]), time.Since(start))
	require.ElementsMatch(t, txs, mempool.received())

	// The receiver holds them: a proposal of its own names them (after a commit).
	receiver.block()
	prep, err := receiver.app.PrepareProposal(&abci.RequestPrepareProposal{Height: receiver.height, MaxTxBytes: 1 << 30, Txs: txs})
	require.NoError(t, err)
	for _, bz := range prep.Txs {
		_, named := app.ParseTxRef(bz)
		require.True(t, named, "the receiver names what the push brought")
	}

	// A recheck at the sender sends nothing again; the receiver sent nothing on.
	for _, tx := range txs {
		checkTx(t, sender.app, abci.CheckTxType_Recheck, tx)
	}
	time.Sleep(200 * time.Millisecond)
	require.Len(t, mempool.received(), len(txs), "a recheck is not pushed")
	require.Zero(t, onward.Load(), "a pushed transaction is not sent on")

	// Hostile bodies: garbage, a length past the limit, a truncated frame; a well-framed
	// transaction CheckTx refuses is counted refused and held nowhere.
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
	junk := bytes.Repeat([]byte{7}, 2048)
	res, err := http.Post(srv.URL+app.PushPath, "application/octet-stream", bytes.NewReader(frames(junk)))
	require.NoError(t, err)
	out, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Equal(t, "admitted 0 refused 1", strings.TrimSpace(string(out)))
	require.Zero(t, onward.Load())
}
