package txclient

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	rpctypes "github.com/cometbft/cometbft/rpc/jsonrpc/types"

	errorsmod "cosmossdk.io/errors"

	"github.com/cosmos/cosmos-sdk/client"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
)

// The binary ingress and its result endpoint on a node's API server (app.RawTxPath and
// app.RawTxResultPath; the app imports this package, so they are repeated here).
const (
	rawTxPath       = "/bftlog/tx/raw"
	rawTxResultPath = "/bftlog/tx/result"
)

// Failover timing. A node that refuses connections fails a call at once; a paused or hung one
// (the kernel still accepts its TCP connections) is found by a probe: a call that has no
// answer after probeAfter gets its node probed, and every probeEvery after that, and a node
// that does not answer a probe within probeTimeout is taken as down. A heavy call (a record
// batch's CheckTx, a long-polled result) on a node that answers probes is left to finish.
var (
	probeAfter   = 250 * time.Millisecond
	probeEvery   = 300 * time.Millisecond
	probeTimeout = 400 * time.Millisecond
	// retryAfter is how long a node taken as down is skipped before it is tried again.
	retryAfter = 2 * time.Second
	// stallAfter: a transaction not committed after this long on one node makes the client
	// compare that node's height with another's; lagBlocks behind, the node is cut off from
	// its peers (or still catching up) and the transaction is taken elsewhere.
	stallAfter = time.Second
	lagBlocks  = int64(2)
	// resultWait is how long one long poll of the result endpoint waits in the node.
	resultWait = time.Second
	// resendAfterBlocks: a transaction a node answering and up to date has not committed while
	// its height went this far is handed over again (the node may have restarted and lost it).
	resendAfterBlocks = int64(5)
)

// ErrUnreachable is a call that no node of a Nodes list answered: each refused the connection,
// failed or did not answer a probe in time. A transaction submission failing with it has an
// unknown outcome (a node that stopped answering may have taken it).
var ErrUnreachable = errors.New("no node answered")

// ErrUnresponsive is a node that took a call but answered neither it nor a probe in time (a
// paused or hung process): a Switch's Cause wraps it.
var ErrUnresponsive = errors.New("node does not answer")

// errBehind is a node lagging the others while a transaction waits on it.
var errBehind = errors.New("node is behind the others")

// Node is one node a client may use: its CometBFT RPC and, optionally, its API server, whose
// binary ingress and result endpoint then carry the client's transactions.
type Node struct {
	RPC string // tcp://host:26657 or http://host:26657
	API string // http://host:1317, or "" to broadcast and look up transactions over RPC
}

// ParseNodes reads a comma-separated list of RPC addresses (a --node flag) and, when apis is
// set, the same number of API server addresses in the same order (an --ingress flag).
func ParseNodes(rpcs, apis string) ([]Node, error) {
	split := func(s string) []string {
		var out []string
		for _, f := range strings.Split(s, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, strings.TrimSuffix(f, "/"))
			}
		}
		return out
	}
	r, a := split(rpcs), split(apis)
	if len(r) == 0 {
		return nil, errors.New("no node address")
	}
	if len(a) > 0 && len(a) != len(r) {
		return nil, fmt.Errorf("%d node addresses but %d ingress addresses: give one ingress per node, in the same order", len(r), len(a))
	}
	out := make([]Node, len(r))
	for i := range r {
		out[i].RPC = r[i]
		if len(a) > 0 {
			out[i].API = a[i]
		}
	}
	return out, nil
}

// Switch is a change of the node a Nodes list uses: at At, after Cause, from node From to node
// To (indices into the list).
type Switch struct {
	At       time.Time
	From, To int
	Cause    error
}

// Nodes is a list of nodes a client fails over between. Calls go to one node, the current
// one, while it answers; a node that refuses connections, fails, does not answer a probe
// (paused: it accepts TCP and never answers) or lags the others by lagBlocks while a
// transaction waits on it is skipped for retryAfter and the call goes to the next node in the
// list, which becomes the current one. It implements client.CometRPC, so a client.Context
// with it as its Client fails over for queries, simulations and account reads too; a Signer
// given it with UseNodes also sends and waits through it (see Signer.UseNodes).
type Nodes struct {
	eps []*endpoint
	mu  sync.Mutex
	cur int
	// switches are the last maxSwitches switches, for logs and tests.
	switches []Switch
	nSwitch  int
	onSwitch func(Switch)
}

