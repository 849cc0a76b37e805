package app

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// fakeTx is a decoded transaction that remembers its bytes.
type fakeTx struct {
	sdk.Tx
	bz string
}

func countingDecoder(calls *int) sdk.TxDecoder {
	return func(bz []byte) (sdk.Tx, error) {
		*calls++
		if len(bz) == 0 || bz[0] == 'x' {
			return nil, errors.New("undecodable")
		}
		return fakeTx{bz: string(bz)}, nil
	}
}

// TestProposalTxsDecodeOnce: a transaction ProcessProposal decoded is not decoded again for
// FinalizeBlock; equal bytes elsewhere, rewritten bytes, and anything after forget are.
func TestProposalTxsDecodeOnce(t *testing.T) {
	var calls int
	p := newProposalTxs(countingDecoder(&calls))
	a := bytes.Repeat([]byte("a"), 100)
	b := bytes.Repeat([]byte("b"), 100)
	for _, bz := range [][]byte{a, b} {
		_, err := p.decodeAndKeep(bz)
		require.NoError(t, err)
	}
	require.Equal(t, 2, calls)
	for _, bz := range [][]byte{a, b, a, b} { // FinalizeBlock decodes each twice
		tx, err := p.Decode(bz)
		require.NoError(t, err)
		require.Equal(t, string(bz), tx.(fakeTx).bz)
	}
	require.Equal(t, 2, calls, "kept transactions decoded again")

	// The same bytes in another slice (a block received again) are decoded.
	_, err := p.Decode(bytes.Clone(a))
	require.NoError(t, err)
	require.Equal(t, 3, calls)
	// A slice whose end was rewritten is decoded, not served from the cache.
	a[99] = 'z'
	tx, err := p.Decode(a)
	require.NoError(t, err)
	require.Equal(t, string(a), tx.(fakeTx).bz)
	require.Equal(t, 4, calls)
	// A shorter view of kept bytes is other bytes.
	_, err = p.Decode(b[:50])
	require.NoError(t, err)
	require.Equal(t, 5, calls)

	// Undecodable transactions are not kept; forget drops everything.
	_, err = p.decodeAndKeep([]byte("xx"))
	require.Error(t, err)
	p.forget()
	_, err = p.Decode(b)
	require.NoError(t, err)
	require.Equal(t, 7, calls)
	require.Empty(t, p.txs)
	require.Zero(t, p.size)
}

// TestProposalTxsBounded: what is kept stops at maxProposalTxBytes; the rest is decoded again.
func TestProposalTxsBounded(t *testing.T) {
	var calls int
	p := newProposalTxs(countingDecoder(&calls))
	big := make([][]byte, 3)
	for i := range big {
		big[i] = bytes.Repeat([]byte{'a' + byte(i)}, maxProposalTxBytes/2)
		_, err := p.decodeAndKeep(big[i])
		require.NoError(t, err)
	}
	require.Len(t, p.txs, 2)
	require.Equal(t, maxProposalTxBytes, p.size)
	calls = 0
	for _, bz := range big {
		_, err := p.Decode(bz)
		require.NoError(t, err)
	}
	require.Equal(t, 1, calls, "only the transaction past the bound is decoded again")
}
