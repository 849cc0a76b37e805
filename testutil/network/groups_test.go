package network_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"

	"github.com/bftlog/bftlog/testutil/network"
	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// signerFor returns a signer for validator v's account. The SDK's in-process network serves
// RPC from its first validator only, so every client talks to that node.
func signerFor(t *testing.T, net *sdknetwork.Network, v *sdknetwork.Validator, autoGas bool) (client.Context, *txclient.Signer) {
	t.Helper()
	rec, err := v.ClientCtx.Keyring.KeyByAddress(v.Address)
	require.NoError(t, err)
	ctx := net.Validators[0].ClientCtx.WithKeyring(v.ClientCtx.Keyring).WithFromName(rec.Name).WithFromAddress(v.Address)
	txf := tx.Factory{}.
		WithChainID(net.Config.ChainID).
		WithKeybase(ctx.Keyring).
		WithTxConfig(ctx.TxConfig).
		WithAccountRetriever(ctx.AccountRetriever).
		WithSignMode(signing.SignMode_SIGN_MODE_DIRECT).
		WithGas(2_000_000)
	s, err := txclient.NewSigner(ctx, txf, autoGas)
	require.NoError(t, err)
	return ctx, s
}

type consumed map[string]int

func (c consumed) add(recs []consumer.Record) {
	for _, r := range recs {
		c[fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)]++
	}
}

// Two consumers (two accounts, on a two-validator network) share a group: they split the partitions, one
// commits part of its work and leaves, the other takes over from the committed offsets, and
// every record is consumed exactly once across the group.
func TestConsumerGroupSplitAndTakeOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process network")
	}
	net := network.New(t, 2)
	ctx := context.Background()
	ctxA, sigA := signerFor(t, net, net.Validators[0], true)
	ctxB, sigB := signerFor(t, net, net.Validators[1], true)

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

// A transaction carrying MsgProduce and MsgCommitOffsets applies both or neither.
func TestProduceAndCommitAreAtomic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process network")
	}
	net := network.New(t, 1)
	ctx := context.Background()
	cctx, s := signerFor(t, net, net.Validators[0], false) // fixed gas: failures reach the block
	q := types.NewQueryClient(cctx)
	for _, name := range []string{"in", "out"} {
		_, err := s.SubmitAndWait(&types.MsgCreateTopic{Owner: s.Address(), Name: name, Partitions: 1})
		require.NoError(t, err)
	}
	one := []types.BatchRecord{{Value: &types.Bytes{Data: []byte("x")}}}
	_, err := s.SubmitAndWait(&types.MsgProduce{Producer: s.Address(), Batches: []types.ProduceBatch{{Topic: "in", Records: append(one, one...)}}})
	require.NoError(t, err)
	c, err := consumer.Join(ctx, cctx, s, "etl", []string{"in"})
	require.NoError(t, err)
	recs, err := c.Poll(ctx, 10)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	commit := c.CommitMsg()
	require.NotNil(t, commit)
	produce := &types.MsgProduce{Producer: s.Address(), Batches: []types.ProduceBatch{{Topic: "out", Records: one}}}

	// The commit carries a stale generation: the whole transaction fails in the block, and
	// the produce in front of it is rolled back.
	stale := *commit
	stale.Generation--
	_, err = s.SubmitAndWait(produce, &stale)
	require.ErrorContains(t, err, "illegal generation")
	parts, err := q.Partitions(ctx, &types.QueryPartitionsRequest{Name: "out"})
	require.NoError(t, err)
	require.Zero(t, parts.Partitions[0].HighWatermark, "produce rolled back with the failed commit")
	offs, err := q.GroupOffsets(ctx, &types.QueryGroupOffsetsRequest{GroupId: "etl"})
	require.NoError(t, err)
	require.Empty(t, offs.Offsets)

	// The same pair with the right generation applies both.
	_, err = s.SubmitAndWait(produce, commit)
	require.NoError(t, err)
	parts, err = q.Partitions(ctx, &types.QueryPartitionsRequest{Name: "out"})
	require.NoError(t, err)
	require.Equal(t, uint64(1), parts.Partitions[0].HighWatermark)
	offs, err = q.GroupOffsets(ctx, &types.QueryGroupOffsetsRequest{GroupId: "etl"})
	require.NoError(t, err)
	require.Len(t, offs.Offsets, 1)
	require.Equal(t, uint64(2), offs.Offsets[0].Committed.Offset)
}
