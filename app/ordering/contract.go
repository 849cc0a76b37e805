package ordering

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
)

// The contract between a node and its clients, defined once: the app serves it (app/ingress.go,
// push.go, pool.go, ordering.go) and its clients use it (x/topics/client/txclient, the Kafka
// gateway, the benchmark), so the two cannot drift apart.
const (
	// RawTxPath is the binary ingress: POST a signed transaction's bytes
	// (application/octet-stream), answered with RawTxResponse.
	RawTxPath = "/bftlog/tx/raw"
	// RawTxResultPath answers a committed transaction's result with RawTxResult: GET
	// ?hash=<hex SHA-256>&wait=<duration> (ResultQuery); StatusNotInBlock while it is in no
	// block.
	RawTxResultPath = "/bftlog/tx/result"
	// ResultHashParam and ResultWaitParam are RawTxResultPath's query parameters: the
	// transaction's SHA-256 in hex, and how long the node may wait for its block.
	ResultHashParam = "hash"
	ResultWaitParam = "wait"
	// PushPath takes transactions pushed to a validator (frames of a 4-byte length and the
	// bytes); HeldPath the word that a pusher's batch is held; PoolPath+<hex SHA-256> answers a
	// held transaction's bytes. The data plane's listener serves them ([ordering]
	// listen-address), and the API server too, for older peers.
	PushPath = "/bftlog/pool"
	HeldPath = "/bftlog/held"
	PoolPath = "/bftlog/pool/"
)

// The status codes of the ingress and its result endpoint that are not answers: a client tells
// them apart from a refusal (200 with a code) and from a node that failed (other 5xx).
const (
	// StatusNotInBlock: the result endpoint knows no block with the transaction (yet).
	StatusNotInBlock = http.StatusNotFound
	// StatusNotPassedOn: the ingress took the bytes but could not hand them to CometBFT, so
	// nothing was admitted.
	StatusNotPassedOn = http.StatusBadGateway
)

// ResultQuery is the path and query of RawTxResultPath for hash, waiting up to wait (0: answer
// at once).
func ResultQuery(hash string, wait time.Duration) string {
	q := url.Values{ResultHashParam: {hash}}
	if wait > 0 {
		q.Set(ResultWaitParam, wait.String())
	}
	return RawTxResultPath + "?" + q.Encode()
}

// HashHex is a transaction hash as the contract writes it: upper-case hex, as CometBFT does.
func HashHex(hash []byte) string { return strings.ToUpper(hex.EncodeToString(hash)) }

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

// TxFinder is the part of a CometBFT client that finds a committed transaction.
type TxFinder interface {
	Tx(ctx context.Context, hash []byte, prove bool) (*coretypes.ResultTx, error)
	TxSearch(ctx context.Context, query string, prove bool, page, perPage *int, orderBy string) (*coretypes.ResultTxSearch, error)
}

// FindTx is the committed result of the transaction hash in CometBFT's index: indexed under its
// own hash when a block carried it, under the reference's with the EventOrdered event naming it
// when a block named it by digest. The error is the lookup by hash's (CometBFT's "not found")
// when neither finds it.
func FindTx(ctx context.Context, node TxFinder, hash []byte) (*coretypes.ResultTx, error) {
	res, err := node.Tx(ctx, hash, false)
	if err == nil {
		return res, nil
	}
	found, serr := node.TxSearch(ctx, OrderedQuery(hex.EncodeToString(hash)), false, nil, nil, "")
	if serr == nil && found != nil && len(found.Txs) > 0 {
		return found.Txs[0], nil
	}
	return nil, err
}

// RawTxResponse is the ingress's answer (CheckTx's result), a subset of the SDK's TxResponse.
type RawTxResponse struct {
	TxHash    string `json:"txhash"`
	Code      uint32 `json:"code"`
	Codespace string `json:"codespace,omitempty"`
	RawLog    string `json:"raw_log,omitempty"`
}

// RawTxResult is a committed transaction's result, a subset of the SDK's TxResponse; Data is
// upper-case hex as in TxResponse.
type RawTxResult struct {
	TxHash    string `json:"txhash"`
	Height    int64  `json:"height"`
	Code      uint32 `json:"code"`
	Codespace string `json:"codespace,omitempty"`
	RawLog    string `json:"raw_log,omitempty"`
	Data      string `json:"data,omitempty"`
}

// NewRawTxResult is the result endpoint's answer for the transaction hash, committed at height
// with res.
func NewRawTxResult(hash []byte, height int64, res *abci.ExecTxResult) RawTxResult {
	return RawTxResult{TxHash: HashHex(hash), Height: height, Code: res.Code, Codespace: res.Codespace,
		RawLog: res.Log, Data: strings.ToUpper(hex.EncodeToString(res.Data))}
}
