package app

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"

	cmtcrypto "github.com/cometbft/cometbft/crypto"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/app/dataplane"
)

// The joined app state is what encoding/json makes of the same modules (compact), so a genesis
// exported this way reads back unchanged; a module's invalid JSON is refused.
func TestJoinAppStateMatchesEncodingJSON(t *testing.T) {
	modules := map[string]json.RawMessage{
		"topics":  json.RawMessage(`{"params":{"max_record_bytes":"1"},"batches":[{"topic":"a<b>"}]}`),
		"bank":    json.RawMessage(`{"balances":[]}`),
		"auth":    json.RawMessage(`{}`),
		"z\"name": json.RawMessage(`[1,2]`),
		"empty":   nil,
	}
	got, err := joinAppState(modules)
	require.NoError(t, err)
	want, err := json.Marshal(modules)
	require.NoError(t, err)
	require.JSONEq(t, string(want), string(got))
	var back map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, string(modules["topics"]), string(back["topics"]))

	_, err = joinAppState(map[string]json.RawMessage{"broken": json.RawMessage(`{"a":`)})
	require.Error(t, err)
}

// PoolHandler serves the node's pool as its API server does (PoolPath), for tests of fetching.
func (app *App) PoolHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PoolPath, app.plane.TxHandler())
	return mux
}

// NameOnlyAfterACommit makes the proposer's pool ignore how long ago it admitted a
// transaction, so a test's timing cannot change what its proposals name.
func (app *App) NameOnlyAfterACommit() { app.plane.SetMinNameAge(1 << 62) }

// PushHandler serves the node's push endpoint (PushPath) over node, which stands for its
// CometBFT mempool.
func (app *App) PushHandler(node client.CometRPC) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PushPath, app.plane.PushHandler(client.Context{}.WithClient(node)))
	mux.Handle(HeldPath, app.plane.HeldHandler())
	return mux
}

// CountDecodes counts, from now on, the app's decodings of transaction bytes (cache misses).
func (app *App) CountDecodes() *atomic.Int64 {
	n := new(atomic.Int64)
	inner := app.proposalTxs.decode
	app.proposalTxs.decode = func(bz []byte) (sdk.Tx, error) {
		n.Add(1)
		return inner(bz)
	}
	return n
}

// UseValidatorKey makes the node sign its data-plane requests and answers with key, as a
// validator's priv_validator_key.json would.
func (app *App) UseValidatorKey(key cmtcrypto.PrivKey) { app.plane.Keys().UseKey(key) }

// SignPush signs a push of txs to PushPath with key, as a validator's node does; the headers
// are set on h. The chain ID is the node's.
func (app *App) SignPush(key cmtcrypto.PrivKey, h http.Header, txs ...[]byte) {
	hashes := make([][32]byte, len(txs))
	for i, tx := range txs {
		hashes[i] = sha256.Sum256(tx)
	}
	app.SignDataPlane(key, h, PushPath, dataplane.FramesDigest(hashes))
}

// SignDataPlane signs a data-plane message to path with key, over digest.
func (app *App) SignDataPlane(key cmtcrypto.PrivKey, h http.Header, path string, digest [32]byte) {
	k := dataplane.NewKeys()
	k.UseKey(key)
	k.SetValidators(app.ChainID(), []dataplane.Validator{{PubKey: key.PubKey(), Power: 1}})
	k.Sign(h, path, digest)
}

// DataPlaneRefused is how many of sender's pushes this process refused for reason
// (bftlog_data_plane_refused_total).
func DataPlaneRefused(sender, reason string) float64 {
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != "bftlog_data_plane_refused_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["sender"] == sender && labels["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// PoolHolds is bz's hash and whether the node's pool holds it.
func (app *App) PoolHolds(bz []byte) ([32]byte, bool) {
	hash := sha256.Sum256(bz)
	_, ok := app.plane.Get(hash)
	return hash, ok
}

// StubOf is what a node's mempool holds in place of bz with stubs in the mempool (stub.go).
func StubOf(bz []byte) []byte { return stubOf(sha256.Sum256(bz), len(bz)) }

// IngressHandler serves the node's binary ingress (RawTxPath) over node, which stands for its
// CometBFT mempool.
func (app *App) IngressHandler(node client.CometRPC) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(RawTxPath, app.rawTxHandler(client.Context{}.WithClient(node)))
	return mux
}

// LimitClientPool makes the pool stage at most n bytes of clients' transactions (stub.go).
func (app *App) LimitClientPool(n int) { app.plane.LimitClientBytes(n) }

// LimitTxBytes stands for mempool.max_tx_bytes = n in config.toml.
func (app *App) LimitTxBytes(n int) { app.maxTxBytes = n }

// SigsReused counts the executions that reused CheckTx's signature check (verified.go).
func (app *App) SigsReused() int64 { return app.sigsReused.Load() }

// OnlySignModeDirect is the sign-mode condition of reusing CheckTx's signature check.
func OnlySignModeDirect(tx sdk.Tx) bool { return onlySignModeDirect(tx) }
