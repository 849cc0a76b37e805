package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rpchttp "github.com/cometbft/cometbft/rpc/client/http"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/client/verify"
	"github.com/bftlog/bftlog/x/topics/types"
)

// TestKafkaCompactedTopicThroughGateway runs a compacted topic end to end on a real node: a
// franz-go admin creates it over the Kafka protocol with cleanup.policy=compact, reads its
// configs back with DescribeConfigs and changes one with IncrementalAlterConfigs; a franz-go
// producer writes 20 rounds of 10 keys and a tombstone; a record without a key is refused with
// INVALID_RECORD. Once compaction has run, franz-go and kcat consumers reading from the
// beginning rebuild exactly the latest table (the tombstone's key gone after
// delete.retention.ms), at the original offsets with gaps between them, and the high watermark
// is unchanged. A verifying client proves the same records, with the gaps proven empty, and
// refuses a node that hides a record as if compaction had removed it.
func TestKafkaCompactedTopicThroughGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat is needed (apt-get install kcat; .ci/run installs it)")
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()))
	require.NoError(t, err)
	defer admin.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	topic := kmsg.CreateTopicsRequestTopic{Topic: "prices", NumPartitions: 1, ReplicationFactor: -1}
	for _, c := range [][2]string{{"cleanup.policy", "compact"}, {"delete.retention.ms", "1000"}, {"min.cleanable.dirty.ratio", "0.01"}} {
		topic.Configs = append(topic.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: c[0], Value: kmsg.StringPtr(c[1])})
	}
	create.Topics = []kmsg.CreateTopicsRequestTopic{topic}
	cres, err := create.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, cres.Topics[0].ErrorCode, "%v", cres.Topics[0].ErrorMessage)

	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "prices",
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "delete.retention.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("2000")}}}}
	ares, err := alter.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, ares.Resources[0].ErrorCode, "%v", ares.Resources[0].ErrorMessage)
	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "prices"}}
	dres, err := describe.RequestWith(ctx, admin)
	require.NoError(t, err)
	configs := map[string]string{}
	for _, c := range dres.Resources[0].Configs {
		configs[c.Name] = derefOr(c.Value)
	}
	require.Equal(t, "compact", configs["cleanup.policy"])
	require.Equal(t, "2000", configs["delete.retention.ms"], "set by IncrementalAlterConfigs")
	require.Equal(t, "0.01", configs["min.cleanable.dirty.ratio"])
	require.Equal(t, "0", configs["min.compaction.lag.ms"])

	// 20 rounds of 10 keys, one round per produce; sym-9 is deleted by a tombstone in round 10
	// and never written again; round 19 writes only sym-7, with v-7 (the lying node's victim
	// below).
	producer, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic("prices"))
	require.NoError(t, err)
	defer producer.Close()
	want := map[string]string{}
	total := 0
	for round := 0; round < 20; round++ {
		var recs []*kgo.Record
		for k := 0; k < 10; k++ {
			key, value := fmt.Sprintf("sym-%d", k), fmt.Sprintf("%d.%02d", k, round)
			if k == 9 && round >= 10 || round == 19 && k != 7 {
				continue
			}
			if round == 19 { // the last batch: sym-7 alone, so round 18's batch loses its sym-7
				value = victim
			}
			recs = append(recs, &kgo.Record{Key: []byte(key), Value: []byte(value)})
			want[key] = value
		}
		if round == 10 {
			recs = append(recs, &kgo.Record{Key: []byte("sym-9")}) // a tombstone
			delete(want, "sym-9")
		}
		require.NoError(t, producer.ProduceSync(ctx, recs...).FirstErr())
		total += len(recs)
	}
	err = producer.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	require.True(t, errors.Is(err, kerr.InvalidRecord), "a keyless record: %v", err)

	// Compaction runs in the EndBlocker; the tombstone goes 2 s after it was appended.
	var part types.Partition
	require.Eventually(t, func() bool {
		var raw struct {
			Partitions []struct {
				HighWatermark string `json:"high_watermark"`
				RecordCount   string `json:"record_count"`
			} `json:"partitions"`
		}
		require.NoError(t, json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "partitions", "prices", "-o", "json")), &raw))
		hw, _ := strconv.ParseUint(raw.Partitions[0].HighWatermark, 10, 64)
		rc, _ := strconv.ParseUint(raw.Partitions[0].RecordCount, 10, 64)
		part = types.Partition{HighWatermark: hw, RecordCount: rc}
		// Left: each live key's latest record (9; sym-9's tombstone until it expires).
		return rc <= 9
	}, 60*time.Second, 500*time.Millisecond, "compaction did not run")
	require.EqualValues(t, total, part.HighWatermark, "offsets are not reused or renumbered")

	// franz-go from the beginning rebuilds the latest table.
	cons, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ConsumeTopics("prices"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer cons.Close()
	table := map[string]string{}
	var offsets []int64
	for len(offsets) < int(part.RecordCount) {
		fs := cons.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			offsets = append(offsets, r.Offset)
			if r.Value == nil {
				delete(table, string(r.Key))
			} else {
				table[string(r.Key)] = string(r.Value)
			}
		})
	}
	require.Equal(t, want, table, "franz-go's table")
	require.Less(t, offsets[0], offsets[len(offsets)-1])
	require.Greater(t, offsets[0], int64(0), "the first offsets were compacted away: the consumer skipped them")

	// kcat from the beginning: the same table, at the same offsets.
	kctx, kcancel := context.WithTimeout(ctx, 30*time.Second)
	defer kcancel()
	out, err := exec.CommandContext(kctx, kcat, "-b", gw.Addr(), "-C", "-t", "prices", "-o", "beginning", "-e", "-Z", "-f", "%k=%s@%o\n").CombinedOutput()
	require.NoError(t, err, string(out))
	kt := map[string]string{}
	var kOffsets []int64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		kv, at, ok := strings.Cut(line, "@")
		if !ok {
			continue // kcat's "reached end" notices
		}
		o, err := strconv.ParseInt(at, 10, 64)
		require.NoError(t, err, line)
		kOffsets = append(kOffsets, o)
		k, v, _ := strings.Cut(kv, "=")
		if v == "NULL" {
			delete(kt, k)
		} else {
			kt[k] = v
		}
	}
	require.Equal(t, want, kt, "kcat's table")
	require.Equal(t, offsets, kOffsets)

	// Verified reads: exactly these records, the compacted offsets proven empty.
	hash1, _, err := n.BlockHashes(1)
	require.NoError(t, err)
	anchor, err := hex.DecodeString(hash1)
	require.NoError(t, err)
	proxy := &lyingProxy{target: strings.Replace(n.RPC, "tcp://", "http://", 1)}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	vc, err := verify.New(ctx, verify.Config{ChainID: node.ChainID, Node: srv.URL, Witnesses: []string{n.RPC}, TrustHeight: 1, TrustHash: anchor})
	require.NoError(t, err)
	proven, err := vc.Fetch(ctx, 0, "prices", 0, 0, 1000)
	require.NoError(t, err)
	var provenOffsets []int64
	for _, r := range proven.Records {
		provenOffsets = append(provenOffsets, int64(r.Offset))
	}
	require.Equal(t, offsets, provenOffsets)
	require.EqualValues(t, total, proven.NextOffset)
	trust := []string{"--trust-height", "1", "--trust-hash", hash1, "--witness", n.RPC}
	report := n.MustCLI("", append([]string{"query", "topics", "verify", "prices", "--node", srv.URL}, trust...)...)
	require.Contains(t, report, fmt.Sprintf("%d records in", len(offsets)))
	require.Contains(t, report, fmt.Sprintf("%d offsets proven to hold no record", total-len(offsets)))

	// A node hiding sym-7's latest record as if compaction had removed it: the plain read
	// believes it, the verified one refuses it.
	proxy.lie.Store(int32(hideAsCompacted))
	viaProxy, err := rpchttp.New(srv.URL, "/websocket")
	require.NoError(t, err)
	cctx, _ := n.ClientContext(n.Home, "alice")
	plain := types.NewQueryClient(cctx.WithClient(viaProxy).WithNodeURI(srv.URL))
	lied, err := consumer.FetchRecords(ctx, plain, &types.QueryFetchRequest{Topic: "prices", Partition: 0, Offset: 0, MaxRecords: 1000})
	require.NoError(t, err)
	require.NotContains(t, values(lied.Records), victim, "the unverified read lost sym-7's latest value")
	_, err = vc.Fetch(ctx, 0, "prices", 0, 0, 1000)
	require.ErrorIs(t, err, verify.ErrNotVerified)
	t.Logf("%d records produced (20 rounds of 10 keys, a tombstone): %d left after compaction at offsets %d..%d, high watermark %d; franz-go, kcat and a verified read agree on them; a node hiding one as compacted: %v",
		total, len(offsets), offsets[0], offsets[len(offsets)-1], part.HighWatermark, err)

	// A verifying consumer proves what it was served a moment later (verify.CheckRange): records
	// compaction removed in between are proven at the recent height that still held them, not
	// reported as a lie; altered ones are still refused. min.compaction.lag.ms holds the next
	// pass 3 s, so some heights hold both the old and the new round.
	proxy.lie.Store(int32(honest))
	alter.Resources[0].Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "min.compaction.lag.ms", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("3000")}}
	ares, err = alter.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, ares.Resources[0].ErrorCode, "%v", ares.Resources[0].ErrorMessage)
	var round []*kgo.Record
	for k := 0; k < 9; k++ {
		round = append(round, &kgo.Record{Key: []byte(fmt.Sprintf("sym-%d", k)), Value: []byte(fmt.Sprintf("%d.new", k))})
	}
	require.NoError(t, producer.ProduceSync(ctx, round...).FirstErr())
	var served verify.FetchResult
	require.Eventually(t, func() bool {
		served, err = vc.Fetch(ctx, 0, "prices", 0, 0, 1000)
		return err == nil && served.NextOffset == uint64(total+len(round))
	}, 30*time.Second, 200*time.Millisecond, "the new round provable: %v", err)
	require.Len(t, served.Records, len(offsets)+len(round), "the old round is not compacted yet (lag)")
	require.Eventually(t, func() bool {
		p, err := vc.Partition(ctx, 0, "prices", 0)
		return err == nil && p.Partition.RecordCount == uint64(len(round))
	}, 30*time.Second, 200*time.Millisecond, "compaction of the old round")
	newest, err := vc.LatestHeight(ctx)
	require.NoError(t, err)
	checked, err := vc.CheckRange(ctx, "prices", 0, 0, served.NextOffset, served.Records)
	require.NoError(t, err, "records served at height %d, compacted by height %d", served.Height, newest)
	require.Less(t, checked.Height, newest, "proven at a height before the compaction")
	altered := slices.Clone(served.Records)
	altered[len(altered)-1].Value = &types.Bytes{Data: []byte("8.forged")}
	_, err = vc.CheckRange(ctx, "prices", 0, 0, served.NextOffset, altered)
	require.ErrorIs(t, err, verify.ErrNotVerified)
	t.Logf("%d records served at height %d, compacted to %d by height %d: proven at height %d; an altered one refused: %v",
		len(served.Records), served.Height, len(round), newest, checked.Height, err)
}
