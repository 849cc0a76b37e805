package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
)

// A block's results are told only once it commits, from memory and without a tx index (the
// handler here has no node at all); the oldest are forgotten past maxRecentResults.
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

	for i := 0; i < maxRecentResults; i++ {
		require.NoError(t, r.ListenFinalizeBlock(ctx, abci.RequestFinalizeBlock{Height: int64(8 + i), Txs: [][]byte{fmt.Appendf(nil, "tx %d", i)}},
			abci.ResponseFinalizeBlock{TxResults: []*abci.ExecTxResult{{}}}))
		require.NoError(t, r.ListenCommit(ctx, abci.ResponseCommit{}, nil))
	}
	_, _, ok := r.get(hash)
	require.False(t, ok, "the oldest result is forgotten")
	_, _, ok = r.get(sha256.Sum256(fmt.Appendf(nil, "tx %d", maxRecentResults-1)))
	require.True(t, ok)
	require.Len(t, r.byHash, maxRecentResults)
}
