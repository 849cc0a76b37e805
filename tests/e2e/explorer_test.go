package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
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
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/app/ordering"
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

// namedProduce is one 1,000-record produce a block named by digest, as read from the block
// store and the signed bytes (what the REST answers are checked against).
type namedProduce struct {
	height            int64
	index             int    // in the block
	hash, refHash     string // upper-case hex
	topic, fee        string // fee as "<amount><denom>"
	partition, gasCap uint64
	size              uint64 // the signed transaction's bytes
}

// produceNamed produces 1,000-record batches to partitions of topic with the CLI until blocks
// have named want of them, and reads each one's block, reference and signed fee.
func produceNamed(t *testing.T, n *node.Node, topic string, want int) []namedProduce {
	t.Helper()
	rpc := strings.Replace(n.RPC, "tcp://", "http://", 1)
	var named []namedProduce
	for attempt := 0; len(named) < want; attempt++ {
		require.Less(t, attempt, 4*want, "blocks carried the produces instead of naming them")
		var lines strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&lines, "key-%d:value-%06d-%s\n", i, attempt*1000+i, strings.Repeat("x", 40))
		}
		partition := attempt % 3
		var out struct {
			TxHashes []string `json:"tx_hashes"`
		}
		res := n.MustCLI(lines.String(), "tx", "topics", "produce", topic, "--partition", strconv.Itoa(partition),
			"--key-separator", ":", "--from", "alice", "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(res), &out), res)
		require.Len(t, out.TxHashes, 1, "one transaction of 1,000 records")
		var result struct {
			Height int64 `json:"height"`
		}
		eventually(t, "the produce committed", 30*time.Second, func() bool {
			resp, err := http.Get(n.API + app.RawTxResultPath + "?wait=5s&hash=" + out.TxHashes[0])
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&result) == nil
		})
		for i, tx := range blockTxs(t, rpc, result.Height) {
			hash, ok := app.ParseTxRef(tx)
			if !ok || fmt.Sprintf("%X", hash) != out.TxHashes[0] {
				continue
			}
			// The fee as signed, from the bytes the node's pool serves its peers.
			var raw txtypes.TxRaw
			var auth txtypes.AuthInfo
			signed := must(httpGet(n.API + app.PoolPath + out.TxHashes[0]))
			require.NoError(t, raw.Unmarshal(signed))
			require.NoError(t, auth.Unmarshal(raw.AuthInfoBytes))
			require.False(t, auth.Fee.Amount.IsZero(), "a produce pays a fee")
			named = append(named, namedProduce{height: result.Height, index: i, hash: out.TxHashes[0],
				refHash: fmt.Sprintf("%X", sha256.Sum256(tx)), topic: topic, partition: uint64(partition),
				fee: auth.Fee.Amount.String(), gasCap: auth.Fee.GasLimit, size: uint64(len(signed))})
		}
	}
	return named
}

