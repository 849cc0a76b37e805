package app

import (
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"

	"github.com/cosmos/cosmos-sdk/client"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/app/dataplane"
	"github.com/bftlog/bftlog/app/ordering"
)

// RawTxPath is the binary ingress for producers: POST a signed transaction's bytes
// (application/octet-stream) and get the CheckTx result as JSON. It skips JSON-RPC's base64 and
// the SDK gRPC interceptor's per-request formatting, which dominate a node's CPU for large
// record batches (docs/performance.md), and hands the bytes to the in-process CometBFT client.
const RawTxPath = ordering.RawTxPath

// maxRawTxBytes bounds the request body, as the data plane bounds a transaction;
// mempool.max_tx_bytes is the real limit.
const maxRawTxBytes = dataplane.MaxTxBytes

// RawTxResponse is the ingress's answer (ordering.RawTxResponse).
type RawTxResponse = ordering.RawTxResponse

func (app *App) rawTxHandler(clientCtx client.Context) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST the signed transaction bytes", http.StatusMethodNotAllowed)
			return
		}
		bz, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRawTxBytes))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		// With stubs in the mempool (stub.go) the pool holds the transaction and CometBFT its stub.
		tx, hash, staged, created, full := app.mempoolTx(bz)
		if full {
			writeRawTxResponse(w, RawTxResponse{TxHash: hashHex(hash), Codespace: sdkerrors.ErrMempoolIsFull.Codespace(),
				Code: sdkerrors.ErrMempoolIsFull.ABCICode(), RawLog: sdkerrors.ErrMempoolIsFull.Error()})
			return
		}
		res, err := clientCtx.BroadcastTxSync(tx)
		// Staged here and never taken by CheckTx: forgotten, unless the same stub is in the
		// mempool's cache (another request's, whose CheckTx may still be waiting for it).
		if created && (err != nil || res.Code != sdkerrors.ErrTxInMempoolCache.ABCICode() || res.Codespace != sdkerrors.ErrTxInMempoolCache.Codespace()) {
			app.plane.Unstage(hash)
		}
		if err != nil {
			http.Error(w, err.Error(), ordering.StatusNotPassedOn)
			return
		}
		out := RawTxResponse{TxHash: res.TxHash, Code: res.Code, Codespace: res.Codespace, RawLog: res.RawLog}
		if staged {
			out.TxHash = hashHex(hash) // the transaction's, not its stub's
		}
		writeRawTxResponse(w, out)
	}
}

func writeRawTxResponse(w http.ResponseWriter, res RawTxResponse) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(res)
}

func hashHex(hash [32]byte) string { return ordering.HashHex(hash[:]) }

// RawTxResultPath answers a committed transaction's result without its bytes: GET
// ?hash=<hex>&wait=<duration, at most 30s>. It waits in the node until the transaction's block
// is committed or the wait ends (404), answering from the node's memory of the last blocks
// (results.go) or else from CometBFT's tx index. A client polling
// CometBFT's /tx instead gets the whole transaction back, JSON-encoded, a few megabytes for a
// record batch, and waits a polling interval past the commit.
const RawTxResultPath = ordering.RawTxResultPath

// RawTxResult is a committed transaction's result (ordering.RawTxResult).
type RawTxResult = ordering.RawTxResult

const (
	maxResultWait      = 30 * time.Second
	resultPollInterval = 10 * time.Millisecond
)

func rawTxResultHandler(clientCtx client.Context, recent *recentResults) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hash, err := hex.DecodeString(r.URL.Query().Get(ordering.ResultHashParam))
		if err != nil || len(hash) != 32 {
			http.Error(w, ordering.ResultHashParam+": want the transaction's SHA-256 in hex", http.StatusBadRequest)
			return
		}
		var wait time.Duration
		if v := r.URL.Query().Get(ordering.ResultWaitParam); v != "" {
			if wait, err = time.ParseDuration(v); err != nil || wait < 0 {
				http.Error(w, ordering.ResultWaitParam+": want a duration such as 10s", http.StatusBadRequest)
				return
			}
		}
		deadline := time.Now().Add(min(wait, maxResultWait))
		answer := func(height int64, res *abci.ExecTxResult) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(ordering.NewRawTxResult(hash, height, res))
		}
		for first := true; ; first = false {
			// The node's memory of the last blocks first, then CometBFT's tx index (if kept).
			if height, res, ok := recent.get([32]byte(hash)); ok {
				answer(height, res)
				return
			}
			var res *coretypes.ResultTx
			node, err := clientCtx.GetNode()
			if err == nil {
				// The first time also by the ordered event of a block that named it by digest:
				// CometBFT indexed the reference's hash, and the memory of recent results is
				// gone after a restart. Without this a producer whose transaction committed just
				// before the node restarted was told "not in a block" until it gave up (the
				// soak's restart of every node). A block committed while this waits is in the
				// memory above.
				if first {
					res, err = ordering.FindTx(r.Context(), node, hash)
				} else {
					res, err = node.Tx(r.Context(), hash, false)
				}
				if err == nil {
					answer(res.Height, &res.TxResult)
					return
				}
			}
			if time.Now().After(deadline) || r.Context().Err() != nil {
				http.Error(w, "not in a block yet: "+err.Error(), ordering.StatusNotInBlock)
				return
			}
			time.Sleep(resultPollInterval)
		}
	}
}
