package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/x/topics/client/verify"
	"github.com/bftlog/bftlog/x/topics/types"
)

// logReader is where consume reads partitions and records from: the node's query service, or
// the verifying client.
type logReader interface {
	partitions(ctx context.Context, topic string) ([]types.Partition, error)
	fetch(ctx context.Context, topic string, partition uint32, offset uint64, maxRecords uint32) ([]types.Record, uint64, error)
}

type plainReader struct{ qc types.QueryClient }

func (r plainReader) partitions(ctx context.Context, topic string) ([]types.Partition, error) {
	res, err := r.qc.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if err != nil {
		return nil, err
	}
	return res.Partitions, nil
}

func (r plainReader) fetch(ctx context.Context, topic string, partition uint32, offset uint64, maxRecords uint32) ([]types.Record, uint64, error) {
	res, err := r.qc.Fetch(ctx, &types.QueryFetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxRecords: maxRecords})
	if err != nil {
		return nil, offset, err
	}
	return res.Records, res.NextOffset, nil
}

// verifiedReader proves everything at one height, chosen when the partitions are read, so the
// watermarks and the records it serves belong to the same state.
type verifiedReader struct {
	vc     *verify.Client
	height int64
}

func (r *verifiedReader) partitions(ctx context.Context, topic string) ([]types.Partition, error) {
	parts, h, err := verifiedPartitions(ctx, r.vc, 0, topic)
	if err != nil {
		return nil, err
	}
	r.height = h
	return parts, nil
}

func (r *verifiedReader) fetch(ctx context.Context, topic string, partition uint32, offset uint64, maxRecords uint32) ([]types.Record, uint64, error) {
	res, err := r.vc.Fetch(ctx, r.height, topic, partition, offset, maxRecords)
	if err != nil {
		return nil, offset, err
	}
	return res.Records, res.NextOffset, nil
}

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

func parsePartitionOffset(partition, offset string) (uint32, uint64, error) {
	p, err := strconv.ParseUint(partition, 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("partition %q: %w", partition, err)
	}
	o, err := strconv.ParseUint(offset, 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("offset %q: %w", offset, err)
	}
	return uint32(p), o, nil
}