const maxSwitches = 100

// endpoint is one node of a list and what the list knows of it.
type endpoint struct {
	Node
	index int
	rpc   *rpchttp.HTTP
	probe string // a URL any live node answers at once (the API's ingress, else RPC /health)
	http  *http.Client

	mu         sync.Mutex
	downUntil  time.Time
	lastAnswer time.Time
	probing    *probeRun
	height     int64
	heightAt   time.Time
}

type probeRun struct {
	done chan struct{}
	err  error
}

// nodeHTTP carries the ingress, result and probe requests; calls are bounded by their
// contexts (and the probes), not by a client timeout, because a result is long-polled.
var nodeHTTP = &http.Client{Transport: &http.Transport{
	Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 16, IdleConnTimeout: 90 * time.Second,
}}

// NewNodes prepares a list of nodes; the first is used first.
func NewNodes(nodes []Node) (*Nodes, error) {
	if len(nodes) == 0 {
		return nil, errors.New("no nodes")
	}
	n := &Nodes{}
	for i, nd := range nodes {
		rpc, err := rpchttp.New(nd.RPC, "/websocket")
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", nd.RPC, err)
		}
		probe := nd.API + rawTxPath
		if nd.API == "" {
			u, err := url.Parse(nd.RPC)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", nd.RPC, err)
			}
			if u.Scheme == "tcp" {
				u.Scheme = "http"
			}
			probe = u.String() + "/health"
		}
		n.eps = append(n.eps, &endpoint{Node: nd, index: i, rpc: rpc, probe: probe, http: nodeHTTP})
	}
	return n, nil
}

// Len is the number of nodes in the list.
func (n *Nodes) Len() int { return len(n.eps) }

// Node is the i-th node of the list.
func (n *Nodes) Node(i int) Node { return n.eps[i].Node }

// Current is the index of the node calls go to first.
func (n *Nodes) Current() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cur
}

// SetCurrent makes node i the one calls go to first (clients of one list of nodes can spread
// over them this way); it is not a switch.
func (n *Nodes) SetCurrent(i int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cur = i % len(n.eps)
}

// Switches returns the last switches (at most 100) and how many there were in all.
func (n *Nodes) Switches() ([]Switch, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Switch(nil), n.switches...), n.nSwitch
}

// OnSwitch calls f (on the calling goroutine) at every switch, e.g. to log it.
func (n *Nodes) OnSwitch(f func(Switch)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.onSwitch = f
}

// order is the nodes to try, best first: those not taken as down from the current one on, in
// list order, then those taken as down, the one to be retried soonest first.
func (n *Nodes) order() []*endpoint {
	n.mu.Lock()
	cur := n.cur
	n.mu.Unlock()
	now := time.Now()
	var up, down []*endpoint
	for i := range n.eps {
		ep := n.eps[(cur+i)%len(n.eps)]
		if ep.isDown(now) {
			down = append(down, ep)
		} else {
			up = append(up, ep)
		}
	}
	sort.SliceStable(down, func(i, j int) bool { return down[i].retryAt().Before(down[j].retryAt()) })
	return append(up, down...)
}

// answered records that ep answered and makes it the current node.
func (n *Nodes) answered(ep *endpoint, cause error) {
	ep.mu.Lock()
	ep.downUntil, ep.lastAnswer = time.Time{}, time.Now()
	ep.mu.Unlock()
	n.mu.Lock()
	if n.cur == ep.index {
		n.mu.Unlock()
		return
	}
	sw := Switch{At: time.Now(), From: n.cur, To: ep.index, Cause: cause}
	n.cur = ep.index
	n.nSwitch++
	if len(n.switches) == maxSwitches {
		n.switches = n.switches[1:]
	}
	n.switches = append(n.switches, sw)
	f := n.onSwitch
	n.mu.Unlock()
	if f != nil {
		f(sw)
	}
}

