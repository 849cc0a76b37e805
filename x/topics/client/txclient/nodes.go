package txclient

import (
	"context"
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

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app/ordering"
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
	t     Transport // the node's ingress, else its RPC
	probe string    // a URL any live node answers at once (the API's ingress, else RPC /health)
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
		var t Transport = newIngress(nd.API, ingressClient)
		probe := nd.API + ordering.RawTxPath
		if nd.API == "" {
			t = NewRPC(client.Context{}.WithClient(rpc))
			u, err := url.Parse(nd.RPC)
			if err != nil {
				return nil, fmt.Errorf("node %s: %w", nd.RPC, err)
			}
			if u.Scheme == "tcp" {
				u.Scheme = "http"
			}
			probe = u.String() + "/health"
		}
		n.eps = append(n.eps, &endpoint{Node: nd, index: i, rpc: rpc, t: t, probe: probe, http: ingressClient})
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
	return err != nil && !errors.As(err, &a) && !errors.As(err, &rpcErr) && !errors.As(err, &txErr) && !errors.Is(err, ErrNotInBlock)
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
