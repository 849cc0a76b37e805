package keeper

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"cosmossdk.io/log"
	snapshottypes "cosmossdk.io/store/snapshots/types"
	storetypes "cosmossdk.io/store/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// State sync carries the record bytes as a snapshot extension: the multistore's snapshot holds
// each batch's metadata and SHA-256 (in IAVL) but not the bytes, which live in segment files.
//
// A snapshot is taken in the background after its height commits, while later blocks go on —
// and their retention may delete batches the snapshot must still hold. So at the Precommit of
// a snapshot height the segment store pins the list of every batch's pointer (the batches of
// exactly that state) and, until the snapshot is written, defers removing segment files; the
// extension then reads the pinned pointers. Every node's snapshot of a height carries the same
// batches in the same order.
//
// The peers a new node restores from are untrusted: CometBFT checks the restored multistore
// against the app hash of a light-client-verified header, and the restore here checks every
// batch's bytes against the SHA-256 in that verified state and that none is missing or added.

// RecordSnapshotFormat is the extension's payload format: per batch, in key order, one payload
// of uvarint(len(key)) | record store key | record batch bytes.
const RecordSnapshotFormat uint32 = 1

// RecordSnapshotter is the x/topics record bytes snapshot extension.
type RecordSnapshotter struct {
	k     Keeper
	cms   storetypes.MultiStore
	store *segmentStore
}

var _ snapshottypes.ExtensionSnapshotter = (*RecordSnapshotter)(nil)

// RecordSnapshotter returns the snapshot extension of the keeper's record store, reading the
// restored state from cms; nil when the record bytes are not in segment files (they are then
// in the multistore's database, outside snapshots: nodes without a data directory only).
func (k Keeper) RecordSnapshotter(cms storetypes.MultiStore) *RecordSnapshotter {
	if k.recordStore == nil {
		return nil
	}
	s, ok := k.recordStore.committed.(*segmentStore)
	if !ok {
		return nil
	}
	return &RecordSnapshotter{k: k, cms: cms, store: s}
}

// SnapshotEvery makes the store pin its batch list at every interval-th height, the
// snapshot interval of the node's snapshot manager (0: never).
func (s RecordStore) SnapshotEvery(interval uint64) {
	if seg, ok := s.committed.(*segmentStore); ok {
		seg.mu.Lock()
		seg.pinEvery = interval
		seg.mu.Unlock()
	}
}

func (*RecordSnapshotter) SnapshotName() string       { return types.ModuleName + "_records" }
func (*RecordSnapshotter) SnapshotFormat() uint32     { return RecordSnapshotFormat }
func (*RecordSnapshotter) SupportedFormats() []uint32 { return []uint32{RecordSnapshotFormat} }

// SnapshotExtension writes the bytes of every batch of the state at height.
func (r *RecordSnapshotter) SnapshotExtension(height uint64, write snapshottypes.ExtensionPayloadWriter) error {
	return r.store.snapshot(height, func(key, bz []byte) error {
		payload := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(key)+len(bz)), uint64(len(key)))
		payload = append(append(payload, key...), bz...)
		return write(payload)
	})
}

var errRecordSnapshot = errors.New("record snapshot does not match the restored state")

