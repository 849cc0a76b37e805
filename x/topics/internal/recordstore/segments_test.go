package recordstore

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"cosmossdk.io/collections"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func recordStoreKey(t *testing.T, topic string, partition uint32, last uint64) []byte {
	t.Helper()
	key, err := collections.EncodeKeyWithPrefix(types.RecordBytesPrefix.Bytes(), types.BatchKeyCodec, collections.Join(types.TopicPartition{Topic: topic, Partition: partition}, last))
	require.NoError(t, err)
	return key
}

func segmentNames(t *testing.T, dir string) []uint64 {
	t.Helper()
	names, err := segments(dir)
	require.NoError(t, err)
	return names
}

// batchBytes is a distinct 1 KiB value per (partition, offset).
func batchBytes(partition uint32, last uint64) []byte {
	unit := []byte(fmt.Sprintf("%d/%08d|", partition, last))
	return bytes.Repeat(unit, 1024/len(unit)+1)[:1024]
}

// TestSegmentStore: a partition's batches go to segment files named by their first batch's
// last offset, rolled at the segment size; reads return the bytes written; after a restart
// the store reopens the active segment and appends to it; retention's deletions free whole
// segments, and a partition with no batch left loses its directory.
func TestSegmentStore(t *testing.T) {
	db := dbm.NewMemDB()
	dir := t.TempDir()
	s := newSegmentStore(db, dir)
	s.segmentBytes = 4 << 10 // four 1 KiB batches per segment

	height := uint64(0)
	write := func(s *segmentStore, from, to uint64) {
		var sets [][2][]byte
		for p := uint32(0); p < 2; p++ {
			for off := from; off < to; off++ {
				sets = append(sets, [2][]byte{recordStoreKey(t, "orders", p, off), batchBytes(p, off)})
			}
		}
		height++
		require.NoError(t, s.Apply(height, sets, nil))
	}
	remove := func(s *segmentStore, deletes [][]byte) {
		height++
		require.NoError(t, s.Apply(height, nil, deletes))
		// The deleted pointers are kept for s.keepBlocks blocks (reads at those heights and
		// a replay may need them); their segments stay meanwhile.
		for i := uint64(0); i < s.keepBlocks; i++ {
			height++
			require.NoError(t, s.Apply(height, nil, nil))
		}
	}
	read := func(s *segmentStore, p uint32, off uint64) []byte {
		bz, err := s.Get(recordStoreKey(t, "orders", p, off))
		require.NoError(t, err)
		return bz
	}

	write(s, 0, 6) // segments 0 (offsets 0–3) and 4 (4–5, active)
	p0 := filepath.Join(dir, "orders-0")
	require.Equal(t, []uint64{0, 4}, segmentNames(t, p0))
	for off := uint64(0); off < 6; off++ {
		require.Equal(t, batchBytes(0, off), read(s, 0, off))
		require.Equal(t, batchBytes(1, off), read(s, 1, off))
	}
	// The index holds 20-byte pointers, not the bytes.
	ptr, err := db.Get(recordStoreKey(t, "orders", 1, 5))
	require.NoError(t, err)
	require.Len(t, ptr, pointerSize)

	// Restart: a new store over the same database and directory appends to segment 4.
	s = newSegmentStore(db, dir)
	s.segmentBytes = 4 << 10
	write(s, 6, 10) // 6–7 fill segment 4, 8–9 start segment 8
	require.Equal(t, []uint64{0, 4, 8}, segmentNames(t, p0))
	for off := uint64(0); off < 10; off++ {
		require.Equal(t, batchBytes(0, off), read(s, 0, off), "offset %d after restart", off)
	}

	// Retention removes offsets 0–4 of partition 0: segment 0 goes, segment 4 stays (it still
	// holds 5–7); partition 1 is untouched.
	var deletes [][]byte
	for off := uint64(0); off < 5; off++ {
		deletes = append(deletes, recordStoreKey(t, "orders", 0, off))
	}
	remove(s, deletes)
	require.Equal(t, []uint64{4, 8}, segmentNames(t, p0))
	require.Nil(t, read(s, 0, 0))
	require.Equal(t, batchBytes(0, 5), read(s, 0, 5))
	require.Equal(t, []uint64{0, 4, 8}, segmentNames(t, filepath.Join(dir, "orders-1")))

	// A replayed block (a crash after the append, before the pointers) appends its bytes again
	// and points at the new copy; reads are unchanged.
	write(s, 10, 11)
	before := read(s, 0, 10)
	height--
	write(s, 10, 11)
	require.Equal(t, before, read(s, 0, 10))

	// Every batch of partition 0 deleted: its directory goes; new batches start it again.
	deletes = nil
	for off := uint64(5); off < 11; off++ {
		deletes = append(deletes, recordStoreKey(t, "orders", 0, off))
	}
	remove(s, deletes)
	_, err = os.Stat(p0)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.NoError(t, s.Apply(height+1, [][2][]byte{{recordStoreKey(t, "orders", 0, 11), batchBytes(0, 11)}}, nil))
	require.Equal(t, []uint64{11}, segmentNames(t, p0))
	require.Equal(t, batchBytes(0, 11), read(s, 0, 11))
	require.Equal(t, batchBytes(1, 3), read(s, 1, 3))
}

