package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/bftlog/bftlog/gateway/kafka"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// TestKafkaClientsThroughGateway drives a real node through the gateway with franz-go and kcat:
// topics created over the Kafka protocol, keyed records with headers produced by kgo are read
// back by kgo and by `bftlogd query topics consume` byte for byte at the same offsets; records
// produced with the CLI are read by kgo and kcat; keys land on the partition the chain's own
// partitioner picks.
func TestKafkaClientsThroughGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice", "bob")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()))
	require.NoError(t, err)
	defer admin.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "orders", NumPartitions: 3, ReplicationFactor: -1}}
	cres, err := create.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, cres.Topics[0].ErrorCode, "%v", cres.Topics[0].ErrorMessage)
	again, err := create.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.EqualValues(t, 36, again.Topics[0].ErrorCode, "TOPIC_ALREADY_EXISTS")

	// Produce keyed records with headers (idempotent producer, the kgo default).
	producer, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic("orders"))
	require.NoError(t, err)
	defer producer.Close()
	type sent struct {
		key, value string
		partition  int32
		offset     int64
	}
	var produced []sent
	for i := 0; i < 30; i++ {
		rec := &kgo.Record{Key: []byte(fmt.Sprintf("customer-%d", i%7)), Value: []byte(fmt.Sprintf("order-%d", i)),
			Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("kgo")}}}
		producer.Produce(ctx, rec, nil)
	}
	results := producer.ProduceSync(ctx, &kgo.Record{Key: []byte("customer-0"), Value: []byte("order-30"), Headers: []kgo.RecordHeader{{Key: "source", Value: []byte("kgo")}}})
	require.NoError(t, results.FirstErr())
	require.NoError(t, producer.Flush(ctx))

	// Read everything back with kgo.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	require.NoError(t, err)
	defer consumer.Close()
	for len(produced) < 31 {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			require.Len(t, r.Headers, 1)
			require.Equal(t, "kgo", string(r.Headers[0].Value))
			produced = append(produced, sent{string(r.Key), string(r.Value), r.Partition, r.Offset})
		})
	}
	require.Len(t, produced, 31)

	// The CLI reads the same records at the same offsets.
	byPlace := map[string]sent{}
	for _, s := range produced {
		byPlace[fmt.Sprintf("%d/%d", s.partition, s.offset)] = s
	}
	out := n.MustCLI("", "query", "topics", "consume", "orders", "-o", "json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 31)
	for _, l := range lines {
		var r struct {
			Partition uint32 `json:"partition"`
			Offset    uint64 `json:"offset"`
			Key       string `json:"key"`
			Value     string `json:"value"`
			Headers   []struct{ Key, Value string }
		}
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		s, ok := byPlace[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]
		require.True(t, ok, "CLI record %s not seen by kgo at that place", l)
		require.Equal(t, s.key, r.Key)
		require.Equal(t, s.value, r.Value)
		require.Equal(t, "source", r.Headers[0].Key)
	}

	// Same key, same partition: the chain's partitioner (CLI, no --partition) agrees with kgo's.
	placed := n.MustCLI("", "tx", "topics", "produce", "orders", "customer-3:from-cli", "--key-separator", ":", "--from", "bob", "-o", "json")
	var kgoPartition int32 = -1
	for _, s := range produced {
		if s.key == "customer-3" {
			kgoPartition = s.partition
		}
	}
	require.Contains(t, placed, fmt.Sprintf(`"partition":%d`, kgoPartition), placed)
	var fromCLI *kgo.Record
	for fromCLI == nil {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		fs.EachRecord(func(r *kgo.Record) { fromCLI = r })
	}
	require.Equal(t, "customer-3", string(fromCLI.Key))
	require.Equal(t, "from-cli", string(fromCLI.Value))
	require.Equal(t, kgoPartition, fromCLI.Partition)

	// kcat: list, produce and consume.
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat is needed (apt-get install kcat; .ci/run installs it)")
	list, err := exec.Command(kcat, "-b", gw.Addr(), "-L", "-t", "orders").CombinedOutput()
	require.NoError(t, err, string(list))
	require.Contains(t, string(list), `topic "orders" with 3 partitions`)
	prod := exec.Command(kcat, "-b", gw.Addr(), "-P", "-t", "orders", "-p", "1", "-K", ":")
	prod.Stdin = strings.NewReader("kcat-key:kcat-value-1\nkcat-key:kcat-value-2\n")
	pout, err := prod.CombinedOutput()
	require.NoError(t, err, string(pout))
	kctx, kcancel := context.WithTimeout(ctx, 20*time.Second)
	defer kcancel()
	cons, err := exec.CommandContext(kctx, kcat, "-b", gw.Addr(), "-C", "-t", "orders", "-p", "1", "-o", "beginning", "-e", "-f", "%k=%s@%o\n").CombinedOutput()
	require.NoError(t, err, string(cons))
	require.Contains(t, string(cons), "kcat-key=kcat-value-1@")
	require.Contains(t, string(cons), "kcat-key=kcat-value-2@")
	cli := n.MustCLI("", "query", "topics", "consume", "orders", "--partition", "1", "--print-key", "--key-separator", "=")
	require.Contains(t, cli, "kcat-key=kcat-value-2")

	// A restarted gateway starts without its on-chain producer sequences: it must resynchronise
	// from the chain's answers, neither failing nor having new records taken for duplicates.
	require.NoError(t, gw.Close())
	gw2 := startGateway(t, n, "alice")
	again2, err := kgo.NewClient(kgo.SeedBrokers(gw2.Addr()), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	require.NoError(t, err)
	defer again2.Close()
	for p := int32(0); p < 3; p++ {
		r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("after-restart-%d", p))}
		require.NoError(t, again2.ProduceSync(ctx, r).FirstErr(), "partition %d", p)
	}
	all := n.MustCLI("", "query", "topics", "consume", "orders")
	for p := 0; p < 3; p++ {
		require.Contains(t, all, fmt.Sprintf("after-restart-%d", p))
	}
	t.Logf("kgo produced and consumed %d records; CLI read them at the same offsets; kcat listed, produced 2 and consumed %d lines; a restarted gateway appended to all 3 partitions", len(produced), strings.Count(string(cons), "\n"))
}

