package recordstore

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cosmossdk.io/collections"
	storetypes "cosmossdk.io/store/types"
	dbm "github.com/cosmos/cosmos-db"

	"github.com/bftlog/bftlog/x/topics/types"
)

// segmentBytes is the size at which a partition's active segment is closed, as Kafka's
// segment.bytes (1 GiB there; smaller here so retention frees disk in smaller steps).
const segmentBytes = 128 << 20

// segmentStore is the committed half of the record store: pointers in db, bytes in dir.
type segmentStore struct {
	db           dbm.DB
	dir          string
	segmentBytes int64
	keepBlocks   uint64 // how long replaced and deleted pointers are kept (types.RecordHistoryBlocks)

	mu    sync.Mutex // guards parts, open and pins (Flush writes; reads only open files)
	parts map[types.TopicPartition]*partitionLog
	// open is the LRU of active segments' handles, at most maxOpen; readSlots bounds the
	// files reads hold open at once (files.go).
	open      *list.List
	maxOpen   int
	readSlots chan struct{}

	// State sync snapshots (snapshot.go): the snapshot heights pinned, every
	// pinEvery-th height; kept pointers replaced after the oldest pinned height stay.
	pinEvery uint64
	pins     []pin
	// orphansDropped: the partition directories and segments no pointer names (a node stopped
	// between a flush's pointer batch and its segment removals) are removed at the first flush.
	orphansDropped bool
}

// partitionLog is a partition's active segment, and how many batches point into each segment.
type partitionLog struct {
	dir    string
	limit  int64 // segment size at which the next append opens a new segment
	active bool  // name and size are those of the segment appends go to
	name   uint64
	size   int64
	next   uint64 // the least name of the next segment
	synced bool   // the active segment holds no unsynced bytes
	// file is the active segment's handle while it is in the store's LRU (elem).
	file *os.File
	elem *list.Element
	// live counts the pointers into each segment, read from the database when the log opens.
	live map[uint64]int
	// end is past the highest last offset pointed to since the log opened: a batch at or above
	// it is a new append (no old pointer to release: no database read on the produce path).
	end uint64
}

func newSegmentStore(db dbm.DB, dir string) *segmentStore {
	return &segmentStore{db: db, dir: dir, segmentBytes: segmentBytes, keepBlocks: types.RecordHistoryBlocks, parts: map[types.TopicPartition]*partitionLog{},
		open: list.New(), maxOpen: maxOpenSegments, readSlots: make(chan struct{}, maxReadFiles)}
}

// pointer is where a batch's bytes are: segment name, position and length.
type pointer struct {
	segment uint64
	pos     uint64
	length  uint32
}

const pointerSize = 20

func (p pointer) bytes() []byte {
	out := make([]byte, pointerSize)
	binary.BigEndian.PutUint64(out[0:8], p.segment)
	binary.BigEndian.PutUint64(out[8:16], p.pos)
	binary.BigEndian.PutUint32(out[16:20], p.length)
	return out
}

func parsePointer(bz []byte) (pointer, error) {
	if len(bz) != pointerSize {
		return pointer{}, fmt.Errorf("record pointer of %d bytes, want %d", len(bz), pointerSize)
	}
	return pointer{binary.BigEndian.Uint64(bz[0:8]), binary.BigEndian.Uint64(bz[8:16]), binary.BigEndian.Uint32(bz[16:20])}, nil
}

// partitionDir is tp's directory (partitionDirBase).
func (s *segmentStore) partitionDir(tp types.TopicPartition) string {
	return filepath.Join(s.dir, partitionDirBase(tp))
}

func segmentFile(dir string, name uint64) string {
	return filepath.Join(dir, fmt.Sprintf("%020d.log", name))
}

