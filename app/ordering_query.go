package app

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	gateway "github.com/cosmos/gogogateway"
	"github.com/gorilla/mux"

	"github.com/cosmos/cosmos-sdk/client"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"

	"github.com/bftlog/bftlog/app/ordering"
)

// The SDK's REST routes explorers read for blocks and transactions. A block that names a
// transaction by digest (ordering.go) carries a reference (MsgOrderedTx), and CometBFT indexes
// the named transaction's result under the reference's hash; these routes answer as the SDK
// does, with each reference this node can resolve replaced by the transaction it names, and
// say in the answer's ordering.NamedTxsField what they replaced and what they could not.
const (
	NamedTxPath       = "/cosmos/tx/v1beta1/txs/{hash}"
	TxsOfBlockPath    = "/cosmos/tx/v1beta1/txs/block/{height}"
	TxSearchPath      = "/cosmos/tx/v1beta1/txs"
	BlockByHeightPath = "/cosmos/base/tendermint/v1beta1/blocks/{height}" // and blocks/latest
)

// explorerView answers those routes: the SDK's own answer, edited.
type explorerView struct {
	clientCtx client.Context
	sdk       http.Handler // the gRPC gateway
	pool      heldTxs
	marshaler *gateway.JSONPb
	maxShown  int // ordering.MaxShownBytes
}

// heldTxs is what the view reads of the data plane's pool (dataplane.Plane).
type heldTxs interface {
	Get(hash [32]byte) ([]byte, bool)
}

// register serves the routes on the API server's router, ahead of the gateway's catch-all;
// other methods (a broadcast's POST) go on to the gateway.
func (v *explorerView) register(router *mux.Router) {
	router.HandleFunc(NamedTxPath, v.tx).Methods(http.MethodGet)
	router.HandleFunc(TxsOfBlockPath, v.txList).Methods(http.MethodGet)
	router.HandleFunc(TxSearchPath, v.search).Methods(http.MethodGet)
	router.HandleFunc(BlockByHeightPath, v.block).Methods(http.MethodGet)
}

func newExplorerView(clientCtx client.Context, sdkGateway http.Handler, pool heldTxs) *explorerView {
	return &explorerView{clientCtx: clientCtx, sdk: sdkGateway, pool: pool, maxShown: ordering.MaxShownBytes,
		marshaler: &gateway.JSONPb{EmitDefaults: true, OrigName: true, AnyResolver: clientCtx.InterfaceRegistry}}
}

// tx answers one transaction by either hash: the reference's (the SDK finds it) or the named
// transaction's own (found through the ordered.tx_hash event of its reference's result).
func (v *explorerView) tx(w http.ResponseWriter, r *http.Request) {
	rec := v.serveSDK(r)
	if rec.code == http.StatusNotFound {
		if ref, ok := v.referenceOf(r, mux.Vars(r)["hash"]); ok {
			byRef := r.Clone(r.Context())
			byRef.URL.Path = strings.TrimSuffix(NamedTxPath, "{hash}") + ref
			rec = v.serveSDK(byRef)
		}
	}
	v.edit(w, rec, ordering.NamedTxField, func(top map[string]json.RawMessage, s *shown) {
		if tx, ok := s.tx(0, top["tx"], top, "tx_response"); ok {
			top["tx"] = tx
		}
	})
}

// txList answers a block's transactions (GetBlockWithTxs): txs are shown named, block stays as
// committed.
func (v *explorerView) txList(w http.ResponseWriter, r *http.Request) {
	v.edit(w, v.serveSDK(r), ordering.NamedTxsField, func(top map[string]json.RawMessage, s *shown) {
		var txs []json.RawMessage
		if json.Unmarshal(top["txs"], &txs) != nil {
			return
		}
		for i := range txs {
			if tx, ok := s.tx(i, txs[i], nil, ""); ok {
				txs[i] = tx
			}
		}
		top["txs"] = mustJSON(txs)
	})
}

// search answers the event search (GetTxsEvent). Clients of SDKs before v0.50 send events=
// (repeated) and ping.pub sends query= once per condition; the SDK v0.53 reads one query, so
// the conditions are joined with AND.
func (v *explorerView) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if conds := append(q["query"], q["events"]...); len(conds) > 1 || q.Has("events") {
		q.Del("events")
		q.Set("query", strings.Join(conds, " AND "))
		r.URL.RawQuery = q.Encode()
	}
	v.edit(w, v.serveSDK(r), ordering.NamedTxsField, func(top map[string]json.RawMessage, s *shown) {
		var txs, resps []json.RawMessage
		if json.Unmarshal(top["txs"], &txs) != nil || json.Unmarshal(top["tx_responses"], &resps) != nil || len(txs) != len(resps) {
			return
		}
		for i := range txs {
			var resp map[string]json.RawMessage
			if json.Unmarshal(resps[i], &resp) != nil {
				continue
			}
			if tx, ok := s.tx(i, txs[i], resp, ""); ok {
				txs[i], resps[i] = tx, mustJSON(resp)
			}
		}
		top["txs"], top["tx_responses"] = mustJSON(txs), mustJSON(resps)
	})
}

