package recordstore

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"

	storetypes "cosmossdk.io/store/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"
)

// stateOf yields the batches of a state holding sets, as the extension walks a height's
// batches: record store key and SHA-256.
func stateOf(sets [][2][]byte) func(yield func(key, sum []byte) error) error {
	return func(yield func(key, sum []byte) error) error {
		for _, kv := range sets {
			if err := yield(kv[0], sha256Of(kv[1])); err != nil {
				return err
			}
		}
		return nil
	}
}

// A snapshot is written after later blocks have committed: the pin on the snapshot height
// keeps what later blocks replaced or deleted, so the snapshot still reads every batch of that
// height although retention deleted some in between; their segment stays until the snapshot
// is written, and goes at the next block.
func TestSnapshotPinsTheBatchesOfItsHeight(t *testing.T) {
	dir := t.TempDir()
	s := newSegmentStore(dbm.NewMemDB(), dir)
	s.segmentBytes = 4 << 10 // four 1 KiB batches per segment
	s.pinEvery = 10
	s.keepBlocks = 1 // what height 11 deletes is released at 12, unless pinned
	var sets [][2][]byte
	for off := uint64(0); off < 8; off++ {
		sets = append(sets, [2][]byte{recordStoreKey(t, "orders", 0, off), batchBytes(0, off)})
	}
	require.NoError(t, s.Apply(9, sets, nil))
	require.NoError(t, s.Pin(9))
	require.Empty(t, s.pins, "9 is not a snapshot height")
	require.NoError(t, s.Pin(10))

	// Height 11: retention deletes offsets 0-3 (all of segment 0) and a batch is appended.
	var deletes [][]byte
	for off := uint64(0); off < 4; off++ {
		deletes = append(deletes, recordStoreKey(t, "orders", 0, off))
	}
	require.NoError(t, s.Apply(11, [][2][]byte{{recordStoreKey(t, "orders", 0, 8), batchBytes(0, 8)}}, deletes))
	require.NoError(t, s.Pin(11))
	require.NoError(t, s.Apply(12, nil, nil)) // would release what 11 deleted, but 10 is pinned
	require.NoError(t, s.Pin(12))
	p0 := filepath.Join(dir, "orders-0")
	require.Equal(t, []uint64{0, 4, 8}, segmentNames(t, p0), "segment 0 kept for the snapshot of height 10")

	var got [][]byte
	require.NoError(t, s.Snapshot(10, stateOf(sets), func(key, bz []byte) error {
		_, last, err := ParseKey(key)
		require.NoError(t, err)
		require.Equal(t, uint64(len(got)), last, "in key order")
		got = append(got, bytes.Clone(bz))
		return nil
	}))
	require.Len(t, got, 8, "height 10 had offsets 0-7; offset 8 is height 11's")
	for off, bz := range got {
		require.Equal(t, batchBytes(0, uint64(off)), bz)
	}
	require.Empty(t, s.pins)
	require.NoError(t, s.Apply(13, nil, nil))
	require.Equal(t, []uint64{4, 8}, segmentNames(t, p0), "segment 0 removed once the snapshot is written")
	err := s.Snapshot(10, stateOf(sets), func(_, _ []byte) error { return nil })
	require.ErrorContains(t, err, "bytes of orders/0 at 0 of height 10 are no longer kept")
}

// countingDB counts the keys a database reads (gets and iterator steps): the work of a flush.
type countingDB struct {
	dbm.DB
	steps int
}

func (c *countingDB) Get(k []byte) ([]byte, error) { c.steps++; return c.DB.Get(k) }
func (c *countingDB) Has(k []byte) (bool, error)   { c.steps++; return c.DB.Has(k) }
func (c *countingDB) Iterator(start, end []byte) (dbm.Iterator, error) {
	it, err := c.DB.Iterator(start, end)
	return &countingIterator{it, c}, err
}

type countingIterator struct {
	dbm.Iterator
	c *countingDB
}

func (i *countingIterator) Next() { i.c.steps++; i.Iterator.Next() }

// Pinning a snapshot height is one entry in a list, not a walk over every batch's pointer in
// Precommit (20,000 database steps before); and snapshots that never ran or failed leave at
// most maxPins heights pinned, holding back at most their blocks' replaced bytes.
func TestAttackSnapshotPinsAreCheapAndBounded(t *testing.T) {
	db := &countingDB{DB: dbm.NewMemDB()}
	s := newSegmentStore(db, t.TempDir())
	s.pinEvery, s.keepBlocks = 10, 1
	var sets [][2][]byte
	for off := uint64(0); off < 20_000; off++ {
		sets = append(sets, [2][]byte{recordStoreKey(t, "orders", uint32(off%16), off), batchBytes(0, off)[:16]})
	}
	require.NoError(t, s.Apply(8, sets, nil))
	precommit := func(h uint64) int {
		db.steps = 0
		next := recordStoreKey(t, "orders", 0, 20_000+h)
		require.NoError(t, s.Apply(h, [][2][]byte{{next, batchBytes(0, h)[:16]}}, nil))
		require.NoError(t, s.Pin(h))
		return db.steps
	}
	plain, pinned := precommit(9), precommit(10)
	t.Logf("Precommit over 20,000 batches: %d database steps at a snapshot height, %d at another", pinned, plain)
	require.LessOrEqual(t, pinned, plain+2)

	// 190 more blocks, each deleting a batch (kept a block, or while pinned); 19 snapshot
	// heights whose snapshots never run, one whose extension fails.
	for h := uint64(11); h <= 200; h++ {
		require.NoError(t, s.Apply(h, nil, [][]byte{sets[h][0]}))
		require.NoError(t, s.Pin(h))
		if h == 50 {
			require.Error(t, s.Snapshot(h, stateOf(sets[:3]), func(_, _ []byte) error { return errors.New("disk full") }))
		}
	}
	kept := 0
	prefix := KeptByHeightPrefix.Bytes()
	it, err := db.DB.Iterator(prefix, storetypes.PrefixEndBytes(prefix))
	require.NoError(t, err)
	for ; it.Valid(); it.Next() {
		kept++
	}
	require.NoError(t, it.Close())
	t.Logf("20 snapshot heights, none written: %d pinned (%v), %d replaced pointers kept", len(s.pins), s.pins, kept)
	require.LessOrEqual(t, len(s.pins), maxPins)
	require.LessOrEqual(t, kept, maxPins*int(s.pinEvery)+int(s.keepBlocks))
}
