package e2e

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	errorsmod "cosmossdk.io/errors"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Both transports of the one send path against one node: a produce sent through either is
// committed and found by both with the same height, code and responses (the contract is the
// node's, not the path's); a transaction that failed in its block is a *TxError with its
// registered error through either, and both show the same code for it; junk is a CheckTx
// refusal (an answer with a code, not an error); an unknown hash is ErrNotInBlock.
func TestTransportsOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "transport", 2)
	cctx, signer := n.ClientContext(n.Home, "alice")
	paths := []struct {
		name string
		t    txclient.Transport
	}{{"CometBFT RPC", txclient.NewRPC(cctx)}, {"ingress", txclient.NewIngress(n.API)}}
	ctx := context.Background()

	var offset uint64
	for _, p := range paths {
		signer.UseTransport(p.t)
		batch, err := types.NewProduceBatch("transport", 0, records(10), kbatch.CompressionNone)
		require.NoError(t, err)
		res, err := signer.SubmitAndWait(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}})
		require.NoError(t, err, p.name)
		out, err := txclient.Responses[types.MsgProduceResponse](cctx, res)
		require.NoError(t, err, p.name)
		require.Equal(t, []types.ProduceResult{{Topic: "transport", Partition: 0, BaseOffset: offset, Count: 10}}, out[0].Results, p.name)
		offset += 10
		for _, other := range paths {
			got, err := other.t.Result(ctx, res.TxHash, time.Second)
			require.NoError(t, err, "%s's transaction through %s", p.name, other.name)
			require.Equal(t, strings.ToUpper(res.TxHash), got.TxHash, other.name)
			require.Equal(t, res.Height, got.Height, other.name)
			require.Equal(t, res.Data, got.Data, other.name)
			require.Zero(t, got.Code, other.name)
		}

		// A partition the topic lacks: given its gas, the transaction is not simulated, passes
		// CheckTx and fails in its block.
		bad, err := types.NewProduceBatch("transport", 7, records(1), kbatch.CompressionNone)
		require.NoError(t, err)
		msg := &types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{bad}}
		adm, err := signer.SubmitAdmitted(txclient.FixedGas(msg), msg)
		require.NoError(t, err, p.name)
		_, err = adm.Wait()
		var txErr *txclient.TxError
		require.ErrorAs(t, err, &txErr, p.name)
		require.Equal(t, txclient.Delivered, txErr.Stage, p.name)
		require.ErrorIs(t, err, types.ErrInvalidPartition, p.name)
		for _, other := range paths {
			got, err := other.t.Result(ctx, adm.Hash, time.Second)
			require.NoError(t, err, other.name)
			require.Equal(t, types.ErrInvalidPartition.ABCICode(), got.Code, other.name)
			require.Equal(t, types.ModuleName, got.Codespace, other.name)
			require.Equal(t, txErr.Height, got.Height, other.name)
		}

		junk, err := p.t.Broadcast(ctx, []byte("not a transaction"))
		require.NoError(t, err, "%s: a refusal is an answer", p.name)
		require.True(t, errors.Is(errorsmod.ABCIError(junk.Codespace, junk.Code, ""), sdkerrors.ErrTxDecode), "%s: %+v", p.name, junk)

		began := time.Now()
		_, err = p.t.Result(ctx, strings.Repeat("AB", 32), 300*time.Millisecond)
		require.ErrorIs(t, err, txclient.ErrNotInBlock, p.name)
		// Waited for the block, less at most one of RPC's 100 ms polls.
		require.GreaterOrEqual(t, time.Since(began), 190*time.Millisecond, "%s waited for the block", p.name)
		t.Logf("%s: produce committed at height %d, found by both transports; failure code %d at height %d", p.name, res.Height, txErr.ABCICode(), txErr.Height)
	}
}

// The produce rate of each transport on one node, the same signer and load for both: 40
// transactions of 2,000 records of 100 B, 4 in flight. It uses only the API that predates the
// Transport interface (a signer's default RPC, UseRawIngress), so that it measures a tree
// before the change the same way.
func TestTransportProduceRate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "rate", 4)
	const txs, perTx, inFlight = 40, 2000, 4
	for _, ingress := range []bool{false, true} {
		_, signer := n.ClientContext(n.Home, "alice")
		signer.SetFixedGas()
		name := "CometBFT RPC"
		if ingress {
			name = "ingress"
			signer.UseRawIngress(n.API + app.RawTxPath)
		}
		began := time.Now()
		var pending []*txclient.Admitted
		for i := 0; i < txs; i++ {
			if len(pending) == inFlight {
				_, err := pending[0].Wait()
				require.NoError(t, err, name)
				pending = pending[1:]
			}
			batch, err := types.NewProduceBatch("rate", uint32(i%4), records(perTx), kbatch.CompressionNone)
			require.NoError(t, err)
			adm, err := signer.SubmitAdmitted(0, &types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}})
			require.NoError(t, err, name)
			pending = append(pending, adm)
		}
		for _, adm := range pending {
			_, err := adm.Wait()
			require.NoError(t, err, name)
		}
		took := time.Since(began)
		t.Logf("%s: %d records in %s, %.0f records/s", name, txs*perTx, took.Round(time.Millisecond), float64(txs*perTx)/took.Seconds())
	}
}

// records is n records of 100 B.
func records(n int) []types.BatchRecord {
	recs := make([]types.BatchRecord, n)
	for i := range recs {
		recs[i] = types.BatchRecord{Value: types.NewBytes(bytes.Repeat([]byte{byte(i)}, 100))}
	}
	return recs
}
