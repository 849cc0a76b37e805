package e2e

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Four validators with ordering.by-digest on (app/ordering.go): blocks name the record batches
// the validators already hold. One validator is down while they are produced; it comes back,
// gets blocks that name batches it never received, fetches them from its peers and serves the
// same log. Every acknowledged record is readable on every node, in order, and a named
// transaction is found by its own hash through the "ordered" event.
func TestOrderingByDigestAcrossValidators(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validators")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: []string{"alice"}, Ordering: node.OrderingByDigest})
	n0, away := net.Nodes[0], net.Nodes[3]
	createTopic(n0, "alice", "digest", 1)
	_, signer := n0.ClientContext(n0.Home, "alice")
	signer.SetFixedGas()
	signer.UseRawIngress(n0.API + app.RawTxPath)
	away.Stop()

	const batches, perBatch = 24, 100
	var hashes []string
	for b := 0; b < batches; b++ {
		recs := make([]types.BatchRecord, perBatch)
		for i := range recs {
			recs[i] = types.BatchRecord{Value: types.NewBytes([]byte(fmt.Sprintf("batch %03d record %03d %s", b, i, strings.Repeat("x", 60))))}
		}
		batch, err := types.NewProduceBatch("digest", 0, recs, kbatch.CompressionNone)
		require.NoError(t, err)
		hash, err := signer.Submit(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}})
		require.NoError(t, err)
		hashes = append(hashes, hash)
		if b%6 == 5 {
			time.Sleep(400 * time.Millisecond) // let some wait a commit in the mempool: those are named
		}
	}
	var last int64
	for _, h := range hashes {
		res := waitResult(t, n0, h)
		require.Zero(t, res.Code, res.RawLog)
		last = max(last, res.Height)
	}

	// Which blocks named their batches, read from node 0's block store.
	var named []string
	refs := map[string][]byte{} // named hash -> the reference that named it
	var refTx []byte
	var refHeight int64
	rpc := strings.Replace(n0.RPC, "tcp://", "http://", 1)
	for h := int64(1); h <= last; h++ {
		for _, tx := range blockTxs(t, rpc, h) {
			if hash, ok := app.ParseTxRef(tx); ok {
				named = append(named, fmt.Sprintf("%X", hash))
				refs[named[len(named)-1]] = tx
				refTx, refHeight = tx, h
			}
		}
	}
	require.NotEmpty(t, named, "no block named a batch")
	for _, h := range named {
		require.Contains(t, hashes, h)
	}
	// Found by its own hash, though CometBFT indexed the reference.
	var search struct {
		Result struct {
			TotalCount string `json:"total_count"`
		} `json:"result"`
	}
	eventually(t, "tx_search finds a named transaction", 10*time.Second, func() bool {
		getJSON(t, fmt.Sprintf(`%s/tx_search?query="ordered.tx_hash='%s'"`, rpc, named[0]), &search)
		return search.Result.TotalCount == "1"
	})

	// Explorers read the block through the SDK's REST API: by the reference's hash it answers
	// with the produce the reference names (app/ordering_query.go), and its result carries the
	// produce's events.
	// CometBFT indexes a block's transactions after its commit, asynchronously: the reference
	// (of the last block that named one) may not be indexed yet when named[0] is.
	var byHash restTxJSON
	eventually(t, "the reference indexed", 10*time.Second, func() bool {
		resp, err := http.Get(fmt.Sprintf("%s/cosmos/tx/v1beta1/txs/%X", n0.API, sha256.Sum256(refTx)))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	getJSON(t, fmt.Sprintf("%s/cosmos/tx/v1beta1/txs/%X", n0.API, sha256.Sum256(refTx)), &byHash)
	require.Len(t, byHash.Tx.Body.Messages, 1)
	require.Equal(t, "/bftlog.topics.v1.MsgProduce", byHash.Tx.Body.Messages[0]["@type"])
	require.Equal(t, signer.Address(), byHash.Tx.Body.Messages[0]["producer"])
	refNames, _ := app.ParseTxRef(refTx)
	require.Equal(t, fmt.Sprintf("%X", refNames), byHash.TxResponse.TxHash, "the produce's own hash")
	var types_ []string
	for _, e := range byHash.TxResponse.Events {
		types_ = append(types_, e.Type)
	}
	require.Contains(t, types_, "bftlog.topics.v1.EventBatchAppended")
	require.Contains(t, types_, "ordered")
	// By the hash its producer was given, as the SDK would answer for a carried transaction.
	var own restTxJSON
	getJSON(t, n0.API+"/cosmos/tx/v1beta1/txs/"+named[0], &own)
	require.Equal(t, named[0], own.TxResponse.TxHash)
	require.Zero(t, own.TxResponse.Code)
	require.Len(t, own.Tx.Body.Messages, 1)
	require.Equal(t, "/bftlog.topics.v1.MsgProduce", own.Tx.Body.Messages[0]["@type"])
	// The CLI finds it by its own hash too, as the result of the reference that named it.
	var cli struct {
		TxHash string `json:"txhash"`
		Code   uint32 `json:"code"`
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(n0.MustCLI("", "query", "tx", named[0], "-o", "json")), &cli))
	require.Zero(t, cli.Code)
	require.Equal(t, fmt.Sprintf("%X", sha256.Sum256(refs[named[0]])), cli.TxHash)
	resp, err := http.Get(n0.API + "/cosmos/tx/v1beta1/txs/" + strings.Repeat("AB", 32))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "an unknown hash is still not found")
	var blockTxs struct {
		Txs []json.RawMessage `json:"txs"`
	}
	getJSON(t, fmt.Sprintf("%s/cosmos/tx/v1beta1/txs/block/%d", n0.API, refHeight), &blockTxs)
	require.NotEmpty(t, blockTxs.Txs)

	// The validator that was away catches up through blocks that name batches it never
	// received, fetching them from the others' API servers.
	began := time.Now()
	away.Start()
	require.NoError(t, away.WaitForHeight(last+2, 2*time.Minute), away.LogTail(30))
	t.Logf("%d of %d batches named by digest; the validator that was away caught up %d blocks in %v",
		len(named), batches, last, time.Since(began).Round(time.Millisecond))
	for _, n := range []*node.Node{n0, away} {
		cctx, _ := n.ClientContext(n0.Home, "alice")
		got, err := types.NewQueryClient(cctx).Fetch(t.Context(), &types.QueryFetchRequest{Topic: "digest", Partition: 0, MaxRecords: batches * perBatch})
		require.NoError(t, err)
		require.Len(t, got.Records, batches*perBatch, n.Home)
		for i, r := range got.Records {
			require.Equal(t, uint64(i), r.Offset)
			require.True(t, strings.HasPrefix(string(r.Value.Data), fmt.Sprintf("batch %03d record %03d ", i/perBatch, i%perBatch)), "offset %d on %s", i, n.Home)
		}
	}
}

