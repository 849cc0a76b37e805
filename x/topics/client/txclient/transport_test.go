package txclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	rpctypes "github.com/cometbft/cometbft/rpc/jsonrpc/types"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app/ordering"
)

// indexNode is a CometBFT tx index holding one transaction that a block named by digest: only
// the ordered event finds it, under the reference's hash.
type indexNode struct {
	client.CometRPC
	named   string // the transaction's own hash, upper-case hex
	txErr   error  // what Tx answers for every hash
	searchs int
}

func (n *indexNode) Tx(context.Context, []byte, bool) (*coretypes.ResultTx, error) {
	return nil, n.txErr
}

func (n *indexNode) TxSearch(_ context.Context, query string, _ bool, _, _ *int, _ string) (*coretypes.ResultTxSearch, error) {
	n.searchs++
	if query != ordering.OrderedQuery(n.named) {
		return &coretypes.ResultTxSearch{}, nil
	}
	return &coretypes.ResultTxSearch{TotalCount: 1, Txs: []*coretypes.ResultTx{{
		Hash: make([]byte, 32), Height: 7, TxResult: abci.ExecTxResult{Code: 0, Data: []byte{0xab, 0x01}, GasUsed: 42},
	}}}, nil
}

// The RPC transport finds a transaction a block named by digest by the ordered event and
// answers it under the transaction's own hash; an unknown hash is ErrNotInBlock once the wait is
// over (an answer: a Nodes list keeps the node); a node that fails the lookup is a failure, not
// ErrNotInBlock.
func TestRPCResultByOrderedEvent(t *testing.T) {
	named := strings.Repeat("CD", 32)
	notFound := &rpctypes.RPCError{Code: -32603, Message: "Internal error", Data: "tx not found"}
	node := &indexNode{named: named, txErr: notFound}
	rpc := NewRPC(client.Context{}.WithClient(node))
	ctx := context.Background()

	res, err := rpc.Result(ctx, strings.ToLower(named), 0)
	require.NoError(t, err)
	require.Equal(t, named, res.TxHash, "the transaction's own hash, not the reference's")
	require.Equal(t, int64(7), res.Height)
	require.Equal(t, "AB01", res.Data)
	require.Equal(t, int64(42), res.GasUsed)

	began, before := time.Now(), node.searchs
	_, err = rpc.Result(ctx, strings.Repeat("EF", 32), 350*time.Millisecond)
	require.ErrorIs(t, err, ErrNotInBlock)
	require.False(t, nodeFailed(err), "not in a block is the node's answer")
	require.GreaterOrEqual(t, time.Since(began), 350*time.Millisecond-rpcPoll, "it waited, less one poll at most")
	require.Greater(t, node.searchs-before, 1, "it asked again while it waited")

	node.txErr = errors.New("connection refused")
	_, err = rpc.Result(ctx, strings.Repeat("EF", 32), time.Second)
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrNotInBlock)
	require.True(t, nodeFailed(err))
}
