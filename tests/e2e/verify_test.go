package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	ics23 "github.com/cosmos/ics23/go"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/client/verify"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// lie is what the lying proxy does to every answer about the log that passes through it.
type lie int

const (
	honest lie = iota
	alterValue
	dropRecord
	reorderRecords
	wrongWatermark
	// skipToWatermark answers every Fetch with no records and next_offset = high watermark: a
	// consumer that believes it moves (and commits) past records it never saw.
	skipToWatermark
	// hideAsCompacted drops a record and leaves every other offset as it was, as if compaction
	// had removed it (a compacted batch, rewritten with a new CRC).
	hideAsCompacted
)

func (l lie) String() string {
	return [...]string{"honest", "alter a record value", "drop a record", "reorder two records", "report a wrong high watermark", "skip to the high watermark", "hide a record as if compacted"}[l]
}

// The records of the test topic: values v-0 .. v-14 in three batches of five.
const victim = "v-7"

func (l lie) records(recs []types.Record) []types.Record {
	for i := range recs {
		if recs[i].Value == nil || string(recs[i].Value.Data) != victim {
			continue
		}
		switch l {
		case hideAsCompacted:
			return append(recs[:i], recs[i+1:]...)
		case alterValue:
			recs[i].Value = &types.Bytes{Data: []byte("X-7")}
		case dropRecord: // and renumber the rest, as a careful liar would
			for j := i + 1; j < len(recs); j++ {
				recs[j].Offset--
			}
			return append(recs[:i], recs[i+1:]...)
		case reorderRecords:
			if i > 0 {
				recs[i-1].Value, recs[i].Value = recs[i].Value, recs[i-1].Value
			}
		}
		return recs
	}
	return recs
}

// batch lies about a stored batch as a careful liar would: it decodes the records, applies the
// lie and writes a well-formed batch again (new CRC, record count and base offset in step), so
// only the proofs can give it away.
func (l lie) batch(b *types.RecordBatch) {
	recs, err := b.Records()
	if err != nil || !slices.Contains(values(recs), victim) {
		return
	}
	if l == hideAsCompacted {
		all, _, err := kbatch.CompactionRecords(b.RecordBatch)
		if err != nil {
			return
		}
		i := slices.Index(values(recs), victim)
		b.RecordBatch = kbatch.CompactedBatch(b.RecordBatch, slices.Delete(all, i, i+1))
		b.RecordCount--
		return
	}
	recs = l.records(recs)
	brs := make([]types.BatchRecord, len(recs))
	for i, r := range recs {
		brs[i] = types.BatchRecord{Key: r.Key, Value: r.Value, Headers: r.Headers, CreateTimeMs: r.CreateTimeMs}
	}
	bz, err := types.EncodeRecordBatch(brs, kbatch.CompressionNone)
	if err != nil {
		return
	}
	b.RecordBatch, b.RecordCount = kbatch.WithBaseOffset(bz, b.BaseOffset), uint32(len(brs))
}

// lyingProxy sits between clients and a real node's CometBFT RPC and rewrites ABCI query answers
// about the log according to the current lie. Headers and commits pass untouched: it cannot
// forge validator signatures.
type lyingProxy struct {
	target string
	lie    atomic.Int32
	// staleHeight, when set, is the latest height the proxy announces in /status: a node hiding
	// every block after it.
	staleHeight atomic.Int64
}

