package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// A topic owned by a 2-of-2 multisig account (an organisation whose officers co-sign) is created
// and configured as in every Cosmos chain: create-topic and update-topic-config with
// --generate-only print the unsigned transaction, each officer signs it, multi-sign joins the
// signatures and broadcast sends it. One officer's signature alone is refused.
func TestMultisigAccountCreatesAndConfiguresATopic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "alice", "bob", "carol")
	n.MustRun("keys", "add", "org", "--multisig", "alice,bob", "--multisig-threshold", "2", "--keyring-backend", "test")
	org := n.Address("org")
	waitTxOK(t, n, n.MustCLI("", "tx", "bank", "send", "carol", org, "100000000stake", "--from", "carol", "-o", "json"))

	dir := t.TempDir()
	// cosign runs a tx command with --generate-only from the multisig account, has the officers
	// sign, joins their signatures and broadcasts; it returns broadcast's output and whether it
	// went through CheckTx.
	cosign := func(name string, signers []string, signMode string, args ...string) (string, error) {
		unsigned := filepath.Join(dir, name+".json")
		out := n.MustCLI("", append(args, "--from", org, "--generate-only", "--gas", "400000")...)
		require.Contains(t, out, `"signatures":[]`, "--generate-only prints an unsigned transaction")
		require.NoError(t, os.WriteFile(unsigned, []byte(out), 0o600))
		var sigs []string
		for _, s := range signers {
			sig := filepath.Join(dir, name+"-"+s+".json")
			signArgs := []string{"tx", "sign", unsigned, "--from", s, "--multisig", org, "--output-document", sig}
			if signMode != "" {
				signArgs = append(signArgs, "--sign-mode", signMode)
			}
			n.MustCLI("", signArgs...)
			sigs = append(sigs, sig)
		}
		signed := filepath.Join(dir, name+"-signed.json")
		joined := n.MustCLI("", append([]string{"tx", "multi-sign", unsigned, "org"}, sigs...)...)
		require.NoError(t, os.WriteFile(signed, []byte(joined), 0o600))
		r := n.CLI("", "tx", "broadcast", signed, "-o", "json")
		if r.Err != nil {
			return r.Stdout + r.Stderr, r.Err
		}
		return r.Stdout, nil
	}

	// Nothing was sent by --generate-only: the topic does not exist yet.
	out, err := cosign("create", []string{"alice", "bob"}, "", "tx", "topics", "create-topic", "org.ledger", "--partitions", "2", "--retention-ms", "86400000")
	require.NoError(t, err, out)
	waitTxOK(t, n, out)
	var topic struct {
		Topic struct {
			Owner  string `json:"owner"`
			Config struct {
				RetentionMs string `json:"retention_ms"`
			} `json:"config"`
		} `json:"topic"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "topic", "org.ledger", "-o", "json")), &topic))
	require.Equal(t, org, topic.Topic.Owner, "the multisig account owns the topic")
	require.Equal(t, "86400000", topic.Topic.Config.RetentionMs)

	// One officer's signature is not the account's: refused at CheckTx, nothing changed.
	out, err = cosign("one", []string{"alice"}, "", "tx", "topics", "update-topic-config", "org.ledger", "--retention-ms", "1000")
	if err == nil {
		var res struct {
			Code   int    `json:"code"`
			RawLog string `json:"raw_log"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.NotZero(t, res.Code, "a 1-of-2 signature passed: %s", out)
		t.Logf("one officer's signature refused: code %d (%s)", res.Code, res.RawLog)
	} else {
		t.Logf("one officer's signature refused: %s", strings.TrimSpace(out))
	}

	// --sign-mode named, amino-JSON as a Ledger signs (the SDK's multi-sign checks signatures in
	// that mode, its default for a multisig signer).
	out, err = cosign("config", []string{"alice", "bob"}, "amino-json", "tx", "topics", "update-topic-config", "org.ledger", "--retention-ms", "3600000")
	require.NoError(t, err, out)
	waitTxOK(t, n, out)
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "topic", "org.ledger", "-o", "json")), &topic))
	require.Equal(t, "3600000", topic.Topic.Config.RetentionMs, "the co-signed config change applied")

	// Another account cannot configure the multisig's topic.
	r := n.CLI("", "tx", "topics", "update-topic-config", "org.ledger", "--retention-ms", "1000", "--from", "carol")
	require.Error(t, r.Err, "carol changed the org's topic: %s", r.Stdout)
}
