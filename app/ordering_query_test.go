package app

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"cosmossdk.io/log"
	cmtbytes "github.com/cometbft/cometbft/libs/bytes"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	cmttypes "github.com/cometbft/cometbft/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/gorilla/mux"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"

	"github.com/bftlog/bftlog/app/ordering"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// poolOf is a pool that holds some transactions.
type poolOf map[[32]byte][]byte

func (p poolOf) Get(h [32]byte) ([]byte, bool) { bz, ok := p[h]; return bz, ok }

// explorerFixture: three produces a block named (A and C held, B not) and one it carried, with
// a gateway that answers each route with what the SDK would for such a block.
type explorerFixture struct {
	t                     *testing.T
	view                  *explorerView
	produces              [][]byte // A, B, C
	refs                  [][]byte
	carried               []byte
	producer              string
	mu                    sync.Mutex // over lastQuery and lastMethod: requests may run at once
	lastQuery, lastMethod string
	router                *mux.Router
	clientCtx             client.Context
	pool                  poolOf
	extra                 [][]byte          // transactions the block holds after the carried one
	ordered               map[string][]byte // what the node's search for ordered.tx_hash finds
}

func newExplorerFixture(t *testing.T) *explorerFixture { return newExplorerFixtureSized(t, 2000) }

// newExplorerFixtureSized makes the produces carry one record of valueBytes.
func newExplorerFixtureSized(t *testing.T, valueBytes int) *explorerFixture {
	a := New(log.NewNopLogger(), dbm.NewMemDB(), nil, true, simtestutil.NewAppOptionsWithFlagHome(t.TempDir()))
	f := &explorerFixture{t: t, producer: sdk.AccAddress(secp256k1.GenPrivKey().PubKey().Address()).String(), ordered: map[string][]byte{}}
	f.clientCtx = client.Context{}.WithTxConfig(a.TxConfig()).WithInterfaceRegistry(a.InterfaceRegistry()).WithCodec(a.AppCodec()).
		WithClient(searchNode{f: f})
	clientCtx := f.clientCtx
	pool := poolOf{}
	f.pool = pool
	for i, topic := range []string{"a", "b", "c", "carried"} {
		size := valueBytes
		if topic == "carried" {
			size = 2000 // the block's own bytes stay small: the named ones are the load
		}
		batch, err := types.NewProduceBatch(topic, uint32(i), []types.BatchRecord{{Value: types.NewBytes([]byte(strings.Repeat("v", size)))}}, kbatch.CompressionNone)
		require.NoError(t, err)
		builder := a.TxConfig().NewTxBuilder()
		require.NoError(t, builder.SetMsgs(&types.MsgProduce{Producer: f.producer, Batches: []types.ProduceBatch{batch}}))
		builder.SetFeeAmount(sdk.NewCoins(sdk.NewInt64Coin("stake", int64(1000+i))))
		builder.SetGasLimit(100_000)
		bz, err := a.TxConfig().TxEncoder()(builder.GetTx())
		require.NoError(t, err)
		if topic == "carried" {
			f.carried = bz
			continue
		}
		f.produces = append(f.produces, bz)
		f.refs = append(f.refs, TxRef(sha256.Sum256(bz), len(bz), f.producer))
		if topic != "b" {
			pool[sha256.Sum256(bz)] = bz
		}
	}
	f.view = newExplorerView(clientCtx, http.HandlerFunc(f.sdk), pool)
	f.router = mux.NewRouter()
	f.view.register(f.router)
	f.router.PathPrefix("/").HandlerFunc(f.sdk) // the gateway's catch-all, as the API server has it
	return f
}

// block is the block's transactions: the three references and the carried produce.
func (f *explorerFixture) block() [][]byte {
	return append(append(append([][]byte{}, f.refs...), f.carried), f.extra...)
}

// searchNode is the CometBFT node as the view's lookup by a named transaction's hash uses it.
// The rest of the node is not used by the view (a nil CometRPC panics if it were).
type searchNode struct {
	client.CometRPC
	f *explorerFixture
}

