package txclient

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client/tx"
)

// Only "the node expects an earlier sequence than this signer's next one" is worth asking
// again: the node will catch up with transactions it already accepted from us.
func TestAheadOfNode(t *testing.T) {
	s := &Signer{txf: tx.Factory{}.WithSequence(3)}
	for msg, want := range map[string]bool{
		"rpc error: code = Unknown desc = account sequence mismatch, expected 2, got 3: incorrect account sequence": true,
		"account sequence mismatch, expected 4, got 3: incorrect account sequence":                                  false, // we are behind: resync instead
		"account sequence mismatch, expected 2, got 5: incorrect account sequence":                                  false, // not our next sequence
		"out of gas": false,
	} {
		require.Equal(t, want, s.aheadOfNode(errors.New(msg)), msg)
	}
	require.False(t, s.aheadOfNode(nil))
}
