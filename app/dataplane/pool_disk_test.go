package dataplane

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
)

func diskPool(t *testing.T, dir string, keepHeights int64) *Pool {
	t.Helper()
	p, err := newPool(dir, nil, keepHeights, 0, log.NewNopLogger())
	require.NoError(t, err)
	return p
}

func heightFileSize(t *testing.T, dir string, height int64) int64 {
	t.Helper()
	st, err := os.Stat(filepath.Join(dir, strconv.FormatInt(height, 10)))
	require.NoError(t, err)
	return st.Size()
}

// A new height file's name survives a power cut only once its directory is synced; appending
// to a file that exists needs no such sync. A new file whose directory sync failed is removed,
// so that the next attempt creates it, and syncs, again.
func TestPoolHeightFilesSyncTheirDirectoryWhenCreated(t *testing.T) {
	dir := t.TempDir()
	p := diskPool(t, dir, 5)
	synced, fail := 0, false
	was := syncDir
	t.Cleanup(func() { syncDir = was })
	syncDir = func(d string) error {
		require.Equal(t, dir, d)
		synced++
		if fail {
			return syscall.EIO
		}
		return was(d)
	}
	ha, a := poolTxOf('a')
	hb, b := poolTxOf('b')
	hc, c := poolTxOf('c')
	require.NoError(t, p.Persist(1, map[[32]byte][]byte{ha: a}))
	require.Equal(t, 1, synced, "a new height file")
	require.NoError(t, p.Persist(1, map[[32]byte][]byte{hb: b}))
	require.NoError(t, p.Persist(1, map[[32]byte][]byte{ha: a}))
	require.Equal(t, 1, synced, "appending to an existing file")

	fail = true
	require.Error(t, p.Persist(2, map[[32]byte][]byte{hc: c}))
	require.Equal(t, 2, synced)
	_, err := os.Stat(filepath.Join(dir, "2"))
	require.ErrorIs(t, err, os.ErrNotExist, "the new file whose directory sync failed is gone")
	_, ok := p.Get(hc)
	require.False(t, ok)
	fail = false
	require.NoError(t, p.Persist(2, map[[32]byte][]byte{hc: c}))
	require.Equal(t, 3, synced, "created again, synced again")
	got, ok := p.Get(hc)
	require.True(t, ok)
	require.Equal(t, c, got)
}

// A write that fails midway (ENOSPC) leaves no partial entry behind: later appends and the
// index rebuilt at start find every transaction whose persist succeeded.
func TestPoolHeightFilesCutAFailedWriteBack(t *testing.T) {
	dir := t.TempDir()
	p := diskPool(t, dir, 5)
	ha, a := poolTxOf('a')
	hb, b := poolTxOf('b')
	hc, c := poolTxOf('c')
	hd, d := poolTxOf('d')
	require.NoError(t, p.Persist(3, map[[32]byte][]byte{ha: a}))

	// The second write (the first entry's bytes) stops halfway, as on a full disk.
	was := poolWriteAt
	t.Cleanup(func() { poolWriteAt = was })
	calls := 0
	poolWriteAt = func(f *os.File, bz []byte, off int64) (int, error) {
		if calls++; calls == 2 {
			n, _ := was(f, bz[:len(bz)/2], off)
			return n, syscall.ENOSPC
		}
		return was(f, bz, off)
	}
	require.ErrorIs(t, p.Persist(3, map[[32]byte][]byte{hb: b, hc: c}), syscall.ENOSPC)
	require.Equal(t, int64(diskEntryHeader+len(a)), heightFileSize(t, dir, 3), "cut back to where the call began")
	// In a file this call created: removed.
	calls = 0
	require.ErrorIs(t, p.Persist(4, map[[32]byte][]byte{hb: b}), syscall.ENOSPC)
	_, err := os.Stat(filepath.Join(dir, "4"))
	require.ErrorIs(t, err, os.ErrNotExist)
	poolWriteAt = was

	require.NoError(t, p.Persist(3, map[[32]byte][]byte{hd: d}))
	for _, q := range []*Pool{p, diskPool(t, dir, 5)} { // as written, and after a restart
		for h, want := range map[[32]byte][]byte{ha: a, hd: d} {
			got, ok := q.Get(h)
			require.True(t, ok)
			require.Equal(t, want, got)
		}
		for _, h := range [][32]byte{hb, hc} {
			_, ok := q.Get(h)
			require.False(t, ok, "the failed write's transactions are not held")
		}
	}
	require.Equal(t, int64(2*diskEntryHeader+len(a)+len(d)), heightFileSize(t, dir, 3))
}

