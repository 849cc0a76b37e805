package keeper

import (
	"bytes"
	"path/filepath"
	"testing"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"
)

// A snapshot is written after later blocks have committed: the batch list pinned at the
// snapshot height still reads every batch of that height although retention deleted some in
// between, the segments they were in stay until the snapshot is written, and then go.
func TestSnapshotPinsTheBatchesOfItsHeight(t *testing.T) {
	dir := t.TempDir()
	s := newSegmentStore(dbm.NewMemDB(), dir)
	s.segmentBytes = 4 << 10 // four 1 KiB batches per segment
	s.pinEvery = 10
	s.keepBlocks = 1 // what height 11 deletes is released at 12
	var sets [][2][]byte
	for off := uint64(0); off < 8; off++ {
		sets = append(sets, [2][]byte{recordStoreKey(t, "orders", 0, off), batchBytes(0, off)})
	}
	require.NoError(t, s.apply(9, sets, nil))
	require.NoError(t, s.pinAt(9))
	require.Empty(t, s.pins, "9 is not a snapshot height")
	require.NoError(t, s.pinAt(10))

	// Height 11: retention deletes offsets 0-3 (all of segment 0) and a batch is appended.
	var deletes [][]byte
	for off := uint64(0); off < 4; off++ {
		deletes = append(deletes, recordStoreKey(t, "orders", 0, off))
	}
	require.NoError(t, s.apply(11, [][2][]byte{{recordStoreKey(t, "orders", 0, 8), batchBytes(0, 8)}}, deletes))
	require.NoError(t, s.pinAt(11))
	require.NoError(t, s.apply(12, nil, nil)) // releases what 11 deleted (kept for its replay)
	require.NoError(t, s.pinAt(12))
	p0 := filepath.Join(dir, "orders-0")
	require.Equal(t, []uint64{0, 4, 8}, segmentNames(t, p0), "segment 0 kept for the snapshot of height 10")

	var got [][]byte
	require.NoError(t, s.snapshot(10, func(key, bz []byte) error {
		_, last, err := recordKey(key)
		require.NoError(t, err)
		require.Equal(t, uint64(len(got)), last, "in key order")
		got = append(got, bytes.Clone(bz))
		return nil
	}))
	require.Len(t, got, 8, "height 10 had offsets 0-7; offset 8 is height 11's")
	for off, bz := range got {
		require.Equal(t, batchBytes(0, uint64(off)), bz)
	}
	require.Equal(t, []uint64{4, 8}, segmentNames(t, p0), "segment 0 removed once the snapshot is written")
	require.Empty(t, s.pins)
	require.ErrorContains(t, s.snapshot(20, func(_, _ []byte) error { return nil }), "no record list pinned at height 20")
}
