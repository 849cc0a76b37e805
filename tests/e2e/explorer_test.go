package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"

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
	"github.com/bftlog/bftlog/x/topics/client/docs"
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
	created := createTopic(n, "alice", "orders", 3)
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
	// A group no member gave a kind yet (the consumer group routes read it), and one its admin
	// made a share group by its configs (the share group routes).
	autocli("/bftlog.topics.v1.MsgCreateGroup", "tx", "topics", "create-group", "fresh")
	autocli("/bftlog.topics.v1.MsgCreateGroup", "tx", "topics", "create-group", "queue")
	autocli("/bftlog.topics.v1.MsgSetShareGroupConfig", "tx", "topics", "set-share-group-config", "queue", "60000", "3", "--auto-offset-reset-earliest")

	for hash, want := range direct {
		tx := getTx(t, n, hash)
		require.Len(t, tx.Tx.Body.Messages, 1)
		require.Equal(t, want, messageType(t, tx.Tx.Body.Messages[0]), "tx %s", hash)
		var back sdk.Msg
		require.NoError(t, cdc.UnmarshalInterfaceJSON(tx.Tx.Body.Messages[0], &back))
		require.Equal(t, n.Address("alice"), signerOf(back), "tx %s", hash)
	}
	fmt.Printf("explorer: %d messages in a proposal and %d transactions decoded through REST\n", len(msgs), len(direct))

	checkPingPub(t, n, produced.TxHashes[0])
	checkOpenAPIServed(t, n)
}

// pingPubChain is the part of ping.pub's chain JSON that must match the chain.
type pingPubChain struct {
	ChainName  string `json:"chain_name"`
	SDKVersion string `json:"sdk_version"`
	AddrPrefix string `json:"addr_prefix"`
	API        []struct {
		Address string `json:"address"`
	} `json:"api"`
	Assets []struct {
		Base string `json:"base"`
	} `json:"assets"`
}

// checkPingPub checks the shipped ping.pub chain JSON against the running chain and requests
// every REST route ping.pub's pages read (dashboard, blocks, transactions, validators,
// governance, parameters, accounts) from a browser origin: each must answer 200 with CORS.
func checkPingPub(t *testing.T, n *node.Node, txHash string) {
	t.Helper()
	bz, err := os.ReadFile(filepath.Join("..", "..", "scripts", "explorer", "bftlog-local.json"))
	require.NoError(t, err)
	var chain pingPubChain
	require.NoError(t, json.Unmarshal(bz, &chain))
	require.Equal(t, "bftlog-local", chain.ChainName) // make localnet's chain id
	require.Equal(t, "http://127.0.0.1:1317", chain.API[0].Address)
	require.True(t, strings.HasPrefix(n.Address("alice"), chain.AddrPrefix+"1"))
	info, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	for _, dep := range info.Deps {
		if dep.Path == "github.com/cosmos/cosmos-sdk" {
			require.Equal(t, "v"+chain.SDKVersion, dep.Version, "sdk_version in the ping.pub chain JSON")
		}
	}

	var staking struct {
		Params struct {
			BondDenom string `json:"bond_denom"`
		} `json:"params"`
	}
	restJSON(t, n, "/cosmos/staking/v1beta1/params", &staking)
	require.Equal(t, staking.Params.BondDenom, chain.Assets[0].Base)
	var vals struct {
		Validators []struct {
			OperatorAddress string `json:"operator_address"`
		} `json:"validators"`
	}
	restJSON(t, n, "/cosmos/staking/v1beta1/validators?pagination.limit=200&status=BOND_STATUS_BONDED", &vals)
	require.Len(t, vals.Validators, 1)
	valoper, alice := vals.Validators[0].OperatorAddress, n.Address("alice")
	var tx restTx
	restJSON(t, n, "/cosmos/tx/v1beta1/txs/"+txHash, &tx)
	height := tx.TxResponse.Height

	routes := []string{
		"/cosmos/base/tendermint/v1beta1/node_info",
		"/cosmos/base/tendermint/v1beta1/blocks/latest",
		"/cosmos/base/tendermint/v1beta1/blocks/" + height,
		"/cosmos/base/tendermint/v1beta1/validatorsets/latest",
		"/cosmos/base/tendermint/v1beta1/validatorsets/" + height,
		"/cosmos/tx/v1beta1/txs/block/" + height,
		"/cosmos/tx/v1beta1/txs?query=" + url.QueryEscape("tx.height="+height),
		"/cosmos/tx/v1beta1/txs?query=" + url.QueryEscape("message.sender='"+alice+"'"),
		"/cosmos/staking/v1beta1/pool",
		"/cosmos/staking/v1beta1/params",
		"/cosmos/staking/v1beta1/validators/" + valoper,
		"/cosmos/staking/v1beta1/validators/" + valoper + "/delegations",
		"/cosmos/staking/v1beta1/delegations/" + alice,
		"/cosmos/distribution/v1beta1/params",
		"/cosmos/distribution/v1beta1/community_pool",
		"/cosmos/distribution/v1beta1/validators/" + valoper + "/commission",
		"/cosmos/distribution/v1beta1/validators/" + valoper + "/outstanding_rewards",
		"/cosmos/distribution/v1beta1/delegators/" + alice + "/rewards",
		"/cosmos/slashing/v1beta1/params",
		"/cosmos/slashing/v1beta1/signing_infos",
		"/cosmos/gov/v1/params/voting",
		"/cosmos/gov/v1/params/tallying",
		"/cosmos/gov/v1/params/deposit",
		"/cosmos/gov/v1/proposals",
		"/cosmos/gov/v1/proposals/1",
		"/cosmos/gov/v1/proposals/1/tally",
		"/cosmos/gov/v1/proposals/1/deposits",
		"/cosmos/gov/v1/proposals/1/votes",
		"/cosmos/bank/v1beta1/params",
		"/cosmos/bank/v1beta1/supply",
		"/cosmos/bank/v1beta1/denoms_metadata",
		"/cosmos/bank/v1beta1/balances/" + alice,
		"/cosmos/auth/v1beta1/params",
		"/cosmos/auth/v1beta1/accounts/" + alice,
	}
	for _, route := range routes {
		req, err := http.NewRequest(http.MethodGet, n.API+route, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "http://localhost:5173") // ping.pub's dev server
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", route, body)
		require.NotEmpty(t, resp.Header.Get("Access-Control-Allow-Origin"), "%s has no CORS header", route)
		require.True(t, json.Valid(body), route)
	}
}