// segments lists a partition directory's segment names in order.
func segments(dir string) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			if v, err := strconv.ParseUint(n, 10, 64); err == nil {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Get reads a batch's bytes; nil when the store has no pointer for key.
func (s *segmentStore) Get(key []byte) ([]byte, error) {
	for retried := false; ; retried = true {
		bz, err := s.db.Get(key)
		if err != nil || bz == nil {
			return nil, err
		}
		p, err := parsePointer(bz)
		if err != nil {
			return nil, err
		}
		out, err := s.read(key, p)
		if errors.Is(err, os.ErrNotExist) && !retried {
			// Deleted since the pointer was read (a flush released it meanwhile): the batch
			// is gone or has new bytes.
			continue
		}
		return out, err
	}
}

// Kept reads the kept bytes of key whose SHA-256 is sum (a state of the last
// types.RecordHistoryBlocks heights holds them); nil when none are kept.
func (s *segmentStore) Kept(key, sum []byte) ([]byte, error) {
	prefix := keptPrefix(key[len(types.RecordBytesPrefix.Bytes()):])
	it, err := s.db.Iterator(prefix, storetypes.PrefixEndBytes(prefix))
	if err != nil {
		return nil, err
	}
	var ptrs []pointer
	for ; it.Valid(); it.Next() {
		if p, err := parsePointer(it.Value()); err == nil {
			ptrs = append(ptrs, p)
		}
	}
	if err := it.Close(); err != nil {
		return nil, err
	}
	for _, p := range ptrs {
		bz, err := s.read(key, p)
		if errors.Is(err, os.ErrNotExist) { // released since
			continue
		}
		if err != nil {
			return nil, err
		}
		if h := sha256.Sum256(bz); bytes.Equal(h[:], sum) {
			return bz, nil
		}
	}
	return nil, nil
}

// read reads the bytes p points to for key's partition.
func (s *segmentStore) read(key []byte, p pointer) ([]byte, error) {
	tp, _, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	return s.readSegment(s.partitionDir(tp), p)
}

// log returns tp's partition log, finding its active segment on disk after a restart; its
// file is opened when appended to.
func (s *segmentStore) log(tp types.TopicPartition) (*partitionLog, error) {
	if l, ok := s.parts[tp]; ok {
		return l, nil
	}
	l := &partitionLog{dir: s.partitionDir(tp), limit: s.segmentBytes, live: map[uint64]int{}, synced: true}
	names, err := segments(l.dir)
	if err != nil {
		return nil, err
	}
	var last uint64
	if len(names) > 0 {
		last = names[len(names)-1]
	}
	var lastEnd uint64 // past the last byte pointed to in the last segment
	for _, prefix := range [][]byte{partitionPrefix(types.RecordBytesPrefix, tp), partitionPrefix(KeptPrefix, tp)} {
		it, err := s.db.Iterator(prefix, storetypes.PrefixEndBytes(prefix))
		if err != nil {
			return nil, err
		}
		for ; it.Valid(); it.Next() {
			p, err := parsePointer(it.Value())
			if err != nil {
				it.Close()
				return nil, err
			}
			l.live[p.segment]++
			if _, lastOffset, err := ParseKey(it.Key()); err == nil { // kept pointers' keys do not parse
				l.end = max(l.end, lastOffset+1)
			}
			if len(names) > 0 && p.segment == last {
				lastEnd = max(lastEnd, p.pos+uint64(p.length))
			}
		}
		it.Close()
	}
	if len(names) > 0 {
		info, err := os.Stat(segmentFile(l.dir, last))
		if err != nil {
			return nil, err
		}
		// A segment shorter than its pointers say lost bytes: appending there would put new
		// bytes where the pointers expect the lost ones, so the next append starts a new one.
		if l.active = uint64(info.Size()) >= lastEnd; l.active {
			l.name, l.size = last, info.Size()
		}
		l.next = last + 1
	}
	s.parts[tp] = l
	return l, nil
}

// append writes bz to l as the batch whose last offset is lastOffset and says where it went.
func (s *segmentStore) append(l *partitionLog, lastOffset uint64, bz []byte) (pointer, error) {
	if !l.active || l.size >= l.limit {
		// A new segment is named by its first batch's last offset, which is above every
		// offset before it; a replay may reopen the segment it had started. A compacted
		// batch's new bytes carry an old offset: the next name is then the last one's plus
		// one, so segments keep rolling and old ones can empty.
		if err := s.roll(l, max(lastOffset, l.next)); err != nil {
			return pointer{}, err
		}
		l.next = l.name + 1
	}
	f, err := s.file(l)
	if err != nil {
		return pointer{}, err
	}
	if _, err := f.WriteAt(bz, l.size); err != nil {
		return pointer{}, err
	}
	p := pointer{segment: l.name, pos: uint64(l.size), length: uint32(len(bz))}
	l.size += int64(len(bz))
	l.synced = false
	return p, nil
}

// Apply commits the block at height's writes: bytes appended and synced, then pointers
// written and removed in one synced database batch, then the segments no batch points into
// any more deleted. The pointers the block replaces or deletes are kept for s.keepBlocks
// blocks.
func (s *segmentStore) Apply(height uint64, sets [][2][]byte, deletes [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.orphansDropped {
		if err := s.dropOrphans(); err != nil {
			return err
		}
		if err := s.sweep(); err != nil {
			return err
		}
		s.orphansDropped = true
	}
	batch := s.db.NewBatch()
	defer batch.Close()
	shrunk := map[types.TopicPartition]bool{}
	if err := s.releaseKept(batch, height, shrunk); err != nil {
		return err
	}
	var touched []*partitionLog
	for _, kv := range sets {
		tp, last, err := ParseKey(kv[0])
		if err != nil {
			return err
		}
		l, err := s.log(tp)
		if err != nil {
			return err
		}
		if !slices.Contains(touched, l) {
			touched = append(touched, l)
		}
		// A compacted batch's new bytes replace its old ones, kept for a replay.
		if last < l.end {
			if released, err := s.keep(batch, l, kv[0], height); err != nil {
				return err
			} else if released {
				shrunk[tp] = true
			}
		}
		l.end = max(l.end, last+1)
		p, err := s.append(l, last, kv[1])
		if err != nil {
			return err
		}
		l.live[p.segment]++
		if err := batch.Set(kv[0], p.bytes()); err != nil {
			return err
		}
	}
	flushStep("appended")
	for _, l := range touched {
		if !l.synced { // else synced when its handle was closed
			f, err := s.file(l)
			if err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			l.synced = true
		}
	}
	flushStep("synced")
	for _, key := range deletes {
		tp, _, err := ParseKey(key)
		if err != nil {
			return err
		}
		l, err := s.log(tp)
		if err != nil {
			return err
		}
		if released, err := s.keep(batch, l, key, height); err != nil {
			return err
		} else if released {
			shrunk[tp] = true
		}
		if err := batch.Delete(key); err != nil {
			return err
		}
	}
	// The partitions whose segments go next, for a node that stops before they are gone.
	for tp := range shrunk {
		if err := batch.Set(partitionPrefix(SweepPrefix, tp), []byte{1}); err != nil {
			return err
		}
	}
	if err := batch.WriteSync(); err != nil {
		return err
	}
	flushStep("pointers written")
	return s.dropAll(shrunk)
}

// releaseKept deletes the pointers kept from heights at least s.keepBlocks before
// height and not after a pinned snapshot height, uncounting them; shrunk gets their
// partitions. It releases those of at most two heights: once a pin goes, what it held back
// is released a height more per block than the chain keeps, not all in one Precommit.
func (s *segmentStore) releaseKept(batch dbm.Batch, height uint64, shrunk map[types.TopicPartition]bool) error {
	if height < s.keepBlocks {
		return nil
	}
	upTo := height - s.keepBlocks
	for _, p := range s.pins {
		upTo = min(upTo, p.height) // a snapshot of p.height reads what later heights replaced
	}
	prefix := KeptByHeightPrefix.Bytes()
	end := binary.BigEndian.AppendUint64(bytes.Clone(prefix), upTo+1)
	it, err := s.db.Iterator(prefix, end)
	if err != nil {
		return err
	}
	var (
		due     [][]byte
		heights int
		last    uint64
	)
	for ; it.Valid(); it.Next() {
		if h := binary.BigEndian.Uint64(it.Key()[len(prefix):]); heights == 0 || h != last {
			if heights++; heights > 2 {
				break
			}
			last = h
		}
		due = append(due, bytes.Clone(it.Key()))
	}
	if err := it.Close(); err != nil {
		return err
	}
	for _, ik := range due {
		h, rest := binary.BigEndian.Uint64(ik[len(prefix):]), ik[len(prefix)+8:]
		_, k, err := types.BatchKeyCodec.Decode(rest)
		if err != nil {
			return err
		}
		sk := binary.BigEndian.AppendUint64(keptPrefix(rest), h)
		if bz, err := s.db.Get(sk); err != nil {
			return err
		} else if bz != nil {
			p, err := parsePointer(bz)
			if err != nil {
				return err
			}
			l, err := s.log(k.K1())
			if err != nil {
				return err
			}
			l.unlive(p.segment)
			shrunk[k.K1()] = true
		}
		if err := batch.Delete(sk); err != nil {
			return err
		}
		if err := batch.Delete(ik); err != nil {
			return err
		}
	}
	return nil
}

// keep keeps the pointer key holds (being replaced or deleted at height), if any. When this
// height's first attempt already kept one — the block's original bytes — the pointer is that
// attempt's own and is released instead, which keep says.
func (s *segmentStore) keep(batch dbm.Batch, l *partitionLog, key []byte, height uint64) (bool, error) {
	cur, err := s.db.Get(key)
	if err != nil || cur == nil {
		return false, err
	}
	p, err := parsePointer(cur)
	if err != nil {
		return false, err
	}
	sk := keptKey(key, height)
	if has, err := s.db.Has(sk); err != nil {
		return false, err
	} else if has {
		l.unlive(p.segment)
		return true, nil
	}
	if err := batch.Set(sk, cur); err != nil {
		return false, err
	}
	return false, batch.Set(keptByHeightKey(key, height), []byte{1})
}

func (l *partitionLog) unlive(segment uint64) {
	if l.live[segment]--; l.live[segment] <= 0 {
		delete(l.live, segment)
	}
}

// dropOrphans removes the partition directories that no pointer, current or kept, names. It
// reads one key per partition, seeking past the rest.
func (s *segmentStore) dropOrphans() error {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for _, prefix := range []collections.Prefix{types.RecordBytesPrefix, KeptPrefix} {
		start, end := prefix.Bytes(), storetypes.PrefixEndBytes(prefix.Bytes())
		for {
			it, err := s.db.Iterator(start, end)
			if err != nil {
				return err
			}
			if !it.Valid() {
				it.Close()
				break
			}
			_, tp, err := types.TopicPartitionKey.DecodeNonTerminal(it.Key()[len(prefix.Bytes()):])
			it.Close()
			if err != nil {
				return err
			}
			named[filepath.Base(s.partitionDir(tp))] = true
			if start = storetypes.PrefixEndBytes(partitionPrefix(prefix, tp)); start == nil {
				break
			}
		}
	}
	for _, e := range entries {
		if !e.IsDir() || named[e.Name()] || !partitionDirName(e.Name()) {
			continue
		}
		// Best effort: a directory it cannot remove costs disk, not the node.
		_ = os.RemoveAll(filepath.Join(s.dir, e.Name()))
	}
	return nil
}

// partitionDirName says whether name has the form of a partition directory, <topic>-<n>:
// anything else under the records directory is not the store's.
func partitionDirName(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return false
	}
	_, err := strconv.ParseUint(name[i+1:], 10, 32)
	return err == nil
}

// dropUnused deletes tp's segments that no batch points into, except the active one; with no
// batch left, every segment and the directory go.
func (s *segmentStore) dropUnused(tp types.TopicPartition) error {
	l, err := s.log(tp)
	if err != nil {
		return err
	}
	if len(l.live) == 0 {
		if err := s.closeFile(l); err != nil {
			return err
		}
		delete(s.parts, tp)
		if err := os.RemoveAll(l.dir); err != nil {
			return err
		}
		flushStep("segment removed")
		return nil
	}
	names, err := segments(l.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if l.active && name == l.name || l.live[name] > 0 {
			continue
		}
		if err := os.Remove(segmentFile(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		flushStep("segment removed")
	}
	return nil
}
