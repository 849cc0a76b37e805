package recordstore

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// The crash tests run the block being cut off in a child process (this test binary again),
// which kills itself with SIGKILL at the named step of the flush.
const (
	crashStepEnv = "BFTLOG_RECORDS_CRASH_STEP"
	crashDirEnv  = "BFTLOG_RECORDS_CRASH_DIR"
)

// crashChain is the blocks of the crash tests, on a store of 4 KiB segments keeping replaced
// pointers one block: block 1 writes orders/0 offsets 0-7 (segments 0 and 4) and orders/1
// 0-3; block 2 deletes orders/0 0-7 and rewrites orders/1 offset 1 (compaction); block 3
// appends orders/0 8-11 (a new segment) and orders/1 4, and releases block 2's kept pointers,
// removing orders/0's segments 0 and 4.
type crashChain struct {
	t      *testing.T
	sets   [4][][2][]byte
	dels   [4][][]byte
	result map[string][]byte // key → bytes after block 3 (nil: deleted)
}

func newCrashChain(t *testing.T) *crashChain {
	c := &crashChain{t: t, result: map[string][]byte{}}
	put := func(h int, p uint32, off uint64, bz []byte) {
		key := recordStoreKey(t, "orders", p, off)
		c.sets[h] = append(c.sets[h], [2][]byte{key, bz})
		c.result[string(key)] = bz
	}
	for off := uint64(0); off < 8; off++ {
		put(1, 0, off, batchBytes(0, off))
	}
	for off := uint64(0); off < 4; off++ {
		put(1, 1, off, batchBytes(1, off))
	}
	for off := uint64(0); off < 8; off++ {
		key := recordStoreKey(t, "orders", 0, off)
		c.dels[2] = append(c.dels[2], key)
		c.result[string(key)] = nil
	}
	put(2, 1, 1, batchBytes(1, 1)[:100])
	for off := uint64(8); off < 12; off++ {
		put(3, 0, off, batchBytes(0, off))
	}
	put(3, 1, 4, batchBytes(1, 4))
	return c
}

// open opens the store over dir's database, as a node (re)starting does.
func (c *crashChain) open(dir string) (*segmentStore, func()) {
	db, err := dbm.NewGoLevelDB("records", dir, nil)
	require.NoError(c.t, err)
	s := newSegmentStore(db, filepath.Join(dir, "records"))
	s.segmentBytes, s.keepBlocks = 4<<10, 1
	return s, func() { require.NoError(c.t, db.Close()) }
}

func (c *crashChain) block(s *segmentStore, h int) error {
	return s.Apply(uint64(h), c.sets[h], c.dels[h])
}

// check requires every batch of block 3's state to read back with its SHA-256 and every
// segment file on disk to be named by a pointer, current or kept.
func (c *crashChain) check(s *segmentStore) {
	t := c.t
	for key, want := range c.result {
		got, err := s.Get([]byte(key))
		require.NoError(t, err)
		if want == nil {
			require.Nil(t, got)
			continue
		}
		require.Equal(t, sha256Of(want), sha256Of(got), "SHA-256 of %x", key)
	}
	named := map[string]bool{}
	for _, prefix := range []byte{types.RecordBytesPrefix.Bytes()[0], KeptPrefix.Bytes()[0]} {
		it, err := s.db.Iterator([]byte{prefix}, []byte{prefix + 1})
		require.NoError(t, err)
		for ; it.Valid(); it.Next() {
			p, err := parsePointer(it.Value())
			require.NoError(t, err)
			_, tp, err := types.TopicPartitionKey.DecodeNonTerminal(it.Key()[1:])
			require.NoError(t, err)
			named[segmentFile(s.partitionDir(tp), p.segment)] = true
		}
		require.NoError(t, it.Close())
	}
	files, err := filepath.Glob(filepath.Join(s.dir, "*", "*.log"))
	require.NoError(t, err)
	for _, f := range files {
		require.True(t, named[f], "segment file %s is named by no pointer", f)
	}
}

// A node's power cut at each step of a flush — after the appends, after their sync, after the
// pointer batch, between two segment removals — recovers on restart: the block replayed, every
// batch reads back with its SHA-256, and no segment file is left that no pointer names (after
// the pointer batch, the segments it freed stayed forever before).
func TestFaultSegmentStoreSurvivesPowerCuts(t *testing.T) {
	if step := os.Getenv(crashStepEnv); step != "" {
		crashChild(t, step, os.Getenv(crashDirEnv))
		return
	}
	for _, step := range []string{"appended", "synced", "pointers written", "segment removed"} {
		t.Run(step, func(t *testing.T) {
			c := newCrashChain(t)
			dir := t.TempDir()
			s, closeDB := c.open(dir)
			require.NoError(t, c.block(s, 1))
			require.NoError(t, c.block(s, 2))
			closeDB()

			cmd := exec.Command(os.Args[0], "-test.run=^TestFaultSegmentStoreSurvivesPowerCuts$")
			cmd.Env = append(os.Environ(), crashStepEnv+"="+step, crashDirEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the child ran block 3 to its end: %v\n%s", err, out)
			require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), "%s", out)
			left, err := filepath.Glob(filepath.Join(dir, "records", "orders-0", "*.log"))
			require.NoError(t, err)

			s, closeDB = c.open(dir) // restart: the block was not committed, so it is replayed
			defer closeDB()
			require.NoError(t, c.block(s, 3))
			c.check(s)
			t.Logf("cut at %q with %d segment files of orders/0 on disk; replayed: every batch's SHA-256 matches, no unnamed segment", step, len(left))
			require.NoError(t, s.Apply(4, nil, nil))
			c.check(s)
		})
	}
}

// crashChild runs block 3 over dir's store and is killed at step.
func crashChild(t *testing.T, step, dir string) {
	c := newCrashChain(t)
	s, _ := c.open(dir)
	flushStep = func(at string) {
		if at == step {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	require.NoError(t, c.block(s, 3))
}

// A segment file cut short (a disk that lost writes it had acknowledged) never serves other
// bytes: reads of what it lost fail naming the file, the next append goes to a new segment
// (it went where the lost bytes were, and a read of them returned the new ones), and the rest
// reads back.
func TestFaultSegmentStoreRefusesATruncatedSegment(t *testing.T) {
	c := newCrashChain(t)
	dir := t.TempDir()
	s, closeDB := c.open(dir)
	require.NoError(t, c.block(s, 1))
	closeDB()
	seg := filepath.Join(dir, "records", "orders-1", "00000000000000000000.log")
	info, err := os.Stat(seg)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(seg, info.Size()-100))

	s, closeDB = c.open(dir)
	defer closeDB()
	next := recordStoreKey(t, "orders", 1, 4)
	require.NoError(t, s.Apply(2, [][2][]byte{{next, batchBytes(1, 4)}}, nil))
	_, err = s.Get(recordStoreKey(t, "orders", 1, 3))
	require.ErrorContains(t, err, seg)
	t.Logf("read of the lost bytes: %v", err)
	for off := uint64(0); off < 3; off++ {
		require.Equal(t, batchBytes(1, off), mustGet(t, s, recordStoreKey(t, "orders", 1, off)))
	}
	require.True(t, bytes.Equal(batchBytes(1, 4), mustGet(t, s, next)))
	require.Equal(t, []uint64{0, 4}, segmentNames(t, filepath.Dir(seg)), "the next batch in a new segment")
}
