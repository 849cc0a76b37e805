package dataplane

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The data-plane listener's slots: a validator's requests by its signature, at most
// slotsPerSigner at once, whatever address they come from; unsigned ones, and ones
// naming no validator, share unsignedSlots. One sender's full slots leave the others'.
func TestDataPlaneSlotsPerSigner(t *testing.T) {
	k := NewKeys()
	key := validatorKeyOf("v")
	k.vals = map[string]Validator{addrHex(key): {PubKey: key.PubKey(), Power: 1}}
	s := &signerSlots{keys: k, used: map[string]int{}}
	named := http.Header{}
	named.Set(HeaderValidator, addrHex(key))
	named.Set(HeaderSignedAt, strconv.FormatInt(time.Now().UnixMilli(), 10))
	stranger := http.Header{}
	stranger.Set(HeaderValidator, "AB")
	stranger.Set(HeaderSignedAt, strconv.FormatInt(time.Now().UnixMilli(), 10))
	for range slotsPerSigner {
		_, ok := s.take(named)
		require.True(t, ok)
	}
	_, ok := s.take(named)
	require.False(t, ok, "the validator's slots are full")
	for range unsignedSlots {
		_, ok := s.take(stranger)
		require.True(t, ok, "unsigned slots are apart")
	}
	_, ok = s.take(http.Header{})
	require.False(t, ok, "unsigned and unknown names share theirs")
	s.give(addrHex(key))
	_, ok = s.take(named)
	require.True(t, ok, "a slot given back is taken again")
}