// block answers a block (GetBlockByHeight, GetLatestBlock). Explorers (ping.pub) list
// block.data.txs, decoding each and hashing its bytes: there the named transactions are shown.
// block is deprecated since SDK v0.47; sdk_block stays the block as committed, its txs hashing
// to the header's data_hash.
func (v *explorerView) block(w http.ResponseWriter, r *http.Request) {
	v.edit(w, v.serveSDK(r), ordering.NamedTxsField, func(top map[string]json.RawMessage, s *shown) {
		var block, data map[string]json.RawMessage
		var txs []string
		if json.Unmarshal(top["block"], &block) != nil || json.Unmarshal(block["data"], &data) != nil || json.Unmarshal(data["txs"], &txs) != nil {
			return
		}
		for i, b64 := range txs {
			if len(b64) > base64.StdEncoding.EncodedLen(maxTxRefBytes) {
				continue // a carried transaction: not decoded on every explorer's poll
			}
			bz, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				continue
			}
			ref, ok := parseTxRef(bz)
			if !ok {
				continue
			}
			if named, ok := s.named(i, sha256.Sum256(bz), ref); ok {
				txs[i] = base64.StdEncoding.EncodeToString(named)
			}
		}
		data["txs"] = mustJSON(txs)
		block["data"] = mustJSON(data)
		top["block"] = mustJSON(block)
	})
}

// edit runs change on a successful SDK answer and writes it with what it showed under field
// (NamedTxField: the one entry, NamedTxsField: the list); any other answer goes out as the SDK
// gave it.
func (v *explorerView) edit(w http.ResponseWriter, rec *bufferedResponse, field string, change func(map[string]json.RawMessage, *shown)) {
	var top map[string]json.RawMessage
	if rec.code != http.StatusOK || json.Unmarshal(rec.body.Bytes(), &top) != nil {
		rec.writeTo(w)
		return
	}
	s := &shown{view: v}
	change(top, s)
	if len(s.list) == 0 {
		rec.writeTo(w)
		return
	}
	if field == ordering.NamedTxField {
		top[field] = mustJSON(s.list[0])
	} else {
		top[field] = mustJSON(s.list)
	}
	rec.body.Reset()
	rec.body.Write(mustJSON(top))
	rec.header.Del("Content-Length")
	rec.writeTo(w)
}

// shown is what one answer replaced, bounded by ordering.MaxShownBytes.
type shown struct {
	view  *explorerView
	bytes int
	list  []ordering.NamedTx
}

// named returns the transaction ref names if the answer may show it, and records either way.
func (s *shown) named(index int, refHash [32]byte, ref *ordering.MsgOrderedTx) ([]byte, bool) {
	n := ordering.NamedTx{Index: index, ReferenceHash: fmt.Sprintf("%X", refHash), TxHash: fmt.Sprintf("%X", ref.TxHash), TxBytes: ref.TxBytes}
	bz, held := s.view.pool.Get([32]byte(ref.TxHash))
	switch {
	case !held:
		n.Status = ordering.NamedNotHeld
	case s.bytes+len(bz) > s.view.maxShown:
		n.Status, bz = ordering.NamedOverBudget, nil
	default:
		n.Status = ordering.NamedShown
		s.bytes += len(bz)
	}
	n.Note = ordering.NoteOf(n.Status)
	s.list = append(s.list, n)
	return bz, bz != nil
}

