package txclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

// A hostile or broken node cannot steer a client: an answer naming another transaction than the
// one sent is a failure (the client computes the hash), a result for another hash is refused, a
// "not yet" answered at once (a proxy's 404) does not make the client spin, and a tx index
// answering null is "not found", not a crash.
func TestAttackTransportAnswersAreChecked(t *testing.T) {
	tx := []byte("signed transaction bytes")
	own := txHash(tx)
	other := strings.Repeat("AB", 32)

	var results atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == ordering.RawTxPath:
			_ = json.NewEncoder(w).Encode(ordering.RawTxResponse{TxHash: other})
		case strings.Contains(r.URL.RawQuery, other):
			_ = json.NewEncoder(w).Encode(ordering.RawTxResult{TxHash: own, Height: 3})
		default:
			results.Add(1)
			http.Error(w, "not in a block yet", ordering.StatusNotInBlock) // at once, not after waiting
		}
	}))
	defer srv.Close()
	in := NewIngress(srv.URL)

	_, _, err := single{in}.send(tx)
	require.ErrorContains(t, err, "answered for transaction "+other, "a broadcast answered for another transaction")

	_, err = in.Result(context.Background(), other, time.Second)
	require.ErrorContains(t, err, "asked for the result of "+other)

	commitTimeout = time.Second
	defer func() { commitTimeout = CommitTimeout }()
	start := time.Now()
	_, err = awaitCommit(in, own)
	require.ErrorIs(t, err, ErrNotCommitted)
	t.Logf("a node answering \"not yet\" at once was asked %d times in %s", results.Load(), time.Since(start).Round(time.Millisecond))
	require.LessOrEqual(t, results.Load(), int64(time.Second/rpcPoll)+1, "the client spun on a node answering at once")

	found, err := ordering.FindTx(context.Background(), nullIndex{}, make([]byte, 32))
	require.Error(t, err)
	require.Nil(t, found)
}

// nullIndex is a tx index answering null for every lookup.
type nullIndex struct{ client.CometRPC }

func (nullIndex) Tx(context.Context, []byte, bool) (*coretypes.ResultTx, error) { return nil, nil }
func (nullIndex) TxSearch(context.Context, string, bool, *int, *int, string) (*coretypes.ResultTxSearch, error) {
	return &coretypes.ResultTxSearch{TotalCount: 1, Txs: []*coretypes.ResultTx{nil}}, nil
}
