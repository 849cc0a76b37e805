package txclient

import (
	"context"

	"github.com/cometbft/cometbft/libs/bytes"
	rpcclient "github.com/cometbft/cometbft/rpc/client"
	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	cmttypes "github.com/cometbft/cometbft/types"

	"github.com/cosmos/cosmos-sdk/client"
)

// Nodes is a client.Context's CometBFT client: every call goes to the current node and fails
// over as Nodes.do does.
var _ client.CometRPC = (*Nodes)(nil)

// rpcCall runs one CometBFT RPC call through n.do.
func rpcCall[R any](ctx context.Context, n *Nodes, f func(context.Context, *rpchttp.HTTP) (R, error)) (R, error) {
	var out R
	err := n.do(ctx, func(ctx context.Context, ep *endpoint) error {
		r, err := f(ctx, ep.rpc)
		if err == nil {
			out = r
		}
		return err
	})
	return out, err
}

func (n *Nodes) ABCIInfo(ctx context.Context) (*coretypes.ResultABCIInfo, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultABCIInfo, error) { return c.ABCIInfo(ctx) })
}

func (n *Nodes) ABCIQuery(ctx context.Context, path string, data bytes.HexBytes) (*coretypes.ResultABCIQuery, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultABCIQuery, error) {
		return c.ABCIQuery(ctx, path, data)
	})
}

func (n *Nodes) ABCIQueryWithOptions(ctx context.Context, path string, data bytes.HexBytes, opts rpcclient.ABCIQueryOptions) (*coretypes.ResultABCIQuery, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultABCIQuery, error) {
		return c.ABCIQueryWithOptions(ctx, path, data, opts)
	})
}

func (n *Nodes) BroadcastTxCommit(ctx context.Context, tx cmttypes.Tx) (*coretypes.ResultBroadcastTxCommit, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBroadcastTxCommit, error) {
		return c.BroadcastTxCommit(ctx, tx)
	})
}

func (n *Nodes) BroadcastTxAsync(ctx context.Context, tx cmttypes.Tx) (*coretypes.ResultBroadcastTx, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBroadcastTx, error) {
		return c.BroadcastTxAsync(ctx, tx)
	})
}

// BroadcastTxSync answers a node that already holds tx in its mempool cache as having taken it:
// after a node that stopped answering took it and passed it on, the next one has it.
func (n *Nodes) BroadcastTxSync(ctx context.Context, tx cmttypes.Tx) (*coretypes.ResultBroadcastTx, error) {
	res, err := rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBroadcastTx, error) {
		return c.BroadcastTxSync(ctx, tx)
	})
	if errRes := client.CheckCometError(err, tx); errRes != nil && inMempoolCache(errRes) {
		return &coretypes.ResultBroadcastTx{Hash: tx.Hash()}, nil
	}
	return res, err
}

func (n *Nodes) Validators(ctx context.Context, height *int64, page, perPage *int) (*coretypes.ResultValidators, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultValidators, error) {
		return c.Validators(ctx, height, page, perPage)
	})
}

func (n *Nodes) Status(ctx context.Context) (*coretypes.ResultStatus, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultStatus, error) { return c.Status(ctx) })
}

func (n *Nodes) Block(ctx context.Context, height *int64) (*coretypes.ResultBlock, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBlock, error) {
		return c.Block(ctx, height)
	})
}

func (n *Nodes) BlockByHash(ctx context.Context, hash []byte) (*coretypes.ResultBlock, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBlock, error) {
		return c.BlockByHash(ctx, hash)
	})
}

func (n *Nodes) BlockResults(ctx context.Context, height *int64) (*coretypes.ResultBlockResults, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBlockResults, error) {
		return c.BlockResults(ctx, height)
	})
}

func (n *Nodes) BlockchainInfo(ctx context.Context, minHeight, maxHeight int64) (*coretypes.ResultBlockchainInfo, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBlockchainInfo, error) {
		return c.BlockchainInfo(ctx, minHeight, maxHeight)
	})
}

func (n *Nodes) Commit(ctx context.Context, height *int64) (*coretypes.ResultCommit, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultCommit, error) {
		return c.Commit(ctx, height)
	})
}

// Tx looks a transaction up by hash on the current node (the first that answers).
func (n *Nodes) Tx(ctx context.Context, hash []byte, prove bool) (*coretypes.ResultTx, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultTx, error) { return c.Tx(ctx, hash, prove) })
}

func (n *Nodes) TxSearch(ctx context.Context, query string, prove bool, page, perPage *int, orderBy string) (*coretypes.ResultTxSearch, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultTxSearch, error) {
		return c.TxSearch(ctx, query, prove, page, perPage, orderBy)
	})
}

func (n *Nodes) BlockSearch(ctx context.Context, query string, page, perPage *int, orderBy string) (*coretypes.ResultBlockSearch, error) {
	return rpcCall(ctx, n, func(ctx context.Context, c *rpchttp.HTTP) (*coretypes.ResultBlockSearch, error) {
		return c.BlockSearch(ctx, query, page, perPage, orderBy)
	})
}