func (n searchNode) TxSearch(_ context.Context, query string, _ bool, _, _ *int, _ string) (*coretypes.ResultTxSearch, error) {
	res := &coretypes.ResultTxSearch{}
	for hash, tx := range n.f.ordered {
		if query == ordering.OrderedQuery(hash) {
			res.Txs = append(res.Txs, &coretypes.ResultTx{Hash: cmtbytes.HexBytes(cmttypes.Tx(tx).Hash()), Tx: tx})
		}
	}
	res.TotalCount = len(res.Txs)
	return res, nil
}

// sdk answers as the SDK's gateway does for this block, and records the search's query.
func (f *explorerFixture) sdk(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.lastMethod = r.Method
	f.mu.Unlock()
	var b64 []string
	for _, bz := range f.block() {
		b64 = append(b64, base64.StdEncoding.EncodeToString(bz))
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/cosmos/base/tendermint/v1beta1/blocks/"):
		block := map[string]any{"header": map[string]string{"height": "7"}, "data": map[string]any{"txs": b64}}
		_ = json.NewEncoder(w).Encode(map[string]any{"block_id": map[string]string{}, "block": block, "sdk_block": block})
	case strings.HasPrefix(r.URL.Path, "/cosmos/tx/v1beta1/txs/block/"):
		var txs []json.RawMessage
		for _, bz := range f.block() {
			protoTx, _, err := f.view.decode(bz)
			require.NoError(f.t, err)
			txs = append(txs, must(f.view.marshaler.Marshal(protoTx)))
		}
		block := map[string]any{"header": map[string]string{"height": "7"}, "data": map[string]any{"txs": b64}}
		_ = json.NewEncoder(w).Encode(map[string]any{"txs": txs, "block_id": map[string]string{}, "block": block})
	case strings.HasPrefix(r.URL.Path, "/cosmos/tx/v1beta1/txs/"):
		for _, bz := range f.block() {
			if hash := fmt.Sprintf("%X", sha256.Sum256(bz)); strings.EqualFold(hash, strings.TrimPrefix(r.URL.Path, "/cosmos/tx/v1beta1/txs/")) {
				protoTx, asAny, err := f.view.decode(bz)
				require.NoError(f.t, err)
				_, _ = w.Write(must(f.view.marshaler.Marshal(&txtypes.GetTxResponse{Tx: protoTx,
					TxResponse: &sdk.TxResponse{TxHash: hash, Height: 7, GasUsed: 50, Tx: asAny}})))
				return
			}
		}
		http.Error(w, `{"code":5}`, http.StatusNotFound)
	case r.URL.Path == "/cosmos/tx/v1beta1/txs":
		f.mu.Lock()
		f.lastQuery = r.URL.Query().Get("query")
		f.mu.Unlock()
		resp := &txtypes.GetTxsEventResponse{Total: 4}
		for _, bz := range f.block() {
			protoTx, asAny, err := f.view.decode(bz)
			require.NoError(f.t, err)
			resp.Txs = append(resp.Txs, protoTx)
			resp.TxResponses = append(resp.TxResponses, &sdk.TxResponse{TxHash: fmt.Sprintf("%X", sha256.Sum256(bz)), Height: 7, Tx: asAny})
		}
		bz, err := f.view.marshaler.Marshal(resp)
		require.NoError(f.t, err)
		_, _ = w.Write(bz)
	default:
		http.Error(w, `{"code":5}`, http.StatusNotFound)
	}
}

func (f *explorerFixture) get(path string, v any) {
	f.t.Helper()
	rec := httptest.NewRecorder()
	f.router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	require.Equal(f.t, http.StatusOK, rec.Code, rec.Body.String())
	require.NoError(f.t, json.Unmarshal(rec.Body.Bytes(), v))
}

func (f *explorerFixture) want(status []string) []ordering.NamedTx {
	var out []ordering.NamedTx
	for i, bz := range f.produces {
		out = append(out, ordering.NamedTx{Index: i, ReferenceHash: fmt.Sprintf("%X", sha256.Sum256(f.refs[i])),
			TxHash: fmt.Sprintf("%X", sha256.Sum256(bz)), TxBytes: uint64(len(bz)), Status: status[i], Note: ordering.NoteOf(status[i])})
	}
	return out
}

