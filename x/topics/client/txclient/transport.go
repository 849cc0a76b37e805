package txclient

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	coretypes "github.com/cometbft/cometbft/rpc/core/types"

	"github.com/cosmos/cosmos-sdk/client"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/app/ordering"
)

// Transport carries a signed transaction to one node and its committed result back: the send
// path every client of the chain shares (the CLI, the Kafka gateway, the group consumer, the
// benchmark). A Signer sends through one transport, or through a Nodes list, which fails over
// between the transports of its nodes. Two are built in: the node's CometBFT RPC (RPC) and its
// binary ingress with the result endpoint (Ingress), the faster one for record batches.
type Transport interface {
	// Broadcast hands tx to the node and returns CheckTx's answer: a refusal is an answer with a
	// non-zero code, not an error. An error is a node that did not take it (unreachable, or
	// failing: then the outcome may be unknown, see ErrIngressUnavailable).
	Broadcast(ctx context.Context, tx []byte) (*sdk.TxResponse, error)
	// Result is the committed result of the transaction hash (its SHA-256 in hex), as the node
	// knows it, waiting up to wait for its block: an error matching ErrNotInBlock when it is in
	// none by then. A result with a non-zero code is a transaction that failed in its block,
	// returned as such (not as an error).
	Result(ctx context.Context, hash string, wait time.Duration) (*sdk.TxResponse, error)
}

// ErrNotInBlock is a node's answer that a transaction is in no block it knows (yet): an answer,
// so a Nodes list keeps the node.
var ErrNotInBlock = errors.New("not in a block yet")

// RPC is the transport over a node's CometBFT RPC: broadcast_tx_sync, then the transaction
// looked up in the tx index, by its own hash or, when a block named it by digest, by the
// ordered event (ordering.FindTx). Each lookup returns the whole transaction, a few megabytes
// for a record batch: Ingress is the faster path for those.
type RPC struct {
	ctx client.Context
}

// NewRPC is the transport over clientCtx's CometBFT client. With a TxConfig in clientCtx, a
// result carries the decoded transaction and its block's time, as the SDK's tx query prints it.
func NewRPC(clientCtx client.Context) *RPC { return &RPC{ctx: clientCtx} }

// rpcPoll is how often RPC asks the tx index for a transaction not found yet.
const rpcPoll = 100 * time.Millisecond

// Broadcast is broadcast_tx_sync; mempool refusals are answers with their codes, as
// client.Context.BroadcastTxSync returns them.
func (t *RPC) Broadcast(ctx context.Context, tx []byte) (*sdk.TxResponse, error) {
	node, err := t.ctx.GetNode()
	if err != nil {
		return nil, err
	}
	res, err := node.BroadcastTxSync(ctx, tx)
	if errRes := client.CheckCometError(err, tx); errRes != nil {
		return errRes, nil
	}
	if err != nil {
		return nil, err
	}
	return sdk.NewResponseFormatBroadcastTx(res), nil
}

// Result polls the tx index every rpcPoll until wait has passed.
func (t *RPC) Result(ctx context.Context, hash string, wait time.Duration) (*sdk.TxResponse, error) {
	bz, err := hex.DecodeString(hash)
	if err != nil {
		return nil, answer{err}
	}
	node, err := t.ctx.GetNode()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		res, err := ordering.FindTx(ctx, node, bz)
		if err == nil {
			return t.response(ctx, hash, res)
		}
		if nodeFailed(err) {
			return nil, err
		}
		// CometBFT answers "not found" for a transaction it has not indexed (yet).
		if !time.Now().Add(rpcPoll).Before(deadline) {
			return nil, ErrNotInBlock
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(rpcPoll):
		}
	}
}

// response is a found result as the SDK's TxResponse; for a block that named the transaction by
// digest, tx is the reference, and the hash is the transaction's own.
func (t *RPC) response(ctx context.Context, hash string, res *coretypes.ResultTx) (*sdk.TxResponse, error) {
	var anyTx *codectypes.Any
	var timestamp string
	if t.ctx.TxConfig != nil {
		// As the SDK's tx query builds it (x/auth/tx QueryTx): the decoded transaction and its
		// block's time.
		if decoded, err := t.ctx.TxConfig.TxDecoder()(res.Tx); err == nil {
			if p, ok := decoded.(interface{ AsAny() *codectypes.Any }); ok {
				anyTx = p.AsAny()
			}
		}
		if node, err := t.ctx.GetNode(); err == nil {
			if b, err := node.Block(ctx, &res.Height); err == nil {
				timestamp = b.Block.Time.Format(time.RFC3339)
			}
		}
	}
	out := sdk.NewResponseResultTx(res, anyTx, timestamp)
	out.TxHash = strings.ToUpper(hash)
	return out, nil
}

// Ingress is the transport over a node's binary ingress (ordering.RawTxPath): the signed bytes
// POSTed as they are, and the result long-polled at ordering.RawTxResultPath, which answers with
// the result alone, not the transaction, once its block commits.
type Ingress struct {
	api  string
	http *http.Client
}

