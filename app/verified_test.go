package app_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"

	"github.com/bftlog/bftlog/app"
)

// A block runs a transaction this node's CheckTx admitted without verifying its signatures
// again; one it holds unverified — here a forged batch a hostile peer served for a proposal
// that named it — is verified at execution and fails there, charging nothing, exactly as on a
// validator that never saw it. A validator's push of it is refused by CheckTx and dropped.
func TestSignaturesVerifiedOncePerValidator(t *testing.T) {
	var forged []byte
	hostile := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(forged)
	}))
	defer hostile.Close()
	c := newValidatorChain(t, "v", []string{hostile.URL}, "v", "peer")
	mempool := &mempoolOf{app: c.app, seen: map[string]bool{}}
	push := httptest.NewServer(c.app.PushHandler(mempool))
	defer push.Close()
	ingress := httptest.NewServer(c.app.IngressHandler(mempool))
	defer ingress.Close()
	txs := orderingLoad(t, c)

	forged = bytes.Clone(txs[1])
	forged[len(forged)-1] ^= 1 // the signature's last byte
	req, err := http.NewRequest(http.MethodPost, push.URL+app.PushPath, bytes.NewReader(frames(forged)))
	require.NoError(t, err)
	c.app.SignPush(validatorKey("peer"), req.Header, forged)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	held, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, "1", string(held), "a validator's push is held at once")
	require.Eventually(t, func() bool { return len(mempool.received()) == 1 }, 5*time.Second, time.Millisecond)
	_, kept := c.app.PoolHolds(forged)
	require.False(t, kept, "refused by CheckTx, dropped")

	out := postRaw(t, ingress.URL, txs[0])
	require.Zero(t, out.Code, out.RawLog)

	before := c.app.SigsReused()
	alice, bob := c.addr(0).String(), c.addr(1).String()
	feesBefore := c.balance(c.addr(1))
	block := [][]byte{app.TxRef(sha256.Sum256(txs[0]), len(txs[0]), alice), app.TxRef(sha256.Sum256(forged), len(forged), bob)}
	pp, err := c.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Txs: block})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, pp.Status, "the forged batch fetched from the peer, by its hash")
	start := time.Now()
	results := c.block(block...)
	took := time.Since(start)
	require.Zero(t, results[0].Code, results[0].Log)
	require.Equal(t, sdkerrors.ErrUnauthorized.ABCICode(), results[1].Code, "the forged batch is verified at execution: %s", results[1].Log)
	require.Equal(t, feesBefore, c.balance(c.addr(1)), "and charges nothing")
	require.Equal(t, int64(1), c.app.SigsReused()-before, "only the admitted one skipped its second verification")
	t.Logf("block of an admitted batch (signatures reused) and a forged one (verified, refused: %s) ran in %v", results[1].Log, took)
}

// Reusing CheckTx's signature check is limited to SIGN_MODE_DIRECT: SIGN_MODE_TEXTUAL (on in
// this chain) reads bank metadata for its sign bytes, gas a verifying validator spends and a
// skipping one would not, which would split their results.
func TestSignatureReuseOnlyForSignModeDirect(t *testing.T) {
	c := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true), orderingSecret, 1e15, 1e15)
	txs := orderingLoad(t, c)
	direct, err := c.app.TxConfig().TxDecoder()(txs[0])
	require.NoError(t, err)
	require.True(t, app.OnlySignModeDirect(direct))

	builder, err := c.app.TxConfig().WrapTxBuilder(direct)
	require.NoError(t, err)
	sigs, err := builder.GetTx().GetSignaturesV2()
	require.NoError(t, err)
	for _, mode := range []signing.SignMode{signing.SignMode_SIGN_MODE_TEXTUAL, signing.SignMode_SIGN_MODE_LEGACY_AMINO_JSON, signing.SignMode_SIGN_MODE_DIRECT_AUX} {
		other := sigs[0]
		other.Data = &signing.SingleSignatureData{SignMode: mode, Signature: sigs[0].Data.(*signing.SingleSignatureData).Signature}
		require.NoError(t, builder.SetSignatures(other))
		require.False(t, app.OnlySignModeDirect(builder.GetTx()), mode.String())
	}
}
