package e2e

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/types"
)

type consumed map[string]int

func (c consumed) add(recs []consumer.Record) {
	for _, r := range recs {
		c[fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)]++
	}
}

// Two consumers on two validator processes share a group: they split the partitions, one
// commits part of its work and leaves, the other takes over from the committed offsets, and
// every record is consumed exactly once across the group.
func TestConsumerGroupSplitAndTakeOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process network")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 2})
	ctx := context.Background()
	// Each consumer signs as its own validator's account and talks to its own node.
	ctxA, sigA := net.Nodes[0].ClientContext(net.Nodes[0].Home, "val0")
	ctxB, sigB := net.Nodes[1].ClientContext(net.Nodes[1].Home, "val1")

	_, err := sigA.SubmitAndWait(&types.MsgCreateTopic{Owner: sigA.Address(), Name: "events", Partitions: 4,
		Config: types.TopicConfig{RetentionMs: -1, RetentionBytes: -1}})
	require.NoError(t, err)
	var batches []types.ProduceBatch
	for p := int32(0); p < 4; p++ {
		b := types.ProduceBatch{Topic: "events", Partition: p}
		for i := 0; i < 10; i++ {
			b.Records = append(b.Records, types.BatchRecord{Value: &types.Bytes{Data: []byte(fmt.Sprintf("p%d-%d", p, i))}})
		}
		batches = append(batches, b)
	}
	_, err = sigA.SubmitAndWait(&types.MsgProduce{Producer: sigA.Address(), Batches: batches})
	require.NoError(t, err)

	a, err := consumer.Join(ctx, ctxA, sigA, "workers", []string{"events"})
	require.NoError(t, err)
	require.Equal(t, []types.TopicPartitions{{Topic: "events", Partitions: []uint32{0, 1, 2, 3}}}, a.Assignment())
	b, err := consumer.Join(ctx, ctxB, sigB, "workers", []string{"events"})
	require.NoError(t, err)
	require.Equal(t, a.Generation()+1, b.Generation())
	require.ErrorIs(t, a.Heartbeat(ctx), consumer.ErrRebalanced)
	require.Equal(t, b.Generation(), a.Generation())
	require.Len(t, a.Assignment()[0].Partitions, 2)
	require.Len(t, b.Assignment()[0].Partitions, 2)
	require.NotEqual(t, a.Assignment()[0].Partitions, b.Assignment()[0].Partitions)

	seen := consumed{}
	// A reads 5 records and commits them, then leaves.
	recs, err := a.Poll(ctx, 5)
	require.NoError(t, err)
	require.Len(t, recs, 5)
	seen.add(recs)
	require.NoError(t, a.Commit(ctx))
	require.NoError(t, a.Leave(ctx))

	// B reads all of its own partitions, commits, then learns of the rebalance and takes over
	// A's partitions from A's committed offsets.
	for {
		recs, err := b.Poll(ctx, 7)
		require.NoError(t, err)
		seen.add(recs)
		err = b.Commit(ctx)
		if errors.Is(err, consumer.ErrRebalanced) {
			continue // positions now come from the committed offsets of the new assignment
		}
		require.NoError(t, err)
		if len(recs) == 0 {
			break
		}
	}
	require.Equal(t, []types.TopicPartitions{{Topic: "events", Partitions: []uint32{0, 1, 2, 3}}}, b.Assignment())
	require.Len(t, seen, 40, "every record consumed")
	for k, n := range seen {
		require.Equal(t, 1, n, "%s consumed %d times", k, n)
	}
	lag, err := types.NewQueryClient(ctxB).Lag(ctx, &types.QueryLagRequest{GroupId: "workers"})
	require.NoError(t, err)
	for _, l := range lag.Lags {
		require.Zero(t, l.Lag, "%s/%d", l.Topic, l.Partition)
	}
}
