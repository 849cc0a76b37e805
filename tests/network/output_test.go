package network_test

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	clitestutil "github.com/cosmos/cosmos-sdk/testutil/cli"

	"github.com/bftlog/bftlog/testutil/network"
	"github.com/bftlog/bftlog/x/topics/client/cli"
	"github.com/bftlog/bftlog/x/topics/types"
)

// txJSON is what a single-transaction command prints with -o json: the SDK's TxResponse
// plus the decoded Msg responses.
type txJSON struct {
	TxHash       string            `json:"txhash"`
	Height       string            `json:"height"`
	Code         uint32            `json:"code"`
	GasUsed      string            `json:"gas_used"`
	Events       []json.RawMessage `json:"events"`
	MsgResponses []json.RawMessage `json:"msg_responses"`
}

// TestTxCommandsPrintJSON runs every hand-written tx command with -o json and decodes its
// stdout as one JSON document; with -o text the commands keep their human line.
func TestTxCommandsPrintJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process network")
	}
	net := network.New(t, 1)
	val := net.Validators[0]
	txFlags := []string{"--from=" + val.Address.String(), "--yes", "--chain-id=" + net.Config.ChainID}

	run := func(output string, args ...string) string {
		t.Helper()
		args = append(append(args, "--output="+output), txFlags...)
		out, err := clitestutil.ExecTestCLICmd(val.ClientCtx, cli.NewTxCmd(), args)
		require.NoError(t, err, "%v: %s", args, out)
		return out.String()
	}
	// runJSON decodes the one JSON document the command printed and checks the transaction
	// committed (height > 0, code 0) with one response of msgType.
	runJSON := func(msgType string, args ...string) (txJSON, map[string]json.RawMessage) {
		t.Helper()
		out := run("json", args...)
		var res txJSON
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.Regexp(t, `^[0-9A-F]{64}$`, res.TxHash, out)
		require.Zero(t, res.Code, out)
		h, err := strconv.ParseInt(res.Height, 10, 64)
		require.NoError(t, err, out)
		require.Positive(t, h, "committed in a block: %s", out)
		require.NotEmpty(t, res.GasUsed, out)
		require.NotEmpty(t, res.Events, out)
		require.Len(t, res.MsgResponses, 1, out)
		var resp map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(res.MsgResponses[0], &resp))
		require.JSONEq(t, strconv.Quote(msgType), string(resp["@type"]), out)
		return res, resp
	}

	// create-topic
	runJSON("/bftlog.topics.v1.MsgCreateTopicResponse", "create-topic", "js", "--partitions=2")
	require.Regexp(t, `^created topic txt with 1 partitions \(tx [0-9A-F]{64}, height \d+\)\n$`, run("text", "create-topic", "txt"))

	// update-topic-config
	runJSON("/bftlog.topics.v1.MsgUpdateTopicConfigResponse", "update-topic-config", "js", "--retention-ms=3600000")
	require.Regexp(t, `^updated topic txt \(tx [0-9A-F]{64}, height \d+\)\n$`, run("text", "update-topic-config", "txt", "--retention-ms=3600000"))

	// produce (one or more transactions): the offsets and each transaction's hash, height and code.
	for i, want := range []uint64{0, 3} {
		out := run("json", "produce", "js", "a", "b", "c", "--partition=1")
		var p cli.ProduceOutput
		require.NoError(t, json.Unmarshal([]byte(out), &p), out)
		require.Equal(t, []cli.ProducedBatch{{Topic: "js", Partition: 1, BaseOffset: want, Count: 3}}, p.Results, "produce %d", i)
		require.Equal(t, uint64(3), p.Records)
		require.Len(t, p.TxHashes, 1)
		require.Len(t, p.Txs, 1)
		require.Equal(t, p.TxHashes[0], p.Txs[0].TxHash)
		require.Regexp(t, `^[0-9A-F]{64}$`, p.Txs[0].TxHash)
		require.Positive(t, p.Txs[0].Height)
		require.Zero(t, p.Txs[0].Code)
	}

	// reset-offsets needs a group without members: join and leave it first.
	_, s := signerFor(t, net, val, true)
	_, err := s.SubmitAndWait(&types.MsgJoinGroup{Member: s.Address(), GroupId: "g", Topics: []string{"js"}})
	require.NoError(t, err)
	_, err = s.SubmitAndWait(&types.MsgLeaveGroup{Member: s.Address(), GroupId: "g"})
	require.NoError(t, err)
	_, resp := runJSON("/bftlog.topics.v1.MsgResetOffsetsResponse", "reset-offsets", "g", "js", "--to-latest")
	var offsets []struct {
		GroupID   string `json:"group_id"`
		Topic     string `json:"topic"`
		Partition uint32 `json:"partition"`
		Offset    string `json:"offset"` // proto JSON: 64-bit integers are strings
	}
	require.NoError(t, json.Unmarshal(resp["offsets"], &offsets), string(resp["offsets"]))
	require.Len(t, offsets, 2)
	for p, o := range offsets {
		require.Equal(t, "g", o.GroupID)
		require.Equal(t, "js", o.Topic)
		require.Equal(t, uint32(p), o.Partition)
	}
	require.Equal(t, "0", offsets[0].Offset, "partition 0 is empty")
	require.Equal(t, "6", offsets[1].Offset, "partition 1's high watermark")
	require.Regexp(t, `^reset group g on js \(tx [0-9A-F]{64}, height \d+\)\n$`, run("text", "reset-offsets", "g", "js", "--to-earliest"))
}