// TestKafkaConsumerGroupThroughGateway runs kgo group consumers through the gateway: one member
// consumes and commits (the offsets land on chain), a second member joins and the partitions are
// split between them with every new record consumed exactly once, and after both leave a new
// member resumes from the committed offsets; kcat -G consumes the topic as another group.
func TestKafkaConsumerGroupThroughGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic("events"), kgo.AllowAutoTopicCreation())
	require.NoError(t, err)
	defer producer.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "events", NumPartitions: 4, ReplicationFactor: -1}}
	_, err = create.RequestWith(ctx, producer)
	require.NoError(t, err)
	next := 0
	produce := func(count int) {
		var recs []*kgo.Record
		for i := 0; i < count; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", next)), Value: []byte(fmt.Sprintf("e-%d", next))})
			next++
		}
		require.NoError(t, producer.ProduceSync(ctx, recs...).FirstErr())
	}
	member := func(assigned *atomic.Int32) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(gw.Addr()), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("events"), kgo.DisableAutoCommit(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6 * time.Second), kgo.HeartbeatInterval(500 * time.Millisecond)}
		if assigned != nil {
			opts = append(opts, kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				assigned.Add(int32(len(m["events"])))
			}))
		}
		cl, err := kgo.NewClient(opts...)
		require.NoError(t, err)
		return cl
	}
	seen := map[string]int{}
	var mu sync.Mutex
	pollInto := func(cl *kgo.Client, until func() bool) {
		for !until() {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			require.NoError(t, ctx.Err(), "timed out")
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[string(r.Value)]++
				mu.Unlock()
			})
		}
	}
	count := func(from, to int) (distinct, total int) {
		mu.Lock()
		defer mu.Unlock()
		for i := from; i < to; i++ {
			if c := seen[fmt.Sprintf("e-%d", i)]; c > 0 {
				distinct, total = distinct+1, total+c
			}
		}
		return
	}

	// One member reads everything and commits.
	produce(40)
	a := member(nil)
	defer a.Close()
	pollInto(a, func() bool { d, _ := count(0, 40); return d == 40 })
	require.NoError(t, a.CommitUncommittedOffsets(ctx))
	var committed struct {
		Offsets []struct {
			Committed struct {
				Partition uint32 `json:"partition"`
				Offset    string `json:"offset"`
			} `json:"committed"`
		} `json:"offsets"`
	}
	// The gateway answers a commit once admitted (CheckTx); it lands on chain with the next
	// block, which a quick query can precede.
	eventually(t, "the commits on chain", 30*time.Second, func() bool {
		committed.Offsets = nil
		return json.Unmarshal([]byte(n.MustCLI("", "query", "topics", "group-offsets", "g1", "-o", "json")), &committed) == nil &&
			len(committed.Offsets) == 4
	})
	sum := 0
	for _, o := range committed.Offsets {
		v, err := strconv.Atoi(o.Committed.Offset)
		require.NoError(t, err)
		sum += v
	}
	require.Len(t, committed.Offsets, 4, "one committed offset per partition, on chain")
	require.Equal(t, 40, sum, "committed offsets cover the 40 records read")

	// A second member joins: the partitions are split, new records are read exactly once.
	var bAssigned atomic.Int32
	b := member(&bAssigned)
	defer b.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pollInto(a, func() bool { d, _ := count(40, 80); return d == 40 })
	}()
	for bAssigned.Load() == 0 { // b's first poll drives its join
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := b.PollFetches(pctx)
		pcancel()
		require.NoError(t, ctx.Err(), "b never got partitions")
		fs.EachRecord(func(r *kgo.Record) { mu.Lock(); seen[string(r.Value)]++; mu.Unlock() })
	}
	produce(40)
	pollInto(b, func() bool { d, _ := count(40, 80); return d == 40 })
	<-done
	distinct, total := count(40, 80)
	require.Equal(t, 40, distinct)
	require.Equal(t, 40, total, "a new record was read twice")
	require.NoError(t, a.CommitUncommittedOffsets(ctx))
	require.NoError(t, b.CommitUncommittedOffsets(ctx))
	a.Close()
	b.Close()

	// A new member resumes from the committed offsets.
	produce(10)
	c := member(nil)
	defer c.Close()
	pollInto(c, func() bool { d, _ := count(80, 90); return d == 10 })
	_, totalOld := count(0, 80)
	require.Equal(t, 80, totalOld, "the resumed member re-read committed records")

	// kcat's balanced consumer reads the whole topic as another group.
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err)
	kctx, kcancel := context.WithTimeout(ctx, 60*time.Second)
	defer kcancel()
	out, err := exec.CommandContext(kctx, kcat, "-b", gw.Addr(), "-G", "kcat-group", "events", "-X", "auto.offset.reset=earliest", "-e", "-f", "%s\n").CombinedOutput()
	require.NoError(t, err, string(out))
	got := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "e-") {
			got++
		}
	}
	require.Equal(t, 90, got, string(out))
	t.Logf("group g1: 40 read by one member and committed; 40 split over two members after a rebalance (b had %d partitions), each read once; 10 read by a resumed member; kcat -G read %d", bAssigned.Load(), got)
}

