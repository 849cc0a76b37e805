package app_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtcrypto "github.com/cometbft/cometbft/crypto"
	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	cmttypes "github.com/cometbft/cometbft/types"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app"
)

// pushAs posts frames of txs to a node's PushPath, signed with sign (nil: unsigned), and
// returns the status and the answer.
func pushAs(t *testing.T, url string, sign func(http.Header), body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+app.PushPath, bytes.NewReader(body))
	require.NoError(t, err)
	if sign != nil {
		sign(req.Header)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(out)
}

func junkFrames(n, size int) ([][]byte, []byte) {
	var txs [][]byte
	for range n {
		tx := make([]byte, size)
		_, _ = rand.Read(tx)
		txs = append(txs, tx)
	}
	return txs, frames(txs...)
}

// H1: peers used to be recognised by source address, so any process at a validator's address
// (every local process on its host, a sentry, a NAT) had its junk held for 100 heights against
// the clients' budget, and producers were told "mempool is full". Now a push is a validator's
// only when signed by a key in the chain's validator set: junk from the peer's very address,
// unsigned, signed by a key the chain does not know, or with a forged signature, is held
// nowhere; a real validator pushing junk has it held only within its own budget and dropped
// once CheckTx refuses it. A producer through the ingress is admitted throughout.
func TestAttackDataPlaneJunkFromAPeersAddress(t *testing.T) {
	c := newValidatorChain(t, "receiver", []string{"http://127.0.0.1:1"}, "receiver", "byzantine", "honest")
	c.app.LimitClientPool(64 << 10) // the clients' budget scaled down, as in the report
	mempool := &mempoolOf{app: c.app, seen: map[string]bool{}}
	srv := httptest.NewServer(c.app.PushHandler(mempool))
	defer srv.Close()
	ingress := httptest.NewServer(c.app.IngressHandler(mempool))
	defer ingress.Close()
	txs := orderingLoad(t, c)

	junk, body := junkFrames(40, 2048)
	stranger, byzantine := validatorKey("not a validator"), validatorKey("byzantine")
	for name, sign := range map[string]func(http.Header){
		"unsigned, from the peer's address": nil,
		"signed by a key the chain lacks":   func(h http.Header) { c.app.SignPush(stranger, h, junk...) },
		"a validator's name, forged": func(h http.Header) {
			c.app.SignPush(stranger, h, junk...)
			h.Set(app.HeaderValidator, addrOf(byzantine))
		},
		"a validator's, for other frames": func(h http.Header) { c.app.SignPush(byzantine, h, junk[1:]...) },
	} {
		start := time.Now()
		status, answer := pushAs(t, srv.URL, sign, body)
		for _, tx := range junk {
			_, held := c.app.PoolHolds(tx)
			require.False(t, held, name)
		}
		t.Logf("%s: %d × 2 KiB answered %d %q in %v, none held", name, len(junk), status, strings.TrimSpace(answer)[:min(40, len(strings.TrimSpace(answer)))], time.Since(start))
	}
	out := postRaw(t, ingress.URL, txs[0])
	require.Zero(t, out.Code, "a producer through the ingress is admitted: %s", out.RawLog)

	// A Byzantine validator's own junk: held at once (it is a validator), answered '1', then
	// dropped when CheckTx refuses it, each refusal counted against it, not the clients.
	before := app.DataPlaneRefused(addrOf(byzantine), "refused by CheckTx")
	status, answer := pushAs(t, srv.URL, func(h http.Header) { c.app.SignPush(byzantine, h, junk...) }, body)
	require.Equal(t, http.StatusOK, status, answer)
	require.Equal(t, strings.Repeat("1", len(junk)), answer)
	require.Eventually(t, func() bool {
		return app.DataPlaneRefused(addrOf(byzantine), "refused by CheckTx")-before == float64(len(junk))
	}, 5*time.Second, time.Millisecond, "every junk frame refused by CheckTx and counted against its sender")
	for _, tx := range junk {
		_, held := c.app.PoolHolds(tx)
		require.False(t, held, "refused junk is dropped, not kept for 100 heights")
	}
	out = postRaw(t, ingress.URL, txs[1])
	require.Zero(t, out.Code, "the clients' budget is untouched by a validator's junk: %s", out.RawLog)
	t.Logf("a validator's %d junk frames: held, refused by CheckTx and dropped, %v counted against it", len(junk), app.DataPlaneRefused(addrOf(byzantine), "refused by CheckTx")-before)
}

// A validator's pushes count against its own budget (maxPeerStagedBytes of pushes CheckTx has
// not judged): past it, its frames are answered '0' and not held, while another validator's
// push is held. Here the node's mempool never runs CheckTx, so what is pushed stays staged.
func TestAttackDataPlanePushBudgetPerValidator(t *testing.T) {
	c := newValidatorChain(t, "receiver", []string{"http://127.0.0.1:1"}, "receiver", "byzantine", "honest")
	stalled := stalledMempool{done: make(chan struct{})}
	srv := httptest.NewServer(c.app.PushHandler(stalled))
	defer srv.Close()
	defer close(stalled.done)
	byzantine, honest := validatorKey("byzantine"), validatorKey("honest")
	start := time.Now()
	heldBytes := fillBudget(t, c, srv.URL, byzantine)
	require.LessOrEqual(t, heldBytes, 64<<20, "held within the sender's budget")
	require.Greater(t, heldBytes, 32<<20)
	mine, body := junkFrames(4, 16<<10)
	_, answer := pushAs(t, srv.URL, func(h http.Header) { c.app.SignPush(honest, h, mine...) }, body)
	require.Equal(t, "1111", answer, "another validator's push is held")
	t.Logf("a validator's pushes held up to %d MiB, then refused (%v); another's still held", heldBytes>>20, time.Since(start))
}

