package app

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The replay cache refuses a signed push seen before, remembers a sender's requests for as
// long as their time is accepted, and bounds each sender alone: one validator past
// maxSeenPerSigner requests in a generation is refused, another is not.
func TestDataPlaneReplayCacheIsPerSigner(t *testing.T) {
	k := newDataPlaneKeys()
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

// The data-plane listener's slots: a validator's requests by its signature, at most
// dataPlaneSlotsPerSigner at once, whatever address they come from; unsigned ones, and ones
// naming no validator, share dataPlaneUnsignedSlots. One sender's full slots leave the others'.
func TestDataPlaneSlotsPerSigner(t *testing.T) {
	k := newDataPlaneKeys()
	key := validatorKeyOf("v")
	k.vals = map[string]dataPlaneValidator{addrHex(key): {pub: key.PubKey(), power: 1}}
	s := &dataPlaneSlots{keys: k, used: map[string]int{}}
	named := http.Header{}
	named.Set(HeaderValidator, addrHex(key))
	named.Set(HeaderSignedAt, strconv.FormatInt(time.Now().UnixMilli(), 10))
	stranger := http.Header{}
	stranger.Set(HeaderValidator, "AB")
	stranger.Set(HeaderSignedAt, strconv.FormatInt(time.Now().UnixMilli(), 10))
	for range dataPlaneSlotsPerSigner {
		_, ok := s.take(named)
		require.True(t, ok)
	}
	_, ok := s.take(named)
	require.False(t, ok, "the validator's slots are full")
	for range dataPlaneUnsignedSlots {
		_, ok := s.take(stranger)
		require.True(t, ok, "unsigned slots are apart")
	}
	_, ok = s.take(http.Header{})
	require.False(t, ok, "unsigned and unknown names share theirs")
	s.give(addrHex(key))
	_, ok = s.take(named)
	require.True(t, ok, "a slot given back is taken again")
}