// failed takes ep as down for retryAfter.
func (n *Nodes) failed(ep *endpoint) {
	ep.mu.Lock()
	ep.downUntil = time.Now().Add(retryAfter)
	ep.mu.Unlock()
}

func (ep *endpoint) isDown(now time.Time) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return now.Before(ep.downUntil)
}

func (ep *endpoint) retryAt() time.Time {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	return ep.downUntil
}

// answer marks an error a node answered with (a refusal, "not in a block yet"): the node is up.
type answer struct{ error }

func (a answer) Unwrap() error { return a.error }

// nodeFailed tells whether err says the node did not answer (as opposed to answering with a
// refusal or a "not found"), so that the call may go to another node.
func nodeFailed(err error) bool {
	var a answer
	var rpcErr *rpctypes.RPCError
	var txErr *TxError
	return err != nil && !errors.As(err, &a) && !errors.As(err, &rpcErr) && !errors.As(err, &txErr)
}

// do runs call on the best node that answers it: a node that fails it is taken as down and the
// next one is tried, each at most once. An answer (including a refusal) ends it. When no node
// answers, the error matches ErrUnreachable and wraps the last node's error.
func (n *Nodes) do(ctx context.Context, call func(context.Context, *endpoint) error) error {
	var last error
	for _, ep := range n.order() {
		err := ep.watched(ctx, call)
		if ctx.Err() != nil {
			return err
		}
		if !nodeFailed(err) {
			n.answered(ep, last)
			return err
		}
		n.failed(ep)
		last = fmt.Errorf("node %s: %w", ep.RPC, err)
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, last)
}

// watched runs call on ep, probing ep while the call has no answer: a node that answers
// neither ends the call with ErrUnresponsive.
func (ep *endpoint) watched(ctx context.Context, call func(context.Context, *endpoint) error) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	started := time.Now()
	go func() { done <- call(cctx, ep) }()
	timer := time.NewTimer(probeAfter)
	defer timer.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-timer.C:
			if err := ep.alive(started); err != nil {
				cancel()
				<-done // its requests carry cctx, so it returns at once
				return fmt.Errorf("%w (probe: %w)", ErrUnresponsive, err)
			}
			timer.Reset(probeEvery)
		}
	}
}

// alive probes ep unless it answered something since the call started, within probeEvery;
// concurrent callers share one probe.
func (ep *endpoint) alive(since time.Time) error {
	ep.mu.Lock()
	if ep.lastAnswer.After(since) && time.Since(ep.lastAnswer) < probeEvery {
		ep.mu.Unlock()
		return nil
	}
	p := ep.probing
	if p == nil {
		p = &probeRun{done: make(chan struct{})}
		ep.probing = p
		go func() {
			p.err = ep.runProbe()
			ep.mu.Lock()
			ep.probing = nil
			if p.err == nil {
				ep.lastAnswer = time.Now()
			}
			ep.mu.Unlock()
			close(p.done)
		}()
	}
	ep.mu.Unlock()
	<-p.done
	return p.err
}

// runProbe asks ep something any live node answers at once; any HTTP answer will do.
func (ep *endpoint) runProbe() error {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.probe, nil)
	if err != nil {
		return err
	}
	resp, err := ep.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// heightOf is ep's latest block height, asked at most twice a second.
func (ep *endpoint) heightOf() (int64, error) {
	ep.mu.Lock()
	if time.Since(ep.heightAt) < 500*time.Millisecond {
		h := ep.height
		ep.mu.Unlock()
		return h, nil
	}
	ep.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), probeAfter+probeTimeout)
	defer cancel()
	st, err := ep.rpc.Status(ctx)
	if err != nil {
		return 0, err
	}
	ep.mu.Lock()
	ep.height, ep.heightAt = st.SyncInfo.LatestBlockHeight, time.Now()
	ep.mu.Unlock()
	return st.SyncInfo.LatestBlockHeight, nil
}

