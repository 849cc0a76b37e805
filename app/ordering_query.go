package app

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	gateway "github.com/cosmos/gogogateway"
	"github.com/gorilla/mux"

	"github.com/cosmos/cosmos-sdk/client"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	txtypes "github.com/cosmos/cosmos-sdk/types/tx"

	"github.com/bftlog/bftlog/app/dataplane"
	"github.com/bftlog/bftlog/app/ordering"
)

// NamedTxPath is the SDK's REST route for one transaction, which explorers read by the hash a
// producer was given. CometBFT indexes a transaction a block named (ordering.go) under the
// reference's hash, so the SDK answers "not found" for it; this route then finds its result by
// the ordered.tx_hash event and answers with the transaction itself from the pool, as the SDK
// would have.
const NamedTxPath = "/cosmos/tx/v1beta1/txs/{hash}"

func namedTxHandler(clientCtx client.Context, sdkGateway http.Handler, pool *dataplane.Plane) http.HandlerFunc {
	marshaler := &gateway.JSONPb{EmitDefaults: true, OrigName: true, AnyResolver: clientCtx.InterfaceRegistry}
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferedResponse{header: http.Header{}, code: http.StatusOK}
		sdkGateway.ServeHTTP(rec, r)
		if rec.code == http.StatusNotFound {
			if body, ok := namedTx(r, clientCtx, pool, marshaler, mux.Vars(r)["hash"]); ok {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(body)
				return
			}
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.code)
		_, _ = w.Write(rec.body.Bytes())
	}
}

// namedTx is the SDK's GetTxResponse for a named transaction, if hash is one this node can show.
func namedTx(r *http.Request, clientCtx client.Context, pool *dataplane.Plane, marshaler *gateway.JSONPb, hash string) ([]byte, bool) {
	raw, err := hex.DecodeString(hash)
	if err != nil || len(raw) != 32 {
		return nil, false
	}
	node, err := clientCtx.GetNode()
	if err != nil {
		return nil, false
	}
	hash = strings.ToUpper(hash)
	found, err := node.TxSearch(r.Context(), ordering.OrderedQuery(hash), false, nil, nil, "")
	if err != nil || len(found.Txs) == 0 {
		return nil, false
	}
	ref := found.Txs[0]
	bz, ok := pool.Get([32]byte(raw))
	if !ok { // outside this node's window: the reference is what it can show
		return nil, false
	}
	tx, err := clientCtx.TxConfig.TxDecoder()(bz)
	if err != nil {
		return nil, false
	}
	asAny, ok := tx.(interface{ AsAny() *codectypes.Any })
	if !ok {
		return nil, false
	}
	protoTx, ok := asAny.AsAny().GetCachedValue().(*txtypes.Tx)
	if !ok {
		return nil, false
	}
	var when string
	if block, err := node.Block(r.Context(), &ref.Height); err == nil {
		when = block.Block.Time.Format(time.RFC3339)
	}
	res := sdk.NewResponseResultTx(&coretypes.ResultTx{Hash: raw, Height: ref.Height, Index: ref.Index, TxResult: ref.TxResult, Tx: bz}, asAny.AsAny(), when)
	body, err := marshaler.Marshal(&txtypes.GetTxResponse{Tx: protoTx, TxResponse: res})
	return body, err == nil
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
