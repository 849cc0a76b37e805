package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"cosmossdk.io/collections"
	corestore "cosmossdk.io/core/store"
	"cosmossdk.io/store/transient"
	storetypes "cosmossdk.io/store/types"
	dbm "github.com/cosmos/cosmos-db"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/internal/recordstore"
	"github.com/bftlog/bftlog/x/topics/types"
)

// RecordStore is the record store: committed bytes in segment files or a database (package
// recordstore: why the bytes are outside IAVL, and how they are kept), the current block's
// writes and deletions in the transient store pending. It is a corestore.KVStoreService for
// point reads and writes (no iteration) and charges gas as a KV store does.
//
// The record store is not a store of the multistore: a mounted non-IAVL store (StoreTypeDB)
// enters the commit info the multistore persists and proves against, but not the working hash
// it gives CometBFT, so proofs and a restarted node's app hash would disagree with the block
// headers. Instead a block's writes wait in a transient store — branched and discarded with
// each failed transaction like any store, left out of every hash — and the module's Precommit
// moves them into the database in one batch, just before the multistore commits. A node that
// stops between the two replays the block, which writes the same bytes again.
type RecordStore struct {
	pending   storetypes.StoreKey
	committed recordstore.Store
	// snapshots: state sync snapshots carry the committed bytes (RecordSnapshotter); not
	// those of a node without a data directory, which takes no snapshots.
	snapshots bool
}

// NewRecordStore returns the record store keeping the bytes in segment files under dir and
// their positions in db (the app gives its application database under types.RecordDBPrefix
// and <home>/data/records), with pending, mounted as StoreTypeTransient, for a block's writes.
func NewRecordStore(pending *storetypes.TransientStoreKey, db dbm.DB, dir string) RecordStore {
	return RecordStore{pending: pending, committed: recordstore.NewSegmentStore(db, dir), snapshots: true}
}

// NewDBRecordStore is NewRecordStore keeping the bytes themselves in db, for nodes without a
// data directory (in-memory test chains).
func NewDBRecordStore(pending *storetypes.TransientStoreKey, db dbm.DB) RecordStore {
	return RecordStore{pending: pending, committed: recordstore.NewDBStore(db)}
}

// Keys in the pending store: a marker byte, then the record store key.
const (
	pendingDelete byte = 0
	pendingSet    byte = 1
)

func pendingKey(marker byte, key []byte) []byte {
	return append([]byte{marker}, key...)
}

// OpenKVStore implements corestore.KVStoreService.
func (s RecordStore) OpenKVStore(ctx context.Context) corestore.KVStore {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	return recordKV{pending: sdkCtx.MultiStore().GetKVStore(s.pending), committed: s.committed, gas: sdkCtx.GasMeter(), cfg: sdkCtx.KVGasConfig()}
}

// Flush moves the block's pending writes and deletions into the committed store. The
// transient store empties itself when the multistore commits.
func (s RecordStore) Flush(ctx context.Context) error {
	it := sdk.UnwrapSDKContext(ctx).MultiStore().GetKVStore(s.pending).Iterator(nil, nil)
	defer it.Close()
	var (
		sets    [][2][]byte
		deletes [][]byte
	)
	for ; it.Valid(); it.Next() {
		switch k := it.Key(); k[0] {
		case pendingSet:
			sets = append(sets, [2][]byte{k[1:], it.Value()})
		case pendingDelete:
			deletes = append(deletes, k[1:])
		}
	}
	height := uint64(sdk.UnwrapSDKContext(ctx).BlockHeight())
	if err := s.committed.Apply(height, sets, deletes); err != nil {
		return err
	}
	return s.committed.Pin(height)
}

// QueryMultiStore returns ms as queries read it: the pending store hidden, so they get the
// committed bytes. Between a block's FinalizeBlock and its Commit the pending store holds that
// block's writes and deletions while queries answer from the last committed height, and
// baseapp hands every query context the live transient stores (CacheMultiStoreWithVersion
// branches IAVL stores at the height, shares the rest): queries got the next block's bytes
// (refused as not matching their height's SHA-256, or missing) and raced with the store's
// reset at Commit. The app sets it as its query multistore (baseapp.SetQueryMultiStore).
func (s RecordStore) QueryMultiStore(ms storetypes.MultiStore) storetypes.MultiStore {
	return queryMultiStore{MultiStore: ms, pending: s.pending}
}

type queryMultiStore struct {
	storetypes.MultiStore
	pending storetypes.StoreKey
}

func (q queryMultiStore) CacheMultiStoreWithVersion(version int64) (storetypes.CacheMultiStore, error) {
	cms, err := q.MultiStore.CacheMultiStoreWithVersion(version)
	if err != nil {
		return nil, err
	}
	return committedOnly{branch: cms, pending: q.pending, empty: transient.NewStore()}, nil
}

// committedOnly is a query's multistore: an empty store of its own in the pending store's
// place, in it and in its branches.
type committedOnly struct {
	branch
	pending storetypes.StoreKey
	empty   storetypes.KVStore
}

func (c committedOnly) GetStore(key storetypes.StoreKey) storetypes.Store {
	if key == c.pending {
		return c.empty
	}
	return c.branch.GetStore(key)
}

func (c committedOnly) GetKVStore(key storetypes.StoreKey) storetypes.KVStore {
	if key == c.pending {
		return c.empty
	}
	return c.branch.GetKVStore(key)
}

func (c committedOnly) CacheMultiStore() storetypes.CacheMultiStore {
	return committedOnly{branch: c.branch.CacheMultiStore(), pending: c.pending, empty: transient.NewStore()}
}

// branch names the embedded multistore apart from its CacheMultiStore method.
type branch = storetypes.CacheMultiStore

