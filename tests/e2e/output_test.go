package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// TestEveryTopicsTxCommandPrintsJSON runs every `bftlogd tx topics` command, hand-written and
// generated, with -o json and decodes stdout as one JSON document with the tx hash and code 0;
// the hand-written ones wait for the block and add the height and the decoded Msg response.
// Without -o they keep printing text (client.toml's output = "text").
func TestEveryTopicsTxCommandPrintsJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "alice")

	type txOut struct {
		TxHash       string `json:"txhash"`
		Code         uint32 `json:"code"`
		Height       string `json:"height"`
		RawLog       string `json:"raw_log"`
		MsgResponses []struct {
			Type string `json:"@type"`
		} `json:"msg_responses"`
	}
	run := func(args ...string) txOut {
		t.Helper()
		args = append([]string{"tx", "topics"}, append(args, "--from", "alice", "-o", "json")...)
		out := n.MustCLI("", args...)
		var res txOut
		require.NoError(t, json.Unmarshal([]byte(out), &res), "%v printed %q", args, out)
		require.Regexp(t, `^[0-9A-F]{64}$`, res.TxHash, out)
		require.Zero(t, res.Code, out)
		getTx(t, n, res.TxHash) // committed, and successful
		return res
	}
	committed := func(res txOut, response string) {
		t.Helper()
		require.NotEqual(t, "0", res.Height)
		require.Len(t, res.MsgResponses, 1)
		require.Equal(t, "/bftlog.topics.v1."+response, res.MsgResponses[0].Type)
	}

	committed(run("create-topic", "out", "--partitions", "1"), "MsgCreateTopicResponse")
	committed(run("update-topic-config", "out", "--retention-ms", "60000"), "MsgUpdateTopicConfigResponse")
	run("add-partitions", "out", "2")
	var produced struct {
		TxHashes []string `json:"tx_hashes"`
		Txs      []struct {
			TxHash string `json:"txhash"`
			Height int64  `json:"height"`
		} `json:"txs"`
		Results []struct {
			BaseOffset uint64 `json:"base_offset"`
			Count      uint32 `json:"count"`
		} `json:"results"`
	}
	out := n.MustCLI("", "tx", "topics", "produce", "out", "a", "b", "--partition", "1", "--from", "alice", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &produced), out)
	require.Len(t, produced.Txs, 1)
	require.Equal(t, produced.TxHashes[0], produced.Txs[0].TxHash)
	require.Positive(t, produced.Txs[0].Height)
	require.Len(t, produced.Results, 1)
	require.Equal(t, uint32(2), produced.Results[0].Count)

	run("join-group", "g", "out")
	run("heartbeat", "g")
	run("leave-group", "g")
	committed(run("reset-offsets", "g", "out", "--to-latest"), "MsgResetOffsetsResponse")
	run("delete-group", "g")
	run("delete-topic", "out")

	// Text stays the default of the hand-written commands.
	text := n.MustCLI("", "tx", "topics", "create-topic", "plain", "--from", "alice")
	require.True(t, strings.HasPrefix(text, "created topic plain with 1 partitions (tx "), text)
}
