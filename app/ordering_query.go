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
	"sync/atomic"

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
	maxShown  int // ordering.MaxShownBytes: one transaction, one block
	maxListed int // ordering.MaxListedBytes: a block's transactions, a search
	// slots bounds the answers being expanded at once (ordering.MaxExpanding): each holds
	// several copies of up to maxShown bytes, so requests past it are answered unexpanded.
	slots     chan struct{}
	expanding atomic.Int32 // answers being expanded now
	peak      atomic.Int32 // the most at once, for tests and debugging
}

// heldTxs is what the view reads of the data plane's pool (dataplane.Plane).
type heldTxs interface {
	Get(hash [32]byte) ([]byte, bool)
}

// register serves the routes on the API server's router, ahead of the gateway's catch-all;
// other methods (a broadcast's POST) go on to the gateway.
func (v *explorerView) register(router *mux.Router) {
	router.HandleFunc(NamedTxPath, v.unlessPlain(v.tx)).Methods(http.MethodGet)
	router.HandleFunc(TxsOfBlockPath, v.unlessPlain(v.txList)).Methods(http.MethodGet)
	router.HandleFunc(TxSearchPath, v.unlessPlain(v.search)).Methods(http.MethodGet)
	router.HandleFunc(BlockByHeightPath, v.unlessPlain(v.block)).Methods(http.MethodGet)
}

// unlessPlain passes a request asking ordering.PlainParam=false (a client reading only a
// block's header, such as the topic console) to the gateway as it is, costing no expansion.
func (v *explorerView) unlessPlain(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get(ordering.PlainParam) != "false" {
			h(w, r)
			return
		}
		q.Del(ordering.PlainParam)
		r.URL.RawQuery = q.Encode()
		v.sdk.ServeHTTP(w, r)
	}
}

