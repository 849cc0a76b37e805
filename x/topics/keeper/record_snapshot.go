package keeper

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"cosmossdk.io/collections"
	"cosmossdk.io/log"
	snapshottypes "cosmossdk.io/store/snapshots/types"
	storetypes "cosmossdk.io/store/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/internal/recordstore"
	"github.com/bftlog/bftlog/x/topics/types"
)

// RecordSnapshotFormat is the extension's payload format: per batch, in key order, one payload
// of uvarint(len(key)) | record store key | record batch bytes.
const RecordSnapshotFormat uint32 = 1

// RecordSnapshotter is the x/topics record bytes snapshot extension: state sync carries the
// record bytes as an extension, since the multistore's snapshot holds each batch's metadata
// and SHA-256 (in IAVL) but not the bytes, which live in segment files. It snapshots heights
// the record store pinned, whose kept bytes stay until the snapshot is written (package
// recordstore, "Kept versions").
//
// The peers a new node restores from are untrusted, and CometBFT checks the app hash only
// after the whole snapshot, extension included, is applied. So before it writes a byte the
// restore checks the restored multistore's hash against the app hash of the light-client-
// verified header CometBFT offered the snapshot with (ExpectAppHash); then every batch's bytes
// against the SHA-256 in that verified state, and that none is missing or added; and it writes
// them to a staging directory that replaces the record store only once all are in, removed if
// the restore fails. What a forged snapshot can make a node write is then the verified state's
// own bytes, or nothing.
type RecordSnapshotter struct {
	k     Keeper
	cms   storetypes.MultiStore
	store recordstore.Store

	mu sync.Mutex
	// trusted is the app hash CometBFT verified for the snapshot of height trustedHeight.
	trusted       []byte
	trustedHeight uint64
}

var _ snapshottypes.ExtensionSnapshotter = (*RecordSnapshotter)(nil)

// RecordSnapshotter returns the snapshot extension of the keeper's record store, reading the
// restored state from cms; nil when the record bytes are not in segment files (they are then
// in the multistore's database, outside snapshots: nodes without a data directory only).
func (k Keeper) RecordSnapshotter(cms storetypes.MultiStore) *RecordSnapshotter {
	if k.recordStore == nil || !k.recordStore.snapshots {
		return nil
	}
	return &RecordSnapshotter{k: k, cms: cms, store: k.recordStore.committed}
}

// SnapshotEvery makes the store pin every interval-th height, the
// snapshot interval of the node's snapshot manager (0: never).
func (s RecordStore) SnapshotEvery(interval uint64) { s.committed.SnapshotEvery(interval) }

func (*RecordSnapshotter) SnapshotName() string       { return types.ModuleName + "_records" }
func (*RecordSnapshotter) SnapshotFormat() uint32     { return RecordSnapshotFormat }
func (*RecordSnapshotter) SupportedFormats() []uint32 { return []uint32{RecordSnapshotFormat} }

// ExpectAppHash records the app hash that a header verified by CometBFT's light client commits
// to for the snapshot of height CometBFT offers (RequestOfferSnapshot.AppHash): the restore
// checks the restored multistore against it before writing any record bytes.
func (r *RecordSnapshotter) ExpectAppHash(height uint64, appHash []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.trusted, r.trustedHeight = bytes.Clone(appHash), height
}

// SnapshotExtension writes the bytes of every batch of the state at height.
func (r *RecordSnapshotter) SnapshotExtension(height uint64, write snapshottypes.ExtensionPayloadWriter) error {
	ms, err := r.cms.CacheMultiStoreWithVersion(int64(height))
	if err != nil {
		return err
	}
	ctx := sdk.NewContext(ms, cmtproto.Header{Height: int64(height)}, false, log.NewNopLogger())
	batches := func(yield func(key, sum []byte) error) error {
		it, err := r.k.Batches.Iterate(ctx, nil)
		if err != nil {
			return err
		}
		defer it.Close()
		for ; it.Valid(); it.Next() {
			kv, err := it.KeyValue()
			if err != nil {
				return err
			}
			key, err := collections.EncodeKeyWithPrefix(types.RecordBytesPrefix.Bytes(), types.BatchKeyCodec, kv.Key)
			if err != nil {
				return err
			}
			if err := yield(key, kv.Value.RecordBatchSha256); err != nil {
				return err
			}
		}
		return nil
	}
	return r.store.Snapshot(height, batches, func(key, bz []byte) error {
		payload := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(key)+len(bz)), uint64(len(key)))
		payload = append(append(payload, key...), bz...)
		return write(payload)
	})
}

