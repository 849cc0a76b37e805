package dataplane

import (
	"bytes"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
)

func poolTxOf(b byte) ([32]byte, []byte) {
	bz := bytes.Repeat([]byte{b}, 1100)
	return sha256.Sum256(bz), bz
}

// Height files are cut back to their last whole entry after a crash while writing, and
// deleted oldest first once they hold more than keep-bytes or fall out of keep-heights.
func TestPoolFilesSurviveATornWriteAndStayBounded(t *testing.T) {
	dir := t.TempDir()
	p, err := newPool(dir, nil, 5, 2500, log.NewNopLogger())
	require.NoError(t, err)
	ha, a := poolTxOf('a')
	hb, b := poolTxOf('b')
	hc, c := poolTxOf('c')
	require.NoError(t, p.Persist(1, map[[32]byte][]byte{ha: a}))
	require.NoError(t, p.Persist(2, map[[32]byte][]byte{hb: b}))
	// A torn entry after b: its header promises more bytes than were written.
	f, err := os.OpenFile(filepath.Join(dir, "2"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(append(hc[:], 0, 0, 4, 0x4c, 'c', 'c'))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	p, err = newPool(dir, nil, 5, 2500, log.NewNopLogger())
	require.NoError(t, err)
	for h, want := range map[[32]byte][]byte{ha: a, hb: b} {
		got, ok := p.Get(h)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	_, ok := p.Get(hc)
	require.False(t, ok, "a torn entry is not served")
	st, err := os.Stat(filepath.Join(dir, "2"))
	require.NoError(t, err)
	require.Equal(t, int64(diskEntryHeader+len(b)), st.Size(), "the torn entry was cut off")

	// Over keep-bytes (3 x 1,136 > 2,500): the oldest height goes.
	require.NoError(t, p.Persist(3, map[[32]byte][]byte{hc: c}))
	p.Committed(3)
	_, err = os.Stat(filepath.Join(dir, "1"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, ok = p.Get(ha)
	require.False(t, ok)
	_, ok = p.Get(hb)
	require.True(t, ok)
	// Past keep-heights: all of them.
	p.Committed(20)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Zero(t, p.onDisk)
}

// Copies of transactions a block carried whole leave the pool with the block (a node with
// by-digest off holds nothing for long), and so do those recheck dropped; hashes of forgotten
// copies do not pile up in the eviction order.
func TestPoolForgetsCarriedAndDroppedTransactions(t *testing.T) {
	p, err := newPool("", nil, 5, 0, log.NewNopLogger())
	require.NoError(t, err)
	_, a := poolTxOf('a')
	hb, b := poolTxOf('b')
	_, c := poolTxOf('c')
	for _, bz := range [][]byte{a, b, c} {
		p.admit(bz, 1, "", nil, true)
	}
	require.Equal(t, 3*len(a), p.memBytes)
	p.DropCarried([][]byte{a, bytes.Repeat([]byte{'z'}, 1100), c})
	p.Drop(bytes.Clone(b[:len(b)-1])) // other bytes, not held
	require.Equal(t, len(b), p.memBytes)
	got, ok := p.Get(hb)
	require.True(t, ok)
	require.Equal(t, b, got)
	p.Drop(bytes.Clone(b))
	require.Zero(t, p.memBytes)
	require.Empty(t, p.byTail)

	for i := 0; i < 3000; i++ {
		bz := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 600)
		p.admit(bz, 2, "", nil, true)
		p.DropCarried([][]byte{bz})
	}
	p.Committed(3)
	require.Zero(t, p.memBytes)
	require.Empty(t, p.fifo)
}

// hashOf answers a held transaction's SHA-256 without hashing it, and any other bytes' by
// hashing them, including bytes that end as a held transaction does.
func TestPoolHashOfMatchesSHA256(t *testing.T) {
	p, err := newPool("", nil, 5, 0, log.NewNopLogger())
	require.NoError(t, err)
	ha, a := poolTxOf('a')
	p.admit(a, 1, "", nil, true)
	require.Equal(t, ha, p.HashOf(a))
	require.Equal(t, ha, p.HashOf(bytes.Clone(a)))
	sameTail := bytes.Clone(a)
	sameTail[0] = 'b'
	require.Equal(t, sha256.Sum256(sameTail), p.HashOf(sameTail))
	small := []byte("small")
	require.Equal(t, sha256.Sum256(small), p.HashOf(small))
}
