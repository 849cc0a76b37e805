package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"

	"cosmossdk.io/collections"
	corestore "cosmossdk.io/core/store"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Record bytes are kept out of the Merkle state. IAVL keeps every value it writes in a leaf
// node and again in its fast-node index, caches nodes by count (a count of ~500 KB batches is
// gigabytes) and hashes each value when it saves a version; for the log's bulk that is memory,
// disk and CPU spent on bytes that never change once written. So the batches collection holds
// each batch's metadata with the SHA-256 of its record batch, which the app hash commits to,
// and the bytes go to a plain database store (types.RecordStoreKey) under the same key:
// written and deleted in the same block as the metadata, read by Fetch, checked against the
// proven hash by verifying clients.

// WithRecordStore returns the keeper keeping record batch bytes in svc, a store outside IAVL
// (the app mounts it as storetypes.StoreTypeDB). Without it the bytes stay in the module store.
func (k Keeper) WithRecordStore(svc corestore.KVStoreService) Keeper {
	sb := collections.NewSchemaBuilder(svc)
	k.RecordBytes = collections.NewMap(sb, types.RecordBytesPrefix, "record_bytes", types.BatchKeyCodec, collections.BytesValue)
	if _, err := sb.Build(); err != nil {
		panic(err)
	}
	return k
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
	if err != nil {
		return m, fmt.Errorf("record batch bytes of %s/%d at %d: %w", key.K1().Topic, key.K1().Partition, key.K2(), err)
	}
	if sum := sha256.Sum256(bz); !bytes.Equal(sum[:], m.RecordBatchSha256) {
		return m, fmt.Errorf("record batch bytes of %s/%d at %d do not match their SHA-256 in the state", key.K1().Topic, key.K1().Partition, key.K2())
	}
	m.RecordBatch = bz
	return m, nil
}
