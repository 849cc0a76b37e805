package dataplane

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/stretchr/testify/require"
)

// The replay cache refuses a signed push seen before, remembers a sender's requests for as
// long as their time is accepted, and bounds each sender alone: one validator past
// maxSeenPerSigner requests in a generation is refused, another is not.
func TestDataPlaneReplayCacheIsPerSigner(t *testing.T) {
	k := NewKeys()
	header := func(signer string, at int64) http.Header {
		h := http.Header{}
		h.Set(HeaderValidator, signer)
		h.Set(HeaderSignedAt, strconv.FormatInt(at, 10))
		return h
	}
	now := time.Now().UnixMilli()
	require.NoError(t, k.firstUse(header("AA", now), [32]byte{1}))
	require.ErrorIs(t, k.firstUse(header("AA", now), [32]byte{1}), errReplayed)
	require.NoError(t, k.firstUse(header("AA", now), [32]byte{2}), "another digest")
	require.NoError(t, k.firstUse(header("BB", now), [32]byte{1}), "another signer")

	start := time.Now()
	var refused int
	for i := 0; i < maxSeenPerSigner+10; i++ {
		if k.firstUse(header("AA", now+int64(i)), [32]byte{3}) != nil {
			refused++
		}
	}
	require.Equal(t, 12, refused, "past its bound, the flooding signer alone is refused")
	require.NoError(t, k.firstUse(header("BB", now+1), [32]byte{1}))
	t.Logf("%d requests of one signer remembered in %v; the next refused, another signer's taken", maxSeenPerSigner, time.Since(start))
}

// A validator's operator registers a data-plane key (x/poa): the node signs with it, and its
// consensus key no longer signs for it. A node without its consensus key (a remote signer's)
// finds its validator by the registered key and signs as it. A signature names its signer's
// address, so a validator that registered another's key cannot pass that validator's
// signatures off as its own; a node whose key is not the registered one signs for no one.
func TestDataPlaneKeyOfItsOwn(t *testing.T) {
	cons, plane := ed25519.GenPrivKey(), ed25519.GenPrivKey()
	other := ed25519.GenPrivKey()
	digest := [32]byte{7}
	set := []Validator{
		{PubKey: cons.PubKey(), Power: 10, DataPlaneKey: plane.PubKey()},
		{PubKey: other.PubKey(), Power: 10},
	}
	receiver := NewKeys()
	receiver.SetValidators("chain", set)
	signs := func(k *Keys) (http.Header, error) {
		h := http.Header{}
		if !k.Sign(h, PushPath, digest) {
			return nil, errUnsigned
		}
		_, _, err := receiver.verify(h, PushPath, digest)
		return h, err
	}

	withBoth := NewKeys()
	withBoth.UseKey(cons)
	withBoth.UseDataPlaneKey(plane)
	withBoth.SetValidators("chain", set)
	_, err := signs(withBoth)
	require.NoError(t, err, "signed with the registered data-plane key")

	consOnly := NewKeys()
	consOnly.UseKey(cons)
	consOnly.SetValidators("chain", set)
	_, err = signs(consOnly)
	require.ErrorIs(t, err, errUnsigned, "its consensus key does not sign once a data-plane key is registered")
	forged := http.Header{}
	at := time.Now().UnixMilli()
	sig, err := cons.Sign(receiver.signBytes(addressOf(cons.PubKey()), PushPath, at, digest))
	require.NoError(t, err)
	forged.Set(HeaderValidator, addressOf(cons.PubKey()))
	forged.Set(HeaderSignedAt, strconv.FormatInt(at, 10))
	forged.Set(HeaderSignature, base64.StdEncoding.EncodeToString(sig))
	_, _, err = receiver.verify(forged, PushPath, digest)
	require.ErrorIs(t, err, errBadSignature, "the consensus key's signature is not the registered key's")

	remote := NewKeys() // no consensus key: a remote signer holds it
	remote.UseDataPlaneKey(plane)
	remote.SetValidators("chain", set)
	require.Equal(t, addressOf(cons.PubKey()), remote.SelfAddress(), "found by its data-plane key")
	h, err := signs(remote)
	require.NoError(t, err)
	standIn := NewKeys() // the SDK's start writes a stand-in key file where a remote signer holds the key
	standIn.UseKey(ed25519.GenPrivKey())
	standIn.UseDataPlaneKey(plane)
	standIn.SetValidators("chain", set)
	require.Equal(t, addressOf(cons.PubKey()), standIn.SelfAddress(), "found by its data-plane key")
	_, err = signs(standIn)
	require.NoError(t, err)

	// Validator 1 registers validator 0's data-plane key and relabels 0's signature as its own.
	copied := []Validator{set[0], {PubKey: other.PubKey(), Power: 10, DataPlaneKey: plane.PubKey()}}
	receiver.SetValidators("chain", copied)
	h.Set(HeaderValidator, addressOf(other.PubKey()))
	_, _, err = receiver.verify(h, PushPath, digest)
	require.ErrorIs(t, err, errBadSignature, "a signature names its signer")
	ambiguous := NewKeys()
	ambiguous.UseDataPlaneKey(plane)
	ambiguous.SetValidators("chain", copied)
	require.Empty(t, ambiguous.SelfAddress(), "two validators with its key: it signs for neither")

	stranger := NewKeys()
	stranger.UseKey(cons)
	stranger.UseDataPlaneKey(ed25519.GenPrivKey())
	stranger.SetValidators("chain", set)
	_, err = signs(stranger)
	require.ErrorIs(t, err, errUnsigned, "a node whose key is not the registered one signs for no one")
}

// The data-plane key file is made once, private, and read back the same.
func TestDataPlaneKeyFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config", "data_plane_key.json")
	k1, err := LoadOrGenDataPlaneKey(file)
	require.NoError(t, err)
	st, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	k2, err := LoadOrGenDataPlaneKey(file)
	require.NoError(t, err)
	require.True(t, k1.Equals(k2))
	require.NoError(t, os.WriteFile(file, []byte("{"), 0o600))
	_, err = LoadOrGenDataPlaneKey(file)
	require.Error(t, err, "a torn key file is an error, not a new key")
}
