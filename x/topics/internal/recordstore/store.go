package recordstore

import (
	"errors"

	dbm "github.com/cosmos/cosmos-db"
)

// Store holds the committed record bytes under their record store keys
// (types.RecordBytesPrefix, then the batch key): the record store's committed half, below
// the keeper's pending overlay. Two variants implement it: segment files with pointers in a
// database (NewSegmentStore), and the database alone (NewDBStore).
type Store interface {
	// Get returns key's bytes; nil when the store has none.
	Get(key []byte) ([]byte, error)
	// Kept returns the bytes key held, before a recent block replaced or deleted them,
	// whose SHA-256 is sum; nil when none are kept.
	Kept(key, sum []byte) ([]byte, error)
	// Apply commits the writes (key, bytes) and deletions of the block at height.
	Apply(height uint64, sets [][2][]byte, deletes [][]byte) error
	// Pin pins height when it is a snapshot height; called after the height's writes are
	// applied, before the next height's.
	Pin(height uint64) error
	// SnapshotEvery makes every interval-th height a snapshot height (0: none).
	SnapshotEvery(interval uint64)
	// Snapshot hands emit the bytes of every batch batches yields (its record store key and
	// the SHA-256 the state at height holds for it), then unpins height.
	Snapshot(height uint64, batches func(yield func(key, sum []byte) error) error, emit func(key, bz []byte) error) error
	// Restore replaces the store's contents with the batches fill puts, in key order.
	Restore(height uint64, fill func(put func(key, bz []byte) error) error) error
}

// NewSegmentStore returns the store keeping the bytes in segment files under dir and their
// positions in db.
func NewSegmentStore(db dbm.DB, dir string) Store { return newSegmentStore(db, dir) }

var (
	_ Store = (*segmentStore)(nil)
	_ Store = dbStore{}
)

// NewDBStore returns the store keeping the bytes themselves in db, for nodes without a data
// directory (in-memory test chains).
func NewDBStore(db dbm.DB) Store { return dbStore{db} }

// dbStore keeps record bytes in a database.
type dbStore struct{ db dbm.DB }

func (d dbStore) Get(key []byte) ([]byte, error) { return d.db.Get(key) }

// Kept: nodes without a data directory keep no state across a restart, so never replay.
func (dbStore) Kept(_, _ []byte) ([]byte, error) { return nil, nil }

// ErrNoSnapshots: the database store takes no snapshots; its node has no data directory, so
// no snapshot store.
var ErrNoSnapshots = errors.New("the database record store takes no snapshots")

func (dbStore) Pin(uint64) error     { return nil }
func (dbStore) SnapshotEvery(uint64) {}

func (dbStore) Snapshot(uint64, func(func(_, _ []byte) error) error, func(_, _ []byte) error) error {
	return ErrNoSnapshots
}

func (dbStore) Restore(uint64, func(func(_, _ []byte) error) error) error {
	return ErrNoSnapshots
}

func (d dbStore) Apply(_ uint64, sets [][2][]byte, deletes [][]byte) error {
	batch := d.db.NewBatch()
	defer batch.Close()
	for _, kv := range sets {
		if err := batch.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	for _, k := range deletes {
		if err := batch.Delete(k); err != nil {
			return err
		}
	}
	return batch.Write()
}