// Compaction rewrites batches out of offset order: a batch's new bytes go to the end of the
// log and its old ones are garbage. A segment is deleted once no batch points into it — not
// while a later-keyed batch still does (the oldest-first rule would lose it) — and after a
// restart the store counts the pointers again.
func TestSegmentStoreFreesSegmentsCompactionEmptied(t *testing.T) {
	db := dbm.NewMemDB()
	dir := t.TempDir()
	s := newSegmentStore(db, dir)
	s.segmentBytes, s.keepBlocks = 4<<10, 1
	key := func(off uint64) []byte { return recordStoreKey(t, "table", 0, off) }
	var sets [][2][]byte
	for off := uint64(0); off < 12; off++ {
		sets = append(sets, [2][]byte{key(off), batchBytes(0, off)})
	}
	require.NoError(t, s.Apply(1, sets, nil)) // segments 0 (0–3), 4 (4–7), 8 (8–11, active)
	p0 := filepath.Join(dir, "table-0")
	require.Equal(t, []uint64{0, 4, 8}, segmentNames(t, p0))

	// Rewrite batch 0 (its first key) and 5, delete 4: every segment still has a live batch.
	small := func(off uint64) []byte { return batchBytes(0, off)[:100] }
	require.NoError(t, s.Apply(2, [][2][]byte{{key(0), small(0)}, {key(5), small(5)}}, [][]byte{key(4)}))
	require.NoError(t, s.Apply(3, nil, nil))
	require.Equal(t, []uint64{0, 4, 8, 9}, segmentNames(t, p0), "segment 0 still holds 1–3, 4 holds 6–7; the new bytes start segment 9 (after the active 8)")
	for off := uint64(1); off < 12; off++ {
		if off == 4 {
			continue
		}
		want := batchBytes(0, off)
		if off == 5 {
			want = small(5)
		}
		require.Equal(t, want, mustGet(t, s, key(off)), "offset %d", off)
	}

	// Restart, then rewrite 6 and 7: segment 4 holds nothing any more and goes; 0 stays.
	s = newSegmentStore(db, dir)
	s.segmentBytes, s.keepBlocks = 4<<10, 1
	require.NoError(t, s.Apply(4, [][2][]byte{{key(6), small(6)}, {key(7), small(7)}}, nil))
	require.Equal(t, []uint64{0, 4, 8, 9}, segmentNames(t, p0), "6 and 7's old bytes are kept for a replay of block 4")
	s = newSegmentStore(db, dir) // and counted after a restart
	s.segmentBytes, s.keepBlocks = 4<<10, 1
	require.NoError(t, s.Apply(5, nil, nil))
	require.Equal(t, []uint64{0, 8, 9}, segmentNames(t, p0))
	require.Equal(t, batchBytes(0, 2), mustGet(t, s, key(2)))
	require.Equal(t, small(7), mustGet(t, s, key(7)))
}

func mustGet(t *testing.T, s *segmentStore, key []byte) []byte {
	t.Helper()
	bz, err := s.Get(key)
	require.NoError(t, err)
	return bz
}

// A node that stops after a flush's pointer batch but before it removed the segments nobody
// points into any more leaves a partition directory no pointer names: the first flush after
// the restart removes it, and nothing that is still pointed into.
func TestSegmentStoreDropsOrphanedPartitionsAfterARestart(t *testing.T) {
	db := dbm.NewMemDB()
	dir := t.TempDir()
	s := newSegmentStore(db, dir)
	var sets [][2][]byte
	for p := uint32(0); p < 3; p++ {
		for off := uint64(0); off < 4; off++ {
			sets = append(sets, [2][]byte{recordStoreKey(t, "orders", p, off), batchBytes(p, off)})
		}
	}
	require.NoError(t, s.Apply(1, sets, nil))
	// Partition 1's pointers gone, its directory left behind; partition 2's kept for recent
	// heights only.
	for off := uint64(0); off < 4; off++ {
		require.NoError(t, db.Delete(recordStoreKey(t, "orders", 1, off)))
	}
	require.NoError(t, s.Apply(2, nil, [][]byte{recordStoreKey(t, "orders", 2, 0), recordStoreKey(t, "orders", 2, 1), recordStoreKey(t, "orders", 2, 2), recordStoreKey(t, "orders", 2, 3)}))
	for _, p := range []string{"orders-0", "orders-1", "orders-2"} {
		require.DirExists(t, filepath.Join(dir, p))
	}

	require.NoError(t, os.Mkdir(filepath.Join(dir, "lost+found"), 0o755))

	s = newSegmentStore(db, dir)
	require.NoError(t, s.Apply(3, nil, nil))
	require.NoDirExists(t, filepath.Join(dir, "orders-1"), "no pointer names it")
	require.DirExists(t, filepath.Join(dir, "lost+found"), "not a partition directory: not the store's")
	require.DirExists(t, filepath.Join(dir, "orders-2"), "its kept pointers still do")
	require.Equal(t, batchBytes(0, 3), mustGet(t, s, recordStoreKey(t, "orders", 0, 3)))
	prev, err := s.Kept(recordStoreKey(t, "orders", 2, 1), sha256Of(batchBytes(2, 1)))
	require.NoError(t, err)
	require.Equal(t, batchBytes(2, 1), prev)
}

func sha256Of(bz []byte) []byte {
	h := sha256.Sum256(bz)
	return h[:]
}
