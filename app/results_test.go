package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	sdk "github.com/cosmos/cosmos-sdk/types"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
)

// A block's results are told only once it commits, from memory and without a tx index (the
// handler here has no node at all); the oldest are forgotten past maxRecentResultBytes.
func TestRecentResultsAnswerAfterCommit(t *testing.T) {
	r := newRecentResults()
	srv := httptest.NewServer(rawTxResultHandler(client.Context{}, r))
	defer srv.Close()
	tx := []byte("a produce")
	hash := sha256.Sum256(tx)
	url := srv.URL + "?hash=" + hex.EncodeToString(hash[:])
	ctx := context.Background()

	require.NoError(t, r.ListenFinalizeBlock(ctx, abci.RequestFinalizeBlock{Height: 7, Txs: [][]byte{tx}},
		abci.ResponseFinalizeBlock{TxResults: []*abci.ExecTxResult{{Code: 0, Data: []byte{0xab}}}}))
	resp, err := http.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "executed, not committed")

	// A waiting client is answered when the block commits.
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = r.ListenCommit(ctx, abci.ResponseCommit{}, nil)
	}()
	resp, err = http.Get(url + "&wait=5s")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out RawTxResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, RawTxResult{TxHash: fmt.Sprintf("%X", hash), Height: 7, Data: "AB"}, out)
	// The client's side of the contract reads the same answer (txclient's ingress transport).
	ingress := txclient.NewIngress(srv.URL)
	res, err := ingress.Result(ctx, hex.EncodeToString(hash[:]), 0)
	require.NoError(t, err)
	require.Equal(t, sdk.TxResponse{TxHash: fmt.Sprintf("%X", hash), Height: 7, Data: "AB"}, *res)
	unknown := sha256.Sum256([]byte("never sent"))
	_, err = ingress.Result(ctx, hex.EncodeToString(unknown[:]), 0)
	require.ErrorIs(t, err, txclient.ErrNotInBlock)

	// Empty results count too: each costs resultOverhead.
	n := maxRecentResultBytes / resultOverhead
	for i := 0; i < n; i++ {
		require.NoError(t, r.ListenFinalizeBlock(ctx, abci.RequestFinalizeBlock{Height: int64(8 + i), Txs: [][]byte{fmt.Appendf(nil, "tx %d", i)}},
			abci.ResponseFinalizeBlock{TxResults: []*abci.ExecTxResult{{}}}))
		require.NoError(t, r.ListenCommit(ctx, abci.ResponseCommit{}, nil))
	}
	_, _, ok := r.get(hash)
	require.False(t, ok, "the oldest result is forgotten")
	_, _, ok = r.get(sha256.Sum256(fmt.Appendf(nil, "tx %d", n-1)))
	require.True(t, ok)
	require.Len(t, r.byHash, n)
}

// The memory of recent results held whole ExecTxResults, events included, up to 100,000 of
// them: a few blocks of transactions with large events (every Kafka-group message's events
// carry its members' metadata; a produce's carry its batches) could make it gigabytes. It is
// bounded in bytes now and keeps only what the endpoint answers.
func TestAttackRecentResultsBoundedInBytes(t *testing.T) {
	const results, eventBytes, dataBytes = 300, 1 << 20, 256 << 10
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	r := newRecentResults()
	ctx := context.Background()
	tx := func(i int) []byte { return fmt.Appendf(nil, "tx %d", i) }
	for i := 0; i < results; i++ {
		res := &abci.ExecTxResult{Data: bytes.Repeat([]byte{byte(i)}, dataBytes), Log: "ok", Events: []abci.Event{{
			Type: "bftlog.topics.v1.EventRecordsProduced", Attributes: []abci.EventAttribute{{Key: "batches", Value: strings.Repeat("x", eventBytes)}},
		}}}
		require.NoError(t, r.ListenFinalizeBlock(ctx, abci.RequestFinalizeBlock{Height: int64(i + 1), Txs: [][]byte{tx(i)}},
			abci.ResponseFinalizeBlock{TxResults: []*abci.ExecTxResult{res}}))
		require.NoError(t, r.ListenCommit(ctx, abci.ResponseCommit{}, nil))
	}
	held := heap() - min(before, heap())
	kept := 0
	for i := 0; i < results; i++ {
		if _, _, ok := r.get(sha256.Sum256(tx(i))); ok {
			kept++
		}
	}
	t.Logf("%d results of %d KiB of events and %d KiB of data (%d MiB in all): %d kept, %.1f MiB of heap held",
		results, eventBytes>>10, dataBytes>>10, results*(eventBytes+dataBytes)>>20, kept, float64(held)/(1<<20))
	height, res, ok := r.get(sha256.Sum256(tx(results - 1)))
	require.True(t, ok, "the newest result is answered")
	require.Equal(t, int64(results), height)
	require.Len(t, res.Data, dataBytes)
	_, _, ok = r.get(sha256.Sum256(tx(0)))
	require.False(t, ok, "the oldest is forgotten")
	require.Less(t, held, uint64(80<<20), "bytes held")
	runtime.KeepAlive(r)
}