// TestExplorerViewShowsHeldProduces: a block's answer shows the held produces' bytes in their
// references' places (sdk_block untouched), the search shows them with their own hashes, one
// that is not held stays a reference marked not_held, one past the answer's budget
// over_budget, and the carried transaction is left alone.
func TestExplorerViewShowsHeldProduces(t *testing.T) {
	f := newExplorerFixture(t)
	f.view.maxShown = len(f.produces[0]) + len(f.produces[2]) - 1 // A fits, C does not
	f.view.maxListed = f.view.maxShown
	status := []string{ordering.NamedShown, ordering.NamedNotHeld, ordering.NamedOverBudget}

	type blockJSON struct {
		Data struct {
			Txs [][]byte `json:"txs"`
		} `json:"data"`
	}
	var block struct {
		Block    blockJSON          `json:"block"`
		SDKBlock blockJSON          `json:"sdk_block"`
		NamedTxs []ordering.NamedTx `json:"named_txs"`
	}
	f.get("/cosmos/base/tendermint/v1beta1/blocks/7", &block)
	require.Equal(t, [][]byte{f.produces[0], f.refs[1], f.refs[2], f.carried}, block.Block.Data.Txs)
	require.Equal(t, f.block(), block.SDKBlock.Data.Txs, "sdk_block as committed")
	require.Equal(t, f.want(status), block.NamedTxs)

	var search struct {
		Txs []struct {
			Body struct {
				Messages []map[string]any `json:"messages"`
			} `json:"body"`
		} `json:"txs"`
		TxResponses []struct {
			TxHash string `json:"txhash"`
			Tx     struct {
				Type string `json:"@type"`
			} `json:"tx"`
		} `json:"tx_responses"`
		NamedTxs []ordering.NamedTx `json:"named_txs"`
	}
	f.get("/cosmos/tx/v1beta1/txs?events=tx.height%3D7&events=message.action%3D%27x%27", &search)
	require.Equal(t, "tx.height=7 AND message.action='x'", f.lastQuery, "events= joined for the SDK v0.53")
	require.Equal(t, f.want(status), search.NamedTxs)
	wantTypes := []string{"/bftlog.topics.v1.MsgProduce", ordering.TypeURL, ordering.TypeURL, "/bftlog.topics.v1.MsgProduce"}
	wantHashes := []string{search.NamedTxs[0].TxHash, search.NamedTxs[1].ReferenceHash, search.NamedTxs[2].ReferenceHash, fmt.Sprintf("%X", sha256.Sum256(f.carried))}
	for i := range search.Txs {
		require.Equal(t, wantTypes[i], search.Txs[i].Body.Messages[0]["@type"], "tx %d", i)
		require.Equal(t, wantHashes[i], search.TxResponses[i].TxHash, "tx %d", i)
		require.Equal(t, "/cosmos.tx.v1beta1.Tx", search.TxResponses[i].Tx.Type)
	}
	require.Equal(t, "a", search.Txs[0].Body.Messages[0]["batches"].([]any)[0].(map[string]any)["topic"])
	t.Logf("block and search: %d shown, %d not held, %d over the %d-byte budget", 1, 1, 1, f.view.maxShown)
}

