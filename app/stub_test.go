package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/app"
)

func postRaw(t *testing.T, url string, tx []byte) app.RawTxResponse {
	t.Helper()
	res, err := http.Post(url+app.RawTxPath, "application/octet-stream", bytes.NewReader(tx))
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var out app.RawTxResponse
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	return out
}

// With ordering by digest and push, the mempool holds a stub of ~80 bytes for each record batch
// the ingress takes, and the pool the batch: admission is CheckTx's on the batch, the client is
// told the batch's own hash, and a block carries the batch or a reference, never the stub.
// Hostile stubs are refused: one for bytes the node lacks, a second one for the same
// transaction, one in a proposal. A client past the pool's bound is told "mempool is full".
func TestMempoolHoldsStubsOfIngressTransactions(t *testing.T) {
	// A peer that refuses every push: nothing is named, blocks carry the batches whole.
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not taking any", http.StatusServiceUnavailable)
	}))
	defer sink.Close()
	c := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true, sink.URL), orderingSecret, 1e15, 1e15)
	mempool := &mempoolOf{app: c.app, seen: map[string]bool{}}
	srv := httptest.NewServer(c.app.IngressHandler(mempool))
	defer srv.Close()
	txs := orderingLoad(t, c)

	start := time.Now()
	for _, tx := range txs {
		out := postRaw(t, srv.URL, tx)
		require.Zero(t, out.Code, out.RawLog)
		hash := sha256.Sum256(tx)
		require.Equal(t, strings.ToUpper(hex.EncodeToString(hash[:])), out.TxHash, "the client is told its transaction's hash")
		_, held := c.app.PoolHolds(tx)
		require.True(t, held)
	}
	took := time.Since(start)
	stubs := mempool.received()
	require.Len(t, stubs, len(txs))
	for i, stub := range stubs {
		require.Equal(t, app.StubOf(txs[i]), stub)
		require.Less(t, len(stub), 128)
	}
	t.Logf("%d transactions of %d bytes admitted in %v; the mempool holds %d bytes for each", len(txs), len(txs[0]), took, len(stubs[0]))

	// Hostile stubs: for bytes the node lacks, a second time for a held one, with the size
	// changed; a client sending the transaction itself once its stub is in.
	var unknown [32]byte
	unknown[0] = 7
	for name, tc := range map[string]struct {
		tx   []byte
		code uint32
	}{
		"a stub of bytes nobody gave":   {app.StubOf(bytes.Repeat([]byte{9}, 4000)), app.ErrTxNotHeld.ABCICode()},
		"a second stub of a held batch": {stubs[0], sdkerrors.ErrTxInMempoolCache.ABCICode()},
		"the batch itself, stub in":     {txs[0], sdkerrors.ErrWrongSequence.ABCICode()},
	} {
		res := checkTx(t, c.app, abci.CheckTxType_New, tc.tx)
		require.Equal(t, tc.code, res.Code, "%s: %s", name, res.Log)
	}
	wrongSize := app.TxRef(sha256.Sum256(txs[0]), len(txs[0])+1, "")
	require.NotZero(t, checkTx(t, c.app, abci.CheckTxType_New, wrongSize).Code, "a stub naming another size")

	// A proposal is made of the batches (no peer holds them: carried whole), never the stubs;
	// a proposal carrying a stub is voted down.
	prep, err := c.app.PrepareProposal(&abci.RequestPrepareProposal{Height: c.height, MaxTxBytes: 1 << 30, Txs: stubs})
	require.NoError(t, err)
	require.Equal(t, txs, prep.Txs)
	vote, err := c.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Txs: stubs[:1]})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseProcessProposal_REJECT, vote.Status, "a stub names no signer")
	for _, r := range c.block(prep.Txs...) {
		require.Zero(t, r.Code, r.Log)
	}
	// The recheck after the block lets the stubs go: their batches ran and left the pool.
	for _, stub := range stubs {
		require.NotZero(t, checkTx(t, c.app, abci.CheckTxType_Recheck, stub).Code)
	}

	// A client past the pool's bound (mempool.max_txs_bytes) is told the mempool is full.
	c.app.LimitClientPool(len(txs[0]) / 2)
	msg := produceMsg(c.addr(0), "digest", 20, 200)
	gas := uint64(300_000 + 60*msg.Size())
	c.seqs[0]++
	next := c.tx(0, c.fee(gas), gas, msg)
	out := postRaw(t, srv.URL, next)
	require.Equal(t, sdkerrors.ErrMempoolIsFull.ABCICode(), out.Code, out.RawLog)
	require.Equal(t, sdkerrors.ErrMempoolIsFull.Codespace(), out.Codespace)
	require.Len(t, mempool.received(), len(txs), "nothing reached the mempool")

	// mempool.max_tx_bytes holds for the transaction a stub stands for.
	c.app.LimitClientPool(1 << 30)
	c.app.LimitTxBytes(len(next) - 1)
	out = postRaw(t, srv.URL, next)
	require.Equal(t, sdkerrors.ErrTxTooLarge.ABCICode(), out.Code, out.RawLog)
	_, held := c.app.PoolHolds(next)
	require.False(t, held, "refused, and not held")
}