// fillBudget pushes 1 MiB requests of junk signed by key to url until a frame is refused, and
// returns the bytes held.
func fillBudget(t *testing.T, c *feeChain, url string, key cmtcrypto.PrivKey) (held int) {
	t.Helper()
	for round := 0; round < 80; round++ {
		junk, body := junkFrames(64, 16<<10)
		_, answer := pushAs(t, url, func(h http.Header) { c.app.SignPush(key, h, junk...) }, body)
		held += strings.Count(answer, "1") * 16 << 10
		if strings.Contains(answer, "0") {
			break
		}
	}
	return held
}

// stalledMempool never answers until the test ends, as a node's broadcast_tx waits while the
// node executes a long block: what is pushed stays staged and queued.
type stalledMempool struct {
	client.CometRPC
	done chan struct{}
}

func (m stalledMempool) BroadcastTxSync(context.Context, cmttypes.Tx) (*coretypes.ResultBroadcastTx, error) {
	<-m.done
	return nil, context.Canceled
}

// M1 and L1: transactions were identified by their length and last 64 bytes (the signature).
// A look-alike J — the victim V with one byte flipped, same tail — named by a Byzantine
// proposer ran and failed, and V was then refused as "already ordered" (bftlog code 2) for 100
// heights; a look-alike in the pool also displaced V from the index the proposer finds it by.
// Now identity is the full hash: V is admitted after J's block and named by the proposer.
func TestAttackLookAlikeOfANamedTransaction(t *testing.T) {
	var lookAlike []byte
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(lookAlike) // a peer serving the look-alike a proposal names
	}))
	defer peer.Close()
	c := newValidatorChain(t, "v", []string{peer.URL}, "v")
	txs := orderingLoad(t, c)
	victim := txs[0]
	lookAlike = bytes.Clone(victim)
	lookAlike[len(lookAlike)/2] ^= 1 // a record byte: the same signatures, the same last 64 bytes
	require.Equal(t, victim[len(victim)-64:], lookAlike[len(lookAlike)-64:])

	alice := c.addr(0).String()
	j := app.TxRef(sha256.Sum256(lookAlike), len(lookAlike), alice)
	pp, err := c.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Txs: [][]byte{j}})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, pp.Status, "fetched from the peer, hash checked")
	res := c.block(j)
	require.NotZero(t, res[0].Code, "the look-alike runs and fails: %s", res[0].Log)
	failed := res[0].Log

	check := checkTx(t, c.app, abci.CheckTxType_New, victim)
	require.Zero(t, check.Code, "the victim is not refused as ordered (code %d %s: %s)", check.Code, check.Codespace, check.Log)
	// The proposer finds the victim in its pool and names it, whatever look-alikes it holds.
	prep, err := c.app.PrepareProposal(&abci.RequestPrepareProposal{Height: c.height, MaxTxBytes: 1 << 30, Txs: [][]byte{victim}})
	require.NoError(t, err)
	require.Len(t, prep.Txs, 1)
	hash, ok := app.ParseTxRef(prep.Txs[0])
	require.True(t, ok, "the victim is named")
	require.Equal(t, sha256.Sum256(victim), hash)
	res = c.block(prep.Txs...)
	require.Zero(t, res[0].Code, res[0].Log)
	t.Logf("look-alike named and failed (%s); the victim admitted and named after it", failed)
}

// addrOf is a validator key's consensus address as the data plane names it.
func addrOf(key cmtcrypto.PrivKey) string { return fmt.Sprintf("%X", key.PubKey().Address()) }

// A host that saw a validator's push replays it: to the same node it is refused (403), to
// another it finds the transactions held, which charges nothing. A Byzantine validator
// pushing copies of what another validator pushed, past its own budget, neither erases them
// nor is charged for them. A node's own signed answer (its URL among its peers) counts once.
func TestAttackDataPlaneReplayAndCopies(t *testing.T) {
	c := newValidatorChain(t, "receiver", []string{"http://127.0.0.1:1"}, "receiver", "byzantine", "honest")
	stalled := stalledMempool{done: make(chan struct{})}
	srv := httptest.NewServer(c.app.PushHandler(stalled))
	defer srv.Close()
	defer close(stalled.done)
	byzantine, honest := validatorKey("byzantine"), validatorKey("honest")
	theirs, body := junkFrames(8, 4096)
	req, err := http.NewRequest(http.MethodPost, srv.URL+app.PushPath, bytes.NewReader(body))
	require.NoError(t, err)
	c.app.SignPush(honest, req.Header, theirs...)
	signed := req.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	replay, err := http.NewRequest(http.MethodPost, srv.URL+app.PushPath, bytes.NewReader(body))
	require.NoError(t, err)
	replay.Header = signed
	res, err = http.DefaultClient.Do(replay)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusForbidden, res.StatusCode, "a replayed push is refused")

	// The Byzantine validator spends its budget, then pushes copies of the honest one's.
	fillBudget(t, c, srv.URL, byzantine)
	_, answer := pushAs(t, srv.URL, func(h http.Header) { c.app.SignPush(byzantine, h, theirs...) }, body)
	require.Equal(t, strings.Repeat("1", len(theirs)), answer, "held already: answered, not charged")
	for _, tx := range theirs {
		_, held := c.app.PoolHolds(tx)
		require.True(t, held, "another validator's copies do not erase them")
	}
	t.Logf("replay refused; %d copies pushed by a validator past its budget answered held, none erased", len(theirs))
}