// TestExplorerViewLeavesLookAlikes: a transaction whose message is a MsgOrderedTx but which is
// not exactly a reference (signed, or with a memo, or its hash not the reference's) is never
// replaced, and an answer that names no reference goes out as the SDK gave it.
func TestExplorerViewLeavesLookAlikes(t *testing.T) {
	f := newExplorerFixture(t)
	named := sha256.Sum256(f.produces[0])
	protoTx, asAny, err := f.view.decode(f.refs[0])
	require.NoError(t, err)
	refJSON := string(must(f.view.marshaler.Marshal(protoTx)))
	s := &shown{view: f.view, budget: f.view.maxShown}
	for name, tx := range map[string]string{
		"signed": strings.Replace(refJSON, `"signatures":[]`, `"signatures":["AAAA"]`, 1),
		"memo":   strings.Replace(refJSON, `"memo":""`, `"memo":"hi"`, 1),
		"size":   strings.Replace(refJSON, fmt.Sprintf(`"tx_bytes":"%d"`, len(f.produces[0])), `"tx_bytes":"1"`, 1),
	} {
		require.NotEqual(t, refJSON, tx, name)
		resp := map[string]json.RawMessage{"tx": must(f.view.marshaler.Marshal(asAny))}
		_, ok := s.tx(0, json.RawMessage(tx), fmt.Sprintf("%X", sha256.Sum256(f.refs[0])), resp)
		require.False(t, ok, name)
	}
	require.Empty(t, s.list, "nothing looked up for a look-alike")
	// The reference itself is replaced.
	resp := map[string]json.RawMessage{}
	_, ok := s.tx(0, json.RawMessage(refJSON), fmt.Sprintf("%X", sha256.Sum256(f.refs[0])), resp)
	require.True(t, ok)
	require.JSONEq(t, fmt.Sprintf("%q", fmt.Sprintf("%X", named)), string(resp["txhash"]))

	rec := &bufferedResponse{header: http.Header{"X-Sdk": {"1"}}, code: http.StatusOK}
	rec.body.WriteString(`{"txs":[]}`)
	out := httptest.NewRecorder()
	f.view.edit(out, rec, ordering.NamedTxsField, f.view.maxShown, func(map[string]json.RawMessage, *shown) {})
	require.Equal(t, `{"txs":[]}`, out.Body.String())
	require.Equal(t, "1", out.Header().Get("X-Sdk"))

	// A broadcast (POST on the search's path) goes on to the gateway.
	f.router.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, TxSearchPath, strings.NewReader("{}")))
	require.Equal(t, http.MethodPost, f.lastMethod)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// serve answers path through the view, whatever its code.