func httpGet(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// explorerTx is a transaction as the REST answers give it (tx, or an entry of txs) with the
// fields explorers show of a produce.
type explorerTx struct {
	Body struct {
		Messages []struct {
			Type     string `json:"@type"`
			Producer string `json:"producer"`
			Batches  []struct {
				Topic       string `json:"topic"`
				Partition   uint64 `json:"partition"`
				RecordCount uint64 `json:"record_count"`
			} `json:"batches"`
			TxHash []byte `json:"tx_hash"` // MsgOrderedTx
		} `json:"messages"`
	} `json:"body"`
	AuthInfo struct {
		Fee struct {
			Amount   sdk.Coins `json:"amount"`
			GasLimit string    `json:"gas_limit"`
		} `json:"fee"`
	} `json:"auth_info"`
}

type explorerTxResponse struct {
	TxHash  string `json:"txhash"`
	Height  string `json:"height"`
	Code    uint32 `json:"code"`
	GasUsed string `json:"gas_used"`
}

// requireProduce checks that an answer shows p's MsgProduce: producer, topic, partition, 1,000
// records, fee and gas as signed.
func requireProduce(t *testing.T, p namedProduce, producer string, tx explorerTx, what string) {
	t.Helper()
	require.Len(t, tx.Body.Messages, 1, what)
	m := tx.Body.Messages[0]
	require.Equal(t, "/bftlog.topics.v1.MsgProduce", m.Type, what)
	require.Equal(t, producer, m.Producer, what)
	require.Len(t, m.Batches, 1, what)
	require.Equal(t, p.topic, m.Batches[0].Topic, what)
	require.Equal(t, p.partition, m.Batches[0].Partition, what)
	require.EqualValues(t, 1000, m.Batches[0].RecordCount, what)
	require.Equal(t, p.fee, tx.AuthInfo.Fee.Amount.String(), what)
	require.Equal(t, strconv.FormatUint(p.gasCap, 10), tx.AuthInfo.Fee.GasLimit, what)
}

// TestExplorerShowsNamedProduces reads, as ping.pub does, the REST routes explorers use for
// blocks and transactions on a one-validator chain whose blocks name three 1,000-record
// produces by digest: each route answers with the MsgProduce itself (topic, partition, record
// count, fee, signer) and its own hash, by either hash, in the block, the block's transaction
// list and the event search, and lists what it replaced in named_txs. Once the node no longer
// holds them, every route answers with the references and says so (status not_held).
func TestExplorerShowsNamedProduces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "orders", 3)
	produces := produceNamed(t, n, "orders", 3)
	alice := n.Address("alice")
	checkExplorerRoutes(t, n, produces, alice, ordering.NamedShown)
	var pp *pingPub
	if dist := os.Getenv("PINGPUB_DIST"); dist != "" {
		pp = openPingPub(t, dist)
		pp.use(n)
		pp.checkShown(produces)
		pp.checkTxList(func() namedProduce { return produceNamed(t, n, "orders", 1)[0] })
	} else {
		t.Log("PINGPUB_DIST unset: ping.pub's pages not checked in a browser (docs/explorers.md says how to build it)")
	}

	// The node forgets them: its pool's height files gone, as after keep-heights.
	n.Stop()
	require.NoError(t, os.RemoveAll(filepath.Join(n.Home, "data", "pool")))
	n.StartAndWait()
	eventually(t, "the REST API answers after the restart", 30*time.Second, func() bool {
		_, err := httpGet(n.API + "/cosmos/tx/v1beta1/txs/" + produces[0].refHash)
		return err == nil
	})
	checkExplorerRoutes(t, n, produces, alice, ordering.NamedNotHeld)
	if pp != nil {
		pp.use(n) // its API's new port
		pp.checkNotHeld(produces[0])
	}
}