// restTxJSON is what the SDK's REST API answers for one transaction, as explorers read it.
type restTxJSON struct {
	Tx struct {
		Body struct {
			Messages []map[string]any `json:"messages"`
		} `json:"body"`
	} `json:"tx"`
	TxResponse struct {
		TxHash string `json:"txhash"`
		Code   uint32 `json:"code"`
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	} `json:"tx_response"`
}

func waitResult(t *testing.T, n *node.Node, hash string) app.RawTxResult {
	t.Helper()
	var res app.RawTxResult
	eventually(t, "transaction "+hash+" committed", 60*time.Second, func() bool {
		resp, err := http.Get(n.API + app.RawTxResultPath + "?wait=5s&hash=" + hash)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&res) == nil
	})
	return res
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, v), string(body))
}

// blockTxs are the transactions of the block at height h, as CometBFT's RPC at rpc serves them
// (references, for what the block named by digest).
func blockTxs(t *testing.T, rpc string, h int64) [][]byte {
	t.Helper()
	var block struct {
		Result struct {
			Block struct {
				Data struct {
					Txs [][]byte `json:"txs"`
				} `json:"data"`
			} `json:"block"`
		} `json:"result"`
	}
	getJSON(t, fmt.Sprintf("%s/block?height=%d", rpc, h), &block)
	return block.Result.Block.Data.Txs
}