// behind tells whether another node that answers is lagBlocks or more ahead of ep.
func (n *Nodes) behind(ep *endpoint) bool {
	h, err := ep.heightOf()
	if err != nil {
		return false // a node that does not answer shows in the next call
	}
	for _, other := range n.order() {
		if other == ep {
			continue
		}
		if oh, err := other.heightOf(); err == nil {
			return oh >= h+lagBlocks
		}
	}
	return false
}

// sent is a transaction a node took: its bytes are kept so that another node can be given the
// very same transaction (same hash) if that node stops answering before it is committed.
type sent struct {
	hash string
	tx   []byte
	at   *endpoint
}

// broadcast hands tx to the first node that answers. A node that already holds it (in its
// mempool cache: a node that stopped answering had taken it and passed it on) counts as
// having taken it.
func (n *Nodes) broadcast(tx []byte) (*sdk.TxResponse, *endpoint, error) {
	var res *sdk.TxResponse
	var at *endpoint
	err := n.do(context.Background(), func(ctx context.Context, ep *endpoint) error {
		r, err := ep.submit(ctx, tx)
		if err == nil {
			res, at = r, ep
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if inMempoolCache(res) {
		res.Code, res.Codespace, res.RawLog = 0, "", ""
	}
	return res, at, nil
}

func inMempoolCache(res *sdk.TxResponse) bool {
	return res.Code != 0 && errors.Is(errorsmod.ABCIError(res.Codespace, res.Code, ""), sdkerrors.ErrTxInMempoolCache)
}

// submit hands tx to ep's ingress, or to its RPC's broadcast_tx_sync without one, and returns
// the CheckTx answer (mempool refusals as codes, as client.Context.BroadcastTxSync does).
func (ep *endpoint) submit(ctx context.Context, tx []byte) (*sdk.TxResponse, error) {
	if ep.API == "" {
		res, err := ep.rpc.BroadcastTxSync(ctx, tx)
		if errRes := client.CheckCometError(err, tx); errRes != nil {
			return errRes, nil
		}
		if err != nil {
			return nil, err
		}
		return sdk.NewResponseFormatBroadcastTx(res), nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.API+rawTxPath, bytes.NewReader(tx))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := ep.http.Do(req)
	if err != nil {
		return nil, err
	}
	return nodeAnswer(resp)
}

// nodeAnswer is ingressAnswer, with the node's own failures (5xx) told apart from its answers.
func nodeAnswer(resp *http.Response) (*sdk.TxResponse, error) {
	res, err := ingressAnswer(resp)
	if err != nil && resp.StatusCode < 500 {
		return nil, answer{err}
	}
	return res, err
}

// result is the committed result of hash on ep, waiting up to wait for it to be committed;
// errNotInBlock (as an answer) when it is not.
func (ep *endpoint) result(ctx context.Context, hash string, wait time.Duration) (*sdk.TxResponse, error) {
	if ep.API != "" {
		u := fmt.Sprintf("%s%s?hash=%s&wait=%s", ep.API, rawTxResultPath, hash, wait)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		resp, err := ep.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusNotFound {
			resp.Body.Close()
			return nil, answer{errNotInBlock}
		}
		return nodeAnswer(resp)
	}
	bz, err := hex.DecodeString(hash)
	if err != nil {
		return nil, answer{err}
	}
	deadline := time.Now().Add(wait)
	for {
		res, err := ep.rpc.Tx(ctx, bz, false)
		if err == nil {
			return &sdk.TxResponse{TxHash: strings.ToUpper(hash), Height: res.Height, Code: res.TxResult.Code,
				Codespace: res.TxResult.Codespace, RawLog: res.TxResult.Log, Data: strings.ToUpper(hex.EncodeToString(res.TxResult.Data)),
				GasWanted: res.TxResult.GasWanted, GasUsed: res.TxResult.GasUsed}, nil
		}
		if nodeFailed(err) {
			return nil, err
		}
		// CometBFT answers "not found" for a transaction it has not indexed (yet).
		if !time.Now().Add(100 * time.Millisecond).Before(deadline) {
			return nil, answer{errNotInBlock}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// await waits until the transaction s is committed and returns its result (a *TxError of
// stage Delivered if it failed in its block). It waits on the node that took it; when that
// node stops answering, or falls lagBlocks behind another, the next node that answers is asked
// for the transaction by hash and, if it does not know it, given the same bytes: the same
// hash, so the chain executes it at most once however many nodes hold it. A node that lost it
// (restarted: a mempool is not kept on disk) while the chain went on resendAfterBlocks is
// handed it again the same way.
func (n *Nodes) await(s sent) (*sdk.TxResponse, error) {
	deadline := time.Now().Add(commitTimeout)
	at, since, handOver := s.at, time.Now(), false
	var last error
	var startHeight int64
	for time.Now().Before(deadline) {
		if handOver {
			next, res, err := n.takeOver(s, last)
			switch {
			case res != nil || (err != nil && !errors.Is(err, ErrUnreachable)):
				return res, err
			case err != nil: // no node answers (all restarting): the transaction may still commit
				last = err
				time.Sleep(probeEvery)
				continue
			}
			at, since, handOver, startHeight = next, time.Now(), false, 0
		}
		var res *sdk.TxResponse
		err := at.watched(context.Background(), func(ctx context.Context, ep *endpoint) error {
			var err error
			res, err = ep.result(ctx, s.hash, resultWait)
			return err
		})
		if err == nil {
			n.answered(at, last)
			return committed(s.hash, res)
		}
		if !nodeFailed(err) {
			if !errors.Is(err, errNotInBlock) {
				return nil, err
			}
			if time.Since(since) < stallAfter {
				continue
			}
			if !n.behind(at) {
				h, herr := at.heightOf()
				if startHeight == 0 || herr != nil {
					startHeight = h
				}
				handOver = herr == nil && h >= startHeight+resendAfterBlocks
				continue
			}
			err = errBehind
		}
		last = fmt.Errorf("node %s: %w", at.RPC, err)
		n.failed(at)
		handOver = true
	}
	if last == nil {
		last = errNotInBlock
	}
	return nil, fmt.Errorf("transaction %s %w after %s: %w", s.hash, ErrNotCommitted, commitTimeout, last)
}

// committed is a found result: a *TxError (stage Delivered) if the transaction failed in its
// block.
func committed(hash string, res *sdk.TxResponse) (*sdk.TxResponse, error) {
	if res.Code != 0 {
		return res, NewTxError(Delivered, hash, res.Height, res.Codespace, res.Code, res.RawLog)
	}
	return res, nil
}

// takeOver finds a node for the transaction s, best first (one just taken as down comes last):
// the first that answers is asked for its result (it may be committed already) and, when it
// has none, given the same bytes. It returns that node to wait on, or the result, or the
// refusal of the bytes.
func (n *Nodes) takeOver(s sent, cause error) (*endpoint, *sdk.TxResponse, error) {
	var last error
	for _, ep := range n.order() {
		var res, check *sdk.TxResponse
		err := ep.watched(context.Background(), func(ctx context.Context, ep *endpoint) error {
			var err error
			if res, err = ep.result(ctx, s.hash, 0); !errors.Is(err, errNotInBlock) {
				return err
			}
			res = nil
			check, err = ep.submit(ctx, s.tx)
			return err
		})
		if nodeFailed(err) {
			n.failed(ep)
			last = fmt.Errorf("node %s: %w", ep.RPC, err)
			continue
		}
		n.answered(ep, cause)
		switch {
		case err != nil:
			return nil, nil, err
		case res != nil:
			r, err := committed(s.hash, res)
			return nil, r, err
		case check.Code == 0 || inMempoolCache(check):
			return ep, nil, nil
		}
		// Refused now: perhaps because it was committed between the two questions.
		ctx, cancel := context.WithTimeout(context.Background(), probeAfter+probeTimeout)
		res, err = ep.result(ctx, s.hash, 0)
		cancel()
		if err == nil {
			r, err := committed(s.hash, res)
			return nil, r, err
		}
		return nil, nil, NewTxError(Checked, s.hash, 0, check.Codespace, check.Code, check.RawLog)
	}
	return nil, nil, fmt.Errorf("%w: %w", ErrUnreachable, last)
}
