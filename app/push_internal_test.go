package app

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	cmtcrypto "github.com/cometbft/cometbft/crypto"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/stretchr/testify/require"
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
	p, err := newTxPool("", []string{"http://a", "http://b"}, 10, 0, nil)
	require.NoError(t, err)
	self, big, small := validatorKeyOf("self"), validatorKeyOf("big"), validatorKeyOf("small")
	p.keys.useKey(self)
	p.keys.vals = map[string]dataPlaneValidator{
		p.keys.selfAddr: {pub: self.PubKey(), power: 1},
		addrHex(big):    {pub: big.PubKey(), power: 3},
		addrHex(small):  {pub: small.PubKey(), power: 1},
	}
	p.keys.total = 5
	bz := bytes.Repeat([]byte{1}, minRefBytes)
	hash, ok := p.admit(bz, 1, "", nil, true)
	require.True(t, ok)
	require.False(t, p.acked(hash, addrHex(small), 1, nil), "1 + 1 of 5")
	require.False(t, p.acked(hash, addrHex(small), 1, nil), "the same validator twice counts once")
	require.False(t, p.acked(hash, p.keys.selfAddr, 1, nil), "this node's own answer counts once")
	require.True(t, p.acked(hash, addrHex(big), 3, nil), "1 + 1 + 3 of 5")
	_, _, named := p.forProposal(bz, 2)
	require.True(t, named)
}

// M4: a client that asks for a large transaction and never reads its answer pinned the
// buffer and the connection for ever. The answer now has a write deadline: the handler
// returns within it and the connection is closed.
func TestPoolAnswerHasAWriteDeadline(t *testing.T) {
	defer func(d time.Duration) { serveWriteTimeout = d }(serveWriteTimeout)
	serveWriteTimeout = 300 * time.Millisecond
	p, err := newTxPool("", nil, 10, 0, nil)
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
