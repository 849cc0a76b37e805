package app

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/cosmos/cosmos-sdk/client"
)

// RawTxPath is the binary ingress for producers: POST a signed transaction's bytes
// (application/octet-stream) and get the CheckTx result as JSON. It skips JSON-RPC's base64 and
// the SDK gRPC interceptor's per-request formatting, which dominate a node's CPU for large
// record batches (README, Performance), and hands the bytes to the in-process CometBFT client.
const RawTxPath = "/bftlog/tx/raw"

// maxRawTxBytes bounds the request body; mempool.max_tx_bytes is the real limit.
const maxRawTxBytes = 32 << 20

// RawTxResponse is the ingress's answer, a subset of the SDK's TxResponse.
type RawTxResponse struct {
	TxHash    string `json:"txhash"`
	Code      uint32 `json:"code"`
	Codespace string `json:"codespace,omitempty"`
	RawLog    string `json:"raw_log,omitempty"`
}

func rawTxHandler(clientCtx client.Context) http.HandlerFunc {
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
		res, err := clientCtx.BroadcastTxSync(bz)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(RawTxResponse{TxHash: res.TxHash, Code: res.Code, Codespace: res.Codespace, RawLog: res.RawLog})
	}
}
