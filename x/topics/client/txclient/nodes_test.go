package txclient_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bftlog/bftlog/app/ordering"

	"github.com/stretchr/testify/require"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
)

// fakeChain is what the fake nodes agree on: the committed transactions and the height.
type fakeChain struct {
	mu        sync.Mutex
	committed map[string]int // hash -> times committed (more than once would be a duplicate)
	height    int64
}

// fakeNode is a node's API server (ingress, result endpoint) and CometBFT RPC (status, health)
// on one HTTP server. A frozen node takes connections and never answers, as a process stopped
// with SIGSTOP; a node that does not commit keeps what it takes to itself, as one cut off from
// its peers.
type fakeNode struct {
	chain *fakeChain
	srv   *httptest.Server
	mu    sync.Mutex
	// log is every request, in order: "lookup <hash>", "submit <hash>".
	log    []string
	frozen chan struct{} // closed: answering again
	freeze bool
	// freezeAfterSubmit freezes the node once it has answered a submission.
	freezeAfterSubmit bool
	// commits: a transaction it takes is committed on the chain 50 ms later.
	commits bool
	height  int64 // answered by status when set, else the chain's
	has     map[string]bool
}

func newFakeNode(t *testing.T, chain *fakeChain) *fakeNode {
	n := &fakeNode{chain: chain, commits: true, frozen: make(chan struct{}), has: map[string]bool{}}
	n.srv = httptest.NewServer(http.HandlerFunc(n.serve))
	t.Cleanup(func() {
		n.mu.Lock()
		if n.freeze {
			close(n.frozen)
			n.freeze = false
		}
		n.mu.Unlock()
		n.srv.CloseClientConnections()
		n.srv.Close()
	})
	return n
}

func (n *fakeNode) node() txclient.Node { return txclient.Node{RPC: n.srv.URL, API: n.srv.URL} }

func (n *fakeNode) requests() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.log...)
}