// TestAttackKafkaGatewaysShareAKey plays "the gateway dies for ever when its key is used elsewhere":
// two gateways sign with one key (alice) for availability, each with its own Kafka producer
// writing to the same partitions, and alice also sends a CLI transaction mid-stream. Every
// record must be acknowledged and on chain exactly once: the account sequence no longer wedges
// a gateway (unordered transactions), and a gateway never takes the other's batch under a shared
// idempotence sequence for its own. A Go signer that keeps sequences (the CLI's) recovers from
// the CLI's transaction in one Submit.
func TestAttackKafkaGatewaysShareAKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	gws := []*kafka.Server{startGateway(t, n, "alice"), startGateway(t, n, "alice")}
	_, ordered := n.ClientContext(n.Home, "alice") // signs with sequences, read before the CLI moves them
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic, partitions, chunks, perChunk = "shared", 2, 12, 10

	admin, err := kgo.NewClient(kgo.SeedBrokers(gws[0].Addr()))
	require.NoError(t, err)
	defer admin.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: partitions, ReplicationFactor: -1}}
	cres, err := create.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, cres.Topics[0].ErrorCode, "%s", derefOr(cres.Topics[0].ErrorMessage))

	start := time.Now()
	var acked atomic.Int64
	var wg sync.WaitGroup
	chunksDone := make([]atomic.Int32, len(gws))
	errs := make([]error, len(gws))
	for g, gw := range gws {
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProduceRequestTimeout(30*time.Second), kgo.RecordDeliveryTimeout(90*time.Second))
		require.NoError(t, err)
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := 0; c < chunks; c++ {
				var recs []*kgo.Record
				for i := 0; i < perChunk; i++ {
					// Both producers write to both partitions: the gateways' idempotence
					// sequences for (alice, partition) collide on every chunk.
					recs = append(recs, &kgo.Record{Partition: int32(i % partitions), Value: fmt.Appendf(nil, "gw%d-%d-%d", g, c, i)})
				}
				if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
					errs[g] = fmt.Errorf("chunk %d: %w", c, err)
					return
				}
				acked.Add(perChunk)
				chunksDone[g].Add(1)
			}
		}()
	}
	// Mid-stream, alice signs a transaction with the CLI: her account sequence moves under the
	// gateways and under the ordered signer.
	for chunksDone[0].Load() < 3 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	n.MustCLI("", "tx", "topics", "produce", topic, "from-the-cli", "--partition", "0", "--from", "alice")
	cliAt := acked.Load()
	batch, err := types.NewProduceBatch(topic, 1, []types.BatchRecord{{Value: &types.Bytes{Data: []byte("from-an-ordered-signer")}}}, kbatch.CompressionNone)
	require.NoError(t, err)
	_, err = ordered.SubmitAndWait(&types.MsgProduce{Producer: ordered.Address(), Batches: []types.ProduceBatch{batch}})
	require.NoError(t, err, "a signer whose sequence another process used must recover, not fail")
	wg.Wait()
	for g, err := range errs {
		require.NoError(t, err, "gateway %d's producer", g)
	}
	elapsed := time.Since(start)

	// Read every partition back from the chain.
	q := types.NewQueryClient(n.MustClientCtx())
	onChain := map[string]int{}
	total := 0
	for p := uint32(0); p < partitions; p++ {
		for next := uint64(0); ; {
			res, err := q.Fetch(ctx, &types.QueryFetchRequest{Topic: topic, Partition: p, Offset: next, MaxRecords: 5000})
			require.NoError(t, err)
			for _, r := range res.Records {
				onChain[string(r.Value.GetData())]++
				total++
			}
			if res.NextOffset >= res.HighWatermark || len(res.Records) == 0 {
				break
			}
			next = res.NextOffset
		}
	}
	duplicates, missing := 0, 0
	for g := range gws {
		for c := 0; c < chunks; c++ {
			for i := 0; i < perChunk; i++ {
				switch k := onChain[fmt.Sprintf("gw%d-%d-%d", g, c, i)]; {
				case k == 0:
					missing++
				case k > 1:
					duplicates += k - 1
				}
			}
		}
	}
	sent := len(gws) * chunks * perChunk
	require.EqualValues(t, sent, acked.Load(), "every record acknowledged")
	require.Zero(t, missing, "acknowledged records missing from the chain")
	require.Zero(t, duplicates, "records on chain twice")
	require.Equal(t, 1, onChain["from-the-cli"])
	require.Equal(t, 1, onChain["from-an-ordered-signer"])
	require.Equal(t, sent+2, total, "nothing else on chain")
	t.Logf("2 gateways sharing key alice, plus a CLI transaction after %d acknowledged records: %d records sent, %d acknowledged, %d on chain (+2 from the CLI and the ordered signer), %d duplicates, %d missing, in %s",
		cliAt, sent, acked.Load(), total-2, duplicates, missing, elapsed.Round(time.Millisecond))
}

