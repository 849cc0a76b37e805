package txclient

import (
	"bytes"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// A grantee's signer sends the granter's MsgProduce inside a MsgExec it signs, in the place of
// the first, and leaves its own messages (a Kafka transaction's offset commit) beside it.
func TestGranteeWrapsTheGrantersProduce(t *testing.T) {
	gateway, owner := sdk.AccAddress(bytes.Repeat([]byte{1}, 20)), sdk.AccAddress(bytes.Repeat([]byte{2}, 20))
	s := &Signer{clientCtx: client.Context{}.WithFromAddress(gateway)}
	produce := &types.MsgProduce{Producer: owner.String(), Batches: []types.ProduceBatch{{Topic: "t"}}}
	commit := &types.MsgCommitOffsets{Member: gateway.String(), GroupId: "g"}
	require.Equal(t, gateway.String(), s.Producer())
	require.Equal(t, []sdk.Msg{produce, commit}, s.asGrantee([]sdk.Msg{produce, commit}), "no grant: as they are")

	s.UseGrant(owner.String())
	require.Equal(t, owner.String(), s.Producer())
	out := s.asGrantee([]sdk.Msg{commit, produce, produce})
	require.Len(t, out, 2)
	require.Equal(t, commit, out[0])
	exec, ok := out[1].(*authz.MsgExec)
	require.True(t, ok)
	require.Equal(t, gateway.String(), exec.Grantee)
	require.Equal(t, []sdk.Msg{produce, produce}, innerMsgs(exec))
	own := &types.MsgProduce{Producer: gateway.String()}
	require.Equal(t, []sdk.Msg{own}, s.asGrantee([]sdk.Msg{own}), "its own produce is not wrapped")
}

// Fixed gas sees the compressed batches inside a MsgExec, and its size.
func TestFixedGasSeesThroughMsgExec(t *testing.T) {
	recs := make([]types.BatchRecord, 200)
	for i := range recs {
		recs[i] = types.BatchRecord{Value: &types.Bytes{Data: bytes.Repeat([]byte(`{"type":"page_view"}`), 10)}}
	}
	lz4, err := types.NewProduceBatch("t", 0, recs, kbatch.CompressionLZ4)
	require.NoError(t, err)
	produce := &types.MsgProduce{Producer: "owner", Batches: []types.ProduceBatch{lz4}}
	exec := authz.NewMsgExec(sdk.AccAddress(bytes.Repeat([]byte{1}, 20)), []sdk.Msg{produce})
	bare, wrapped := FixedGas(produce), FixedGas(&exec)
	t.Logf("fixed gas of a 200-record lz4 batch: %d bare, %d inside a MsgExec", bare, wrapped)
	require.Greater(t, wrapped, bare)
	require.Greater(t, wrapped-300_000-60*uint64(exec.Size()), uint64(0), "the decompressed bytes counted")
	require.Equal(t, bare-60*uint64(produce.Size()), wrapped-60*uint64(exec.Size()))
}

// The produce results of a grantee's MsgExec are read as MsgProduceResponse.
func TestResponsesInsideMsgExec(t *testing.T) {
	want := types.MsgProduceResponse{Results: []types.ProduceResult{{Topic: "t", Partition: 1, BaseOffset: 7, Count: 3}}}
	inner, err := want.Marshal()
	require.NoError(t, err)
	any, err := codectypes.NewAnyWithValue(&authz.MsgExecResponse{Results: [][]byte{inner}})
	require.NoError(t, err)
	data, err := (&sdk.TxMsgData{MsgResponses: []*codectypes.Any{any}}).Marshal()
	require.NoError(t, err)
	cctx := client.Context{}.WithCodec(codec.NewProtoCodec(codectypes.NewInterfaceRegistry()))
	got, err := Responses[types.MsgProduceResponse](cctx, &sdk.TxResponse{Data: hex.EncodeToString(data)})
	require.NoError(t, err)
	require.Equal(t, []types.MsgProduceResponse{want}, got)
}
