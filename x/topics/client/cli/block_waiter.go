package cli

import (
	"context"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"

	"github.com/cosmos/cosmos-sdk/client"
)

// blockWaiter waits for the next block: by a websocket subscription to NewBlock events, or by
// polling the node's status when the subscription is not available.
type blockWaiter struct {
	node   client.CometRPC
	ws     *rpchttp.HTTP
	events <-chan coretypes.ResultEvent
	last   int64
}

func newBlockWaiter(ctx context.Context, clientCtx client.Context) *blockWaiter {
	w := &blockWaiter{node: clientCtx.Client}
	if st, err := w.node.Status(ctx); err == nil {
		w.last = st.SyncInfo.LatestBlockHeight
	}
	if c, err := rpchttp.New(clientCtx.NodeURI, "/websocket"); err == nil && c.Start() == nil {
		ch, err := c.Subscribe(ctx, "bftlogd-consume", "tm.event='NewBlock'", 64)
		if err == nil {
			w.ws, w.events = c, ch
		} else {
			_ = c.Stop()
		}
	}
	return w
}

// wait returns once a block newer than the last one seen has committed.
func (w *blockWaiter) wait(ctx context.Context) error {
	for {
		if w.events != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case _, ok := <-w.events:
				if ok {
					return nil
				}
				w.events = nil // the subscription ended: poll from now on
			}
			continue
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
		st, err := w.node.Status(ctx)
		if err != nil {
			continue
		}
		if h := st.SyncInfo.LatestBlockHeight; h > w.last {
			w.last = h
			return nil
		}
	}
}

func (w *blockWaiter) close() {
	if w.ws != nil {
		_ = w.ws.UnsubscribeAll(context.Background(), "bftlogd-consume")
		_ = w.ws.Stop()
	}
}
