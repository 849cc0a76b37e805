package recordstore

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	storetypes "cosmossdk.io/store/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Open files: a Kafka broker keeps every partition's active segment open, one file descriptor
// per partition; 20 topics of 256 partitions are 5,120, past a common `ulimit -n` of 1,024, and
// an open failing with EMFILE inside Precommit halts every validator alike. So the handles of
// active segments are an LRU of maxOpenSegments (the least recently appended to is synced, if
// it holds unsynced bytes, and closed), and reads — queries, compaction, snapshots — open their
// segment and close it again, at most maxReadFiles at once whatever the count of queries.
const (
	maxOpenSegments = 128
	maxReadFiles    = 64
)

// maxDirName is the longest name of a directory entry (NAME_MAX of Linux file systems).
const maxDirName = 255

// flushStep marks the steps of a flush ("appended", "synced", "pointers written", "segment
// removed"); the crash tests cut the process off at one. It does nothing otherwise.
var flushStep = func(string) {}

// partitionDirBase is tp's directory name: Kafka's <topic>-<partition>. A name too long for
// a directory entry (a 249-character topic name and a 10-digit partition) or not a valid topic
// name (genesis is checked, but the file system must not depend on it) becomes <its first 128
// characters, others as '_'>+<SHA-256 of the name>-<partition>: '+' is in no topic name, so it
// never meets a valid name's directory, and fits in 204 characters.
func partitionDirBase(tp types.TopicPartition) string {
	suffix := "-" + strconv.FormatUint(uint64(tp.Partition), 10)
	if types.ValidateTopicName(tp.Topic) == nil && len(tp.Topic)+len(suffix) <= maxDirName {
		return tp.Topic + suffix
	}
	prefix := []byte(tp.Topic[:min(len(tp.Topic), 128)])
	for i, c := range prefix {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			prefix[i] = '_'
		}
	}
	sum := sha256.Sum256([]byte(tp.Topic))
	return string(prefix) + "+" + hex.EncodeToString(sum[:]) + suffix
}

// syncDir makes the entries created in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// mkdirSynced creates dir and its missing parents, syncing the parent of each one created.
func mkdirSynced(dir string) error {
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := mkdirSynced(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// file returns l's active segment open for appends, from the LRU or opened again.
func (s *segmentStore) file(l *partitionLog) (*os.File, error) {
	if l.file != nil {
		s.open.MoveToFront(l.elem)
		return l.file, nil
	}
	f, err := os.OpenFile(segmentFile(l.dir, l.name), os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	return f, s.track(l, f)
}

// track puts f, l's active segment, into the LRU, closing the least recently used handles
// beyond maxOpenSegments.
func (s *segmentStore) track(l *partitionLog, f *os.File) error {
	l.file, l.elem = f, s.open.PushFront(l)
	for s.open.Len() > s.maxOpen {
		if err := s.closeFile(s.open.Back().Value.(*partitionLog)); err != nil {
			return err
		}
	}
	return nil
}

// closeFile closes l's handle, syncing first the bytes appended since the last sync.
func (s *segmentStore) closeFile(l *partitionLog) error {
	if l.file == nil {
		return nil
	}
	var err error
	if !l.synced {
		if err = l.file.Sync(); err == nil {
			l.synced = true
		}
	}
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	s.open.Remove(l.elem)
	l.file, l.elem = nil, nil
	return err
}

// closeAll closes every handle (a reset, a restore's end).
func (s *segmentStore) closeAll() error {
	var err error
	for s.open.Len() > 0 {
		err = errors.Join(err, s.closeFile(s.open.Front().Value.(*partitionLog)))
	}
	return err
}

// roll makes name l's active segment: the file (and directory) created durably, the segment
// before it synced and closed. A replay reopens the segment its first attempt created.
func (s *segmentStore) roll(l *partitionLog, name uint64) error {
	if err := s.closeFile(l); err != nil {
		return err
	}
	if err := mkdirSynced(l.dir); err != nil {
		return err
	}
	path := segmentFile(l.dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	created := err == nil
	if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
	}
	if err != nil {
		return err
	}
	info, err := f.Stat()
	if err == nil && created {
		err = syncDir(l.dir)
	}
	if err != nil {
		f.Close()
		return err
	}
	l.active, l.name, l.size, l.synced = true, name, info.Size(), true
	return s.track(l, f)
}

// readSegment reads the bytes p points to in dir's segment, holding one of maxReadFiles
// slots. A segment cut short (a disk that lost what it had acknowledged) is named.
func (s *segmentStore) readSegment(dir string, p pointer) ([]byte, error) {
	s.readSlots <- struct{}{}
	defer func() { <-s.readSlots }()
	name := segmentFile(dir, p.segment)
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := make([]byte, p.length)
	if _, err := f.ReadAt(out, int64(p.pos)); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("segment file %s is cut short: it holds no %d bytes at %d: %w", name, p.length, p.pos, io.ErrUnexpectedEOF)
		}
		return nil, fmt.Errorf("segment file %s: %w", name, err)
	}
	return out, nil
}

// dropAll removes the unused segments of the partitions in shrunk, then their sweep marks.
func (s *segmentStore) dropAll(shrunk map[types.TopicPartition]bool) error {
	if len(shrunk) == 0 {
		return nil
	}
	done := s.db.NewBatch()
	defer done.Close()
	for tp := range shrunk {
		if err := s.dropUnused(tp); err != nil {
			return err
		}
		if err := done.Delete(partitionPrefix(SweepPrefix, tp)); err != nil {
			return err
		}
	}
	return done.Write() // unsynced: a mark lost sweeps its partition once more
}

// sweep removes, after a restart, the segments a flush left behind when the node stopped
// between its pointer batch and its removals.
func (s *segmentStore) sweep() error {
	prefix := SweepPrefix.Bytes()
	it, err := s.db.Iterator(prefix, storetypes.PrefixEndBytes(prefix))
	if err != nil {
		return err
	}
	marked := map[types.TopicPartition]bool{}
	for ; it.Valid(); it.Next() {
		_, tp, err := types.TopicPartitionKey.DecodeNonTerminal(it.Key()[len(prefix):])
		if err != nil {
			it.Close()
			return err
		}
		marked[tp] = true
	}
	if err := it.Close(); err != nil {
		return err
	}
	return s.dropAll(marked)
}
