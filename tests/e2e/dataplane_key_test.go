package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
)

// Validator 3's consensus key is held by a remote signer (this test process, over CometBFT's
// privval protocol), so its node has no key to sign data-plane requests with (the SDK's start
// writes a stand-in key file, which is no validator's): until its
// operator registers the node's data-plane key on chain, it pushes as a client would and none
// of its words that a batch is held is taken. Once every operator has registered its node's
// key (`bftlogd data-plane-key`) beside its endpoint, node 3 finds its validator by that key
// and signs as it: its words are proven by their receipts on the other nodes.
func TestDataPlaneKeyWithARemoteSigner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validators")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: []string{"alice"}, Ordering: node.OrderingByDigest,
		PeersFromChain: true, RemoteSigners: []int{3}})
	n0, n3 := net.Nodes[0], net.Nodes[3]
	// The SDK's start writes a stand-in key file where a remote signer holds the key.
	standIn, err := os.ReadFile(filepath.Join(n3.Home, "config", "priv_validator_key.json"))
	require.NoError(t, err)
	require.NotContains(t, string(standIn), n3.ConsensusAddress(), "node 3 holds no consensus key")
	signedBy3 := func() bool {
		h, err := n0.Height()
		require.NoError(t, err)
		var res struct {
			Result struct {
				SignedHeader struct {
					Commit struct {
						Signatures []struct {
							ValidatorAddress string `json:"validator_address"`
						} `json:"signatures"`
					} `json:"commit"`
				} `json:"signed_header"`
			} `json:"result"`
		}
		resp, err := http.Get(fmt.Sprintf("%s/commit?height=%d", strings.Replace(n0.RPC, "tcp://", "http://", 1), h))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
		for _, s := range res.Result.SignedHeader.Commit.Signatures {
			if s.ValidatorAddress == n3.ConsensusAddress() {
				return true
			}
		}
		return false
	}
	eventually(t, "validator 3 signing blocks through its remote signer", 30*time.Second, signedBy3)

	createTopic(n0, "alice", "remote", 1)
	_, alice := n0.ClientContext(n0.Home, "alice")
	alice.SetFixedGas()
	alice.UseRawIngress(n3.API + app.RawTxPath) // node 3's client: node 3 pushes its batches
	provenFrom3 := func() (n float64) {
		for i, m := range net.Nodes {
			if i == 3 {
				continue
			}
			for labels, v := range series(scrape(t, m.Prometheus+"/metrics"), "bftlog_data_plane_held_proven_total") {
				if strings.Contains(labels, "sender="+n3.ConsensusAddress()) {
					n += v
				}
			}
		}
		return n
	}
	settle := func() {
		h, err := n0.Height()
		require.NoError(t, err)
		require.NoError(t, n0.WaitForHeight(h+2, 30*time.Second)) // each node read the chain after a commit
	}

	for i, n := range net.Nodes {
		waitTxOK(t, n, n.MustCLI("", "tx", "poa", "set-data-plane-endpoint", n.DataPlane, "--from", fmt.Sprintf("val%d", i), "--output", "json"))
	}
	settle()
	produceLarge(t, n3, alice, "remote", "endpoints only", 12)
	before := provenFrom3()
	t.Logf("endpoints only: %.0f of node 3's held words proven (it has no key the chain knows)", before)
	require.Zero(t, before)

	for i, n := range net.Nodes {
		// The flags that register the node's key with its proof for the operator's address.
		operator := strings.TrimSpace(n.MustRun("keys", "show", fmt.Sprintf("val%d", i), "-a", "--keyring-backend", "test"))
		flags := strings.Fields(n.MustRun("data-plane-key", "--operator", operator))
		args := append([]string{"tx", "poa", "set-data-plane-endpoint", n.DataPlane}, flags...)
		waitTxOK(t, n, n.MustCLI("", append(args, "--from", fmt.Sprintf("val%d", i), "--output", "json")...))
	}
	out := n0.MustCLI("", "query", "poa", "data-plane-endpoints", "--output", "json")
	require.Equal(t, 4, strings.Count(out, `"data_plane_key"`), out)
	settle()
	_, first, last := produceLarge(t, n3, alice, "remote", "keys registered", 12)
	named, _ := namedAndCarried(t, n0, first, last)
	after := provenFrom3()
	proven, unproven := heldClaims(t, net)
	t.Logf("data-plane keys registered: %.0f of node 3's held words proven; %d of 12 batches named by digest; all nodes: %.0f claims proven, %.0f refused", after, named, proven, unproven)
	require.Positive(t, after, "node 3 signs as its validator with its data-plane key")
	require.Positive(t, named)
	eventually(t, "validator 3 still signing blocks", 30*time.Second, signedBy3) // a commit may close before its vote
}