// A transaction named again at a later height is written to that height's file too: the
// older file is deleted first, and the later block's replay or a peer still finds it.
func TestPoolHeightFilesKeepATransactionNamedAgain(t *testing.T) {
	dir := t.TempDir()
	p := diskPool(t, dir, 2)
	ha, a := poolTxOf('a')
	require.NoError(t, p.Persist(5, map[[32]byte][]byte{ha: a}))
	require.NoError(t, p.Persist(5, map[[32]byte][]byte{ha: a}))
	require.Equal(t, int64(diskEntryHeader+len(a)), heightFileSize(t, dir, 5), "once per height file")
	require.NoError(t, p.Persist(12, map[[32]byte][]byte{ha: a}))
	require.Equal(t, int64(diskEntryHeader+len(a)), heightFileSize(t, dir, 12))

	// Rebuilt at start, the index names the newest copy: "12" is read before "5".
	p = diskPool(t, dir, 2)
	require.Equal(t, int64(12), p.disk[ha].height)
	p.Committed(12)
	_, err := os.Stat(filepath.Join(dir, "5"))
	require.ErrorIs(t, err, os.ErrNotExist, "height 5 is past keep-heights")
	got, ok := p.Get(ha)
	require.True(t, ok)
	require.Equal(t, a, got)

	p = diskPool(t, dir, 2)
	require.Equal(t, int64(12), p.disk[ha].height)
	got, ok = p.Get(ha)
	require.True(t, ok)
	require.Equal(t, a, got)
}

// A header whose length no transaction the pool holds can have ends the scan there, even if
// the file is that long; damaged bytes under a whole header are caught when read (get hashes).
func TestPoolHeightFilesStopAtAnImplausibleLength(t *testing.T) {
	dir := t.TempDir()
	p := diskPool(t, dir, 5)
	ha, a := poolTxOf('a')
	hb, _ := poolTxOf('b')
	require.NoError(t, p.Persist(7, map[[32]byte][]byte{ha: a}))
	whole := int64(diskEntryHeader + len(a))

	f, err := os.OpenFile(filepath.Join(dir, "7"), os.O_RDWR, 0)
	require.NoError(t, err)
	var hdr [diskEntryHeader]byte
	copy(hdr[:], hb[:])
	size := int64(maxPoolMemBytes/4 + 1)
	binary.BigEndian.PutUint32(hdr[32:], uint32(size))
	_, err = f.WriteAt(hdr[:], whole)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(whole+diskEntryHeader+size)) // sparse: long enough for it
	require.NoError(t, f.Close())

	p = diskPool(t, dir, 5)
	require.Equal(t, whole, heightFileSize(t, dir, 7), "cut at the implausible header")
	require.Equal(t, whole, p.onDisk)
	_, ok := p.Get(hb)
	require.False(t, ok)
	got, ok := p.Get(ha)
	require.True(t, ok)
	require.Equal(t, a, got)

	// One byte of a's bytes flipped: its header is whole, get refuses what it reads.
	f, err = os.OpenFile(filepath.Join(dir, "7"), os.O_RDWR, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte{'z'}, whole-1)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, ok = diskPool(t, dir, 5).Get(ha)
	require.False(t, ok)
}