func (f *explorerFixture) serve(path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.router.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// TestExplorerViewTxAnswerDecodesStrictly: the answer for one transaction, shown and not held,
// is the SDK's GetTxResponse (its top level tx, tx_response and named_tx only) and decodes
// with the SDK's strict codec, as the SDK's own clients read it.
func TestExplorerViewTxAnswerDecodesStrictly(t *testing.T) {
	f := newExplorerFixture(t)
	for i, status := range []string{ordering.NamedShown, ordering.NamedNotHeld} {
		var top map[string]json.RawMessage
		f.get(TxPathOf(fmt.Sprintf("%X", sha256.Sum256(f.refs[i]))), &top)
		var keys []string
		for k := range top {
			keys = append(keys, k)
		}
		require.ElementsMatch(t, []string{"tx", "tx_response", ordering.NamedTxField}, keys, status)
		var named ordering.NamedTx
		require.NoError(t, json.Unmarshal(top[ordering.NamedTxField], &named))
		require.Equal(t, status, named.Status)
		delete(top, ordering.NamedTxField) // the one field the SDK does not know
		var resp txtypes.GetTxResponse
		require.NoError(t, f.clientCtx.Codec.UnmarshalJSON(mustJSON(top), &resp), status)
		wantHash := named.ReferenceHash
		if status == ordering.NamedShown {
			wantHash = named.TxHash
			require.Equal(t, "/bftlog.topics.v1.MsgProduce", resp.Tx.Body.Messages[0].TypeUrl)
		}
		require.Equal(t, wantHash, resp.TxResponse.TxHash, status)
		require.Equal(t, int64(50), resp.TxResponse.GasUsed, status)
	}
}

// TxPathOf is the route of one transaction by hash.
func TxPathOf(hash string) string { return strings.Replace(NamedTxPath, "{hash}", hash, 1) }

// TestExplorerViewLooksUpOnlyTheNamingReference: by a produce's own hash the view answers with
// the reference that names that hash; a search hit that is a reference naming another
// transaction (or no reference) is not taken for it.
func TestExplorerViewLooksUpOnlyTheNamingReference(t *testing.T) {
	f := newExplorerFixture(t)
	hashA := fmt.Sprintf("%X", sha256.Sum256(f.produces[0]))
	f.ordered[hashA] = f.refs[2] // names C, not A
	require.Equal(t, http.StatusNotFound, f.serve(TxPathOf(hashA)).Code)
	f.ordered[hashA] = f.carried
	require.Equal(t, http.StatusNotFound, f.serve(TxPathOf(hashA)).Code)
	f.ordered[hashA] = f.refs[0]
	var answer struct {
		NamedTx ordering.NamedTx `json:"named_tx"`
	}
	f.get(TxPathOf(strings.ToLower(hashA)), &answer)
	require.Equal(t, hashA, answer.NamedTx.TxHash)
	require.Equal(t, ordering.NamedShown, answer.NamedTx.Status)
}

// TestExplorerViewTxsOfBlockChecksCommittedBytes: in a block's transactions a look-alike (a
// MsgOrderedTx naming a held produce, unsigned, no memo, but with a fee, so not a reference's
// bytes) a byzantine proposer included is left as it is; the references are replaced.
func TestExplorerViewTxsOfBlockChecksCommittedBytes(t *testing.T) {
	f := newExplorerFixture(t)
	builder := f.clientCtx.TxConfig.NewTxBuilder()
	hashA := sha256.Sum256(f.produces[0])
	require.NoError(t, builder.SetMsgs(&ordering.MsgOrderedTx{TxHash: hashA[:],
		TxBytes: uint64(len(f.produces[0])), Signer: f.producer}))
	builder.SetFeeAmount(sdk.NewCoins(sdk.NewInt64Coin("stake", 1)))
	f.extra = [][]byte{must(f.clientCtx.TxConfig.TxEncoder()(builder.GetTx()))}
	var list struct {
		Txs []struct {
			Body struct {
				Messages []map[string]any `json:"messages"`
			} `json:"body"`
		} `json:"txs"`
		NamedTxs []ordering.NamedTx `json:"named_txs"`
	}
	f.get(strings.Replace(TxsOfBlockPath, "{height}", "7", 1), &list)
	var types []any
	for _, tx := range list.Txs {
		types = append(types, tx.Body.Messages[0]["@type"])
	}
	require.Equal(t, []any{"/bftlog.topics.v1.MsgProduce", ordering.TypeURL, "/bftlog.topics.v1.MsgProduce", "/bftlog.topics.v1.MsgProduce", ordering.TypeURL}, types)
	require.Equal(t, f.want([]string{ordering.NamedShown, ordering.NamedNotHeld, ordering.NamedShown}), list.NamedTxs)
}

// TestExplorerViewUndecodableIsNotShown: a held transaction the node cannot decode is recorded
// undecodable, not shown, and costs the answer's budget nothing.
func TestExplorerViewUndecodableIsNotShown(t *testing.T) {
	f := newExplorerFixture(t)
	f.pool[sha256.Sum256(f.produces[0])] = []byte("not a transaction")
	var answer struct {
		Tx struct {
			Body struct {
				Messages []map[string]any `json:"messages"`
			} `json:"body"`
		} `json:"tx"`
		NamedTx ordering.NamedTx `json:"named_tx"`
	}
	f.get(TxPathOf(fmt.Sprintf("%X", sha256.Sum256(f.refs[0]))), &answer)
	require.Equal(t, ordering.NamedUndecodable, answer.NamedTx.Status)
	require.Equal(t, ordering.TypeURL, answer.Tx.Body.Messages[0]["@type"])
	s := &shown{view: f.view, budget: f.view.maxShown}
	protoTx, _, err := f.view.decode(f.refs[0])
	require.NoError(t, err)
	_, ok := s.tx(0, must(f.view.marshaler.Marshal(protoTx)), fmt.Sprintf("%X", sha256.Sum256(f.refs[0])), nil)
	require.False(t, ok)
	require.Zero(t, s.bytes)
}
