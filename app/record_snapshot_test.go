package app_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	"cosmossdk.io/log"
	"cosmossdk.io/store/snapshots"
	snapshottypes "cosmossdk.io/store/snapshots/types"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client/flags"
	"github.com/cosmos/cosmos-sdk/server"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// snapshotApp is an app with a home (segment files) and state sync snapshots every interval
// blocks, as bftlogd runs one.
func snapshotApp(t *testing.T, interval uint64) *app.App {
	t.Helper()
	return snapshotAppAt(t, t.TempDir(), interval)
}

func snapshotAppAt(t *testing.T, home string, interval uint64) *app.App {
	t.Helper()
	store, err := snapshots.NewStore(dbm.NewMemDB(), filepath.Join(home, "data", "snapshots"))
	require.NoError(t, err)
	opts := simtestutil.AppOptionsMap{flags.FlagHome: home, server.FlagStateSyncSnapshotInterval: interval}
	return app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true, opts, baseapp.SetChainID("fees"),
		baseapp.SetSnapshot(store, snapshottypes.NewSnapshotOptions(interval, 2)))
}

// State sync carries the record bytes (x/topics/keeper/record_snapshot.go): a snapshot taken
// by the SDK's manager at a snapshot height, restored over ABCI into an empty node, gives the
// same app hash and the same records from the new node's own segment files. A snapshot whose
// record bytes were changed, cut short or padded is refused by the restoring node.
func TestAttackStateSyncSnapshotCarriesRecords(t *testing.T) {
	const interval = 6
	src, snap, appHash := snapshotted(t, interval)

	home := t.TempDir()
	dst := snapshotAppAt(t, home, interval)
	size := restoreOverABCI(t, src, dst, snap, appHash, abci.ResponseApplySnapshotChunk_ACCEPT)
	t.Logf("snapshot at height %d: %d chunks, %d bytes", snap.Height, snap.Chunks, size)
	require.Equal(t, int64(interval), dst.LastBlockHeight())
	require.Equal(t, appHash, dst.LastCommitID().Hash)

	fetch := func(a *app.App, height int64) *topicstypes.QueryFetchResponse {
		ctx := a.NewUncachedContext(false, cmtproto.Header{ChainID: "fees", Height: height})
		res, err := keeper.NewQueryServer(a.TopicsKeeper).Fetch(ctx, &topicstypes.QueryFetchRequest{Topic: "audit", Partition: 0, MaxRecords: 10_000})
		require.NoError(t, err)
		return res
	}
	got := fetch(dst, interval)
	require.Len(t, got.Records, 50*(interval-2), "every record of height %d", interval)
	srcAt, err := src.app.CommitMultiStore().CacheMultiStoreWithVersion(interval)
	require.NoError(t, err)
	want, err := keeper.NewQueryServer(src.app.TopicsKeeper).Fetch(src.ctx().WithMultiStore(srcAt), &topicstypes.QueryFetchRequest{Topic: "audit", Partition: 0, MaxRecords: 10_000})
	require.NoError(t, err)
	require.Equal(t, want.Records, got.Records)

	// Hostile peers: the restoring node checks the extension's payloads against the restored
	// state, so one bad batch refuses the whole snapshot.
	ext := dst.TopicsKeeper.RecordSnapshotter(dst.CommitMultiStore())
	var good [][]byte
	require.NoError(t, ext.SnapshotExtension(interval, func(p []byte) error {
		good = append(good, bytes.Clone(p))
		return nil
	}), "a store that committed no block since it opened exports what it holds (snapshots export)")
	require.Len(t, good, interval-2, "one payload per batch")
	restore := func(payloads [][]byte) error {
		return ext.RestoreExtension(interval, keeper.RecordSnapshotFormat, reader(payloads))
	}
	require.NoError(t, restore(good), "the honest payloads restore")
	refused := func(err error, why string) {
		t.Helper()
		require.ErrorContains(t, err, why)
		require.Zero(t, dirBytes(t, filepath.Join(home, "data"), "records"), "a refused restore leaves no records, staged or not")
		t.Logf("refused: %v", err)
	}
	tampered := cloneAll(good)
	tampered[1][len(tampered[1])-1] ^= 1
	refused(restore(tampered), "do not match their SHA-256")
	refused(restore(good[:len(good)-1]), "is missing")
	extra := cloneAll(good)
	extra = append(extra, payload(t, 99, sha256.New().Sum(nil)))
	refused(restore(extra), "is not in the state")
	refused(restore([][]byte{good[1], good[0]}), "where the state has")
	require.NoError(t, restore(good))
	require.Equal(t, got.Records, fetch(dst, interval).Records, "restored again after the refusals")
}

