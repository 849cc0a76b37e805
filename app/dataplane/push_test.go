package dataplane

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cmtcrypto "github.com/cometbft/cometbft/crypto"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	cmttypes "github.com/cometbft/cometbft/types"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/client"
)

func validatorKeyOf(secret string) cmtcrypto.PrivKey {
	return cmted25519.GenPrivKeyFromSecret([]byte(secret))
}

func addrHex(k cmtcrypto.PrivKey) string { return fmt.Sprintf("%X", k.PubKey().Address()) }

// M2: a push request was packed to 8 MiB of payload plus 4 bytes per frame, over the limit,
// so a full request was refused and its batch dropped. Now a request's body, frame headers
// included, is at most maxPushRequestBytes (or one larger transaction alone), and the endpoint
// reads any body take makes.
func TestPushRequestsFitTheLimit(t *testing.T) {
	q := &pushQueue{wake: make(chan struct{}, 1)}
	half := maxPushRequestBytes / 2
	for range 4 {
		q.add(pushed{tx: make([]byte, half-2)}) // two of them plus their headers: 4 bytes over
	}
	q.add(pushed{tx: make([]byte, maxPushRequestBytes)}) // alone: over the limit with its header
	var bodies []int
	for {
		txs, _ := q.take()
		if len(txs) == 0 {
			break
		}
		var body bytes.Buffer
		for _, tx := range txs {
			body.Write(binary.BigEndian.AppendUint32(nil, uint32(len(tx.tx))))
			body.Write(tx.tx)
		}
		bodies = append(bodies, body.Len())
		if len(txs) > 1 {
			require.LessOrEqual(t, body.Len(), maxPushRequestBytes)
		}
		got, err := readFrames(bytes.NewReader(body.Bytes()))
		require.NoError(t, err)
		require.Len(t, got, len(txs))
	}
	require.Equal(t, []int{half + 2, half + 2, half + 2, half + 2, maxPushRequestBytes + 4}, bodies)
	t.Logf("request bodies: %v (limit %d, one larger transaction alone)", bodies, maxPushRequestBytes)
}

// L2: the quorum counted configured URLs; it counts voting power: with powers 3, 1, 1 (this
// node has 1), answers from the two small validators (3 of 5) are not enough, the big one's is.
func TestQuorumCountsVotingPower(t *testing.T) {
	p, err := newPool("", []string{"http://a", "http://b"}, 10, 0, nil)
	require.NoError(t, err)
	self, big, small := validatorKeyOf("self"), validatorKeyOf("big"), validatorKeyOf("small")
	p.keys.UseKey(self)
	p.keys.vals = map[string]Validator{
		p.keys.selfAddr: {PubKey: self.PubKey(), Power: 1},
		addrHex(big):    {PubKey: big.PubKey(), Power: 3},
		addrHex(small):  {PubKey: small.PubKey(), Power: 1},
	}
	p.keys.total = 5
	bz := bytes.Repeat([]byte{1}, MinRefBytes)
	hash, ok := p.admit(bz, 1, "", nil, true)
	require.True(t, ok)
	require.False(t, p.acked(hash, addrHex(small), 1, nil), "1 + 1 of 5")
	require.False(t, p.acked(hash, addrHex(small), 1, nil), "the same validator twice counts once")
	require.False(t, p.acked(hash, p.keys.selfAddr, 1, nil), "this node's own answer counts once")
	require.True(t, p.acked(hash, addrHex(big), 3, nil), "1 + 1 + 3 of 5")
	_, _, named := p.ForProposal(bz, 2)
	require.True(t, named)
}

// M4: a client that asks for a large transaction and never reads its answer pinned the
// buffer and the connection for ever. The answer now has a write deadline: the handler
// returns within it and the connection is closed.
func TestPoolAnswerHasAWriteDeadline(t *testing.T) {
	defer func(d time.Duration) { serveWriteTimeout = d }(serveWriteTimeout)
	serveWriteTimeout = 300 * time.Millisecond
	p, err := newPool("", nil, 10, 0, nil)
	require.NoError(t, err)
	bz := bytes.Repeat([]byte{7}, 32<<20)
	hash, ok := p.admit(bz, 1, "", nil, true)
	require.True(t, ok)
	done := make(chan time.Duration, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		p.serve(w, r)
		done <- time.Since(start)
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "GET %s%X HTTP/1.1\r\nHost: x\r\n\r\n", PoolPath, hash)
	require.NoError(t, err)
	select {
	case took := <-done:
		t.Logf("a 32 MiB answer to a reader that never reads: the handler returned after %v (deadline %v)", took, serveWriteTimeout)
		require.Less(t, took, 5*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the handler is still writing to a reader that never reads")
	}
}

// recordingNode stands for a node's CometBFT client: it records what reaches broadcast_tx and
// admits it.
type recordingNode struct {
	client.CometRPC

	mu  sync.Mutex
	got [][]byte
}

func (n *recordingNode) BroadcastTxSync(_ context.Context, tx cmttypes.Tx) (*coretypes.ResultBroadcastTx, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, tx)
	return &coretypes.ResultBroadcastTx{Hash: tx.Hash()}, nil
}

func (n *recordingNode) received() [][]byte {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.got)
}

// noStubs is a host whose mempool holds transactions themselves.
type noStubs struct{}

func (noStubs) StageTx(bz []byte, _ [32]byte, _ string) ([]byte, bool, bool, bool) {
	return bz, false, false, false
}
func (noStubs) ParseStub([]byte) ([32]byte, bool) { return [32]byte{}, false }

// M3: tiny frames, too many frames, and a torn body are refused whole before any CheckTx.
func TestAttackDataPlaneTinyAndManyFrames(t *testing.T) {
	plane, err := New(Config{}, noStubs{}, nil, log.NewNopLogger())
	require.NoError(t, err)
	node := &recordingNode{}
	srv := httptest.NewServer(plane.PushHandler(client.Context{}.WithClient(node)))
	defer srv.Close()
	var tiny bytes.Buffer
	for range 100_000 {
		tiny.Write(binary.BigEndian.AppendUint32(nil, 1))
		tiny.WriteByte(7)
	}
	var many bytes.Buffer
	for range 8193 {
		frame := make([]byte, 64)
		_, _ = rand.Read(frame)
		many.Write(binary.BigEndian.AppendUint32(nil, uint32(len(frame))))
		many.Write(frame)
	}
	for name, body := range map[string][]byte{
		"100,000 one-byte frames": tiny.Bytes(),
		"8,193 frames":            many.Bytes(),
	} {
		start := time.Now()
		res, err := http.Post(srv.URL+PushPath, "application/octet-stream", bytes.NewReader(body))
		require.NoError(t, err)
		answer, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusBadRequest, res.StatusCode, name)
		require.Empty(t, node.received(), name)
		t.Logf("%s (%d bytes): %d %s in %v, no CheckTx", name, len(body), res.StatusCode, strings.TrimSpace(string(answer)), time.Since(start))
	}
}
