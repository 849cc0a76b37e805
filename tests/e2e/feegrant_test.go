package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/x/feegrant"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/cli"
)

// stakeOf is addr's balance of stake, as the CLI reads it.
func stakeOf(t *testing.T, n *node.Node, addr string) int64 {
	t.Helper()
	var res struct {
		Balance struct {
			Amount json.Number `json:"amount"`
		} `json:"balance"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "bank", "balance", addr, "stake", "-o", "json")), &res))
	v, err := res.Balance.Amount.Int64()
	require.NoError(t, err)
	return v
}

// feeOf is the fee a committed transaction paid and who granted it.
func feeOf(t *testing.T, n *node.Node, hash string) (fee int64, granter string) {
	t.Helper()
	var tx struct {
		Tx struct {
			AuthInfo struct {
				Fee struct {
					Amount []struct {
						Amount json.Number `json:"amount"`
					} `json:"amount"`
					Granter string `json:"granter"`
				} `json:"fee"`
			} `json:"auth_info"`
		} `json:"tx"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "tx", hash, "-o", "json")), &tx))
	fee, err := tx.Tx.AuthInfo.Fee.Amount[0].Amount.Int64()
	require.NoError(t, err)
	return fee, tx.Tx.AuthInfo.Fee.Granter
}

// allowanceLeft is the stake grantee's one fee allowance has left.
func allowanceLeft(t *testing.T, n *node.Node, grantee string) int64 {
	t.Helper()
	var res struct {
		Allowances []struct {
			Allowance struct {
				Value struct {
					SpendLimit []struct {
						Amount json.Number `json:"amount"`
					} `json:"spend_limit"`
				} `json:"value"`
			} `json:"allowance"`
		} `json:"allowances"`
	}
	require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "feegrant", "grants-by-grantee", grantee, "-o", "json")), &res))
	require.Len(t, res.Allowances, 1)
	v, err := res.Allowances[0].Allowance.Value.SpendLimit[0].Amount.Int64()
	require.NoError(t, err)
	return v
}

// An organisation pays its producers' fees (x/feegrant): a key that holds nothing produces with
// --fee-granter, on the CLI's own path (gas simulated, several transactions in flight), and the
// granter's balance pays exactly each fee. A fee above what the allowance has left is refused
// with feegrant's code 2, and once revoked with the SDK's code 38 (fee-grant not found).
func TestFeeGrantPaysAProducersFees(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "org")
	n.MustRun("keys", "add", "producer", "--keyring-backend", "test")
	org, producer := n.Address("org"), n.Address("producer")
	createTopic(n, "org", "payroll", 1, "--allow-producer", producer)

	const limit = 50_000
	waitTxOK(t, n, n.MustCLI("", "tx", "feegrant", "grant", org, producer, "--spend-limit", fmt.Sprintf("%dstake", limit),
		"--from", "org", "--gas", "200000", "--fees", "2000stake", "-o", "json"))
	require.Zero(t, stakeOf(t, n, producer), "the producer holds nothing")

	// One record, then 300 in three transactions of 100.
	var lines strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&lines, "k%d:record %d\n", i, i)
	}
	before := stakeOf(t, n, org)
	for i, args := range [][]string{{"first"}, {"--key-separator", ":", "--batch-records", "100"}} {
		stdin := ""
		if len(args) > 1 {
			stdin = lines.String()
		}
		out := n.MustCLI(stdin, append(append([]string{"tx", "topics", "produce", "payroll"}, args...),
			"--from", "producer", "--fee-granter", org, "-o", "json")...)
		var produced cli.ProduceOutput
		require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &produced), out)
		if i == 0 { // a small transaction: query tx shows it itself, not a reference to it
			fee, granter := feeOf(t, n, produced.TxHashes[0])
			require.Equal(t, org, granter)
			require.Positive(t, fee)
		}
		t.Logf("%d record(s) in %d transaction(s) on a fee grant", produced.Records, len(produced.TxHashes))
	}
	paid := limit - allowanceLeft(t, n, producer)
	require.Positive(t, paid)
	require.Equal(t, before-paid, stakeOf(t, n, org), "the granter paid every fee, what the allowance lost")
	require.Zero(t, stakeOf(t, n, producer), "the producer still holds nothing")
	t.Logf("4 transactions, 301 records: %dstake paid by the granter, %dstake of the allowance left", paid, limit-paid)
	require.Len(t, strings.Split(strings.TrimSpace(n.MustCLI("", "query", "topics", "consume", "payroll", "-o", "json")), "\n"), 301)

	// A fee above what is left.
	r := n.CLI("", "tx", "topics", "produce", "payroll", "dear", "--from", "producer", "--fee-granter", org,
		"--fees", fmt.Sprintf("%dstake", limit-paid+1))
	require.Error(t, r.Err)
	require.Contains(t, r.Stderr, fmt.Sprintf("(codespace %s, code %d)", feegrant.ErrFeeLimitExceeded.Codespace(), feegrant.ErrFeeLimitExceeded.ABCICode()))

	// Revoked: no allowance at all.
	waitTxOK(t, n, n.MustCLI("", "tx", "feegrant", "revoke", org, producer, "--from", "org",
		"--gas", "200000", "--fees", "2000stake", "-o", "json"))
	r = n.CLI("", "tx", "topics", "produce", "payroll", "revoked", "--from", "producer", "--fee-granter", org)
	require.Error(t, r.Err)
	require.Contains(t, r.Stderr, fmt.Sprintf("(codespace %s, code %d)", sdkerrors.ErrNotFound.Codespace(), sdkerrors.ErrNotFound.ABCICode()))
	require.Contains(t, r.Stderr, "fee-grant not found")
	require.Len(t, strings.Split(strings.TrimSpace(n.MustCLI("", "query", "topics", "consume", "payroll", "-o", "json")), "\n"), 301)
}
