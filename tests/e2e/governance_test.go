package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

func proposalFile(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "scripts", "proposals", name))
	require.NoError(t, err)
	return p
}

// passProposal submits a proposal file from val0, votes with every validator (yes or no) and
// waits for the final status.
func passProposal(t *testing.T, net *node.Network, file string, vote string) (uint64, string) {
	t.Helper()
	n0 := net.Nodes[0]
	id := waitProposalID(t, n0, n0.MustCLI("", "tx", "gov", "submit-proposal", file, "--from", "val0", "--gas", "1000000", "-o", "json"))
	for i, n := range net.Nodes {
		n.MustCLI("", "tx", "gov", "vote", strconv.FormatUint(id, 10), vote, "--from", fmt.Sprintf("val%d", i))
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var p struct {
			Proposal struct {
				Status string `json:"status"`
			} `json:"proposal"`
		}
		require.NoError(t, json.Unmarshal([]byte(n0.MustCLI("", "query", "gov", "proposal", strconv.FormatUint(id, 10), "-o", "json")), &p))
		if s := p.Proposal.Status; s != "PROPOSAL_STATUS_VOTING_PERIOD" && s != "PROPOSAL_STATUS_DEPOSIT_PERIOD" {
			return id, s
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("proposal %d still open", id)
	return 0, ""
}

// waitProposalID is the id of the proposal a submit-proposal command (its JSON output, sent)
// created, once its transaction succeeded in a block.
func waitProposalID(t *testing.T, n *node.Node, sent string) uint64 {
	t.Helper()
	var tx struct {
		Events []struct {
			Type       string `json:"type"`
			Attributes []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"attributes"`
		} `json:"events"`
	}
	out := waitTxOK(t, n, sent)
	require.NoError(t, json.Unmarshal([]byte(out), &tx))
	for _, e := range tx.Events {
		if e.Type == "submit_proposal" {
			for _, a := range e.Attributes {
				if a.Key == "proposal_id" {
					id, err := strconv.ParseUint(a.Value, 10, 64)
					require.NoError(t, err)
					return id
				}
			}
		}
	}
	t.Fatalf("no proposal id in %s", out)
	return 0
}

// waitTxOK waits up to 30 s for the transaction a CLI tx command sent (its JSON output) to be in
// a block, fails the test unless it succeeded there, and returns its result.
func waitTxOK(t *testing.T, n *node.Node, sent string) string {
	t.Helper()
	var res struct {
		TxHash string `json:"txhash"`
	}
	require.NoError(t, json.Unmarshal([]byte(sent), &res), sent)
	hash := res.TxHash
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		r := n.CLI("", "query", "tx", hash, "-o", "json")
		if r.Err == nil {
			var tx struct {
				Code   int    `json:"code"`
				RawLog string `json:"raw_log"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.Stdout), &tx))
			require.Zero(t, tx.Code, tx.RawLog)
			return r.Stdout
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Fatalf("tx %s not found", hash)
	return ""
}

// signedBy reports whether the validator with hex address addr signed the last commit.
func signedBy(t *testing.T, n *node.Node, addr string) bool {
	t.Helper()
	signed, err := commitSigners(strings.Replace(n.RPC, "tcp://", "http://", 1))
	require.NoError(t, err)
	return slices.Contains(signed, addr)
}

// commitSigners are the hex addresses of the validators that signed the last commit the node
// at rpc (http://host:port) holds.
func commitSigners(rpc string) ([]string, error) {
	resp, err := http.Get(rpc + "/commit")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseCommitSigners(resp.Body)
}

// parseCommitSigners reads CometBFT's /commit answer: the hex addresses that signed it.
func parseCommitSigners(r io.Reader) ([]string, error) {
	var c struct {
		Result struct {
			SignedHeader struct {
				Commit struct {
					Signatures []struct {
						Flag    int    `json:"block_id_flag"`
						Address string `json:"validator_address"`
					} `json:"signatures"`
				} `json:"commit"`
			} `json:"signed_header"`
		} `json:"result"`
	}
	if err := json.NewDecoder(r).Decode(&c); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range c.Result.SignedHeader.Commit.Signatures {
		if s.Flag == 2 { // BlockIDFlagCommit
			out = append(out, s.Address)
		}
	}
	return out, nil
}

// TestGovernanceControlsValidatorsAndTopics runs two validators and a full node as processes.
// Proposals (the files in scripts/proposals) admit carol, whose node then signs blocks, remove
// her again so it stops, and change a topic's config, which the next produce obeys; a
// rejected proposal changes nothing.
func TestGovernanceControlsValidatorsAndTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three nodes")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 2, TestKeys: []string{"carol"}, EditGenesis: node.ShortGovernance(6 * time.Second)})
	n0 := net.Nodes[0]
	carolNode := net.AddFullNode("carol")
	var key struct {
		Address string `json:"address"`
	}
	bz, err := os.ReadFile(filepath.Join(carolNode.Home, "config", "priv_validator_key.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(bz, &key))

	// Without an admission carol can not create a validator.
	pubkey := strings.TrimSpace(carolNode.MustRun("comet", "show-validator"))
	valFile := filepath.Join(t.TempDir(), "validator.json")
	require.NoError(t, os.WriteFile(valFile, []byte(fmt.Sprintf(`{"pubkey": %s, "amount": "50000000stake", "moniker": "carol",
		"commission-rate": "0.1", "commission-max-rate": "0.2", "commission-max-change-rate": "0.01", "min-self-delegation": "1"}`, pubkey)), 0o644))
	// (The SDK's tx commands exit 0 on a CheckTx rejection and print the code and log.)
	denied := n0.CLI("", "tx", "staking", "create-validator", valFile, "--from", "carol", "--gas", "400000")
	require.Contains(t, denied.Stderr+denied.Stdout, "not admitted")
	deleg := n0.CLI("", "tx", "staking", "delegate", strings.TrimSpace(n0.MustRun("keys", "show", "val0", "--bech", "val", "-a", "--keyring-backend", "test")), "1stake", "--from", "carol", "--gas", "400000")
	require.Contains(t, deleg.Stderr+deleg.Stdout, "not allowed under proof of authority")

	// 1. Admit carol (power 50); she creates her validator and her node signs.
	_, status := passProposal(t, net, proposalFile(t, "admit-validator.json"), "yes")
	require.Equal(t, "PROPOSAL_STATUS_PASSED", status)
	pending := n0.MustCLI("", "query", "poa", "admissions", "--pending-only", "-o", "json")
	require.Contains(t, pending, "bftlogvaloper1glcfeghcv8htnlcqgp3egj6et0zs3scqu0jcg3")
	waitTxOK(t, n0, n0.MustCLI("", "tx", "staking", "create-validator", valFile, "--from", "carol", "--gas", "400000", "-o", "json"))
	// Her validator joins the set two blocks after that; her precommits then reach a block's
	// last commit when they arrive within timeout_commit, which a busy machine can delay.
	eventually(t, "carol's node to sign blocks", 60*time.Second, func() bool { return signedBy(t, n0, key.Address) })
	adm := n0.MustCLI("", "query", "poa", "admission", "bftlogvaloper1glcfeghcv8htnlcqgp3egj6et0zs3scqu0jcg3", "-o", "json")
	require.Contains(t, adm, `"bonded"`)

	// 2. Remove carol: her validator leaves the set and her node stops signing.
	_, status = passProposal(t, net, proposalFile(t, "remove-validator.json"), "yes")
	require.Equal(t, "PROPOSAL_STATUS_PASSED", status)
	eventually(t, "carol's node to stop signing", 30*time.Second, func() bool { return !signedBy(t, n0, key.Address) })
	h, err := n0.Height()
	require.NoError(t, err)
	require.NoError(t, n0.WaitForHeight(h+3, 30*time.Second))
	require.False(t, signedBy(t, n0, key.Address), "a removed validator stays out")
	unjail := n0.CLI("", "tx", "slashing", "unjail", "--from", "carol", "--gas", "400000")
	require.Contains(t, unjail.Stderr+unjail.Stdout, "may not unjail without a new admission")

	// 3. A topic config proposal: the new limit (17 encoded bytes: a 10-byte value) applies to the next produce.
	createTopic(n0, "val0", "demo", 1)
	n0.MustCLI("", "tx", "topics", "produce", "demo", "eleven byte", "--from", "val0")
	_, status = passProposal(t, net, proposalFile(t, "topic-config.json"), "yes")
	require.Equal(t, "PROPOSAL_STATUS_PASSED", status)
	tooBig := n0.CLI("", "tx", "topics", "produce", "demo", "eleven byte", "--from", "val0")
	require.Error(t, tooBig.Err)
	require.Contains(t, tooBig.Stderr, "record too large")
	n0.MustCLI("", "tx", "topics", "produce", "demo", "ten bytes!", "--from", "val0")
	topic := n0.MustCLI("", "query", "topics", "topic", "demo", "-o", "json")
	require.Contains(t, topic, `"retention_ms": "3600000"`)

	// 4. A rejected proposal changes nothing.
	before := n0.MustCLI("", "query", "topics", "params", "-o", "json")
	_, status = passProposal(t, net, proposalFile(t, "topics-params.json"), "no")
	require.Equal(t, "PROPOSAL_STATUS_REJECTED", status)
	require.Equal(t, before, n0.MustCLI("", "query", "topics", "params", "-o", "json"))
}
