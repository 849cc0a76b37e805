package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	poatypes "github.com/bftlog/bftlog/x/poa/types"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Four validators with ordering by digest and no ordering.peers in any app.toml: their
// data-plane peers are the endpoints their operators set on chain (x/poa
// MsgSetDataPlaneEndpoint). Before any is set nothing is pushed and every block carries its
// batches; once each operator has set its own (an account that is not an operator is refused
// with code 4), the nodes push to each other and blocks name the batches by digest.
func TestDataPlanePeersFromEndpointsOnChain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validators")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: []string{"alice"}, Ordering: node.OrderingByDigest, PeersFromChain: true})
	n0 := net.Nodes[0]
	createTopic(n0, "alice", "endpoints", 1)
	_, signer := n0.ClientContext(n0.Home, "alice")
	signer.SetFixedGas()
	signer.UseRawIngress(n0.API + app.RawTxPath)

	produce := func(round string, batches int) (hashes []string, first, last int64) {
		return produceLarge(t, n0, signer, "endpoints", round, batches)
	}
	namedIn := func(from, to int64) int {
		named, _ := namedAndCarried(t, n0, from, to)
		return named
	}

	_, first, last := produce("before", 12)
	before := namedIn(first, last)
	t.Logf("no endpoint on chain: %d of 12 batches named by digest (heights %d-%d)", before, first, last)
	require.Zero(t, before, "named with no data-plane peer known")

	// An account that is not an operator may not point the validators anywhere.
	sent := n0.MustCLI("", "tx", "poa", "set-data-plane-endpoint", "http://127.0.0.1:1", "--from", "alice", "--output", "json")
	var res struct {
		TxHash string `json:"txhash"`
	}
	require.NoError(t, json.Unmarshal([]byte(sent), &res), sent)
	eventually(t, "the refused endpoint in a block", 30*time.Second, func() bool {
		r := n0.CLI("", "query", "tx", res.TxHash, "-o", "json")
		if r.Err != nil {
			return false
		}
		var tx struct {
			Code      uint32 `json:"code"`
			Codespace string `json:"codespace"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &tx))
		require.Equal(t, poatypes.ErrNotAdmitted.Codespace(), tx.Codespace)
		require.Equal(t, poatypes.ErrNotAdmitted.ABCICode(), tx.Code)
		return true
	})

	for i, n := range net.Nodes {
		waitTxOK(t, n, n.MustCLI("", "tx", "poa", "set-data-plane-endpoint", n.DataPlane, "--from", fmt.Sprintf("val%d", i), "--output", "json"))
	}
	eventually(t, "four endpoints on chain", 30*time.Second, func() bool {
		out := n0.CLI("", "query", "poa", "data-plane-endpoints", "--output", "json")
		return out.Err == nil && strings.Count(out.Stdout, `"endpoint"`) == 4
	})
	h, err := n0.Height()
	require.NoError(t, err)
	require.NoError(t, n0.WaitForHeight(h+2, 30*time.Second)) // each node read them after a commit

	hashes, first, last := produce("after", 24)
	after := namedIn(first, last)
	t.Logf("endpoints on chain: %d of %d batches named by digest (heights %d-%d)", after, len(hashes), first, last)
	require.NotZero(t, after, "no batch named once the endpoints were on chain")
	// Words that batches are held came with receipts that proved them, on every node.
	proven, unproven := heldClaims(t, net)
	t.Logf("held words: %.0f claims proven by their receipts, %.0f refused", proven, unproven)
	require.Positive(t, proven)
	require.Zero(t, unproven)
	for _, n := range net.Nodes {
		eventually(t, "every node serves every record", 60*time.Second, func() bool {
			out := n.CLI("", "query", "topics", "partitions", "endpoints", "--output", "json")
			return out.Err == nil && strings.Contains(out.Stdout, `"high_watermark":"1800"`)
		})
	}
}

// produceLarge sends batches of 50 records (about 5 KB, large enough to be named by digest
// rather than carried) to partition 0 of topic through n's ingress, and waits for each.
func produceLarge(t *testing.T, n *node.Node, signer *txclient.Signer, topic, round string, batches int) (hashes []string, first, last int64) {
	for b := 0; b < batches; b++ {
		recs := make([]types.BatchRecord, 50)
		for i := range recs {
			recs[i] = types.BatchRecord{Value: types.NewBytes([]byte(fmt.Sprintf("%s batch %03d record %03d %s", round, b, i, strings.Repeat("x", 60))))}
		}
		batch, err := types.NewProduceBatch(topic, 0, recs, kbatch.CompressionNone)
		require.NoError(t, err)
		hash, err := signer.Submit(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}})
		require.NoError(t, err)
		hashes = append(hashes, hash)
		if b%4 == 3 {
			time.Sleep(400 * time.Millisecond)
		}
	}
	for _, h := range hashes {
		res := waitResult(t, n, h)
		require.Zero(t, res.Code, res.RawLog)
		if first == 0 || res.Height < first {
			first = res.Height
		}
		last = max(last, res.Height)
	}
	return hashes, first, last
}

// heldClaims are the claims that batches are held which the network's nodes took as proven by
// their receipts, and those they refused for want of receipts or for a bad one.
func heldClaims(t *testing.T, net *node.Network) (proven, unproven float64) {
	for _, n := range net.Nodes {
		fams := scrape(t, n.Prometheus+"/metrics")
		for _, v := range series(fams, "bftlog_data_plane_held_proven_total") {
			proven += v
		}
		for labels, v := range series(fams, "bftlog_data_plane_refused_total") {
			if strings.Contains(labels, "reason=held without receipts") || strings.Contains(labels, "reason=bad receipt") {
				unproven += v
			}
		}
	}
	return proven, unproven
}
