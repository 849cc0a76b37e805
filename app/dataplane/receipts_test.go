package dataplane

import (
	"crypto/sha256"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A word that transactions are held by more than two thirds counts only what its receipts
// prove: each a validator's signed answer to a push, checked against the validator set, each
// validator once, never the sender's own, never a forged or altered one. Four validators of
// power 1: the sender and two receipts make 3 of 4; the sender and one make 2, not enough.
func TestHeldWordCountsOnlyReceipts(t *testing.T) {
	names := []string{"sender", "a", "b", "c"}
	vals := map[string]Validator{}
	keys := map[string]*Keys{}
	for _, n := range names {
		key := validatorKeyOf(n)
		vals[addrHex(key)] = Validator{PubKey: key.PubKey(), Power: 1}
		k := NewKeys()
		k.UseKey(key)
		keys[n] = k
	}
	for _, k := range keys {
		k.vals, k.total, k.chainID = vals, 4, "receipts"
	}
	h1, h2, h3 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two")), sha256.Sum256([]byte("three"))
	frames := [][32]byte{h1, h2}
	answer := func(who, held string) *Receipt {
		h := http.Header{}
		require.True(t, keys[who].Sign(h, PushPath+answerPathSuffix, answerDigest(FramesDigest(frames), []byte(held))))
		return receiptOf(h, frames, []byte(held))
	}
	a, b, own := answer("a", "11"), answer("b", "10"), answer("sender", "11")
	forged := answer("c", "01")
	forged.answer = []byte("11") // c signed "01"
	sender := keys["sender"].selfAddr
	claims := [][32]byte{h1, h2, h3}

	// Through the wire format, as a receiver reads it.
	gotClaims, gotReceipts, err := decodeHeld(encodeHeld(claims, []*Receipt{a, b, b, own, forged}))
	require.NoError(t, err)
	require.Equal(t, claims, gotClaims)
	proven, bad := keys["c"].provenHeld(gotClaims, gotReceipts, sender, 1)
	require.Equal(t, [][32]byte{h1}, proven, "h1: sender, a, b; h2: sender and a only (b's twice counts once, the sender's own and c's altered one not at all)")
	require.Equal(t, 2, bad, "the sender's own receipt and the altered one")

	proven, _ = keys["c"].provenHeld(claims, nil, sender, 1)
	require.Empty(t, proven, "a word without receipts proves nothing")

	// One receipt under other spellings of its signer's name (hex is case-free, the name is
	// not): counted once, and the sender's own in lower case still not at all.
	respelled := func(r *Receipt, name string) *Receipt { c := *r; c.signer = name; return &c }
	mixed := []byte(a.signer)
	for i := range mixed {
		if i%2 == 0 {
			mixed[i] = strings.ToLower(string(mixed[i]))[0]
		}
	}
	variants := []*Receipt{a, respelled(a, strings.ToLower(a.signer)), respelled(a, string(mixed)), respelled(own, strings.ToLower(own.signer))}
	proven, bad = keys["c"].provenHeld(claims, variants, sender, 1)
	require.Empty(t, proven, "the sender and a alone: 2 of 4, however a's name is spelled")
	require.Equal(t, 3, bad, "the respelled receipts are refused")

	for name, body := range map[string][]byte{
		"empty":               nil,
		"claims past the end": {0, 0, 1, 0},
		"a receipt cut short": append(encodeHeld(claims, []*Receipt{a}), 0)[:60+32*3],
		"trailing bytes":      append(encodeHeld(claims, []*Receipt{a}), 0),
		"too many receipts":   encodeHeld(claims, slices.Repeat([]*Receipt{a}, maxHeldReceipts+1)),
	} {
		_, _, err := decodeHeld(body)
		require.ErrorIs(t, err, errBadReceipt, name)
	}
	t.Logf("a word of 3 claims with 5 receipts (%d bytes): 1 proven, 2 receipts refused", len(encodeHeld(claims, []*Receipt{a, b, b, own, forged})))
}
