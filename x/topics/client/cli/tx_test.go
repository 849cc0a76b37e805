package cli

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// A committed transaction prints as one JSON document with -o json: the SDK's TxResponse
// fields and the decoded Msg responses; as the text line otherwise.
func TestPrintTxResult(t *testing.T) {
	reg := codectypes.NewInterfaceRegistry()
	types.RegisterInterfaces(reg)
	cdc := codec.NewProtoCodec(reg)
	resp, err := codectypes.NewAnyWithValue(&types.MsgResetOffsetsResponse{Offsets: []types.CommittedOffset{
		{GroupId: "g", Topic: "orders", Partition: 1, Offset: 42, Metadata: "reset"},
	}})
	require.NoError(t, err)
	data, err := cdc.Marshal(&sdk.TxMsgData{MsgResponses: []*codectypes.Any{resp}})
	require.NoError(t, err)
	res := &sdk.TxResponse{TxHash: strings.Repeat("AB", 32), Height: 7, GasUsed: 1000, Data: strings.ToUpper(hex.EncodeToString(data))}
	clientCtx := client.Context{}.WithCodec(cdc).WithInterfaceRegistry(reg)

	run := func(format string) string {
		var out bytes.Buffer
		cmd := &cobra.Command{}
		cmd.SetOut(&out)
		require.NoError(t, printTxResult(cmd, clientCtx.WithOutputFormat(format), res, "reset group %s (tx %s)\n", "g", res.TxHash))
		return out.String()
	}

	out := run("json")
	var doc struct {
		TxHash       string  `json:"txhash"`
		Height       string  `json:"height"`
		Code         *uint32 `json:"code"`
		GasUsed      string  `json:"gas_used"`
		MsgResponses []struct {
			Type    string `json:"@type"`
			Offsets []struct {
				Topic     string `json:"topic"`
				Partition uint32 `json:"partition"`
				Offset    string `json:"offset"`
			} `json:"offsets"`
		} `json:"msg_responses"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	require.NoError(t, dec.Decode(&doc), out)
	require.False(t, dec.More(), "one document: %s", out)
	require.Equal(t, res.TxHash, doc.TxHash)
	require.Equal(t, "7", doc.Height)
	require.NotNil(t, doc.Code, "code 0 is printed")
	require.Zero(t, *doc.Code)
	require.Equal(t, "1000", doc.GasUsed)
	require.Len(t, doc.MsgResponses, 1)
	r := doc.MsgResponses[0]
	require.Equal(t, "/bftlog.topics.v1.MsgResetOffsetsResponse", r.Type)
	require.Len(t, r.Offsets, 1)
	require.Equal(t, "orders", r.Offsets[0].Topic)
	require.Equal(t, uint32(1), r.Offsets[0].Partition)
	require.Equal(t, "42", r.Offsets[0].Offset)

	require.Equal(t, "reset group g (tx "+res.TxHash+")\n", run("text"))
	require.Equal(t, "reset group g (tx "+res.TxHash+")\n", run(""))
}
