package app

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
	p, err := newTxPool(dir, nil, 5, 2500, log.NewNopLogger())
	require.NoError(t, err)
	ha, a := poolTxOf('a')
	hb, b := poolTxOf('b')
	hc, c := poolTxOf('c')
	require.NoError(t, p.persist(1, map[[32]byte][]byte{ha: a}))
	require.NoError(t, p.persist(2, map[[32]byte][]byte{hb: b}))
	// A torn entry after b: its header promises more bytes than were written.
	f, err := os.OpenFile(filepath.Join(dir, "2"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(append(hc[:], 0, 0, 4, 0x4c, 'c', 'c'))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	p, err = newTxPool(dir, nil, 5, 2500, log.NewNopLogger())
	require.NoError(t, err)
	for h, want := range map[[32]byte][]byte{ha: a, hb: b} {
		got, ok := p.get(h)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	_, ok := p.get(hc)
	require.False(t, ok, "a torn entry is not served")
	st, err := os.Stat(filepath.Join(dir, "2"))
	require.NoError(t, err)
	require.Equal(t, int64(diskEntryHeader+len(b)), st.Size(), "the torn entry was cut off")

	// Over keep-bytes (3 x 1,136 > 2,500): the oldest height goes.
	require.NoError(t, p.persist(3, map[[32]byte][]byte{hc: c}))
	p.committed(3)
	_, err = os.Stat(filepath.Join(dir, "1"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, ok = p.get(ha)
	require.False(t, ok)
	_, ok = p.get(hb)
	require.True(t, ok)
	// Past keep-heights: all of them.
	p.committed(20)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
	require.Zero(t, p.onDisk)
}

// Without ordering.peers a node asks its persistent peers' hosts at its own API port.
func TestOrderingPeersFromPersistentPeers(t *testing.T) {
	require.Equal(t, []string{"http://10.0.0.2:1317", "http://[fd00::3]:1317"},
		peersFromPersistentPeers("abc@10.0.0.2:26656, def@[fd00::3]:26656,,bad", "tcp://0.0.0.0:1317"))
	require.Nil(t, peersFromPersistentPeers("abc@10.0.0.2:26656", ""))
	require.Equal(t, []string{"http://a.example:9", "http://b.example:9"}, orderingPeers([]any{"http://a.example:9", "http://b.example:9"}))
	require.Equal(t, []string{"http://a.example:9", "http://b.example:9"}, orderingPeers("http://a.example:9, http://b.example:9"))
}

// Copies of transactions a block carried whole leave the pool with the block (a node with
// by-digest off holds nothing for long), and so do those recheck dropped; hashes of forgotten
// copies do not pile up in the eviction order.
func TestPoolForgetsCarriedAndDroppedTransactions(t *testing.T) {
	p, err := newTxPool("", nil, 5, 0, log.NewNopLogger())
	require.NoError(t, err)
	_, a := poolTxOf('a')
	hb, b := poolTxOf('b')
	_, c := poolTxOf('c')
	for _, bz := range [][]byte{a, b, c} {
		p.admit(bz, 1, "", nil, true)
	}
	require.Equal(t, 3*len(a), p.memBytes)
	p.dropCarried([][]byte{a, bytes.Repeat([]byte{'z'}, 1100), c})
	p.drop(bytes.Clone(b[:len(b)-1])) // other bytes, not held
	require.Equal(t, len(b), p.memBytes)
	got, ok := p.get(hb)
	require.True(t, ok)
	require.Equal(t, b, got)
	p.drop(bytes.Clone(b))
	require.Zero(t, p.memBytes)
	require.Empty(t, p.byTail)

	for i := 0; i < 3000; i++ {
		bz := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 600)
		p.admit(bz, 2, "", nil, true)
		p.dropCarried([][]byte{bz})
	}
	p.committed(3)
	require.Zero(t, p.memBytes)
	require.Empty(t, p.fifo)
}

// hashOf answers a held transaction's SHA-256 without hashing it, and any other bytes' by
// hashing them, including bytes that end as a held transaction does.
func TestPoolHashOfMatchesSHA256(t *testing.T) {
	p, err := newTxPool("", nil, 5, 0, log.NewNopLogger())
	require.NoError(t, err)
	ha, a := poolTxOf('a')
	p.admit(a, 1, "", nil, true)
	require.Equal(t, ha, p.hashOf(a))
	require.Equal(t, ha, p.hashOf(bytes.Clone(a)))
	sameTail := bytes.Clone(a)
	sameTail[0] = 'b'
	require.Equal(t, sha256.Sum256(sameTail), p.hashOf(sameTail))
	small := []byte("small")
	require.Equal(t, sha256.Sum256(small), p.hashOf(small))
}
