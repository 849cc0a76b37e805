package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// The ingress's result endpoint answers a committed produce with its result alone, not the
// transaction: a client waiting for a 2 MB record batch through the SDK's tx endpoint (or
// CometBFT's /tx, for a block that carried it) gets the whole transaction back, base64 in JSON. Waiting happens in the node; a transaction that failed in
// its block answers with its code; bad and unknown hashes answer 400 and 404.
func TestIngressResultWithoutTransactionBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "ingress", 1)
	cctx, signer := n.ClientContext(n.Home, "alice")
	signer.SetFixedGas()
	signer.UseRawIngress(n.API + app.RawTxPath)

	recs := make([]types.BatchRecord, 2000)
	for i := range recs {
		recs[i] = types.BatchRecord{Value: types.NewBytes(bytes.Repeat([]byte{byte(i)}, 1000))}
	}
	batch, err := types.NewProduceBatch("ingress", 0, recs, kbatch.CompressionNone)
	require.NoError(t, err)
	began := time.Now()
	res, err := signer.SubmitAndWait(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}})
	require.NoError(t, err)
	took := time.Since(began)
	out, err := txclient.Responses[types.MsgProduceResponse](cctx, res)
	require.NoError(t, err)
	require.Len(t, out, 1)
	require.Equal(t, []types.ProduceResult{{Topic: "ingress", Partition: 0, BaseOffset: 0, Count: 2000}}, out[0].Results)
	require.Positive(t, res.Height)

	get := func(url string) (int, []byte) {
		resp, err := http.Get(url)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, body
	}
	code, result := get(n.API + app.RawTxResultPath + "?hash=" + res.TxHash)
	require.Equal(t, http.StatusOK, code, string(result))
	// CometBFT indexes the transaction after its block commits, which is when the result
	// endpoint answers: the tx endpoint may need a moment. The block named the batch (ordering
	// by digest), so CometBFT's /tx knows only the reference's hash; the SDK's endpoint, which
	// explorers read, answers by the transaction's own.
	var full []byte
	require.Eventually(t, func() bool {
		code, full = get(n.API + "/cosmos/tx/v1beta1/txs/" + res.TxHash)
		return code == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	require.Less(t, 1000*len(result), len(full))
	t.Logf("2 MB batch: produced and acknowledged in %s; the result is %d bytes, the tx endpoint's answer %d bytes",
		took.Round(time.Millisecond), len(result), len(full))

	// Failed in its block: the same sequence again, so the chain refuses it as out of order.
	again := batch
	again.Sequence = 5
	_, err = signer.SubmitAndWait(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{again}})
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence)

	code, _ = get(n.API + app.RawTxResultPath + "?hash=xyz")
	require.Equal(t, http.StatusBadRequest, code)
	began = time.Now()
	code, _ = get(n.API + app.RawTxResultPath + "?wait=300ms&hash=" + strings.Repeat("AB", 32))
	require.Equal(t, http.StatusNotFound, code)
	require.GreaterOrEqual(t, time.Since(began), 300*time.Millisecond, "waited in the node")
	require.Less(t, time.Since(began), 5*time.Second, fmt.Sprint("answered after ", time.Since(began)))
}