func (n *fakeNode) serve(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	frozen, wait := n.freeze, n.frozen
	n.mu.Unlock()
	if frozen {
		select {
		case <-wait:
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case r.URL.Path == ordering.RawTxPath && r.Method == http.MethodPost:
		bz, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(bz)
		hash := strings.ToUpper(hex.EncodeToString(sum[:]))
		n.mu.Lock()
		n.log = append(n.log, "submit "+hash)
		code, codespace := uint32(0), ""
		if n.has[hash] {
			code, codespace = sdkerrors.ErrTxInMempoolCache.ABCICode(), sdkerrors.ErrTxInMempoolCache.Codespace()
		}
		n.has[hash] = true
		if n.commits && code == 0 {
			time.AfterFunc(50*time.Millisecond, func() { n.chain.commit(hash) })
		}
		if n.freezeAfterSubmit {
			n.freeze = true
		}
		n.mu.Unlock()
		_ = json.NewEncoder(w).Encode(ordering.RawTxResponse{TxHash: hash, Code: code, Codespace: codespace})
	case r.URL.Path == ordering.RawTxPath:
		http.Error(w, "POST the signed transaction bytes", http.StatusMethodNotAllowed)
	case r.URL.Path == ordering.RawTxResultPath:
		hash := strings.ToUpper(r.URL.Query().Get(ordering.ResultHashParam))
		wait, _ := time.ParseDuration(r.URL.Query().Get(ordering.ResultWaitParam))
		n.mu.Lock()
		n.log = append(n.log, "lookup "+hash)
		n.mu.Unlock()
		deadline := time.Now().Add(wait)
		for {
			if h, ok := n.chain.get(hash); ok {
				_ = json.NewEncoder(w).Encode(ordering.RawTxResult{TxHash: hash, Height: h})
				return
			}
			if time.Now().After(deadline) {
				http.Error(w, "not in a block yet", ordering.StatusNotInBlock)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	case r.URL.Path == "/health":
		_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":-1,"result":{}}`))
	default: // JSON-RPC: status is the one method asked
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		n.mu.Lock()
		h := n.height
		n.mu.Unlock()
		if h == 0 {
			n.chain.mu.Lock()
			h = n.chain.height
			n.chain.mu.Unlock()
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"sync_info":{"latest_block_height":"%d"}}}`, req.ID, h)
	}
}

func (c *fakeChain) commit(hash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.height++
	c.committed[hash]++
}

func (c *fakeChain) get(hash string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.committed[hash]
	return c.height, ok
}

// pausedListener takes TCP connections (the kernel completes them) and never answers: a
// process stopped with SIGSTOP.
func pausedListener(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return "http://" + ln.Addr().String()
}

// refusingAddr is a port nothing listens on: a killed process.
func refusingAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func nodesSigner(t *testing.T, list ...txclient.Node) (*fixture, *txclient.Nodes) {
	f := newFixture(t)
	nodes, err := txclient.NewNodes(list)
	require.NoError(t, err)
	f.signer.SetFixedGas()
	f.signer.UseNodes(nodes)
	return f, nodes
}

// A killed node (connection refused) and a paused one (takes the connection, never answers)
// are skipped: the transaction goes to the third node, within a second, and is committed once.
func TestNodesSkipKilledAndPausedNodes(t *testing.T) {
	chain := &fakeChain{committed: map[string]int{}}
	good := newFakeNode(t, chain)
	killed, paused := refusingAddr(t), pausedListener(t)
	f, nodes := nodesSigner(t, txclient.Node{RPC: killed, API: killed}, txclient.Node{RPC: paused, API: paused}, good.node())
	start := time.Now()
	res, err := f.signer.SubmitAndWait(f.msg)
	took := time.Since(start)
	require.NoError(t, err)
	t.Logf("committed through node 2 after skipping a killed and a paused node in %s", took.Round(time.Millisecond))
	require.Equal(t, 1, chain.committed[res.TxHash])
	require.Equal(t, []string{"submit " + res.TxHash, "lookup " + res.TxHash}, good.requests())
	require.Equal(t, 2, nodes.Current())
	sw, count := nodes.Switches()
	require.Equal(t, 1, count)
	require.Equal(t, 0, sw[0].From)
	require.Equal(t, 2, sw[0].To)
	require.ErrorIs(t, sw[0].Cause, txclient.ErrUnresponsive, "the paused node's probe went unanswered")

	// The next transaction goes straight to node 2: the others are skipped until retried.
	start = time.Now()
	_, err = f.signer.SubmitAndWait(f.msg)
	require.NoError(t, err)
	t.Logf("the next transaction, straight to node 2: %s", time.Since(start).Round(time.Millisecond))
	_, count = nodes.Switches()
	require.Equal(t, 1, count)
}

// A node that took a transaction and then stopped answering (paused before passing it on): the
// next node is asked for the transaction by hash first, and only then handed the very same
// bytes; the chain commits it once.
func TestNodesLookUpBeforeSendingAgain(t *testing.T) {
	chain := &fakeChain{committed: map[string]int{}}
	a, b := newFakeNode(t, chain), newFakeNode(t, chain)
	a.commits, a.freezeAfterSubmit = false, true
	f, nodes := nodesSigner(t, a.node(), b.node())
	start := time.Now()
	res, err := f.signer.SubmitAndWait(f.msg)
	require.NoError(t, err)
	t.Logf("node 0 took the transaction and froze; committed through node 1 %s after the submission", time.Since(start).Round(time.Millisecond))
	require.Equal(t, []string{"submit " + res.TxHash}, a.requests())
	require.Equal(t, []string{"lookup " + res.TxHash, "submit " + res.TxHash, "lookup " + res.TxHash}, b.requests(),
		"looked up, then the same bytes (same hash) sent, then waited for")
	require.Equal(t, 1, chain.committed[res.TxHash])
	require.Equal(t, 1, nodes.Current())
}

// The transaction reached the chain through the node that then stopped answering: the next
// node finds it by hash and is not sent it again.
func TestNodesFindACommittedTransaction(t *testing.T) {
	chain := &fakeChain{committed: map[string]int{}}
	a, b := newFakeNode(t, chain), newFakeNode(t, chain)
	a.freezeAfterSubmit = true // it commits (passed it on), then answers nothing
	f, _ := nodesSigner(t, a.node(), b.node())
	res, err := f.signer.SubmitAndWait(f.msg)
	require.NoError(t, err)
	require.Equal(t, []string{"lookup " + res.TxHash}, b.requests(), "found by hash, not sent again")
	require.Equal(t, 1, chain.committed[res.TxHash])
}

// A node that answers but is cut off from its peers (its height stands still while another's
// grows) keeps a transaction to itself: after a second the client compares heights, leaves it
// and hands the transaction to a node that is up to date.
func TestNodesLeaveANodeThatFellBehind(t *testing.T) {
	chain := &fakeChain{committed: map[string]int{}, height: 40}
	a, b := newFakeNode(t, chain), newFakeNode(t, chain)
	a.commits, a.height = false, 10
	f, nodes := nodesSigner(t, a.node(), b.node())
	start := time.Now()
	res, err := f.signer.SubmitAndWait(f.msg)
	require.NoError(t, err)
	t.Logf("left the node 30 blocks behind and committed elsewhere in %s", time.Since(start).Round(time.Millisecond))
	require.Equal(t, 1, chain.committed[res.TxHash])
	sw, _ := nodes.Switches()
	require.Len(t, sw, 1)
	require.Equal(t, 1, sw[0].To)
	require.Contains(t, b.requests(), "submit "+res.TxHash)
}

// A node restarted between two polls answers again but has lost the transaction from its
// mempool: once the chain has gone 5 blocks on without it, it is looked up and handed over
// again, the same bytes, and committed once.
func TestNodesHandALostTransactionOverAgain(t *testing.T) {
	chain := &fakeChain{committed: map[string]int{}, height: 10}
	a := newFakeNode(t, chain)
	a.commits = false // it keeps what it takes, until it "restarts" empty
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				chain.mu.Lock()
				chain.height++
				chain.mu.Unlock()
			}
		}
	}()
	time.AfterFunc(300*time.Millisecond, func() {
		a.mu.Lock()
		a.has, a.commits = map[string]bool{}, true
		a.mu.Unlock()
	})
	f, _ := nodesSigner(t, a.node())
	start := time.Now()
	res, err := f.signer.SubmitAndWait(f.msg)
	require.NoError(t, err)
	t.Logf("handed over again and committed %s after the submission", time.Since(start).Round(time.Millisecond))
	reqs := a.requests()
	require.Equal(t, "submit "+res.TxHash, reqs[0])
	require.Equal(t, []string{"lookup " + res.TxHash, "submit " + res.TxHash, "lookup " + res.TxHash}, reqs[len(reqs)-3:])
	require.Equal(t, 1, chain.committed[res.TxHash])
}

// With every node down, a submission fails with ErrUnreachable (its outcome unknown), at once
// for refused connections.
func TestNodesAllDown(t *testing.T) {
	a, b := refusingAddr(t), refusingAddr(t)
	f, _ := nodesSigner(t, txclient.Node{RPC: a, API: a}, txclient.Node{RPC: b, API: b})
	_, err := f.signer.SubmitAndWait(f.msg)
	require.ErrorIs(t, err, txclient.ErrUnreachable)
	var txErr *txclient.TxError
	require.False(t, errors.As(err, &txErr))
}

func TestParseNodes(t *testing.T) {
	got, err := txclient.ParseNodes("tcp://a:26657, tcp://b:26657/", "http://a:1317,http://b:1317")
	require.NoError(t, err)
	require.Equal(t, []txclient.Node{{RPC: "tcp://a:26657", API: "http://a:1317"}, {RPC: "tcp://b:26657", API: "http://b:1317"}}, got)
	got, err = txclient.ParseNodes("tcp://a:26657", "")
	require.NoError(t, err)
	require.Equal(t, []txclient.Node{{RPC: "tcp://a:26657"}}, got)
	_, err = txclient.ParseNodes("tcp://a:26657,tcp://b:26657", "http://a:1317")
	require.Error(t, err, "one ingress per node")
	_, err = txclient.ParseNodes(" , ", "")
	require.Error(t, err)
}
