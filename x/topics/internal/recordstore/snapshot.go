package recordstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// maxPins bounds the snapshot heights pinned whose snapshot has not started.
const maxPins = 2

// pin is a pinned snapshot height; started once its extension runs.
type pin struct {
	height  uint64
	started bool
}

func (s *segmentStore) SnapshotEvery(interval uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pinEvery = interval
}

// Pin pins height when it is a snapshot height; called after the height's writes are
// applied, before the next height's.
func (s *segmentStore) Pin(height uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pinEvery == 0 || height%s.pinEvery != 0 {
		return nil
	}
	s.pins = append(s.pins, pin{height: height})
	waiting := 0
	for i := len(s.pins) - 1; i >= 0; i-- {
		if !s.pins[i].started {
			if waiting++; waiting > maxPins {
				s.pins = slices.Delete(s.pins, i, i+1)
			}
		}
	}
	return nil
}

// Snapshot hands emit the bytes of every batch batches yields (its record store key and the
// SHA-256 the state at height holds for it), then unpins height. Pins of earlier heights
// not started are dropped: the SDK's manager snapshots heights in order and never goes back.
func (s *segmentStore) Snapshot(height uint64, batches func(yield func(key, sum []byte) error) error, emit func(key, bz []byte) error) error {
	s.mu.Lock()
	s.pins = slices.DeleteFunc(s.pins, func(p pin) bool { return p.height < height && !p.started })
	for i := range s.pins {
		if s.pins[i].height == height {
			s.pins[i].started = true
		}
	}
	s.mu.Unlock()
	defer s.unpin(height)
	return batches(func(key, sum []byte) error {
		bz, err := s.Get(key)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if h := sha256.Sum256(bz); bz == nil || !bytes.Equal(h[:], sum) {
			if bz, err = s.Kept(key, sum); err != nil {
				return err
			}
		}
		if bz == nil {
			tp, last, _ := ParseKey(key)
			return fmt.Errorf("x/topics: the bytes of %s/%d at %d of height %d are no longer kept (a snapshot whose height was not pinned?)", tp.Topic, tp.Partition, last, height)
		}
		return emit(key, bz)
	})
}

func (s *segmentStore) unpin(height uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pins = slices.DeleteFunc(s.pins, func(p pin) bool { return p.height == height })
}

// Restore replaces the store's contents with the batches fill puts, in key order: written to
// a staging directory beside the store's, which becomes the store's once fill returns, and is
// removed with the pointers if it fails.
func (s *segmentStore) Restore(height uint64, fill func(put func(key, bz []byte) error) error) (err error) {
	if err := s.reset(); err != nil {
		return err
	}
	staging := newSegmentStore(s.db, s.dir+".restore")
	if err := os.RemoveAll(staging.dir); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, staging.reset())
		}
	}()
	var (
		sets    [][2][]byte
		pending int
	)
	err = fill(func(key, bz []byte) error {
		sets = append(sets, [2][]byte{key, bz})
		if pending += len(bz); pending < 64<<20 {
			return nil
		}
		err := staging.Apply(height, sets, nil)
		sets, pending = sets[:0], 0
		return err
	})
	if err != nil {
		return err
	}
	if err := staging.Apply(height, sets, nil); err != nil {
		return err
	}
	if err := staging.closeAll(); err != nil {
		return err
	}
	if err := mkdirSynced(staging.dir); err != nil { // a snapshot without batches
		return err
	}
	if err := os.Rename(staging.dir, s.dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(s.dir))
}

// reset empties the store: every pointer and segment file goes, for a restore.
func (s *segmentStore) reset() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.closeAll()
	clear(s.parts)
	s.pins = nil
	it, ierr := s.db.Iterator(nil, nil)
	if ierr != nil {
		return errors.Join(err, ierr)
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
	if err := batch.WriteSync(); err != nil {
		return err
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}
