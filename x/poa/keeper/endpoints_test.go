package keeper_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/poa/types"
)

// An admitted operator sets its own data-plane endpoint with its own account, clears it, and
// finds it in queries and in an export; everyone else is refused.
func TestOperatorSetsItsDataPlaneEndpoint(t *testing.T) {
	f := newFixture(t)
	op, addr, _ := f.bondedValidator("bonded", 10)
	account, err := f.accCodec.BytesToString(addr)
	require.NoError(t, err)

	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: account, Endpoint: "http://10.0.0.1:26680"})
	require.NoError(t, err)
	f.requireEvent("bftlog.poa.v1.EventDataPlaneEndpointSet")
	got, err := f.query.DataPlaneEndpoints(f.ctx, &types.QueryDataPlaneEndpointsRequest{})
	require.NoError(t, err)
	require.Equal(t, []types.DataPlaneEndpoint{{Operator: op, Endpoint: "http://10.0.0.1:26680"}}, got.Endpoints)
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Equal(t, got.Endpoints, gs.DataPlaneEndpoints)

	// Import: the same endpoints in a fresh keeper.
	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, gs))
	again, err := g.query.DataPlaneEndpoints(g.ctx, &types.QueryDataPlaneEndpointsRequest{})
	require.NoError(t, err)
	require.Equal(t, got.Endpoints, again.Endpoints)

	// A data-plane key of its own beside the endpoint, then another endpoint (the key stays),
	// then neither.
	key, proof := dataPlaneKeyFor(t, addr)
	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: account, Endpoint: "http://10.0.0.1:26680", DataPlaneKey: key, DataPlaneKeyProof: proof})
	require.NoError(t, err)
	got, err = f.query.DataPlaneEndpoints(f.ctx, &types.QueryDataPlaneEndpointsRequest{})
	require.NoError(t, err)
	withKey := []types.DataPlaneEndpoint{{Operator: op, Endpoint: "http://10.0.0.1:26680", DataPlaneKey: key, DataPlaneKeyProof: proof}}
	require.Equal(t, withKey, got.Endpoints)
	gs, err = f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, gs.ValidateEndpoints())
	h := newFixture(t)
	require.NoError(t, h.k.InitGenesis(h.ctx, gs))
	again, err = h.query.DataPlaneEndpoints(h.ctx, &types.QueryDataPlaneEndpointsRequest{})
	require.NoError(t, err)
	require.Equal(t, got.Endpoints, again.Endpoints)
	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: account, Endpoint: "http://10.0.0.7:26680"})
	require.NoError(t, err)
	got, err = f.query.DataPlaneEndpoints(f.ctx, &types.QueryDataPlaneEndpointsRequest{})
	require.NoError(t, err)
	withKey[0].Endpoint = "http://10.0.0.7:26680"
	require.Equal(t, withKey, got.Endpoints, "a new endpoint keeps the key")

	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: account, Endpoint: ""})
	require.NoError(t, err)
	got, err = f.query.DataPlaneEndpoints(f.ctx, &types.QueryDataPlaneEndpointsRequest{})
	require.NoError(t, err)
	require.Empty(t, got.Endpoints)
}

