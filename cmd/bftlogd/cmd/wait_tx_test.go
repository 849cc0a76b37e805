package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	cmttypes "github.com/cometbft/cometbft/types"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/std"
	authtx "github.com/cosmos/cosmos-sdk/x/auth/tx"
)

// txNode is a node whose index has a transaction from the misses+1-th question on: by its
// hash, or (named) only by the ordered.tx_hash event of a block that named it by digest. It
// has no WebSocket: it tells nothing of what it commits.
type txNode struct {
	client.CometRPC
	tx     []byte
	misses int
	named  bool
	asked  int
}

var errNotFound = errors.New("tx not found")

func (n *txNode) found() bool { n.asked++; return n.asked > n.misses }

func (n *txNode) Tx(_ context.Context, hash []byte, _ bool) (*coretypes.ResultTx, error) {
	if n.named || !n.found() {
		return nil, errNotFound
	}
	return &coretypes.ResultTx{Hash: hash, Height: 7, Tx: n.tx}, nil
}

func (n *txNode) TxSearch(_ context.Context, query string, _ bool, _, _ *int, _ string) (*coretypes.ResultTxSearch, error) {
	if !n.named || !strings.Contains(query, "ordered.tx_hash") || !n.found() {
		return &coretypes.ResultTxSearch{}, nil
	}
	return &coretypes.ResultTxSearch{Txs: []*coretypes.ResultTx{{Height: 7, Tx: n.tx}}, TotalCount: 1}, nil
}

func (n *txNode) Block(context.Context, *int64) (*coretypes.ResultBlock, error) {
	return &coretypes.ResultBlock{Block: &cmttypes.Block{Header: cmttypes.Header{Height: 7, Time: time.Unix(1, 0)}}}, nil
}

// runWaitTx runs `query wait-tx hash` against node and returns what it printed.
func runWaitTx(t *testing.T, node *txNode, hash, timeout string) (string, error) {
	t.Helper()
	registry := codectypes.NewInterfaceRegistry()
	std.RegisterInterfaces(registry)
	cdc := codec.NewProtoCodec(registry)
	txConfig := authtx.NewTxConfig(cdc, authtx.DefaultSignModes)
	bz, err := txConfig.TxEncoder()(txConfig.NewTxBuilder().GetTx())
	require.NoError(t, err)
	node.tx = bz
	var out bytes.Buffer
	clientCtx := client.Context{}.WithClient(node).WithCodec(cdc).WithTxConfig(txConfig).WithInterfaceRegistry(registry).WithOutput(&out)
	cmd := waitTxCmd()
	cmd.SetArgs([]string{hash, "--timeout", timeout, "-o", "json"})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err = cmd.ExecuteContext(context.WithValue(context.Background(), client.ClientContextKey, &clientCtx))
	return out.String(), err
}

const someHash = "2D4703C4DE91CD502F0B0439342F10CC7546E60C7F961AA0073F41D87E4E8397"

// A transaction committed before the node could tell wait-tx of it (the SDK's wait-tx then
// waited its whole timeout) is found by asking again.
func TestWaitTxFindsATransactionCommittedWithoutAnEvent(t *testing.T) {
	for _, named := range []bool{false, true} {
		node := &txNode{misses: 3, named: named}
		out, err := runWaitTx(t, node, someHash, "10s")
		require.NoError(t, err, out)
		var res struct {
			Height string `json:"height"`
			Code   int    `json:"code"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.Equal(t, "7", res.Height)
		require.Equal(t, 4, node.asked, "named %v: found at the fourth question", named)
		t.Logf("named by digest %v: found after %d questions", named, node.asked)
	}
}

// A transaction no block has: wait-tx fails after its timeout with the node's answer.
func TestWaitTxTimesOutOnATransactionNoBlockHas(t *testing.T) {
	node := &txNode{misses: 1 << 30}
	began := time.Now()
	out, err := runWaitTx(t, node, someHash, "1s")
	require.ErrorContains(t, err, "timed out waiting for transaction "+someHash)
	require.ErrorIs(t, err, errNotFound, out)
	require.GreaterOrEqual(t, time.Since(began), time.Second)
	require.Greater(t, node.asked, 2)
}

func TestWaitTxReadsTheHashFromATxCommandsOutput(t *testing.T) {
	for in, want := range map[string]string{
		`{"height":"0","txhash":"` + someHash + `","code":0}`: someHash,
		"code: 0\ntxhash: " + someHash + "\n":                 someHash,
	} {
		got, err := hashFromTxOutput(strings.NewReader(in))
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := hashFromTxOutput(strings.NewReader(`{"code":0}`))
	require.Error(t, err)
}
