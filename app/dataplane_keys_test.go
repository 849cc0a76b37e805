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