// checkExplorerRoutes reads every route for each produce and checks what it shows: the
// MsgProduce under its own hash when status is shown, the reference under its hash when not_held.
func checkExplorerRoutes(t *testing.T, n *node.Node, produces []namedProduce, producer, status string) {
	t.Helper()
	type named struct {
		NamedTxs []ordering.NamedTx `json:"named_txs"`
	}
	// checkNamed: the answer's named_txs lists p at index with status; it shows the produce
	// (or, not held, the reference) under the hash explorers then ask for.
	checkNamed := func(p namedProduce, list []ordering.NamedTx, index int, tx explorerTx, txhash, what string) {
		t.Helper()
		require.Contains(t, list, ordering.NamedTx{Index: index, ReferenceHash: p.refHash, TxHash: p.hash,
			TxBytes: p.size, Status: status, Note: ordering.NoteOf(status)}, what)
		switch {
		case what == "block": // checked from the bytes
			return
		case status == ordering.NamedShown:
			requireProduce(t, p, producer, tx, what)
			if txhash != "" {
				require.Equal(t, p.hash, txhash, what)
			}
			return
		}
		require.Len(t, tx.Body.Messages, 1, what)
		require.Equal(t, ordering.TypeURL, tx.Body.Messages[0].Type, what)
		require.Equal(t, p.hash, fmt.Sprintf("%X", tx.Body.Messages[0].TxHash), what)
		if txhash != "" {
			require.Equal(t, p.refHash, txhash, what)
		}
	}
	for _, p := range produces {
		// The transaction page, by either hash.
		for _, hash := range []string{p.hash, p.refHash, strings.ToLower(p.hash)} {
			var got struct {
				NamedTx    ordering.NamedTx   `json:"named_tx"`
				Tx         explorerTx         `json:"tx"`
				TxResponse explorerTxResponse `json:"tx_response"`
			}
			restJSON(t, n, "/cosmos/tx/v1beta1/txs/"+hash, &got)
			checkNamed(p, []ordering.NamedTx{got.NamedTx}, 0, got.Tx, got.TxResponse.TxHash, "tx by "+hash)
			require.Equal(t, strconv.FormatInt(p.height, 10), got.TxResponse.Height)
			require.Zero(t, got.TxResponse.Code)
			require.NotEqual(t, "0", got.TxResponse.GasUsed)
		}
		// The block page (ping.pub decodes block.data.txs and hashes each); sdk_block stays
		// the block as committed.
		type blockJSON struct {
			Data struct {
				Txs [][]byte `json:"txs"`
			} `json:"data"`
		}
		var block struct {
			named
			Block    blockJSON `json:"block"`
			SDKBlock blockJSON `json:"sdk_block"`
		}
		restJSON(t, n, fmt.Sprintf("/cosmos/base/tendermint/v1beta1/blocks/%d", p.height), &block)
		shownBz := block.Block.Data.Txs[p.index]
		var raw txtypes.TxRaw
		var body txtypes.TxBody
		require.NoError(t, raw.Unmarshal(shownBz))
		require.NoError(t, body.Unmarshal(raw.BodyBytes))
		committed := fmt.Sprintf("%X", sha256.Sum256(block.SDKBlock.Data.Txs[p.index]))
		require.Equal(t, p.refHash, committed, "sdk_block holds the reference")
		if status == ordering.NamedShown {
			require.Equal(t, p.hash, fmt.Sprintf("%X", sha256.Sum256(shownBz)), "block.data.txs shows the produce")
			require.Equal(t, "/bftlog.topics.v1.MsgProduce", body.Messages[0].TypeUrl)
		} else {
			require.Equal(t, p.refHash, fmt.Sprintf("%X", sha256.Sum256(shownBz)))
		}
		checkNamed(p, block.NamedTxs, p.index, explorerTx{}, "", "block")
		// The block's transactions (GetBlockWithTxs), and the event searches.
		var list struct {
			named
			Txs         []explorerTx         `json:"txs"`
			TxResponses []explorerTxResponse `json:"tx_responses"`
		}
		restJSON(t, n, fmt.Sprintf("/cosmos/tx/v1beta1/txs/block/%d", p.height), &list)
		checkNamed(p, list.NamedTxs, p.index, list.Txs[p.index], "", "txs/block")
		for _, query := range []string{
			"?query=" + url.QueryEscape(fmt.Sprintf("tx.height=%d", p.height)),
			"?events=" + url.QueryEscape(fmt.Sprintf("tx.height=%d", p.height)),                                                               // SDKs before v0.50
			"?query=" + url.QueryEscape("message.sender='"+producer+"'") + "&query=" + url.QueryEscape(fmt.Sprintf("tx.height=%d", p.height)), // ping.pub's getTxs
		} {
			list.NamedTxs, list.Txs, list.TxResponses = nil, nil, nil
			restJSON(t, n, "/cosmos/tx/v1beta1/txs"+query, &list)
			i := slices.IndexFunc(list.NamedTxs, func(x ordering.NamedTx) bool { return x.TxHash == p.hash })
			require.GreaterOrEqual(t, i, 0, "search %s: %+v", query, list.NamedTxs)
			at := list.NamedTxs[i].Index
			checkNamed(p, list.NamedTxs, at, list.Txs[at], list.TxResponses[at].TxHash, "search "+query)
		}
	}
	// An unknown hash is still not found, and a broadcast still reaches the SDK.
	resp, err := http.Get(n.API + "/cosmos/tx/v1beta1/txs/" + strings.Repeat("AB", 32))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Post(n.API+"/cosmos/tx/v1beta1/txs", "application/json", strings.NewReader(`{"tx_bytes":"","mode":"BROADCAST_MODE_SYNC"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.NotEqual(t, http.StatusMethodNotAllowed, resp.StatusCode)
	t.Logf("%d produces of 1,000 records: every route shows them %s", len(produces), status)
}
