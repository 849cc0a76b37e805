package recordstore

import (
	"math"
	"os"
	"strings"
	"syscall"
	"testing"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// limitOpenFiles lowers this process's open file limit to n for the test, as an operator's
// `ulimit -n` does.
func limitOpenFiles(t *testing.T, n uint64) {
	t.Helper()
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: min(n, old.Max), Max: old.Max}))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// openFiles counts this process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries) - 1 // ReadDir's own
}

// fastTempDir is a temporary directory on tmpfs where there is one: tests of file handles
// need not wait for thousands of fsyncs.
func fastTempDir(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/dev/shm"); err != nil {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("/dev/shm", "bftlog-records-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// A chain of 20 topics × 256 partitions written, partly deleted, read back, snapshotted and
// restored under `ulimit -n 1024`: the segment store keeps at most maxOpenSegments segments
// open whatever the count of partitions (it held one per partition ever written, deleted from
// or restored, and EMFILE in Precommit halted the node).
func TestAttackSegmentStoreOpenFilesBounded(t *testing.T) {
	dir, restored := fastTempDir(t), fastTempDir(t)
	limitOpenFiles(t, 1024)
	s := newSegmentStore(dbm.NewMemDB(), dir)
	s.keepBlocks = 1
	peak := openFiles(t)
	sample := func() { peak = max(peak, openFiles(t)) }
	defer func(step func(string)) { flushStep = step }(flushStep)
	flushStep = func(string) { sample() }
	const topics, partitions = 20, 256
	var sets, live [][2][]byte
	var deletes [][]byte
	for tp := range topics {
		for p := uint32(0); p < partitions; p++ {
			for off := uint64(0); off < 2; off++ {
				sets = append(sets, [2][]byte{recordStoreKey(t, topicName(tp), p, off), batchBytes(p, off)[:64]})
			}
			deletes = append(deletes, recordStoreKey(t, topicName(tp), p, 0))
			live = append(live, sets[len(sets)-1])
		}
	}
	require.NoError(t, s.Apply(1, sets, nil))
	require.NoError(t, s.Apply(2, nil, deletes)) // retention: every partition's first batch
	require.NoError(t, s.Apply(3, nil, nil))     // their kept pointers released, segments kept (offset 1 lives)
	for i, kv := range sets {
		bz, err := s.Get(kv[0])
		require.NoError(t, err)
		if i%2 == 0 {
			require.Nil(t, bz)
		} else {
			require.Equal(t, kv[1], bz)
		}
		if i%512 == 0 {
			sample()
		}
	}
	// State sync: the snapshot of height 3 read, and restored into another node's store.
	var payloads [][2][]byte
	require.NoError(t, s.Snapshot(3, stateOf(live), func(key, bz []byte) error {
		payloads = append(payloads, [2][]byte{key, bz})
		return nil
	}))
	to := newSegmentStore(dbm.NewMemDB(), restored)
	require.NoError(t, to.Restore(3, func(put func(key, bz []byte) error) error {
		for _, kv := range payloads {
			if err := put(kv[0], kv[1]); err != nil {
				return err
			}
		}
		return nil
	}))
	for _, kv := range live {
		require.Equal(t, kv[1], mustGet(t, to, kv[0]))
	}
	sample()
	t.Logf("%d partitions written, deleted from, read, snapshotted and restored under RLIMIT_NOFILE 1024: peak %d open files", topics*partitions, peak)
	require.LessOrEqual(t, peak, maxOpenSegments+maxReadFiles+16)
}

func topicName(i int) string { return "topic" + strings.Repeat("x", i) }

// The longest valid topic name with the highest partition number, and a name genesis would
// refuse, map to directory names a file system takes (NAME_MAX 255): written, read after a
// restart and removed.
func TestAttackSegmentPathsFitTheFileSystem(t *testing.T) {
	longest := strings.Repeat("t", types.MaxTopicNameLength)
	require.NoError(t, types.ValidateTopicName(longest))
	invalid := strings.Repeat("/..", types.MaxTopicNameLength/3)
	db, dir := dbm.NewMemDB(), t.TempDir()
	s := newSegmentStore(db, dir)
	s.keepBlocks = 1
	cases := []struct {
		topic     string
		partition uint32
	}{{longest, math.MaxUint32}, {longest, 0}, {longest[:240], 1_000_000}, {"orders", math.MaxUint32}, {invalid, math.MaxUint32}}
	var sets [][2][]byte
	var deletes [][]byte
	for i, c := range cases {
		sets = append(sets, [2][]byte{recordStoreKey(t, c.topic, c.partition, 7), batchBytes(uint32(i), 7)})
		deletes = append(deletes, recordStoreKey(t, c.topic, c.partition, 7))
	}
	require.NoError(t, s.Apply(1, sets, nil))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, len(cases), "one directory per partition, none shared")
	for _, e := range entries {
		require.LessOrEqual(t, len(e.Name()), 255)
		t.Logf("%d-byte directory name %.40s…", len(e.Name()), e.Name())
	}
	s = newSegmentStore(db, dir) // restart
	s.keepBlocks = 1
	for _, kv := range sets {
		require.Equal(t, kv[1], mustGet(t, s, kv[0]))
	}
	require.NoError(t, s.Apply(2, nil, deletes))
	require.NoError(t, s.Apply(3, nil, nil))
	entries, err = os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries, "every partition's directory removed with its last batch")
}
