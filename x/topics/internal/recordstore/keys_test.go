package recordstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// The record database's prefixes are those nodes wrote before the store left the keeper: a
// node upgraded in place reads its pointers, kept versions and sweep marks.
func TestKeyPrefixesUnchanged(t *testing.T) {
	require.Equal(t, []byte{14}, types.RecordBytesPrefix.Bytes())
	require.Equal(t, []byte{23}, KeptPrefix.Bytes())
	require.Equal(t, []byte{24}, KeptByHeightPrefix.Bytes())
	require.Equal(t, []byte{25}, SweepPrefix.Bytes())
}