// snapshotted is a chain with a home whose SDK manager took a snapshot at height interval,
// with blocks after it; it returns the chain, the snapshot and the app hash of its height.
func snapshotted(t *testing.T, interval int64) (*feeChain, *abci.Snapshot, []byte) {
	t.Helper()
	src := newChain(t, snapshotApp(t, uint64(interval)), 1_000_000_000_000)
	src.deliver(0, 2_000_000, createMsg(src.addr(0), "audit", 1))
	const gas = 20_000_000
	var appHash []byte // of the snapshot height
	for src.height <= interval {
		res := src.finalize(src.tx(0, src.fee(gas), gas, produceMsg(src.addr(0), "audit", 50, 200)))
		require.Equal(t, uint32(0), res.TxResults[0].Code, res.TxResults[0].Log)
		src.seqs[0]++
		appHash = res.AppHash
	}
	var snap *abci.Snapshot
	require.Eventually(t, func() bool {
		l, err := src.app.ListSnapshots(&abci.RequestListSnapshots{})
		require.NoError(t, err)
		if len(l.Snapshots) > 0 {
			snap = l.Snapshots[0]
		}
		return snap != nil
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, uint64(interval), snap.Height)
	// Blocks after the snapshot height change the log; the snapshot keeps height 6's.
	src.block(src.tx(0, src.fee(gas), gas, produceMsg(src.addr(0), "audit", 50, 200)))
	return src, snap, appHash
}

// restoreOverABCI offers snap to dst as CometBFT does, with appHash as the verified header's,
// and applies src's chunks; the last chunk's result is want. It returns the chunks' size.
func restoreOverABCI(t *testing.T, src *feeChain, dst *app.App, snap *abci.Snapshot, appHash []byte, want abci.ResponseApplySnapshotChunk_Result) int {
	t.Helper()
	offer, err := dst.OfferSnapshot(&abci.RequestOfferSnapshot{Snapshot: snap, AppHash: appHash})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseOfferSnapshot_ACCEPT, offer.Result)
	var size int
	for i := uint32(0); i < snap.Chunks; i++ {
		chunk, err := src.app.LoadSnapshotChunk(&abci.RequestLoadSnapshotChunk{Height: snap.Height, Format: snap.Format, Chunk: i})
		require.NoError(t, err)
		size += len(chunk.Chunk)
		res, err := dst.ApplySnapshotChunk(&abci.RequestApplySnapshotChunk{Index: i, Chunk: chunk.Chunk})
		require.NoError(t, err)
		if i+1 == snap.Chunks {
			require.Equal(t, want, res.Result)
		}
	}
	return size
}

// A state-syncing node writes no record bytes for a snapshot whose state is not the one the
// light-client-verified header commits to: the restore checks the restored multistore against
// the app hash CometBFT offered the snapshot with before it writes any (it wrote every batch,
// and CometBFT refused the state only after the whole restore).
func TestAttackStateSyncRestoreWritesNoRecordsBeforeTheAppHashChecks(t *testing.T) {
	const interval = 6
	src, snap, appHash := snapshotted(t, interval)
	home := t.TempDir()
	dst := snapshotAppAt(t, home, interval)
	forged := bytes.Clone(appHash)
	forged[0] ^= 1 // the header says otherwise: the snapshot's state is not the chain's
	restoreOverABCI(t, src, dst, snap, forged, abci.ResponseApplySnapshotChunk_ABORT)
	written := dirBytes(t, filepath.Join(home, "data"), "records")
	t.Logf("snapshot of a state the verified header does not commit to: %d record bytes written", written)
	require.Zero(t, written)
}

// dirBytes sums the sizes of the files under dir's entries whose names start with prefix.
func dirBytes(t *testing.T, dir, prefix string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if strings.HasPrefix(rel, prefix) {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	}))
	return n
}
func reader(payloads [][]byte) snapshottypes.ExtensionPayloadReader {
	i := 0
	return func() ([]byte, error) {
		if i == len(payloads) {
			return nil, io.EOF
		}
		i++
		return payloads[i-1], nil
	}
}

func cloneAll(in [][]byte) [][]byte {
	out := make([][]byte, len(in))
	for i, p := range in {
		out[i] = bytes.Clone(p)
	}
	return out
}

// payload is a record snapshot payload of a batch of "audit"/0 ending at last.
func payload(t *testing.T, last uint64, bz []byte) []byte {
	key, err := collections.EncodeKeyWithPrefix(topicstypes.RecordBytesPrefix.Bytes(), topicstypes.BatchKeyCodec, collections.Join(topicstypes.TopicPartition{Topic: "audit"}, last))
	require.NoError(t, err)
	return append(append(binary.AppendUvarint(nil, uint64(len(key))), key...), bz...)
}
