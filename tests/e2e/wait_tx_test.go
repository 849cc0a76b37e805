package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// TestWaitTxFindsEveryCommittedTx sends small transactions from one account back to back, each
// waited for with `query wait-tx` as docs/deploy.md does, on four validators with mempool
// gossip (ordering.peers empty, as the guide leaves it). The SDK's wait-tx missed a
// transaction committed while it subscribed: 2 of 60 timed out, each in a block all the same
// (cmd/bftlogd/cmd/wait_tx.go).
func TestWaitTxFindsEveryCommittedTx(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validators")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, PeersFromChain: true})
	n0 := net.Nodes[0]
	to := n0.Address("val0")
	const sends = 40
	var missed []string
	for i := 0; i < sends; i++ {
		var res struct {
			TxHash string `json:"txhash"`
			Code   int    `json:"code"`
		}
		sent := n0.MustCLI("", "tx", "bank", "send", "val0", to, "1stake", "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(sent), &res), sent)
		require.Zero(t, res.Code, sent)
		r := n0.CLI("", "query", "wait-tx", res.TxHash, "--timeout", "15s", "-o", "json")
		if r.Err != nil {
			q := n0.CLI("", "query", "tx", res.TxHash, "-o", "json")
			missed = append(missed, res.TxHash+": "+strings.TrimSpace(r.Stderr)+"; query tx: "+firstBytes(q.Stdout+q.Stderr, 200))
			continue
		}
		var got struct {
			TxHash string `json:"txhash"`
			Code   int    `json:"code"`
			Height string `json:"height"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &got), r.Stdout)
		require.Equal(t, res.TxHash, got.TxHash)
		require.Zero(t, got.Code, r.Stdout)
		require.NotEmpty(t, got.Height)
	}
	t.Logf("wait-tx found %d of %d committed transactions", sends-len(missed), sends)
	require.Empty(t, missed)
}

func firstBytes(s string, n int) string { return s[:min(n, len(s))] }