var errRecordSnapshot = errors.New("record snapshot does not match the restored state")

// RestoreExtension replaces the record store with the snapshot's batches after checking the
// restored state against the verified app hash and the batches against that state: the same
// batches in the same order, each with the SHA-256 the state holds for it.
func (r *RecordSnapshotter) RestoreExtension(height uint64, format uint32, read snapshottypes.ExtensionPayloadReader) error {
	if format != RecordSnapshotFormat {
		return fmt.Errorf("%w: format %d", snapshottypes.ErrUnknownFormat, format)
	}
	if err := r.checkAppHash(height); err != nil {
		return err
	}
	ctx := sdk.NewContext(r.cms.CacheMultiStore(), cmtproto.Header{Height: int64(height)}, false, log.NewNopLogger())
	it, err := r.k.Batches.Iterate(ctx, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	return r.store.Restore(height, func(put func(key, bz []byte) error) error {
		for n := 0; ; n++ {
			payload, err := read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			key, bz, err := checkPayload(it, n, payload)
			if err != nil {
				return err
			}
			it.Next()
			if err := put(key, bz); err != nil {
				return err
			}
		}
		if it.Valid() {
			kv, err := it.KeyValue()
			if err != nil {
				return err
			}
			return fmt.Errorf("%w: %s/%d at %d is missing", errRecordSnapshot, kv.Key.K1().Topic, kv.Key.K1().Partition, kv.Key.K2())
		}
		return nil
	})
}

// checkAppHash refuses a restored multistore whose hash is not the one CometBFT verified for
// height. Without one offered (`bftlogd snapshots restore` of the operator's own snapshot)
// the node's handshake with CometBFT checks it at start.
func (r *RecordSnapshotter) checkAppHash(height uint64) error {
	r.mu.Lock()
	trusted, at := r.trusted, r.trustedHeight
	r.mu.Unlock()
	if trusted == nil || at != height {
		return nil
	}
	c, ok := r.cms.(interface{ LastCommitID() storetypes.CommitID })
	if !ok {
		return fmt.Errorf("x/topics: the restored multistore has no commit ID")
	}
	if got := c.LastCommitID().Hash; !bytes.Equal(got, trusted) {
		return fmt.Errorf("%w: the restored state at height %d has app hash %X, the verified header %X; no record bytes written", errRecordSnapshot, height, got, trusted)
	}
	return nil
}

// checkPayload splits the n-th payload into record store key and bytes, and checks them
// against the state's batch at it.
func checkPayload(it collections.Iterator[collections.Pair[types.TopicPartition, uint64], types.RecordBatch], n int, payload []byte) ([]byte, []byte, error) {
	klen, m := binary.Uvarint(payload)
	if m <= 0 || klen > uint64(len(payload)-m) {
		return nil, nil, fmt.Errorf("%w: payload %d has no key", errRecordSnapshot, n)
	}
	key, bz := payload[m:m+int(klen)], payload[m+int(klen):]
	tp, last, err := recordstore.ParseKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errRecordSnapshot, err)
	}
	if !it.Valid() {
		return nil, nil, fmt.Errorf("%w: %s/%d at %d is not in the state", errRecordSnapshot, tp.Topic, tp.Partition, last)
	}
	kv, err := it.KeyValue()
	if err != nil {
		return nil, nil, err
	}
	if kv.Key.K1() != tp || kv.Key.K2() != last {
		return nil, nil, fmt.Errorf("%w: got %s/%d at %d where the state has %s/%d at %d", errRecordSnapshot,
			tp.Topic, tp.Partition, last, kv.Key.K1().Topic, kv.Key.K1().Partition, kv.Key.K2())
	}
	if sum := sha256.Sum256(bz); !bytes.Equal(sum[:], kv.Value.RecordBatchSha256) {
		return nil, nil, fmt.Errorf("%w: the bytes of %s/%d at %d do not match their SHA-256", errRecordSnapshot, tp.Topic, tp.Partition, last)
	}
	return bytes.Clone(key), bytes.Clone(bz), nil
}