// Hostile: an account that is not an admitted operator cannot set one (so no account can make
// the validators push to a host of its choosing), nor can an operator's endpoint be anything
// but http(s)://host:port.
func TestAttackDataPlaneEndpointRefusals(t *testing.T) {
	f := newFixture(t)
	_, addr, _ := f.bondedValidator("bonded", 10)
	account, err := f.accCodec.BytesToString(addr)
	require.NoError(t, err)
	before := f.state()

	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: f.alice, Endpoint: "http://10.0.0.9:1"})
	require.ErrorIs(t, err, types.ErrNotAdmitted)
	for _, bad := range []string{"10.0.0.1:26680", "ftp://h:1", "http://h", "http://h:0", "http://h:70000", "http://:80",
		"http://u:p@h:1", "http://h:1/x", "http://h:1?q", "http://h:1#f", "http://" + strings.Repeat("a", 200) + ":1"} {
		_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: account, Endpoint: bad})
		require.ErrorIs(t, err, types.ErrInvalidEndpoint, bad)
	}
	require.Equal(t, before, f.state())
	// A key another operator registered is refused: a node without its consensus key finds its
	// validator by its key.
	other, otherAddr, _ := f.bondedValidator("keyholder", 10)
	otherAccount, err := f.accCodec.BytesToString(otherAddr)
	require.NoError(t, err)
	taken, takenProof := dataPlaneKeyFor(t, otherAddr)
	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: otherAccount, Endpoint: "http://10.0.0.2:1", DataPlaneKey: taken, DataPlaneKeyProof: takenProof})
	require.NoError(t, err)
	before = f.state()
	// Copied from the other operator's message: its proof names the other operator.
	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: account, Endpoint: "http://10.0.0.1:1", DataPlaneKey: taken, DataPlaneKeyProof: takenProof})
	require.ErrorIs(t, err, types.ErrInvalidDataPlaneKey)
	require.Equal(t, before, f.state())
	_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: otherAccount, Endpoint: "http://10.0.0.2:1", DataPlaneKey: taken, DataPlaneKeyProof: takenProof})
	require.NoError(t, err, "its own key again")
	gs := &types.GenesisState{DataPlaneEndpoints: []types.DataPlaneEndpoint{{Operator: other, DataPlaneKey: taken, DataPlaneKeyProof: takenProof}}}
	require.NoError(t, gs.ValidateEndpoints())
	before = f.state()
	key, proof := dataPlaneKeyFor(t, addr)
	for name, bad := range map[string][2][]byte{
		"31 bytes":         {key[:31], proof},
		"33 bytes":         {append(bytes.Clone(key), 0), proof},
		"no proof":         {key, nil},
		"a proof alone":    {nil, proof},
		"an altered proof": {key, append(bytes.Clone(proof[:63]), proof[63]^1)},
		"another's proof":  {key, takenProof},
	} {
		_, err = f.msgs.SetDataPlaneEndpoint(f.ctx, &types.MsgSetDataPlaneEndpoint{Operator: account, Endpoint: "http://10.0.0.1:1", DataPlaneKey: bad[0], DataPlaneKeyProof: bad[1]})
		require.ErrorIs(t, err, types.ErrInvalidDataPlaneKey, name)
	}
	require.Equal(t, before, f.state())

	gs = &types.GenesisState{DataPlaneEndpoints: []types.DataPlaneEndpoint{{Operator: "nope", Endpoint: "http://h:1"}}}
	require.ErrorIs(t, gs.ValidateEndpoints(), types.ErrInvalidGen)
	op, _, _ := f.bondedValidator("other", 10)
	gs = &types.GenesisState{DataPlaneEndpoints: []types.DataPlaneEndpoint{{Operator: op, DataPlaneKey: taken, DataPlaneKeyProof: takenProof}, {Operator: other, DataPlaneKey: taken, DataPlaneKeyProof: takenProof}}}
	require.ErrorIs(t, gs.ValidateEndpoints(), types.ErrInvalidGen)
	gs = &types.GenesisState{DataPlaneEndpoints: []types.DataPlaneEndpoint{{Operator: op, Endpoint: "http://h:1", DataPlaneKey: make([]byte, 31)}}}
	require.ErrorIs(t, gs.ValidateEndpoints(), types.ErrInvalidGen)
	gs = &types.GenesisState{DataPlaneEndpoints: []types.DataPlaneEndpoint{{Operator: op, Endpoint: "http://h:1", DataPlaneKey: key, DataPlaneKeyProof: proof}}}
	require.ErrorIs(t, gs.ValidateEndpoints(), types.ErrInvalidGen, "a proof for another operator")
	gs = &types.GenesisState{DataPlaneEndpoints: []types.DataPlaneEndpoint{{Operator: op}}}
	require.ErrorIs(t, gs.ValidateEndpoints(), types.ErrInvalidGen)
}

// dataPlaneKeyFor is a fresh data-plane key and its proof for the operator of these address bytes.
func dataPlaneKeyFor(t *testing.T, operator []byte) (key, proof []byte) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	return pub, ed25519.Sign(priv, types.DataPlaneKeyProofBytes(operator))
}