// recordKV is the record store as one context sees it: its pending writes over the database.
type recordKV struct {
	pending   storetypes.KVStore
	committed recordstore.Store
	gas       storetypes.GasMeter
	cfg       storetypes.GasConfig
}

var errRecordStoreIteration = errors.New("the record store has point reads only")

func (s recordKV) Get(key []byte) ([]byte, error) {
	s.gas.ConsumeGas(s.cfg.ReadCostFlat, storetypes.GasReadCostFlatDesc)
	v, err := s.get(key)
	err = storageError(err)
	s.gas.ConsumeGas(s.cfg.ReadCostPerByte*storetypes.Gas(len(key)+len(v)), storetypes.GasReadPerByteDesc)
	return v, err
}

func (s recordKV) get(key []byte) ([]byte, error) {
	if v := s.pending.Get(pendingKey(pendingSet, key)); v != nil {
		return v, nil
	}
	if s.pending.Has(pendingKey(pendingDelete, key)) {
		return nil, nil
	}
	return s.committed.Get(key)
}

func (s recordKV) Has(key []byte) (bool, error) {
	s.gas.ConsumeGas(s.cfg.HasCost, storetypes.GasHasDesc)
	v, err := s.get(key)
	return v != nil, err
}

func (s recordKV) Set(key, value []byte) error {
	s.gas.ConsumeGas(s.cfg.WriteCostFlat, storetypes.GasWriteCostFlatDesc)
	s.gas.ConsumeGas(s.cfg.WriteCostPerByte*storetypes.Gas(len(key)+len(value)), storetypes.GasWritePerByteDesc)
	s.pending.Delete(pendingKey(pendingDelete, key))
	s.pending.Set(pendingKey(pendingSet, key), value)
	return nil
}

func (s recordKV) Delete(key []byte) error {
	s.gas.ConsumeGas(s.cfg.DeleteCost, storetypes.GasDeleteDesc)
	s.pending.Delete(pendingKey(pendingSet, key))
	// A non-empty marker: stores refuse empty values.
	s.pending.Set(pendingKey(pendingDelete, key), []byte{1})
	return nil
}

func (s recordKV) Iterator(_, _ []byte) (corestore.Iterator, error) {
	return nil, errRecordStoreIteration
}

func (s recordKV) ReverseIterator(_, _ []byte) (corestore.Iterator, error) {
	return nil, errRecordStoreIteration
}

// WithRecordStore returns the keeper keeping record batch bytes in rs, outside IAVL. Without
// it the bytes stay in the module store.
func (k Keeper) WithRecordStore(rs RecordStore) Keeper {
	sb := collections.NewSchemaBuilder(rs)
	k.RecordBytes = collections.NewMap(sb, types.RecordBytesPrefix, "record_bytes", types.BatchKeyCodec, collections.BytesValue)
	if _, err := sb.Build(); err != nil {
		panic(err)
	}
	k.recordStore = &rs
	return k
}

// Precommit moves the block's record bytes into the record database, after the block's state
// is final and before it is committed. A node that cannot write them halts rather than go on
// with a record store that disagrees with its state.
func (k Keeper) Precommit(ctx context.Context) error {
	if k.recordStore == nil {
		return nil
	}
	if err := k.recordStore.Flush(ctx); err != nil {
		panic(fmt.Errorf("x/topics: writing the record store: %w", err))
	}
	return nil
}

// setBatch stores a whole sealed batch (types.RecordBatch.Seal): its metadata and hash in the
// Merkle state, its bytes in the record store.
func (k Keeper) setBatch(ctx context.Context, key collections.Pair[types.TopicPartition, uint64], b types.RecordBatch) error {
	if err := k.RecordBytes.Set(ctx, key, b.RecordBatch); err != nil {
		return err
	}
	b.RecordBatch = nil
	if err := k.Batches.Set(ctx, key, b); err != nil {
		return err
	}
	return k.BatchMetas.Set(ctx, key, b.Meta())
}

// withBytes returns the stored batch m (metadata) with its record batch bytes. A node whose
// record store lost or changed them refuses to serve the batch rather than serve other bytes.
func (k Keeper) withBytes(ctx context.Context, key collections.Pair[types.TopicPartition, uint64], m types.RecordBatch) (types.RecordBatch, error) {
	bz, err := k.RecordBytes.Get(ctx, key)
	if err != nil && !errors.Is(err, collections.ErrNotFound) {
		return m, storageError(fmt.Errorf("record batch bytes of %s/%d at %d: %w", key.K1().Topic, key.K1().Partition, key.K2(), err))
	}
	if sum := sha256.Sum256(bz); bz != nil && bytes.Equal(sum[:], m.RecordBatchSha256) {
		m.RecordBatch = bz
		return m, nil
	}
	// The state is older than the record store: a read proven at a recent height, or a node
	// replaying a block after stopping at its Precommit, and a later block rewrote or deleted
	// these bytes. They are kept for types.RecordHistoryBlocks blocks (recordstore.Store.Kept).
	if k.recordStore != nil {
		if rk, err := collections.EncodeKeyWithPrefix(types.RecordBytesPrefix.Bytes(), types.BatchKeyCodec, key); err == nil {
			if prev, err := k.recordStore.committed.Kept(rk, m.RecordBatchSha256); err == nil && prev != nil {
				m.RecordBatch = prev
				return m, nil
			}
		}
	}
	// The state names bytes this node does not have: its storage failed (ErrStorage).
	if bz == nil {
		return m, storageError(fmt.Errorf("record batch bytes of %s/%d at %d: %w", key.K1().Topic, key.K1().Partition, key.K2(), collections.ErrNotFound))
	}
	return m, storageError(fmt.Errorf("record batch bytes of %s/%d at %d do not match their SHA-256 in the state", key.K1().Topic, key.K1().Partition, key.K2()))
}