// NewIngress is the transport over the ingress of the node whose API server is at api
// (http://host:1317).
func NewIngress(api string) *Ingress { return newIngress(api, ingressClient) }

func newIngress(api string, cl *http.Client) *Ingress {
	return &Ingress{api: strings.TrimSuffix(api, "/"), http: cl}
}

// ingressClient carries the ingress and result requests. They are bounded by their contexts (a
// result is long-polled, and a Nodes list probes a node that does not answer), not by a client
// timeout.
var ingressClient = &http.Client{Transport: &http.Transport{
	Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
}}

// Broadcast POSTs tx to the ingress, which answers after CheckTx.
func (t *Ingress) Broadcast(ctx context.Context, tx []byte) (*sdk.TxResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.api+ordering.RawTxPath, bytes.NewReader(tx))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, err
	}
	return ingressAnswer(resp)
}

// Result asks the result endpoint, which waits in the node up to wait.
func (t *Ingress) Result(ctx context.Context, hash string, wait time.Duration) (*sdk.TxResponse, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, t.api+ordering.ResultQuery(hash, wait), nil)
	if err != nil {
		return nil, err
	}
	resp, err := t.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == ordering.StatusNotInBlock {
		resp.Body.Close()
		return nil, ErrNotInBlock
	}
	return ingressAnswer(resp)
}

// ErrIngressUnavailable is a submission the node's ingress took but could not pass on to
// CometBFT (ordering.StatusNotPassedOn). The ingress runs in the node's process and fails
// before the mempool admits anything, but a caller cannot know that: it may send the messages
// again only where something on chain refuses a second copy (a produce's producer sequence).
var ErrIngressUnavailable = errors.New("the node's ingress could not pass the transaction on")

// maxAnswerBytes bounds what a client reads of an ingress or result answer.
const maxAnswerBytes = 4 << 20

// ingressAnswer decodes (and closes) an answer of the binary ingress: ordering.RawTxResponse or
// ordering.RawTxResult, whose fields are TxResponse's. A 4xx is the node's answer (a request it
// refuses); a 5xx its failure.
func ingressAnswer(resp *http.Response) (*sdk.TxResponse, error) {
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		err := fmt.Errorf("ingress: %s: %s", resp.Status, bytes.TrimSpace(msg))
		switch {
		case resp.StatusCode == ordering.StatusNotPassedOn:
			// The node could not hand the transaction to CometBFT (ErrIngressUnavailable says
			// what a caller may do about it).
			err = fmt.Errorf("%w: %w", ErrIngressUnavailable, err)
		case resp.StatusCode < 500:
			err = answer{err}
		}
		return nil, err
	}
	var out ordering.RawTxResult // a RawTxResponse's fields are among its
	// Bounded: a result is a few hundred bytes plus the messages' responses.
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswerBytes)).Decode(&out); err != nil {
		return nil, err
	}
	return &sdk.TxResponse{TxHash: out.TxHash, Height: out.Height, Code: out.Code, Codespace: out.Codespace, RawLog: out.RawLog, Data: out.Data}, nil
}

// The single-node route: a Signer's transactions through one Transport.

// broadcastTimeout bounds a submission to one transport: the node answers after CheckTx, so a
// node that does not answer in this time (paused, partitioned) is treated as down rather than
// blocking its caller.
const broadcastTimeout = 30 * time.Second

// singleWait is how long one Result call of a single-node route lets the node wait.
const singleWait = 10 * time.Second

// route is how a Signer's transactions reach the chain: one Transport (single) or a Nodes list.
type route interface {
	send(tx []byte) (*sdk.TxResponse, sent, error)
	await(s sent) (*sdk.TxResponse, error)
}

// single is the route through one transport.
type single struct{ t Transport }

func (r single) send(tx []byte) (*sdk.TxResponse, sent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), broadcastTimeout)
	defer cancel()
	res, err := r.t.Broadcast(ctx, tx)
	if err != nil {
		return nil, sent{}, err
	}
	return res, sent{hash: res.TxHash, tx: tx}, nil
}

func (r single) await(s sent) (*sdk.TxResponse, error) { return awaitCommit(r.t, s.hash) }

// awaitCommit asks t for the result of hash until it is committed (then fails on a non-zero
// code with a *TxError of stage Delivered) or CommitTimeout passes (an error matching
// ErrNotCommitted).
func awaitCommit(t Transport, hash string) (*sdk.TxResponse, error) {
	deadline := time.Now().Add(commitTimeout)
	for {
		wait := max(min(singleWait, time.Until(deadline)), 0)
		ctx, cancel := context.WithTimeout(context.Background(), wait+broadcastTimeout)
		res, err := t.Result(ctx, hash, wait)
		cancel()
		if err == nil {
			return committed(hash, res)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("transaction %s %w after %s: %w", hash, ErrNotCommitted, commitTimeout, err)
		}
		if !errors.Is(err, ErrNotInBlock) {
			time.Sleep(rpcPoll) // unreachable or restarting; a node that waited already is asked again at once
		}
	}
}