// tx returns the JSON of the transaction a reference names, given the reference's JSON (a
// cosmos.tx.v1beta1.Tx) and, where the answer has one, its TxResponse, whose txhash and tx it
// sets to the named transaction's. When resp is nil the reference's hash is computed.
func (s *shown) tx(index int, txJSON json.RawMessage, resp map[string]json.RawMessage, respField string) (json.RawMessage, bool) {
	ref, ok := refFromJSON(txJSON)
	if !ok {
		return nil, false
	}
	inner := resp
	if respField != "" { // the answer for one transaction nests its TxResponse
		if json.Unmarshal(resp[respField], &inner) != nil {
			return nil, false
		}
	}
	refHash := sha256.Sum256(TxRef([32]byte(ref.TxHash), int(ref.TxBytes), ref.Signer))
	if inner != nil {
		var hash string
		if json.Unmarshal(inner["txhash"], &hash) != nil || !strings.EqualFold(hash, hex.EncodeToString(refHash[:])) {
			return nil, false // not exactly a reference: shown as it is
		}
	}
	bz, ok := s.named(index, refHash, ref)
	if !ok {
		return nil, false
	}
	protoTx, asAny, err := s.view.decode(bz)
	if err != nil {
		return nil, false
	}
	txOut, err := s.view.marshaler.Marshal(protoTx)
	if err != nil {
		return nil, false
	}
	if inner != nil {
		anyOut, err := s.view.marshaler.Marshal(asAny)
		if err != nil {
			return nil, false
		}
		inner["tx"], inner["txhash"] = anyOut, mustJSON(fmt.Sprintf("%X", ref.TxHash))
		if respField != "" {
			resp[respField] = mustJSON(inner)
		}
	}
	return txOut, true
}

// refFromJSON reads a reference from a transaction's JSON: one MsgOrderedTx, no signature, no
// memo, no fee (TxRef).
func refFromJSON(txJSON json.RawMessage) (*ordering.MsgOrderedTx, bool) {
	if !bytes.Contains(txJSON, []byte(ordering.TypeURL)) {
		return nil, false // most transactions: not parsed again
	}
	var tx struct {
		Body struct {
			Messages []struct {
				Type    string `json:"@type"`
				TxHash  []byte `json:"tx_hash"`
				TxBytes string `json:"tx_bytes"`
				Signer  string `json:"signer"`
			} `json:"messages"`
			Memo string `json:"memo"`
		} `json:"body"`
		Signatures []string `json:"signatures"`
	}
	if json.Unmarshal(txJSON, &tx) != nil || len(tx.Body.Messages) != 1 || tx.Body.Messages[0].Type != ordering.TypeURL ||
		len(tx.Signatures) != 0 || tx.Body.Memo != "" {
		return nil, false
	}
	m := tx.Body.Messages[0]
	var size uint64
	if _, err := fmt.Sscan(m.TxBytes, &size); err != nil || len(m.TxHash) != 32 {
		return nil, false
	}
	return &ordering.MsgOrderedTx{TxHash: m.TxHash, TxBytes: size, Signer: m.Signer}, true
}

// decode turns a named transaction's bytes into what the SDK's answers hold: the Tx and the
// Any a TxResponse carries.
func (v *explorerView) decode(bz []byte) (*txtypes.Tx, *codectypes.Any, error) {
	tx, err := v.clientCtx.TxConfig.TxDecoder()(bz)
	if err != nil {
		return nil, nil, err
	}
	asAny, ok := tx.(interface{ AsAny() *codectypes.Any })
	if !ok {
		return nil, nil, fmt.Errorf("%T has no Any", tx)
	}
	protoTx, ok := asAny.AsAny().GetCachedValue().(*txtypes.Tx)
	if !ok {
		return nil, nil, fmt.Errorf("%T is not a Tx", asAny.AsAny().GetCachedValue())
	}
	return protoTx, asAny.AsAny(), nil
}

// referenceOf is the hash of the reference that named the transaction hash, found by the
// ordered.tx_hash event of its result.
func (v *explorerView) referenceOf(r *http.Request, hash string) (string, bool) {
	if raw, err := hex.DecodeString(hash); err != nil || len(raw) != 32 {
		return "", false
	}
	node, err := v.clientCtx.GetNode()
	if err != nil {
		return "", false
	}
	found, err := node.TxSearch(r.Context(), ordering.OrderedQuery(hash), false, nil, nil, "")
	if err != nil || len(found.Txs) == 0 {
		return "", false
	}
	return fmt.Sprintf("%X", found.Txs[0].Hash), true
}

func (v *explorerView) serveSDK(r *http.Request) *bufferedResponse {
	rec := &bufferedResponse{header: http.Header{}, code: http.StatusOK}
	v.sdk.ServeHTTP(rec, r)
	return rec
}

// mustJSON marshals what came from JSON, or plain values, which always marshal.
func mustJSON(v any) json.RawMessage {
	bz, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return bz
}

// bufferedResponse holds the SDK's answer until it is known to be final.
type bufferedResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) WriteHeader(code int)        { b.code = code }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

func (b *bufferedResponse) writeTo(w http.ResponseWriter) {
	for k, vals := range b.header {
		w.Header()[k] = vals
	}
	w.WriteHeader(b.code)
	_, _ = w.Write(b.body.Bytes())
}
