package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/x/feegrant"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/testutil/node"
)

// sentTx is what a tx command prints with -o json once CheckTx answered.
type sentTx struct {
	TxHash    string `json:"txhash"`
	Codespace string `json:"codespace"`
	Code      uint32 `json:"code"`
	RawLog    string `json:"raw_log"`
}

func parseSent(t *testing.T, out string) sentTx {
	t.Helper()
	var s sentTx
	require.NoError(t, json.Unmarshal([]byte(lastLine(out)), &s), out)
	return s
}

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

// An organisation pays its producers' fees (x/feegrant): a key that holds nothing produces with
// --fee-granter, the granter's balance pays exactly each fee, and once the allowance's spend
// limit is used up (or revoked) the producer is refused with feegrant's own codes.
func TestFeeGrantPaysAProducersFees(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "org")
	n.MustRun("keys", "add", "producer", "--keyring-backend", "test")
	org, producer := n.Address("org"), n.Address("producer")
	createTopic(n, "org", "payroll", 1, "--allow-producer", producer)

	// 5,000stake: two produces of 200,000 gas at the chain's 0.01stake, not three.
	waitTxOK(t, n, n.MustCLI("", "tx", "feegrant", "grant", org, producer, "--spend-limit", "5000stake",
		"--from", "org", "--gas", "200000", "--fees", "2000stake", "-o", "json"))
	require.Zero(t, stakeOf(t, n, producer), "the producer holds nothing")
	produce := func(value string) sentTx {
		return parseSent(t, n.MustCLI("", "tx", "topics", "produce", "payroll", value,
			"--from", "producer", "--fee-granter", org, "-o", "json"))
	}
	for _, v := range []string{"first", "second"} {
		before := stakeOf(t, n, org)
		sent := produce(v)
		require.Zero(t, sent.Code, sent.RawLog)
		res := waitTxOK(t, n, `{"txhash":"`+sent.TxHash+`"}`)
		var tx struct {
			GasUsed string `json:"gas_used"`
			Tx      struct {
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
		require.NoError(t, json.Unmarshal([]byte(res), &tx))
		require.Equal(t, org, tx.Tx.AuthInfo.Fee.Granter)
		fee, err := tx.Tx.AuthInfo.Fee.Amount[0].Amount.Int64()
		require.NoError(t, err)
		require.Equal(t, before-fee, stakeOf(t, n, org), "the granter paid the fee")
		require.Zero(t, stakeOf(t, n, producer), "the producer still holds nothing")
		t.Logf("produce %q on a fee grant: fee %dstake paid by the granter, gas used %s", v, fee, tx.GasUsed)
	}
	out := n.MustCLI("", "query", "topics", "consume", "payroll", "--from-beginning", "-o", "json")
	require.Contains(t, out, "first")
	require.Contains(t, out, "second")

	// 1,000stake left: a third fee of 2,000 exceeds it.
	sent := produce("third")
	require.Equal(t, feegrant.ErrFeeLimitExceeded.Codespace(), sent.Codespace, sent.RawLog)
	require.Equal(t, feegrant.ErrFeeLimitExceeded.ABCICode(), sent.Code, sent.RawLog)

	// Revoked: no allowance at all (the keeper answers the SDK's "not found").
	waitTxOK(t, n, n.MustCLI("", "tx", "feegrant", "revoke", org, producer, "--from", "org",
		"--gas", "200000", "--fees", "2000stake", "-o", "json"))
	sent = produce("fourth")
	require.Equal(t, sdkerrors.ErrNotFound.Codespace(), sent.Codespace, sent.RawLog)
	require.Equal(t, sdkerrors.ErrNotFound.ABCICode(), sent.Code, sent.RawLog)
	require.Contains(t, sent.RawLog, "fee-grant not found")
	require.NotContains(t, n.MustCLI("", "query", "topics", "consume", "payroll", "--from-beginning", "-o", "json"), "third")
}
