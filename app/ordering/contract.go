package ordering

import (
	"fmt"
	"strings"
)

// The contract between a node and its clients, defined once: the app serves it (app/ingress.go,
// push.go, pool.go, ordering.go) and its clients use it (x/topics/client/txclient, the Kafka
// gateway, the benchmark), so the two cannot drift apart.
const (
	// RawTxPath is the binary ingress: POST a signed transaction's bytes
	// (application/octet-stream), answered with RawTxResponse.
	RawTxPath = "/bftlog/tx/raw"
	// RawTxResultPath answers a committed transaction's result with RawTxResult: GET
	// ?hash=<hex SHA-256>&wait=<duration>; 404 while it is in no block.
	RawTxResultPath = "/bftlog/tx/result"
	// PushPath takes transactions pushed to a validator (frames of a 4-byte length and the
	// bytes); HeldPath the word that a pusher's batch is held; PoolPath+<hex SHA-256> answers a
	// held transaction's bytes. The data plane's listener serves them ([ordering]
	// listen-address), and the API server too, for older peers.
	PushPath = "/bftlog/pool"
	HeldPath = "/bftlog/held"
	PoolPath = "/bftlog/pool/"
)

// EventOrdered is the event a block's result of a transaction named by digest carries: CometBFT
// indexes the result under the reference's hash, and this names the transaction's own
// (AttributeTxHash, upper-case hex) and size (AttributeTxBytes).
const (
	EventOrdered     = "ordered"
	AttributeTxHash  = "tx_hash"
	AttributeTxBytes = "tx_bytes"
)

// OrderedQuery is the tx_search query that finds the result of a transaction a block named by
// its digest; hash is its SHA-256 in hex.
func OrderedQuery(hash string) string {
	return fmt.Sprintf("%s.%s='%s'", EventOrdered, AttributeTxHash, strings.ToUpper(hash))
}

// RawTxResponse is the ingress's answer (CheckTx's result), a subset of the SDK's TxResponse.
type RawTxResponse struct {
	TxHash    string `json:"txhash"`
	Code      uint32 `json:"code"`
	Codespace string `json:"codespace,omitempty"`
	RawLog    string `json:"raw_log,omitempty"`
}

// RawTxResult is a committed transaction's result, a subset of the SDK's TxResponse; Data is
// hex as in TxResponse.
type RawTxResult struct {
	TxHash    string `json:"txhash"`
	Height    int64  `json:"height"`
	Code      uint32 `json:"code"`
	Codespace string `json:"codespace,omitempty"`
	RawLog    string `json:"raw_log,omitempty"`
	Data      string `json:"data,omitempty"`
}
