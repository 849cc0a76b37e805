package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/gateway/kafka"
	"github.com/bftlog/bftlog/testutil/node"
)

// versionRecorder is a gateway's OnRequest hook: per client id and API key, the versions that
// client's requests came at.
type versionRecorder struct {
	mu   sync.Mutex
	sent map[string]map[int16]map[int16]bool
}

func (r *versionRecorder) record(clientID string, key, version int16) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sent[clientID] == nil {
		r.sent[clientID] = map[int16]map[int16]bool{}
	}
	if r.sent[clientID][key] == nil {
		r.sent[clientID][key] = map[int16]bool{}
	}
	r.sent[clientID][key][version] = true
}

// versions are the versions of key that the clients matching sent, ascending.
func (r *versionRecorder) versions(match func(clientID string) bool, key int16) []int16 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int16
	for id, keys := range r.sent {
		if !match(id) {
			continue
		}
		for v := range keys[key] {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	slices.Sort(out)
	return out
}

// keys are the API keys the clients matching sent, ascending.
func (r *versionRecorder) keys(match func(clientID string) bool) []int16 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int16
	for id, keys := range r.sent {
		if !match(id) {
			continue
		}
		for k := range keys {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// startRecordingGateway is startGateway recording the versions each client sends.
func startRecordingGateway(t *testing.T, n *node.Node, key string) (*kafka.Server, *versionRecorder) {
	cctx, signer := n.ClientContext(n.Home, key)
	signer.UseRawIngress(n.API + app.RawTxPath)
	rec := &versionRecorder{sent: map[string]map[int16]map[int16]bool{}}
	gw, err := kafka.Listen(kafka.Config{Addr: "127.0.0.1:0", ClientCtx: cctx, Signer: signer, OnRequest: rec.record})
	require.NoError(t, err)
	go func() { _ = gw.Serve() }()
	t.Cleanup(func() { _ = gw.Close() })
	return gw, rec
}

// advertisedVersions is the gateway's ApiVersions answer: each key's [min, max].
func advertisedVersions(ctx context.Context, cl *kgo.Client) (map[int16][2]int16, error) {
	res, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[int16][2]int16{}
	for _, k := range res.ApiKeys {
		out[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	return out, nil
}

// versionColumn is one column of versionTable: the clients whose ids match.
type versionColumn struct {
	name  string
	match func(clientID string) bool
}

// versionTable is, per API key any column's clients sent, what the gateway advertises and the
// versions each column's clients sent ("-": none).
func versionTable(adv map[int16][2]int16, rec *versionRecorder, columns []versionColumn) string {
	var keys []int16
	for _, c := range columns {
		for _, k := range rec.keys(c.match) {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %-10s", "API key", "advertised")
	for _, c := range columns {
		fmt.Fprintf(&b, " %-16s", c.name)
	}
	b.WriteString("\n")
	for _, k := range keys {
		a, ok := adv[k]
		ad := "none"
		if ok {
			ad = fmt.Sprintf("%d-%d", a[0], a[1])
		}
		fmt.Fprintf(&b, "%-32s %-10s", fmt.Sprintf("%s (%d)", kmsg.NameForKey(k), k), ad)
		for _, c := range columns {
			vs := rec.versions(c.match, k)
			cell := "-"
			if len(vs) > 0 {
				cell = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(vs)), ","), "[]")
			}
			fmt.Fprintf(&b, " %-16s", cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// kafka40Txn are the versions a Kafka 4.0 client sends in a transaction when the cluster's
// transaction.version feature is below 2 (the gateway advertises none, so KIP-890 part 2 stays
// off): Java's and franz-go's transaction managers cap these themselves, and franz-go refuses a
// request whose cap is below the minimum asked, so a transactional client's minimum is these.
var kafka40Txn = map[kmsg.Key]int16{kmsg.Produce: 11, kmsg.EndTxn: 4, kmsg.TxnOffsetCommit: 4, kmsg.AddPartitionsToTxn: 3}

// TestKafka40Client runs franz-go pinned to Kafka 4.0's request versions (kversion.V4_0_0() as
// both minimum and maximum; a transactional client's minimum lowered to kafka40Txn) through the
// gateway — topics, produce with keys (plain and idempotent), fetch by topic ID, a consumer
// group's join, sync, heartbeat, commit, offset fetch and leave, transactions committed,
// aborted and with a group's offsets, and kadm's admin calls — and checks that every request
// came at the version a Kafka 4.0 broker would get.
func TestKafka40Client(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	gw, rec := startRecordingGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const plainID, txnID = "kafka-4.0", "kafka-4.0-txn"
	txnMin := kversion.V4_0_0()
	for k, v := range kafka40Txn {
		txnMin.SetMaxKeyVersion(int16(k), v)
	}
	client := func(id string, more ...kgo.Opt) *kgo.Client {
		min := kversion.V4_0_0()
		if id == txnID {
			min = txnMin
		}
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(gw.Addr()), kgo.ClientID(id),
			kgo.MinVersions(min), kgo.MaxVersions(kversion.V4_0_0())}, more...)...)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	cl := client(plainID)
	adm := kadm.NewClient(cl)

	// CreateTopics v7 answers the topic ID that Metadata v13 shows.
	created, err := adm.CreateTopic(ctx, 3, -1, nil, "k40")
	require.NoError(t, err)
	require.NoError(t, created.Err)
	require.NotEqual(t, kadm.TopicID{}, created.ID)
	require.NotEmpty(t, created.Configs, "v5+ answers the topic's configs")
	md, err := adm.Metadata(ctx, "k40")
	require.NoError(t, err)
	require.Equal(t, created.ID, md.Topics["k40"].ID)
	out, err := adm.CreateTopic(ctx, 2, -1, nil, "k40-out")
	require.NoError(t, err)
	require.NoError(t, out.Err)

	// Produce with keys: plain, and idempotent (franz-go's default).
	const perProducer = 10
	plain := client(plainID, kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("k40"))
	for i := range perProducer {
		require.NoError(t, plain.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "key-%d", i), Value: []byte("plain")}).FirstErr())
	}
	for i := range perProducer {
		require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: "k40", Key: fmt.Appendf(nil, "key-%d", perProducer+i), Value: []byte("idempotent")}).FirstErr())
	}
	const total = 2 * perProducer

	// Fetch v17 names the topic by ID; every key comes back.
	reader := client(plainID, kgo.ConsumeTopics("k40"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	keys := map[string]bool{}
	for len(keys) < total && ctx.Err() == nil {
		reader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { keys[string(r.Key)] = true })
	}
	require.Len(t, keys, total)
	reader.Close()

	// A consumer group: join, sync, heartbeat, commit, fetch offsets, describe, leave.
	member := client(plainID, kgo.ConsumerGroup("k40-group"), kgo.ConsumeTopics("k40"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(), kgo.HeartbeatInterval(300*time.Millisecond), kgo.SessionTimeout(6*time.Second))
	for got := 0; got < total && ctx.Err() == nil; {
		got += member.PollFetches(ctx).NumRecords()
	}
	require.NoError(t, member.CommitUncommittedOffsets(ctx))
	eventually(t, "a heartbeat", 30*time.Second, func() bool { return len(rec.versions(isID(plainID), int16(kmsg.Heartbeat))) > 0 })
	described, err := adm.DescribeGroups(ctx, "k40-group")
	require.NoError(t, err)
	require.Equal(t, "Stable", described["k40-group"].State)
	require.Len(t, described["k40-group"].Members, 1)
	committed, err := adm.FetchOffsets(ctx, "k40-group")
	require.NoError(t, err)
	require.EqualValues(t, total, offsetSum(committed))
	require.NoError(t, member.LeaveGroupContext(ctx))
	member.Close()

	// Transactions (KIP-890's first flow): one committed, one aborted, seen while open by
	// ListTransactions and DescribeTransactions.
	txn := client(txnID, kgo.TransactionalID("k40-txn"), kgo.DefaultProduceTopic("k40-out"))
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx, &kgo.Record{Key: []byte("t"), Value: []byte("committed")}).FirstErr())
	require.NoError(t, txn.EndTransaction(ctx, kgo.TryCommit))
	require.NoError(t, txn.BeginTransaction())
	require.NoError(t, txn.ProduceSync(ctx, &kgo.Record{Key: []byte("t"), Value: []byte("aborted")}).FirstErr())
	listed, err := adm.ListTransactions(ctx, nil, nil)
	require.NoError(t, err)
	require.Equal(t, "Ongoing", listed["k40-txn"].State)
	txns, err := adm.DescribeTransactions(ctx, "k40-txn")
	require.NoError(t, err)
	require.NoError(t, txns["k40-txn"].Err)
	require.Equal(t, "Ongoing", txns["k40-txn"].State)
	require.Contains(t, txns["k40-txn"].Topics, "k40-out")
	require.NoError(t, txn.EndTransaction(ctx, kgo.TryAbort))
	txn.Close()

	// A consume-transform-produce transaction: the group's offsets go in with the records
	// (AddOffsetsToTxn, TxnOffsetCommit).
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(gw.Addr()), kgo.ClientID(txnID), kgo.MinVersions(txnMin), kgo.MaxVersions(kversion.V4_0_0()),
		kgo.TransactionalID("k40-eos"), kgo.ConsumerGroup("k40-eos"), kgo.ConsumeTopics("k40"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.DefaultProduceTopic("k40-out"))
	require.NoError(t, err)
	for moved := 0; moved < total && ctx.Err() == nil; {
		fs := sess.PollFetches(ctx)
		require.NoError(t, sess.Begin())
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: []byte("moved")}, nil)
			moved++
		})
		ok, err := sess.End(ctx, kgo.TryCommit)
		require.NoError(t, err)
		require.True(t, ok)
	}
	sess.Close()
	outReader := client(plainID, kgo.ConsumeTopics("k40-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	values := map[string]int{}
	for values["committed"]+values["moved"] < 1+total && ctx.Err() == nil {
		outReader.PollFetches(ctx).EachRecord(func(r *kgo.Record) { values[string(r.Value)]++ })
	}
	require.Equal(t, map[string]int{"committed": 1, "moved": total}, values, "committed transactions only")
	outReader.Close()

	// Admin: batched coordinators and offsets, configs, cluster, log dirs, offsets by spec,
	// records deleted, leader epochs, partitions, groups and topics deleted (by name and by
	// topic ID).
	coordinators := adm.FindGroupCoordinators(ctx, "k40-group", "k40-eos")
	require.Len(t, coordinators, 2)
	for _, c := range coordinators {
		require.NoError(t, c.Err)
		require.EqualValues(t, 0, c.NodeID)
	}
	many := adm.FetchManyOffsets(ctx, "k40-group", "k40-eos")
	require.Len(t, many, 2)
	for g, r := range many {
		require.NoError(t, r.Err, g)
		require.EqualValues(t, total, offsetSum(r.Fetched), g)
	}
	groups, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	require.Contains(t, groups, "k40-group")
	_, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: kmsg.StringPtr("3600000")}}, "k40")
	require.NoError(t, err)
	_, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kmsg.StringPtr("7200000")}}, "k40")
	require.NoError(t, err)
	configs, err := adm.DescribeTopicConfigs(ctx, "k40")
	require.NoError(t, err)
	rc, err := configs.On("k40", nil)
	require.NoError(t, err)
	retention := ""
	for _, c := range rc.Configs {
		if c.Key == "retention.ms" {
			retention = c.MaybeValue()
		}
	}
	require.Equal(t, "7200000", retention, "as AlterConfigs set it")
	cluster, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(cluster.ErrorCode))
	require.Len(t, cluster.Brokers, 1)
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	require.NoError(t, err)
	require.Len(t, dirs, 1)
	require.NoError(t, dirs[0].Error())
	_, ok := dirs[0].LookupPartition("k40", 0)
	require.True(t, ok, "the log dir holds k40")
	ends, err := adm.ListEndOffsets(ctx, "k40")
	require.NoError(t, err)
	require.NoError(t, ends.Error())
	sum := int64(0)
	ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
	require.EqualValues(t, total, sum)
	local, err := adm.ListLocalLogStartOffsets(ctx, "k40")
	require.NoError(t, err)
	local.Each(func(o kadm.ListedOffset) { require.Zero(t, o.Offset) })
	tiered, err := adm.ListLatestRemoteOffsets(ctx, "k40")
	require.NoError(t, err)
	tiered.Each(func(o kadm.ListedOffset) { require.EqualValues(t, -1, o.Offset, "nothing is tiered") })
	var trim kadm.Offsets // DeleteRecords: the first record of a partition holding some
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 && len(trim) == 0 {
			trim.AddOffset("k40", o.Partition, 1, -1)
		}
	})
	trimmed, err := adm.DeleteRecords(ctx, trim)
	require.NoError(t, err)
	require.NoError(t, trimmed.Error())
	for _, ps := range trimmed {
		for _, r := range ps {
			require.EqualValues(t, 1, r.LowWatermark)
		}
	}
	var epochs kadm.OffsetForLeaderEpochRequest
	epochs.Add("k40", 0, 0)
	_, err = adm.OffsetForLeaderEpoch(ctx, epochs)
	require.NoError(t, err)
	parts, err := adm.CreatePartitions(ctx, 1, "k40")
	require.NoError(t, err)
	require.NoError(t, parts.Error())
	deletedGroups, err := adm.DeleteGroups(ctx, "k40-group")
	require.NoError(t, err)
	require.NoError(t, deletedGroups.Error())

	outID := kadm.TopicID(out.ID)
	byID := kmsg.NewPtrDeleteTopicsRequest()
	byID.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: outID}}
	delRes, err := byID.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(delRes.Topics[0].ErrorCode))
	require.Equal(t, "k40-out", *delRes.Topics[0].Topic)
	deleted, err := adm.DeleteTopics(ctx, "k40")
	require.NoError(t, err)
	require.NoError(t, deleted.Error())
	mreq := kmsg.NewPtrMetadataRequest()
	mreq.Topics = []kmsg.MetadataRequestTopic{{TopicID: created.ID}}
	mres, err := mreq.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, kerr.UnknownTopicID.Code, mres.Topics[0].ErrorCode, "a deleted topic's ID is unknown")
	var again kadm.CreateTopicResponse
	eventually(t, "k40 recreated once its purge ends", time.Minute, func() bool {
		again, err = adm.CreateTopic(ctx, 1, -1, nil, "k40")
		return err == nil && again.Err == nil
	})
	require.NotEqual(t, created.ID, again.ID, "a recreated topic has a new ID")

	// Every request came at Kafka 4.0's version (kafka40Txn for a transactional client).
	adv, err := advertisedVersions(ctx, cl)
	require.NoError(t, err)
	t.Logf("Kafka 4.0 client (franz-go pinned to kversion.V4_0_0) through the gateway:\n%s", versionTable(adv, rec,
		[]versionColumn{{"franz-go 4.0", isID(plainID)}, {"franz-go 4.0 txn", isID(txnID)}}))
	for _, id := range []string{plainID, txnID} {
		for _, k := range rec.keys(isID(id)) {
			want, _ := kversion.V4_0_0().LookupMaxKeyVersion(k)
			if v, ok := kafka40Txn[kmsg.Key(k)]; ok && id == txnID {
				want = v
			}
			require.Equal(t, []int16{want}, rec.versions(isID(id), k), "%s: %s", id, kmsg.NameForKey(k))
		}
	}
	for _, k := range []kmsg.Key{kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.FindCoordinator,
		kmsg.JoinGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups, kmsg.ApiVersions, kmsg.CreateTopics,
		kmsg.DeleteTopics, kmsg.InitProducerID, kmsg.OffsetForLeaderEpoch, kmsg.AddPartitionsToTxn, kmsg.AddOffsetsToTxn, kmsg.EndTxn,
		kmsg.TxnOffsetCommit, kmsg.DescribeConfigs, kmsg.AlterConfigs, kmsg.DescribeLogDirs, kmsg.CreatePartitions, kmsg.DeleteGroups,
		kmsg.IncrementalAlterConfigs, kmsg.DescribeCluster, kmsg.DescribeTransactions, kmsg.ListTransactions, kmsg.DeleteRecords} {
		sent := rec.versions(func(id string) bool { return id == plainID || id == txnID }, int16(k))
		require.NotEmpty(t, sent, "%s was exercised", kmsg.NameForKey(int16(k)))
	}
}

func isID(want string) func(string) bool { return func(id string) bool { return id == want } }

// offsetSum adds a group's committed offsets.
func offsetSum(os kadm.OffsetResponses) int64 {
	sum := int64(0)
	os.Each(func(o kadm.OffsetResponse) { sum += max(o.At, 0) })
	return sum
}