func restJSON(t *testing.T, n *node.Node, route string, v any) {
	t.Helper()
	resp, err := http.Get(n.API + route)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", route, body)
	require.NoError(t, json.Unmarshal(body, v), route)
}

// checkOpenAPIServed fetches the OpenAPI description from the node, checks it is a valid
// document, and requests every path it describes from the node (with the topic, group and a
// record that exist): each must answer 200, so the description matches what the node serves.
func checkOpenAPIServed(t *testing.T, n *node.Node) {
	t.Helper()
	resp, err := http.Get(n.API + docs.Path)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	var v2 openapi2.T
	require.NoError(t, json.Unmarshal(body, &v2))
	v3, err := openapi2conv.ToV3(&v2)
	require.NoError(t, err)
	require.NoError(t, v3.Validate(context.Background()))

	// A partition of "orders" holding a record, for the record routes.
	var parts partitionsJSON
	restJSON(t, n, "/bftlog/topics/v1/topics/orders/partitions", &parts)
	partition := ""
	for _, p := range parts.Partitions {
		if p.HighWatermark != "0" {
			partition = strconv.FormatUint(uint64(p.Partition), 10)
		}
	}
	require.NotEmpty(t, partition)
	values := strings.NewReplacer("{name}", "orders", "{topic}", "orders", "{partition}", partition,
		"{offset}", "0", "{group_id}", "billing")
	require.NotEmpty(t, v2.Paths)
	for path := range v2.Paths {
		route := values.Replace(path)
		switch {
		case strings.HasSuffix(path, "/consumer"):
			route = strings.Replace(route, "/billing/", "/fresh/", 1)
		case strings.Contains(path, "/share"):
			route = strings.Replace(route, "/billing/", "/queue/", 1)
		}
		if strings.HasSuffix(path, "/offsets") && strings.Contains(path, "{partition}") {
			route += "?spec=2" // LATEST; the gateway parses gogoproto enums in a query string by number only
		}
		require.NotContains(t, route, "{", "a path parameter the test does not fill: %s", path)
		var out map[string]any
		restJSON(t, n, route, &out)
	}
	t.Logf("openapi: %d paths served and answered", len(v2.Paths))
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
	case *types.MsgCreateGroup:
		return m.Admin
	case *types.MsgSetShareGroupConfig:
		return m.Authority
	}
	return ""
}