func (p *lyingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequest(r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var call struct {
		Method string `json:"method"`
		Params struct {
			Path string `json:"path"`
			Data string `json:"data"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &call) == nil && call.Method == "abci_query" {
		out = p.rewrite(call.Params.Path, out)
	}
	if h := p.staleHeight.Load(); h > 0 && (call.Method == "status" || r.URL.Path == "/status") {
		out = bytes.Replace(out, []byte(`"latest_block_height":"`), []byte(fmt.Sprintf(`"latest_block_height":"%d","real_latest_height":"`, h)), 1)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}

func (p *lyingProxy) rewrite(path string, out []byte) []byte {
	l := lie(p.lie.Load())
	if l == honest {
		return out
	}
	var msg map[string]any
	if json.Unmarshal(out, &msg) != nil {
		return out
	}
	res, _ := msg["result"].(map[string]any)
	resp, _ := res["response"].(map[string]any)
	if resp == nil {
		return out
	}
	value, _ := base64.StdEncoding.DecodeString(fmt.Sprint(resp["value"]))
	switch {
	case strings.HasSuffix(path, "/Fetch"):
		var f types.QueryFetchResponse
		if f.Unmarshal(value) == nil {
			f.Records = l.records(f.Records)
			for i := range f.Batches {
				l.batch(&f.Batches[i])
			}
			if l == wrongWatermark {
				f.HighWatermark += 5
			}
			if l == skipToWatermark {
				f.Records, f.Batches, f.NextOffset = nil, nil, f.HighWatermark
			}
			value, _ = f.Marshal()
		}
	case strings.HasSuffix(path, "/Partitions"):
		var ps types.QueryPartitionsResponse
		if ps.Unmarshal(value) == nil && l == wrongWatermark {
			for i := range ps.Partitions {
				ps.Partitions[i].HighWatermark += 5
			}
			value, _ = ps.Marshal()
		}
	case path == "/store/topics/key":
		value = l.storeValue(value)
		// The value of an absent key's right neighbour travels inside the proof.
		if po, ok := resp["proofOps"].(map[string]any); ok {
			ops, _ := po["ops"].([]any)
			if len(ops) > 0 {
				op := ops[0].(map[string]any)
				data, _ := base64.StdEncoding.DecodeString(fmt.Sprint(op["data"]))
				var cp ics23.CommitmentProof
				if cp.Unmarshal(data) == nil {
					if ex := cp.GetExist(); ex != nil {
						ex.Value = l.storeValue(ex.Value)
					}
					if ne := cp.GetNonexist(); ne != nil && ne.Right != nil {
						ne.Right.Value = l.storeValue(ne.Right.Value)
					}
					data, _ = cp.Marshal()
					op["data"] = base64.StdEncoding.EncodeToString(data)
				}
			}
		}
	}
	if len(value) > 0 {
		resp["value"] = base64.StdEncoding.EncodeToString(value)
	}
	bz, _ := json.Marshal(msg)
	return bz
}

// storeValue lies about a raw x/topics store value: a record batch or a partition.
func (l lie) storeValue(v []byte) []byte {
	var b types.RecordBatch
	if b.Unmarshal(v) == nil && b.RecordCount > 0 && len(b.RecordBatch) > 0 && b.Producer != "" {
		l.batch(&b)
		bz, _ := b.Marshal()
		return bz
	}
	var p types.Partition
	if l == wrongWatermark && p.Unmarshal(v) == nil && p.Topic != "" && p.HighWatermark > 0 {
		p.HighWatermark += 5
		bz, _ := p.Marshal()
		return bz
	}
	return v
}

// TestAttackVerifiedReadsRejectALyingNode puts a proxy that lies between the clients and a real node:
// it alters a record value, drops a record, reorders two records or inflates the high
// watermark. The plain gRPC-over-RPC client accepts every lie; the verifying client rejects
// every one, and with an honest proxy returns exactly what was produced.
func TestAttackVerifiedReadsRejectALyingNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "audit", 1)
	cctx, signer := n.ClientContext(n.Home, "alice")
	produceAudit(t, signer)
	n.MustCLI("", "query", "topics", "consume", "audit", "--group", "auditors", "--from", "alice", "--stay", "--max", "8")
	h, err := n.Height()
	require.NoError(t, err)
	require.NoError(t, n.WaitForHeight(h+3, 30*time.Second)) // the commit is in a block, and provable

	proxy := &lyingProxy{target: strings.Replace(n.RPC, "tcp://", "http://", 1)}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	viaProxy, err := rpchttp.New(srv.URL, "/websocket")
	require.NoError(t, err)
	plain := types.NewQueryClient(cctx.WithClient(viaProxy).WithNodeURI(srv.URL))

	// The trust anchor comes straight from the node, not through the proxy.
	hash1, _, err := n.BlockHashes(1)
	require.NoError(t, err)
	anchor, err := hex.DecodeString(hash1)
	require.NoError(t, err)
	ctx := context.Background()
	vc, err := verify.New(ctx, verify.Config{ChainID: node.ChainID, Node: srv.URL, Witnesses: []string{n.RPC}, TrustHeight: 1, TrustHash: anchor})
	require.NoError(t, err)

	// Honest: both paths agree and the verified one returns exactly what was produced.
	got, err := vc.Fetch(ctx, 0, "audit", 0, 0, 100)
	require.NoError(t, err)
	require.Len(t, got.Records, 15)
	for i, r := range got.Records {
		require.Equal(t, uint64(i), r.Offset)
		require.Equal(t, fmt.Sprintf("v-%d", i), string(r.Value.Data))
	}
	require.Equal(t, 3, got.Batches)
	require.EqualValues(t, 15, got.Partition.HighWatermark)
	mid, err := vc.Fetch(ctx, got.Height, "audit", 0, 7, 4) // from inside a batch, across batches
	require.NoError(t, err)
	require.Equal(t, []string{"v-7", "v-8", "v-9", "v-10"}, values(mid.Records))
	require.EqualValues(t, 11, mid.NextOffset)
	off, err := vc.CommittedOffset(ctx, got.Height, "auditors", "audit", 0)
	require.NoError(t, err)
	require.True(t, off.Found)
	require.EqualValues(t, 8, off.Offset.Offset)
	require.Equal(t, got.Height, off.Height)
	off, err = vc.CommittedOffset(ctx, got.Height, "nobody", "audit", 0)
	require.NoError(t, err)
	require.False(t, off.Found, "an absent commit is proven absent")
	parts, err := vc.Partitions(ctx, got.Height, "audit")
	require.NoError(t, err)
	require.Len(t, parts.Partitions, int(parts.Topic.Partitions))
	require.EqualValues(t, 15, parts.Partitions[0].HighWatermark)
	_, err = vc.Topic(ctx, got.Height, "no-such-topic")
	require.ErrorIs(t, err, types.ErrUnknownTopic)

	// The CLI: a report of the whole range, and group offsets proven for every partition.
	trust := []string{"--trust-height", "1", "--trust-hash", hash1, "--witness", n.RPC}
	report := n.MustCLI("", append([]string{"query", "topics", "verify", "audit", "--node", srv.URL}, trust...)...)
	require.Contains(t, report, "partition 0: log start 0, high watermark 15; offsets [0, 15): 15 records in 3 batches verified, no gaps")
	require.Contains(t, report, "verified: 15 records in 3 batches, 0 failures")
	offsets := n.MustCLI("", append([]string{"query", "topics", "group-offsets", "auditors", "--topic", "audit", "--verify", "-o", "json", "--node", srv.URL}, trust...)...)
	require.Contains(t, offsets, `"offset":"8"`)

	for _, l := range []lie{alterValue, dropRecord, reorderRecords, wrongWatermark} {
		proxy.lie.Store(int32(l))
		// The unverified paths believe the node: records decoded by the node, and the stored
		// batches decoded here.
		req := &types.QueryFetchRequest{Topic: "audit", Partition: 0, Offset: 0, MaxRecords: 100}
		res, err := plain.Fetch(ctx, req)
		require.NoError(t, err, l.String())
		decoded, err := consumer.FetchRecords(ctx, plain, req)
		require.NoError(t, err, l.String())
		for _, res := range []*types.QueryFetchResponse{res, decoded} {
			switch l {
			case alterValue:
				require.Contains(t, values(res.Records), "X-7", "unverified path: %s", l)
			case dropRecord:
				require.Len(t, res.Records, 14, "unverified path: %s", l)
				require.NotContains(t, values(res.Records), victim)
			case reorderRecords:
				require.Equal(t, victim, string(res.Records[6].Value.Data), "unverified path: %s", l)
			case wrongWatermark:
				require.EqualValues(t, 20, res.HighWatermark, "unverified path: %s", l)
			}
		}
		// The verified path refuses it, naming what did not verify.
		_, err = vc.Fetch(ctx, 0, "audit", 0, 0, 100)
		require.ErrorIs(t, err, verify.ErrNotVerified, l.String())
		require.ErrorIs(t, err, types.ErrNotVerified)
		t.Logf("%s: unverified read accepted it; verified read: %v", l, err)
		cli := n.CLI("", append([]string{"query", "topics", "consume", "audit", "--verify", "--node", srv.URL}, trust...)...)
		require.Error(t, cli.Err, l.String())
		require.Contains(t, cli.Stderr, "read not verified")
		require.Contains(t, cli.Stderr, "(codespace topics, code 32)")
	}

	// A node that stops announcing new blocks would pin readers to an old, authentic state (a
	// follower would silently stop): the age of the newest header it offers gives it away.
	proxy.lie.Store(int32(honest))
	proxy.staleHeight.Store(got.Height)
	stale, err := verify.New(ctx, verify.Config{ChainID: node.ChainID, Node: srv.URL, Witnesses: []string{n.RPC}, TrustHeight: 1, TrustHash: anchor, MaxStaleness: 2 * time.Second})
	require.NoError(t, err)
	start := time.Now()
	for {
		_, err = stale.Partitions(ctx, 0, "audit")
		if err != nil || time.Since(start) > 20*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.ErrorIs(t, err, verify.ErrNotVerified)
	require.Contains(t, err.Error(), "stale")
	t.Logf("node pinned at height %d: accepted for %s (max staleness 2s), then refused: %v", got.Height, time.Since(start).Round(100*time.Millisecond), err)
	cli := n.CLI("", append([]string{"query", "topics", "consume", "audit", "--verify", "--max-staleness", "2s", "--node", srv.URL}, trust...)...)
	require.Error(t, cli.Err)
	require.Contains(t, cli.Stderr, "stale")
	require.Contains(t, cli.Stderr, "(codespace topics, code 32)")
	proxy.staleHeight.Store(0)
}

// TestAttackVerifiedGroupConsumeRefusesASkippedRange plays "consume --group --verify commits past
// records it never saw": a proxy answers every fetch with no records and next offset = high
// watermark. The verifying group consumer proves that a poll's records are exactly those of
// [position, next), so it fails with code 32 and the group's committed offset stays where it
// was; the unverified consumer, given the same answers, commits past every record.
func TestAttackVerifiedGroupConsumeRefusesASkippedRange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "audit", 1)
	_, signer := n.ClientContext(n.Home, "alice")
	produceAudit(t, signer)
	n.MustCLI("", "query", "topics", "consume", "audit", "--group", "auditors", "--from", "alice", "--stay", "--max", "8")
	committed := func(group string) string {
		// Plainly from the honest node, not through the proxy.
		var res struct {
			Offsets []struct {
				Committed struct {
					Offset string `json:"offset"`
				} `json:"committed"`
			} `json:"offsets"`
		}
		require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "group-offsets", group, "-o", "json")), &res))
		require.Len(t, res.Offsets, 1)
		return res.Offsets[0].Committed.Offset
	}
	require.Equal(t, "8", committed("auditors"))

	proxy := &lyingProxy{target: strings.Replace(n.RPC, "tcp://", "http://", 1)}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	hash1, _, err := n.BlockHashes(1)
	require.NoError(t, err)
	trust := []string{"--verify", "--trust-height", "1", "--trust-hash", hash1, "--witness", n.RPC}
	consume := func(group string) []string {
		return []string{"query", "topics", "consume", "audit", "--group", group, "--from", "alice", "--stay", "--node", srv.URL}
	}

	// Honest proxy: a verifying group consumer of a new group reads all 15 records and commits.
	start := time.Now()
	ok := n.CLI("", append(consume("honest"), trust...)...)
	require.NoError(t, ok.Err, ok.Stderr)
	require.Len(t, strings.Fields(ok.Stdout), 15)
	require.Equal(t, "15", committed("honest"))
	honestTook := time.Since(start)

	proxy.lie.Store(int32(skipToWatermark))
	start = time.Now()
	lied := n.CLI("", append(consume("auditors"), trust...)...)
	require.Error(t, lied.Err, "the verifying consumer must refuse the skipped range")
	require.Contains(t, lied.Stderr, "read not verified")
	require.Contains(t, lied.Stderr, "(codespace topics, code 32)")
	require.Empty(t, strings.TrimSpace(lied.Stdout), "no record printed")
	require.Equal(t, "8", committed("auditors"), "nothing committed")
	refusedIn := time.Since(start)

	// The same answers to the unverified consumer: it prints nothing and commits past all 7.
	plainRun := n.CLI("", consume("auditors")...)
	require.NoError(t, plainRun.Err, plainRun.Stderr)
	require.Empty(t, strings.TrimSpace(plainRun.Stdout))
	require.Equal(t, "15", committed("auditors"), "the unverified consumer believed the node")
	t.Logf("honest: verified group consume of a new group read 15 records and committed 15 in %s; lie %q: verified consumer refused in %s (%s), committed offset stays 8; unverified consumer printed 0 records and committed 15",
		honestTook.Round(time.Millisecond), skipToWatermark, refusedIn.Round(time.Millisecond), lastLine(lied.Stderr))
}

// produceAudit produces the test topic's records: values v-0 .. v-14 in three batches of five,
// the middle one lz4-compressed (a verifier decodes the proven bytes, whatever their codec).
func produceAudit(t *testing.T, signer *txclient.Signer) {
	t.Helper()
	for b := 0; b < 3; b++ {
		var recs []types.BatchRecord
		for i := 0; i < 5; i++ {
			recs = append(recs, types.BatchRecord{Value: types.NewBytes(fmt.Appendf(nil, "v-%d", b*5+i))})
		}
		c := kbatch.CompressionNone
		if b == 1 {
			c = kbatch.CompressionLZ4
		}
		batch, err := types.NewProduceBatch("audit", 0, recs, c)
		require.NoError(t, err)
		_, err = signer.SubmitAndWait(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}})
		require.NoError(t, err)
	}
}

func values(recs []types.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(r.Value.GetData())
	}
	return out
}

// TestConsumeFollow starts `consume --follow` (plain, then verified), then produces more records
// to both partitions: the consumer prints every one, in offset order per partition, none missing.
func TestConsumeFollow(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "live", 2)
	_, signer := n.ClientContext(n.Home, "alice")
	produced := 0
	produce := func(count int) error {
		for i := 0; i < count; i++ {
			b, err := types.NewProduceBatch("live", uint32(produced%2), []types.BatchRecord{{Value: types.NewBytes(fmt.Appendf(nil, "rec-%d", produced))}}, kbatch.CompressionNone)
			if err != nil {
				return err
			}
			if _, err := signer.SubmitAndWait(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{b}}); err != nil {
				return err
			}
			produced++
		}
		return nil
	}
	require.NoError(t, produce(4))
	hash1, _, err := n.BlockHashes(1)
	require.NoError(t, err)

	for _, mode := range [][]string{nil, {"--verify", "--trust-height", "1", "--trust-hash", hash1}} {
		backlog, want := produced, produced+6
		producing := make(chan error, 1)
		args := append([]string{"query", "topics", "consume", "live", "--follow", "-o", "json", "--max", fmt.Sprint(want), "--home", n.Home, "--node", n.RPC}, mode...)
		cmd := exec.Command(n.Bin, args...)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		lines := bufio.NewScanner(stdout)
		var got []ConsumedLine
		for lines.Scan() {
			var rec ConsumedLine
			require.NoError(t, json.Unmarshal(lines.Bytes(), &rec), lines.Text())
			got = append(got, rec)
			if len(got) == backlog { // caught up with the backlog: produce while it follows
				go func() { producing <- produce(6) }()
			}
		}
		require.NoError(t, cmd.Wait(), stderr.String())
		require.NoError(t, <-producing)
		require.Len(t, got, want, "mode %v", mode)
		seen := map[string]bool{}
		nextOffset := map[uint32]uint64{}
		for _, r := range got {
			require.Equal(t, nextOffset[r.Partition], r.Offset, "partition %d out of order or with a gap", r.Partition)
			nextOffset[r.Partition]++
			seen[r.Value] = true
		}
		for i := 0; i < want; i++ {
			require.True(t, seen[fmt.Sprintf("rec-%d", i)], "rec-%d missing", i)
		}
		if mode != nil {
			require.Contains(t, stderr.String(), fmt.Sprintf("verified %d records at height", want))
		}
		t.Logf("follow %v: %d records, %d of them produced after it started", mode, len(got), 6)
	}

	// A group member with --verify checks what it consumed against proofs before committing.
	out := n.MustCLI("", "query", "topics", "consume", "live", "--group", "verified-readers", "--from", "alice",
		"--verify", "--trust-height", "1", "--trust-hash", hash1, "-o", "json")
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), produced)
}

// ConsumedLine is the part of consume's JSON output the tests check.
type ConsumedLine struct {
	Partition uint32 `json:"partition"`
	Offset    uint64 `json:"offset"`
	Value     string `json:"value"`
}

// A verifying consumer proves records a moment after the node served them; retention may
// delete them in between (a consumer at the edge of retention.ms). The proven log start offset
// past them sends the check to the recent height that still held them, and it passes; records
// altered by the node are still refused.
func TestVerifiedCheckAcrossRetention(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	createTopic(n, "alice", "audit", 1, "--retention-ms", "2000")
	_, signer := n.ClientContext(n.Home, "alice")
	produceAudit(t, signer)
	hash1, _, err := n.BlockHashes(1)
	require.NoError(t, err)
	anchor, err := hex.DecodeString(hash1)
	require.NoError(t, err)
	ctx := context.Background()
	vc, err := verify.New(ctx, verify.Config{ChainID: node.ChainID, Node: n.RPC, TrustHeight: 1, TrustHash: anchor})
	require.NoError(t, err)
	var served verify.FetchResult
	require.Eventually(t, func() bool {
		served, err = vc.Fetch(ctx, 0, "audit", 0, 0, 100)
		return err == nil && len(served.Records) == 15
	}, 30*time.Second, 100*time.Millisecond, "the 15 records provable: %v", err)
	require.Eventually(t, func() bool {
		p, err := vc.Partition(ctx, 0, "audit", 0)
		return err == nil && p.Partition.LogStartOffset == 15
	}, 30*time.Second, 100*time.Millisecond, "retention deleted them")
	newest, err := vc.LatestHeight(ctx)
	require.NoError(t, err)
	checked, err := vc.CheckRange(ctx, "audit", 0, 0, 15, served.Records)
	require.NoError(t, err, "served at height %d, deleted by height %d", served.Height, newest)
	require.Less(t, checked.Height, newest)
	altered := slices.Clone(served.Records)
	altered[3].Value = types.NewBytes([]byte("v-x"))
	_, err = vc.CheckRange(ctx, "audit", 0, 0, 15, altered)
	require.ErrorIs(t, err, verify.ErrNotVerified)
	t.Logf("15 records served at height %d, deleted by retention by height %d: proven at height %d; an altered one refused: %v", served.Height, newest, checked.Height, err)
}