// derefOr is a Kafka answer's optional message, or "".
func derefOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// shown renders a record's key, value and headers with null apart from empty, so two records
// render alike only when they are byte for byte the same.
func shown(key, value []byte, headers []kgo.RecordHeader) string {
	q := func(b []byte) string {
		if b == nil {
			return "null"
		}
		return strconv.Quote(string(b))
	}
	out := "key=" + q(key) + " value=" + q(value) + " headers=["
	for _, h := range headers {
		out += strconv.Quote(h.Key) + ":" + q(h.Value) + " "
	}
	return out + "]"
}

// TestKafkaCompressedBatchesPassThrough: Kafka clients' compressed batches (gzip, snappy, lz4,
// zstd) go through the gateway untouched. A batch compressed by franz-go's compressor is stored
// as sent, only its base offset set; batches franz-go's producer and kcat compress are stored
// with their codec; franz-go and kcat read every record back byte for byte: keys, values,
// headers, null versus empty.
func TestKafkaCompressedBatchesPassThrough(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err, "kcat is needed (apt-get install kcat; .ci/run installs it)")
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "packed"
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		kind  kbatch.Compression
	}{
		{"gzip", kgo.GzipCompression(), kbatch.CompressionGzip},
		{"snappy", kgo.SnappyCompression(), kbatch.CompressionSnappy},
		{"lz4", kgo.Lz4Compression(), kbatch.CompressionLZ4},
		{"zstd", kgo.ZstdCompression(), kbatch.CompressionZstd},
	}
	admin, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()))
	require.NoError(t, err)
	defer admin.Close()
	// The raw produce below names its topic, as Produce did up to v12 (v13 names topics by ID).
	byName, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.MaxVersions(kversion.V4_0_0()))
	require.NoError(t, err)
	defer byName.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: topic, NumPartitions: int32(len(codecs)), ReplicationFactor: -1}}
	cres, err := create.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, cres.Topics[0].ErrorCode, "%s", derefOr(cres.Topics[0].ErrorMessage))

	q := types.NewQueryClient(n.MustClientCtx())
	// stored returns the stored batches from the one holding offset to the high watermark.
	stored := func(p int32, offset int64) []types.RecordBatch {
		res, err := q.Fetch(ctx, &types.QueryFetchRequest{Topic: topic, Partition: uint32(p), Offset: uint64(offset), Format: types.FETCH_FORMAT_BATCHES})
		require.NoError(t, err)
		require.NotEmpty(t, res.Batches)
		return res.Batches
	}
	codecOf := func(b types.RecordBatch) kbatch.Compression {
		return kbatch.Compression(binary.BigEndian.Uint16(b.RecordBatch[21:23]) & 0x07)
	}
	filler := strings.Repeat(" compressible", 40) // so that every client's compression pays
	want := make([][]string, len(codecs))         // per partition, by offset
	var rawSent, rawStored int
	for p, c := range codecs {
		p := int32(p)
		// 1. A batch compressed by franz-go's compressor, sent as a raw produce request: the
		// chain keeps its bytes.
		recs := []types.BatchRecord{
			{Key: types.NewBytes([]byte("k1")), Value: types.NewBytes([]byte("v1" + filler)), CreateTimeMs: 1_700_000_000_000,
				Headers: []types.Header{{Key: "h", Value: []byte("x")}, {Key: "empty", Value: []byte{}}, {Key: "null"}}},
			{Key: nil, Value: types.NewBytes([]byte{}), CreateTimeMs: 1_700_000_000_001},
			{Key: types.NewBytes([]byte{}), Value: nil, CreateTimeMs: 1_700_000_000_002},
		}
		want[p] = append(want[p],
			shown([]byte("k1"), []byte("v1"+filler), []kgo.RecordHeader{{Key: "h", Value: []byte("x")}, {Key: "empty", Value: []byte{}}, {Key: "null"}}),
			shown(nil, []byte{}, nil), shown([]byte{}, nil, nil))
		plain, err := types.EncodeRecordBatch(recs, kbatch.CompressionNone)
		require.NoError(t, err)
		comp, err := kgo.DefaultCompressor(c.codec)
		require.NoError(t, err)
		body, kind := comp.Compress(new(bytes.Buffer), plain[kbatch.RecordBatchHeaderSize:])
		require.EqualValues(t, c.kind, kind, c.name)
		sent := append(append([]byte(nil), plain[:kbatch.RecordBatchHeaderSize]...), body...)
		binary.BigEndian.PutUint32(sent[8:12], uint32(len(sent)-12))
		binary.BigEndian.PutUint16(sent[21:23], uint16(c.kind))
		binary.BigEndian.PutUint32(sent[17:21], crc32.Checksum(sent[21:], crc32.MakeTable(crc32.Castagnoli)))
		require.Less(t, len(sent), len(plain), c.name)
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 30_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, sent
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		pres, err := req.RequestWith(ctx, byName)
		require.NoError(t, err)
		got := pres.Topics[0].Partitions[0]
		require.Zero(t, got.ErrorCode, "%s: %s", c.name, derefOr(got.ErrorMessage))
		b := stored(p, got.BaseOffset)[0]
		require.EqualValues(t, got.BaseOffset, b.BaseOffset)
		require.EqualValues(t, got.BaseOffset, binary.BigEndian.Uint64(b.RecordBatch[:8]), "the base offset is set in the batch")
		require.Equal(t, sent[8:], b.RecordBatch[8:], "%s: stored as sent, compressed", c.name)
		rawSent, rawStored = rawSent+len(plain), rawStored+len(b.RecordBatch)

		// 2. franz-go's producer, compressing with the codec.
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerBatchCompression(c.codec))
		require.NoError(t, err)
		var krecs []*kgo.Record
		for i := 0; i < 5; i++ {
			r := &kgo.Record{Partition: p, Key: fmt.Appendf(nil, "kgo-%d", i), Value: fmt.Appendf(nil, "kgo-%s-%d%s", c.name, i, filler),
				Headers: []kgo.RecordHeader{{Key: "src", Value: []byte("kgo")}}}
			krecs = append(krecs, r)
			want[p] = append(want[p], shown(r.Key, r.Value, r.Headers))
		}
		res := cl.ProduceSync(ctx, krecs...)
		cl.Close()
		require.NoError(t, res.FirstErr(), c.name)
		for _, b := range stored(p, res[0].Record.Offset) {
			require.Equal(t, c.kind, codecOf(b), "%s: franz-go's batch at %d", c.name, b.BaseOffset)
		}
		kcatFrom := res[len(res)-1].Record.Offset + 1

		// 3. kcat (librdkafka), compressing with the codec.
		prod := exec.CommandContext(ctx, kcat, "-b", gw.Addr(), "-P", "-t", topic, "-p", strconv.Itoa(int(p)), "-z", c.name, "-K", ":", "-H", "src=kcat")
		var lines strings.Builder
		for i := 0; i < 3; i++ {
			key, value := fmt.Sprintf("kcat-%d", i), fmt.Sprintf("kcat-%s-%d%s", c.name, i, filler)
			fmt.Fprintf(&lines, "%s:%s\n", key, value)
			want[p] = append(want[p], shown([]byte(key), []byte(value), []kgo.RecordHeader{{Key: "src", Value: []byte("kcat")}}))
		}
		prod.Stdin = strings.NewReader(lines.String())
		out, err := prod.CombinedOutput()
		require.NoError(t, err, string(out))
		for _, b := range stored(p, kcatFrom) {
			require.Equal(t, c.kind, codecOf(b), "%s: kcat's batch at %d", c.name, b.BaseOffset)
		}
	}

	// franz-go reads every partition back from the start.
	parts := map[int32]kgo.Offset{}
	for p := range codecs {
		parts[int32(p)] = kgo.NewOffset().AtStart()
	}
	consumer, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	require.NoError(t, err)
	defer consumer.Close()
	gotKgo := make([][]string, len(codecs))
	for total := 0; total < 11*len(codecs); {
		fs := consumer.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "franz-go read %d records", total)
		for _, e := range fs.Errors() {
			t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			require.EqualValues(t, len(gotKgo[r.Partition]), r.Offset)
			gotKgo[r.Partition] = append(gotKgo[r.Partition], shown(r.Key, r.Value, r.Headers))
			total++
		})
	}
	require.Equal(t, want, gotKgo, "franz-go")

	// kcat reads every partition back, as JSON (null apart from empty).
	for p, c := range codecs {
		kctx, kcancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(kctx, kcat, "-b", gw.Addr(), "-C", "-t", topic, "-p", strconv.Itoa(p), "-o", "beginning", "-e", "-J", "-q").Output()
		kcancel()
		require.NoError(t, err, "%s: %s", c.name, out)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var m struct {
				Offset  int64     `json:"offset"`
				Key     *string   `json:"key"`
				Payload *string   `json:"payload"`
				Headers []*string `json:"headers"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &m), l)
			require.EqualValues(t, len(got), m.Offset)
			bs := func(s *string) []byte {
				if s == nil {
					return nil
				}
				return []byte(*s)
			}
			var hs []kgo.RecordHeader
			for i := 0; i+1 < len(m.Headers); i += 2 {
				hs = append(hs, kgo.RecordHeader{Key: *m.Headers[i], Value: bs(m.Headers[i+1])})
			}
			got = append(got, shown(bs(m.Key), bs(m.Payload), hs))
		}
		require.Equal(t, want[p], got, "kcat, %s", c.name)
	}
	t.Logf("%d codecs: franz-go-compressed batches stored as sent (%d bytes uncompressed, %d stored), franz-go's and kcat's compressed batches stored compressed; franz-go and kcat read all %d records back unchanged",
		len(codecs), rawSent, rawStored, 11*len(codecs))
}
