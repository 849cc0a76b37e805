package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/testutil/sample"
	poatypes "github.com/bftlog/bftlog/x/poa/types"
	"github.com/bftlog/bftlog/x/topics/types"
)

// restTx is the part of GET /cosmos/tx/v1beta1/txs/{hash} an explorer renders.
type restTx struct {
	Tx struct {
		Body struct {
			Messages []json.RawMessage `json:"messages"`
		} `json:"body"`
	} `json:"tx"`
	TxResponse struct {
		Code   uint32 `json:"code"`
		Height string `json:"height"`
		RawLog string `json:"raw_log"`
	} `json:"tx_response"`
}

// getTx reads a committed transaction the way an explorer does, through the node's REST API.
func getTx(t *testing.T, n *node.Node, hash string) restTx {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(n.API + "/cosmos/tx/v1beta1/txs/" + hash)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			var tx restTx
			require.NoError(t, json.Unmarshal(body, &tx), string(body))
			require.Zero(t, tx.TxResponse.Code, tx.TxResponse.RawLog)
			return tx
		}
		require.True(t, time.Now().Before(deadline), "tx %s: %d %s", hash, resp.StatusCode, body)
		time.Sleep(300 * time.Millisecond)
	}
}

func messageType(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var m struct {
		Type string `json:"@type"`
	}
	require.NoError(t, json.Unmarshal(raw, &m))
	return m.Type
}

// TestExplorerDecodesEveryMessage proves explorers can show every bftlog message: each x/topics
// and x/poa message, in a governance proposal and (for those an account signs itself) as a
// transaction of its own, comes back from /cosmos/tx/v1beta1/txs/{hash} as typed JSON that
// decodes to exactly the message that was sent. One transaction is signed in amino JSON, the
// sign mode of Ledger devices.
func TestExplorerDecodesEveryMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "alice")

	reg := codectypes.NewInterfaceRegistry()
	types.RegisterInterfaces(reg)
	poatypes.RegisterInterfaces(reg)
	cdc := codec.NewProtoCodec(reg)

	// 1. A proposal carrying all fifteen messages, each signed by the gov account.
	gov, err := bech32.ConvertAndEncode("bftlog", authtypes.NewModuleAddress(govtypes.ModuleName))
	require.NoError(t, err)
	msgs := sample.Messages(gov)
	var encoded []json.RawMessage
	for _, m := range msgs {
		bz, err := cdc.MarshalInterfaceJSON(m)
		require.NoError(t, err)
		encoded = append(encoded, bz)
	}
	proposal, err := json.Marshal(map[string]any{
		"messages": encoded, "metadata": "", "deposit": "10000000stake", "expedited": false,
		"title": "Every bftlog message", "summary": "Carries one of each message so explorers can be checked.",
	})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "all-messages.json")
	require.NoError(t, os.WriteFile(file, proposal, 0o644))
	var submitted struct {
		TxHash string `json:"txhash"`
	}
	out := n.MustCLI("", "tx", "gov", "submit-proposal", file, "--from", "alice", "--gas", "3000000", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &submitted), out)

	tx := getTx(t, n, submitted.TxHash)
	require.Len(t, tx.Tx.Body.Messages, 1)
	require.Equal(t, "/cosmos.gov.v1.MsgSubmitProposal", messageType(t, tx.Tx.Body.Messages[0]))
	var prop struct {
		Messages []json.RawMessage `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(tx.Tx.Body.Messages[0], &prop))
	require.Len(t, prop.Messages, len(msgs))
	for i, raw := range prop.Messages {
		require.Equal(t, sdk.MsgTypeURL(msgs[i]), messageType(t, raw))
		var back sdk.Msg
		require.NoError(t, cdc.UnmarshalInterfaceJSON(raw, &back), string(raw))
		require.Equal(t, msgs[i], back, "message %d as the explorer reads it", i)
	}

	// 2. The messages accounts sign themselves, as their own transactions.
	hashRe := regexp.MustCompile(`\(tx ([0-9A-F]{64}),`)
	created := n.MustCLI("", "tx", "topics", "create-topic", "orders", "--partitions", "3", "--from", "alice")
	m := hashRe.FindStringSubmatch(created)
	require.NotNil(t, m, created)
	direct := map[string]string{m[1]: "/bftlog.topics.v1.MsgCreateTopic"}

	var produced struct {
		TxHashes []string `json:"tx_hashes"`
	}
	out = n.MustCLI("", "tx", "topics", "produce", "orders", "k1:v1", "k2:v2", "--key-separator", ":",
		"--header", "source=explorer", "--from", "alice", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &produced), out)
	require.Len(t, produced.TxHashes, 1)
	direct[produced.TxHashes[0]] = "/bftlog.topics.v1.MsgProduce"

	autocli := func(typeURL string, args ...string) {
		var res struct {
			TxHash string `json:"txhash"`
			Code   uint32 `json:"code"`
			RawLog string `json:"raw_log"`
		}
		out := n.MustCLI("", append(args, "--from", "alice", "-o", "json")...)
		require.NoError(t, json.Unmarshal([]byte(out), &res), out)
		require.Zero(t, res.Code, res.RawLog)
		direct[res.TxHash] = typeURL
		getTx(t, n, res.TxHash) // committed, so the next one gets the next account sequence
	}
	// Ledger signs amino JSON: the chain must accept it for bftlog messages.
	autocli("/bftlog.topics.v1.MsgJoinGroup", "tx", "topics", "join-group", "billing", "orders", "--sign-mode", "amino-json")
	autocli("/bftlog.topics.v1.MsgHeartbeat", "tx", "topics", "heartbeat", "billing")
	autocli("/bftlog.topics.v1.MsgAddPartitions", "tx", "topics", "add-partitions", "orders", "4", "--sign-mode", "amino-json")
	autocli("/bftlog.topics.v1.MsgLeaveGroup", "tx", "topics", "leave-group", "billing")

	for hash, want := range direct {
		tx := getTx(t, n, hash)
		require.Len(t, tx.Tx.Body.Messages, 1)
		require.Equal(t, want, messageType(t, tx.Tx.Body.Messages[0]), "tx %s", hash)
		var back sdk.Msg
		require.NoError(t, cdc.UnmarshalInterfaceJSON(tx.Tx.Body.Messages[0], &back))
		require.Equal(t, n.Address("alice"), signerOf(back), "tx %s", hash)
	}
	fmt.Printf("explorer: %d messages in a proposal and %d transactions decoded through REST\n", len(msgs), len(direct))
}

func signerOf(m sdk.Msg) string {
	switch m := m.(type) {
	case *types.MsgCreateTopic:
		return m.Owner
	case *types.MsgProduce:
		return m.Producer
	case *types.MsgJoinGroup:
		return m.Member
	case *types.MsgHeartbeat:
		return m.Member
	case *types.MsgLeaveGroup:
		return m.Member
	case *types.MsgAddPartitions:
		return m.Authority
	}
	return ""
}
