package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/verify"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// stateSyncMB is how much log TestStateSyncJoinsWithTheLog writes: a few MB in make test,
// BFTLOG_STATESYNC_MB (make test-statesync: 1024) for the figures of the README.
func stateSyncMB(t *testing.T) int {
	if v := os.Getenv("BFTLOG_STATESYNC_MB"); v != "" {
		mb, err := strconv.Atoi(v)
		require.NoError(t, err)
		return mb
	}
	return 16
}

// A new full node joins a running four-validator chain by state sync: it restores the newest
// snapshot — the multistore and the record bytes of its segment files (x/topics/keeper/
// record_snapshot.go) — verified from a trusted header, block-syncs the blocks since and then
// serves the same records as a validator, also to a verifying client. A second new node
// block-syncs from genesis for comparison. Prints the snapshot's size and both join times.
func TestStateSyncJoinsWithTheLog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts validator processes")
	}
	interval := 25
	if v := os.Getenv("BFTLOG_STATESYNC_INTERVAL"); v != "" { // 1 GB: fewer snapshots while filling
		var err error
		interval, err = strconv.Atoi(v)
		require.NoError(t, err)
	}
	producers := []string{"p0", "p1", "p2", "p3"}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: producers, AppConfig: node.SnapshotEvery(interval)})
	v0 := net.Nodes[0]
	_, admin := v0.ClientContext(v0.Home, "val0")
	_, err := admin.SubmitAndWait(&types.MsgCreateTopic{Owner: admin.Address(), Name: "ledger", Partitions: 4,
		Config: types.TopicConfig{RetentionMs: -1, RetentionBytes: -1}})
	require.NoError(t, err)

	// Producers write 3.5 MiB batches of random 64 KiB records, one producer per validator.
	const recordBytes, perBatch = 64 << 10, 56
	total := stateSyncMB(t) << 20
	batches := (total + recordBytes*perBatch - 1) / (recordBytes * perBatch)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(producers))
	for i, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, signer := net.Nodes[i].ClientContext(v0.Home, p)
			signer.SetFixedGas() // no simulation round trip of 3.5 MiB per batch
			rng := rand.New(rand.NewSource(int64(i)))
			for b := i; b < batches; b += len(producers) {
				recs := make([]types.BatchRecord, perBatch)
				for r := range recs {
					v := make([]byte, recordBytes)
					rng.Read(v)
					recs[r] = types.BatchRecord{Key: types.NewBytes(fmt.Appendf(nil, "k%d", b)), Value: &types.Bytes{Data: v}}
				}
				batch, err := types.NewProduceBatch("ledger", uint32(b%4), recs, kbatch.CompressionNone)
				if err == nil {
					_, err = signer.SubmitAndWait(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}})
				}
				if err != nil {
					errs <- fmt.Errorf("producer %s batch %d: %w", p, b, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	produced, err := v0.Height()
	require.NoError(t, err)
	t.Logf("produced %d batches, %d MiB of records, in %s (height %d)", batches, batches*perBatch*recordBytes>>20, time.Since(start).Round(time.Second), produced)

	// The first snapshot validator 0 completes after the log is complete (one still being
	// written makes the manager skip the next heights). The console log colours its fields:
	// height=\x1b[0m75.
	done := regexp.MustCompile(`completed state snapshot.*height=(?:\x1b\[0m)?(\d+)`)
	var snapHeight int64
	require.Eventually(t, func() bool {
		for _, m := range done.FindAllStringSubmatch(v0.Log(), -1) {
			if h, _ := strconv.ParseInt(m[1], 10, 64); h > produced {
				snapHeight = h
				return true
			}
		}
		return false
	}, 20*time.Minute, time.Second, "validator 0 writes a snapshot after height %d", produced)
	snapBytes := dirBytes(t, filepath.Join(v0.Home, "data", "snapshots", strconv.FormatInt(snapHeight, 10)))
	logBytes := v0.DataBreakdown()["records"]
	t.Logf("snapshot at height %d: %d MiB (the validator's segment files: %d MiB)", snapHeight, snapBytes>>20, logBytes>>20)
	require.GreaterOrEqual(t, snapBytes, uint64(batches*perBatch*recordBytes), "the snapshot carries the record bytes")

	start = time.Now()
	synced := net.AddStateSyncNode("statesynced", snapHeight, 10*time.Minute)
	joined := time.Since(start)
	require.Contains(t, synced.Log(), "Snapshot restored")
	_, _, err = synced.BlockHashes(1)
	require.Error(t, err, "a state-synced node has no block 1")

	start = time.Now()
	target, err := v0.Height()
	require.NoError(t, err)
	replayed := net.AddFullNode("blocksynced")
	require.NoError(t, replayed.WaitForHeight(target, 30*time.Minute))
	replay := time.Since(start)
	t.Logf("state sync joined in %s; block sync from genesis to height %d took %s (%.1fx)", joined.Round(100*time.Millisecond), target, replay.Round(100*time.Millisecond), replay.Seconds()/joined.Seconds())

	// The same records from the new node as from a validator, and proven.
	want := logDigest(t, net.Nodes[1].MustClientCtx())
	require.Equal(t, want, logDigest(t, synced.MustClientCtx()), "state-synced node")
	require.Equal(t, want, logDigest(t, replayed.MustClientCtx()), "block-synced node")
	hash, _, err := v0.BlockHashes(snapHeight)
	require.NoError(t, err)
	anchor, err := hex.DecodeString(hash)
	require.NoError(t, err)
	ctx := context.Background()
	vc, err := verify.New(ctx, verify.Config{ChainID: node.ChainID, Node: synced.RPC, Witnesses: []string{v0.RPC}, TrustHeight: snapHeight, TrustHash: anchor})
	require.NoError(t, err)
	for p := uint32(0); p < 4; p++ {
		res, err := vc.Fetch(ctx, 0, "ledger", p, 0, 2*perBatch)
		require.NoError(t, err, "verified fetch of partition %d from the state-synced node", p)
		require.Len(t, res.Records, min(2*perBatch, int(res.Partition.HighWatermark)))
		last, err := vc.Fetch(ctx, 0, "ledger", p, res.Partition.HighWatermark-1, 1)
		require.NoError(t, err)
		require.Len(t, last.Records, 1)
	}
}

// logDigest is the SHA-256 of every record of topic "ledger" and its four partitions
// (partition, offset, key, value) as the node behind cctx serves them.
func logDigest(t *testing.T, cctx client.Context) string {
	t.Helper()
	return topicDigest(t, cctx, "ledger", 4)
}

func topicDigest(t *testing.T, cctx client.Context, topic string, partitions uint32) string {
	t.Helper()
	q := types.NewQueryClient(cctx)
	h := sha256.New()
	for p := uint32(0); p < partitions; p++ {
		for off := uint64(0); ; {
			res, err := q.Fetch(context.Background(), &types.QueryFetchRequest{Topic: topic, Partition: p, Offset: off, MaxBytes: 8 << 20})
			require.NoError(t, err)
			for _, r := range res.Records {
				h.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, p), r.Offset))
				h.Write(r.Key.GetData())
				h.Write(r.Value.GetData())
			}
			if res.NextOffset == off || res.NextOffset >= res.HighWatermark {
				break
			}
			off = res.NextOffset
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func dirBytes(t *testing.T, dir string) uint64 {
	var n uint64
	require.NoError(t, filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += uint64(info.Size())
		}
		return err
	}))
	return n
}
