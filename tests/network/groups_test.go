package network_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"

	"github.com/bftlog/bftlog/testutil/network"
	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
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
	in, err := types.NewProduceBatch("in", 0, append(one, one...), kbatch.CompressionNone)
	require.NoError(t, err)
	_, err = s.SubmitAndWait(&types.MsgProduce{Producer: s.Address(), Batches: []types.ProduceBatch{in}})
	require.NoError(t, err)
	c, err := consumer.Join(ctx, cctx, s, "etl", []string{"in"})
	require.NoError(t, err)
	recs, err := c.Poll(ctx, 10)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	commit := c.CommitMsg()
	require.NotNil(t, commit)
	out, err := types.NewProduceBatch("out", 0, one, kbatch.CompressionNone)
	require.NoError(t, err)
	produce := &types.MsgProduce{Producer: s.Address(), Batches: []types.ProduceBatch{out}}

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