// RestoreExtension replaces the record store with the snapshot's batches after checking them
// against the restored (verified) state: the same batches in the same order, each with the
// SHA-256 the state holds for it.
func (r *RecordSnapshotter) RestoreExtension(height uint64, format uint32, read snapshottypes.ExtensionPayloadReader) error {
	if format != RecordSnapshotFormat {
		return fmt.Errorf("%w: format %d", snapshottypes.ErrUnknownFormat, format)
	}
	ctx := sdk.NewContext(r.cms.CacheMultiStore(), cmtproto.Header{Height: int64(height)}, false, log.NewNopLogger())
	it, err := r.k.Batches.Iterate(ctx, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	if err := r.store.reset(); err != nil {
		return err
	}
	var (
		sets    [][2][]byte
		pending int
		n       int
	)
	for {
		payload, err := read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		klen, m := binary.Uvarint(payload)
		if m <= 0 || klen > uint64(len(payload)-m) {
			return fmt.Errorf("%w: payload %d has no key", errRecordSnapshot, n)
		}
		key, bz := payload[m:m+int(klen)], payload[m+int(klen):]
		tp, last, err := recordKey(key)
		if err != nil {
			return fmt.Errorf("%w: %v", errRecordSnapshot, err)
		}
		if !it.Valid() {
			return fmt.Errorf("%w: %s/%d at %d is not in the state", errRecordSnapshot, tp.Topic, tp.Partition, last)
		}
		kv, err := it.KeyValue()
		if err != nil {
			return err
		}
		if kv.Key.K1() != tp || kv.Key.K2() != last {
			return fmt.Errorf("%w: got %s/%d at %d where the state has %s/%d at %d", errRecordSnapshot,
				tp.Topic, tp.Partition, last, kv.Key.K1().Topic, kv.Key.K1().Partition, kv.Key.K2())
		}
		if sum := sha256.Sum256(bz); !bytes.Equal(sum[:], kv.Value.RecordBatchSha256) {
			return fmt.Errorf("%w: the bytes of %s/%d at %d do not match their SHA-256", errRecordSnapshot, tp.Topic, tp.Partition, last)
		}
		it.Next()
		n++
		sets = append(sets, [2][]byte{bytes.Clone(key), bytes.Clone(bz)})
		if pending += len(bz); pending >= 64<<20 {
			if err := r.store.apply(height, sets, nil); err != nil {
				return err
			}
			sets, pending = sets[:0], 0
		}
	}
	if it.Valid() {
		kv, err := it.KeyValue()
		if err != nil {
			return err
		}
		return fmt.Errorf("%w: %s/%d at %d is missing", errRecordSnapshot, kv.Key.K1().Topic, kv.Key.K1().Partition, kv.Key.K2())
	}
	return r.store.apply(height, sets, nil)
}

// pinnedBatch is one batch of a pinned list: its record store key and pointer.
type pinnedBatch struct {
	key []byte
	ptr pointer
}

// pinAt pins the store's batch list when height is a snapshot height; called after the
// height's writes are applied, before the next height's.
func (s *segmentStore) pinAt(height uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushed = true
	if s.pinEvery == 0 || height%s.pinEvery != 0 {
		return nil
	}
	return s.pinLocked(height)
}

func (s *segmentStore) pinLocked(height uint64) error {
	prefix := types.RecordBytesPrefix.Bytes()
	it, err := s.db.Iterator(prefix, prefixEnd(prefix))
	if err != nil {
		return err
	}
	defer it.Close()
	var list []pinnedBatch
	for ; it.Valid(); it.Next() {
		p, err := parsePointer(it.Value())
		if err != nil {
			return err
		}
		list = append(list, pinnedBatch{key: bytes.Clone(it.Key()), ptr: p})
	}
	if s.pins == nil {
		s.pins = map[uint64][]pinnedBatch{}
	}
	s.pins[height] = list
	return nil
}

// snapshot hands every batch of the pinned list of height to emit, then unpins it and every
// older list (their snapshots were skipped) and removes the segments deferred meanwhile. A
// store that has committed no block since it opened (an offline `snapshots export`) pins its
// current list.
func (s *segmentStore) snapshot(height uint64, emit func(key, bz []byte) error) error {
	s.mu.Lock()
	list, ok := s.pins[height]
	if !ok && !s.flushed {
		if err := s.pinLocked(height); err != nil {
			s.mu.Unlock()
			return err
		}
		list, ok = s.pins[height], true
	}
	s.mu.Unlock()
	if !ok {
		return fmt.Errorf("x/topics: no record list pinned at height %d (snapshot-interval changed?)", height)
	}
	defer s.unpin(height)
	var (
		f    *os.File
		open string
	)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	for _, b := range list {
		tp, _, err := recordKey(b.key)
		if err != nil {
			return err
		}
		if name := segmentFile(s.partitionDir(tp), b.ptr.segment); name != open {
			if f != nil {
				f.Close()
			}
			if f, err = os.Open(name); err != nil {
				return err
			}
			open = name
		}
		bz := make([]byte, b.ptr.length)
		if _, err := f.ReadAt(bz, int64(b.ptr.pos)); err != nil {
			return fmt.Errorf("segment %d of %s/%d: %w", b.ptr.segment, tp.Topic, tp.Partition, err)
		}
		if err := emit(b.key, bz); err != nil {
			return err
		}
	}
	return nil
}

func (s *segmentStore) unpin(height uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h := range s.pins {
		if h <= height {
			delete(s.pins, h)
		}
	}
	if len(s.pins) > 0 {
		return
	}
	for tp := range s.deferred {
		// A segment this fails to remove is removed with the partition's next deletion.
		_ = s.dropUnused(tp)
	}
	clear(s.deferred)
}

// reset empties the store: every pointer and segment file goes, for a restore.
func (s *segmentStore) reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tp, l := range s.parts {
		l.close()
		delete(s.parts, tp)
	}
	it, err := s.db.Iterator(nil, nil)
	if err != nil {
		return err
	}
	batch := s.db.NewBatch()
	defer batch.Close()
	for ; it.Valid(); it.Next() {
		if err := batch.Delete(bytes.Clone(it.Key())); err != nil {
			it.Close()
			return err
		}
	}
	it.Close()
	if err := batch.Write(); err != nil {
		return err
	}
	return os.RemoveAll(s.dir)
}