func newExplorerView(clientCtx client.Context, sdkGateway http.Handler, pool heldTxs) *explorerView {
	return &explorerView{clientCtx: clientCtx, sdk: sdkGateway, pool: pool,
		maxShown: ordering.MaxShownBytes, maxListed: ordering.MaxListedBytes, slots: make(chan struct{}, ordering.MaxExpanding),
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
	v.edit(w, rec, ordering.NamedTxField, v.maxShown, func(top map[string]json.RawMessage, s *shown) {
		var resp map[string]json.RawMessage // a map of its own: top stays the answer's top level
		if json.Unmarshal(top["tx_response"], &resp) != nil {
			return
		}
		var hash string
		if json.Unmarshal(resp["txhash"], &hash) != nil {
			return
		}
		if tx, ok := s.tx(0, top["tx"], hash, resp); ok {
			top["tx"], top["tx_response"] = tx, mustJSON(resp)
		}
	})
}

// txList answers a block's transactions (GetBlockWithTxs): txs are shown named, block stays as
// committed. A transaction is a reference only if its committed bytes (block.data.txs) are
// exactly one (parseTxRef), as in the block route: a look-alike a proposer included is left.
func (v *explorerView) txList(w http.ResponseWriter, r *http.Request) {
	v.edit(w, v.serveSDK(r), ordering.NamedTxsField, v.maxListed, func(top map[string]json.RawMessage, s *shown) {
		var txs []json.RawMessage
		var block struct {
			Data struct {
				Txs [][]byte `json:"txs"`
			} `json:"data"`
		}
		if json.Unmarshal(top["txs"], &txs) != nil || json.Unmarshal(top["block"], &block) != nil || len(block.Data.Txs) != len(txs) {
			return
		}
		for i := range txs {
			raw := block.Data.Txs[i]
			if _, ok := parseTxRef(raw); !ok {
				continue
			}
			if tx, ok := s.tx(i, txs[i], fmt.Sprintf("%X", sha256.Sum256(raw)), nil); ok {
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
	v.edit(w, v.serveSDK(r), ordering.NamedTxsField, v.maxListed, func(top map[string]json.RawMessage, s *shown) {
		var txs, resps []json.RawMessage
		if json.Unmarshal(top["txs"], &txs) != nil || json.Unmarshal(top["tx_responses"], &resps) != nil || len(txs) != len(resps) {
			return
		}
		for i := range txs {
			var resp map[string]json.RawMessage
			var hash string
			if json.Unmarshal(resps[i], &resp) != nil || json.Unmarshal(resp["txhash"], &hash) != nil {
				continue
			}
			if tx, ok := s.tx(i, txs[i], hash, resp); ok {
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
	v.expand(w, v.serveSDK(r), v.maxShown, func(body []byte, s *shown) []byte {
		from, to, ok := spanOf(body, "block", "data", "txs")
		var txs []string
		if !ok || json.Unmarshal(body[from:to], &txs) != nil {
			return nil
		}
		named := make([][]byte, len(txs))
		size := 2
		for i, b64 := range txs {
			size += len(b64) + 3
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
			n, bz := s.lookup(i, sha256.Sum256(bz), ref)
			named[i] = bz
			size += base64.StdEncoding.EncodedLen(len(bz))
			s.record(n, len(bz))
		}
		if len(s.list) == 0 {
			return nil
		}
		// The answer is written once: the SDK's text around block.data.txs, the list with the
		// named transactions spliced in, then named_txs.
		list := mustJSON(s.list)
		out := make([]byte, 0, len(body)-(to-from)+size+len(ordering.NamedTxsField)+len(list)+8)
		out = append(out, body[:from]...)
		out = append(out, '[')
		for i, b64 := range txs {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, '"')
			if named[i] != nil {
				out = base64.StdEncoding.AppendEncode(out, named[i])
			} else {
				out = append(out, b64...)
			}
			out = append(out, '"')
		}
		out = append(out, ']')
		out = append(out, body[to:]...)
		out, _ = withField(out, ordering.NamedTxsField, list)
		return out
	})
}

// edit expands a successful SDK answer naming a reference as change does, setting what it
// showed under field (NamedTxField: the one entry, NamedTxsField: the list).
func (v *explorerView) edit(w http.ResponseWriter, rec *bufferedResponse, field string, budget int, change func(map[string]json.RawMessage, *shown)) {
	v.expand(w, rec, budget, func(body []byte, s *shown) []byte {
		var top map[string]json.RawMessage
		if json.Unmarshal(body, &top) != nil {
			return nil
		}
		change(top, s)
		if len(s.list) == 0 {
			return nil
		}
		if field == ordering.NamedTxField {
			top[field] = mustJSON(s.list[0])
		} else {
			top[field] = mustJSON(s.list)
		}
		return mustJSON(top)
	})
}

// expand writes a successful SDK answer naming a reference as change rewrites it (nil: as it
// is), with at most budget bytes of named transactions; any other answer goes out as the SDK
// gave it. While ordering.MaxExpanding answers are being expanded, the answer goes out
// unexpanded with ordering.NamedStatusField "busy".
func (v *explorerView) expand(w http.ResponseWriter, rec *bufferedResponse, budget int, change func([]byte, *shown) []byte) {
	if rec.code != http.StatusOK || !namesReference(rec.body.Bytes()) {
		rec.writeTo(w) // most answers: no reference, not parsed
		return
	}
	select {
	case v.slots <- struct{}{}:
	default:
		if body, ok := withField(rec.body.Bytes(), ordering.NamedStatusField, mustJSON(ordering.NamedBusy)); ok {
			rec.setBody(body)
		}
		rec.writeTo(w)
		return
	}
	defer func() { <-v.slots }()
	if n := v.expanding.Add(1); n > v.peak.Load() {
		v.peak.Store(n) // racy maximum, good enough for a figure
	}
	defer v.expanding.Add(-1)

	if body := change(rec.body.Bytes(), &shown{view: v, budget: budget}); body != nil {
		rec.setBody(body)
	}
	rec.writeTo(w)
}

// shown is what one answer replaced, bounded by its budget.
type shown struct {
	view   *explorerView
	budget int
	bytes  int
	list   []ordering.NamedTx
}

// lookup returns the entry for ref and, if the answer may show it, the transaction it names;
// the caller records the entry (record) once it knows whether it showed it.
func (s *shown) lookup(index int, refHash [32]byte, ref *ordering.MsgOrderedTx) (ordering.NamedTx, []byte) {
	n := ordering.NamedTx{Index: index, ReferenceHash: fmt.Sprintf("%X", refHash), TxHash: fmt.Sprintf("%X", ref.TxHash), TxBytes: ref.TxBytes}
	bz, held := s.view.pool.Get([32]byte(ref.TxHash))
	switch {
	case !held:
		n.Status, bz = ordering.NamedNotHeld, nil
	case s.bytes+len(bz) > s.budget:
		n.Status, bz = ordering.NamedOverBudget, nil
	default:
		n.Status = ordering.NamedShown
	}
	return n, bz
}

// record adds n to the answer's list, shown bytes counting against its budget.
func (s *shown) record(n ordering.NamedTx, shownBytes int) {
	if n.Status == ordering.NamedShown {
		s.bytes += shownBytes
	}
	n.Note = ordering.NoteOf(n.Status)
	s.list = append(s.list, n)
}

// tx returns the JSON of the transaction a reference names, given the reference's JSON (a
// cosmos.tx.v1beta1.Tx) and the hash the answer gives it (the TxResponse's txhash, or the
// hash of its committed bytes); it is a reference only if that is the hash of the reference its
// JSON describes. Where the answer has a TxResponse (resp), its txhash and tx are set to the
// named transaction's.
func (s *shown) tx(index int, txJSON json.RawMessage, hash string, resp map[string]json.RawMessage) (json.RawMessage, bool) {
	ref, ok := refFromJSON(txJSON)
	if !ok {
		return nil, false
	}
	refHash := sha256.Sum256(TxRef([32]byte(ref.TxHash), int(ref.TxBytes), ref.Signer))
	if !strings.EqualFold(hash, hex.EncodeToString(refHash[:])) {
		return nil, false // not exactly a reference: shown as it is
	}
	n, bz := s.lookup(index, refHash, ref)
	if bz == nil {
		s.record(n, 0)
		return nil, false
	}
	txOut, anyOut, err := s.view.txJSON(bz)
	if err != nil {
		n.Status = ordering.NamedUndecodable
		s.record(n, 0)
		return nil, false
	}
	if resp != nil {
		resp["tx"], resp["txhash"] = anyOut, mustJSON(fmt.Sprintf("%X", ref.TxHash))
	}
	s.record(n, len(bz))
	return txOut, true
}

// txJSON is a transaction's JSON as the SDK's answers hold it: the Tx, and the Any a
// TxResponse carries.
func (v *explorerView) txJSON(bz []byte) (txOut, anyOut json.RawMessage, err error) {
	protoTx, asAny, err := v.decode(bz)
	if err != nil {
		return nil, nil, err
	}
	if txOut, err = v.marshaler.Marshal(protoTx); err != nil {
		return nil, nil, err
	}
	if anyOut, err = v.marshaler.Marshal(asAny); err != nil {
		return nil, nil, err
	}
	return txOut, anyOut, nil
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
// ordered.tx_hash event of its result; only a transaction that is exactly a reference naming
// that hash counts (the event is the app's, but the search matches by prefix of words).
func (v *explorerView) referenceOf(r *http.Request, hash string) (string, bool) {
	if raw, err := hex.DecodeString(hash); err != nil || len(raw) != 32 {
		return "", false
	}
	node, err := v.clientCtx.GetNode()
	if err != nil {
		return "", false
	}
	found, err := node.TxSearch(r.Context(), ordering.OrderedQuery(hash), false, nil, nil, "")
	if err != nil {
		return "", false
	}
	for _, res := range found.Txs {
		if ref, ok := parseTxRef(res.Tx); ok && strings.EqualFold(hex.EncodeToString(ref.TxHash), hash) {
			return fmt.Sprintf("%X", sha256.Sum256(res.Tx)), true
		}
	}
	return "", false
}

func (v *explorerView) serveSDK(r *http.Request) *bufferedResponse {
	rec := &bufferedResponse{header: http.Header{}, code: http.StatusOK}
	v.sdk.ServeHTTP(rec, r)
	return rec
}
