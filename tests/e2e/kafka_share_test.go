package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/testutil/node"
)

// delivery is one record handed to one consumer.
type delivery struct {
	consumer string
	count    int32
	released bool
}

// KIP-932 against the chain: franz-go, unchanged, with kgo.ShareGroup — three share consumers
// read 20,000 records; a record released by one consumer, and the records a member held when it
// left unacknowledged, are delivered again with their delivery count; every record is accepted
// exactly once. Prints the share consumers' records/s and the transactions per acknowledged
// record.
func TestKafkaShareGroupThroughGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer admin.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "jobs", NumPartitions: 2, ReplicationFactor: -1}}
	_, err = create.RequestWith(ctx, admin)
	require.NoError(t, err)

	var mu sync.Mutex
	got := map[string][]delivery{}
	released := 0
	var wg sync.WaitGroup
	consumer := func(name string, release int) func() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ShareGroup("queue"), kgo.ConsumeTopics("jobs"), kgo.ClientID(name))
		require.NoError(t, err)
		cctx, ccancel := context.WithCancel(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					defer mu.Unlock()
					d := delivery{consumer: name, count: r.DeliveryCount()}
					if release > 0 && r.DeliveryCount() == 1 {
						// Not for me: back to the group, for another delivery.
						r.Ack(kgo.AckRelease)
						d.released = true
						release--
						released++
					} else {
						r.Ack(kgo.AckAccept)
					}
					got[string(r.Value)] = append(got[string(r.Value)], d)
				})
			}
		}()
		return func() { ccancel(); cl.Close() }
	}
	stops := []func(){consumer("s1", 100), consumer("s2", 0), consumer("s3", 0)}

	// The group deals both partitions (three members on two: one is shared) before records come:
	// a share group starts a partition at its high watermark.
	describe := kmsg.NewPtrShareGroupDescribeRequest()
	describe.GroupIDs = []string{"queue"}
	eventually(t, "three share members with the partitions dealt", time.Minute, func() bool {
		res, err := describe.RequestWith(ctx, admin)
		if err != nil || len(res.Groups) != 1 || res.Groups[0].ErrorCode != 0 || len(res.Groups[0].Members) != 3 {
			return false
		}
		for _, m := range res.Groups[0].Members {
			if len(m.Assignment.TopicPartitions) == 0 {
				return false
			}
		}
		return true
	})

	next := 0
	produce := func(count int) {
		recs := make([]*kgo.Record, count)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: "jobs", Value: []byte(fmt.Sprintf("j-%d", next))}
			next++
		}
		require.NoError(t, admin.ProduceSync(ctx, recs...).FirstErr())
	}
	before := shareFetchTxs(t, n)
	start := time.Now()
	produce(10_000)

	// A member that acquires records and leaves without acknowledging them: the chain takes them
	// back at once for the others.
	crashed := rawShareMember(t, ctx, admin, "crash-1")
	t.Logf("a member acquired %d records and left without acknowledging them", crashed)
	require.Positive(t, crashed)
	produce(10_000)
	accepted := func() (distinct, twice int) {
		mu.Lock()
		defer mu.Unlock()
		for i := 0; i < 20_000; i++ {
			a := 0
			for _, d := range got[fmt.Sprintf("j-%d", i)] {
				if !d.released {
					a++
				}
			}
			if a > 0 {
				distinct++
			}
			if a > 1 {
				twice++
			}
		}
		return
	}
	eventually(t, "all 20,000 records accepted", 3*time.Minute, func() bool { d, _ := accepted(); return d == 20_000 })
	elapsed := time.Since(start)
	for _, stop := range stops {
		stop()
	}
	wg.Wait()
	distinct, twice := accepted()
	require.Equal(t, 20_000, distinct)
	require.Zero(t, twice, "a record was accepted twice")

	mu.Lock()
	redelivered, byOther := 0, 0
	for _, ds := range got {
		for i, d := range ds {
			if i == 0 {
				continue
			}
			redelivered++
			require.Greater(t, d.count, ds[i-1].count, "a redelivery counts one more")
			if d.consumer != ds[0].consumer {
				byOther++
			}
		}
	}
	relCount := released
	mu.Unlock()
	require.Equal(t, 100, relCount)
	require.GreaterOrEqual(t, redelivered, 100, "every released record came back")
	// The records the crashed member held came back with delivery count 2.
	twos := 0
	mu.Lock()
	for _, ds := range got {
		if len(ds) > 0 && ds[0].count == 2 {
			twos++
		}
	}
	mu.Unlock()
	require.Equal(t, crashed, twos, "each record the departed member held is delivered once more, with count 2")
	txs := shareFetchTxs(t, n) - before

	// Administration with Kafka's admin APIs: every record was accepted, so each partition starts
	// at its high watermark; the empty group is moved back to its log start offset and given a
	// lower delivery limit.
	shareOffsets(t, ctx, admin, func(p kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) {
		require.Equal(t, int64(10_000), p.StartOffset, "20,000 records round-robin over 2 partitions, all accepted")
		require.Zero(t, p.Lag)
	})
	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "queue"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "jobs"
	for p := int32(0); p < 2; p++ {
		ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		ap.Partition, ap.StartOffset = p, -2
		at.Partitions = append(at.Partitions, ap)
	}
	alter.Topics = append(alter.Topics, at)
	ares, err := alter.RequestWith(ctx, admin)
	require.NoError(t, err)
	for _, p := range ares.Topics[0].Partitions {
		require.Zero(t, p.ErrorCode, kerr.ErrorForCode(p.ErrorCode))
	}
	shareOffsets(t, ctx, admin, func(p kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) {
		require.Zero(t, p.StartOffset)
		require.Equal(t, int64(10_000), p.Lag)
	})
	cfg := kmsg.NewPtrIncrementalAlterConfigsRequest()
	cr := kmsg.NewIncrementalAlterConfigsRequestResource()
	cr.ResourceType, cr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "queue"
	cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cc.Name, cc.Value = "share.delivery.count.limit", kmsg.StringPtr("3")
	cr.Configs = append(cr.Configs, cc)
	cfg.Resources = append(cfg.Resources, cr)
	cres, err := cfg.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, cres.Resources[0].ErrorCode, kerr.ErrorForCode(cres.Resources[0].ErrorCode))
	dc := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName, dr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "queue", []string{"share.delivery.count.limit"}
	dc.Resources = append(dc.Resources, dr)
	dres, err := dc.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Equal(t, "3", *dres.Resources[0].Configs[0].Value)

	t.Logf("share consumers: 20,000 records accepted in %v (%.0f records/s); %d released by s1 came back (%d to another consumer), %d held by a departed member went to the others with delivery count 2; %d MsgShareFetch transactions: %.4f per acknowledged record",
		elapsed.Round(time.Millisecond), 20_000/elapsed.Seconds(), relCount, byOther, crashed, txs, float64(txs)/20_000)
}

// rawShareMember joins the share group as a client would, acquires what it is dealt, and leaves
// without acknowledging anything; it returns how many records it acquired.
func rawShareMember(t *testing.T, ctx context.Context, cl *kgo.Client, id string) int {
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "queue", id, []string{"jobs"}
	hres, err := hb.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, hres.ErrorCode, kerr.ErrorForCode(hres.ErrorCode))
	require.NotNil(t, hres.Assignment)
	fetch := kmsg.NewPtrShareFetchRequest()
	fetch.GroupID, fetch.MemberID, fetch.MaxWaitMillis, fetch.MaxRecords, fetch.MaxBytes = kmsg.StringPtr("queue"), kmsg.StringPtr(id), 2000, 300, 1<<20
	for _, tp := range hres.Assignment.TopicPartitions {
		ft := kmsg.NewShareFetchRequestTopic()
		ft.TopicID = tp.TopicID
		for _, p := range tp.Partitions {
			fp := kmsg.NewShareFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes = p, 1<<20
			ft.Partitions = append(ft.Partitions, fp)
		}
		fetch.Topics = append(fetch.Topics, ft)
	}
	acquired := 0
	deadline := time.Now().Add(30 * time.Second)
	for acquired == 0 && time.Now().Before(deadline) {
		fres, err := fetch.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Zero(t, fres.ErrorCode, kerr.ErrorForCode(fres.ErrorCode))
		for _, ft := range fres.Topics {
			for _, fp := range ft.Partitions {
				for _, a := range fp.AcquiredRecords {
					require.Equal(t, int16(1), a.DeliveryCount)
					acquired += int(a.LastOffset - a.FirstOffset + 1)
				}
				if len(fp.AcquiredRecords) > 0 {
					require.NotEmpty(t, fp.Records, "acquired records come with their batches")
				}
			}
		}
		fetch.ShareSessionEpoch++
		fetch.Topics = nil // in the session now
	}
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.GroupID, leave.MemberID, leave.MemberEpoch = "queue", id, -1
	lres, err := leave.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, lres.ErrorCode)
	return acquired
}

// shareFetchTxs counts the committed transactions that carried a MsgShareFetch.
func shareFetchTxs(t *testing.T, n *node.Node) int {
	var res struct {
		Total string `json:"total_count"`
	}
	out := n.MustCLI("", "query", "txs", "--query", "message.action='/bftlog.topics.v1.MsgShareFetch'", "--limit", "1", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	v, err := strconv.Atoi(res.Total)
	require.NoError(t, err)
	return v
}

// shareOffsets describes the share group's start offsets and checks each partition.
func shareOffsets(t *testing.T, ctx context.Context, cl *kgo.Client, check func(kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition)) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = "queue"
	req.Groups = append(req.Groups, g)
	res, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Zero(t, res.Groups[0].ErrorCode, kerr.ErrorForCode(res.Groups[0].ErrorCode))
	n := 0
	for _, rt := range res.Groups[0].Topics {
		for _, p := range rt.Partitions {
			require.Zero(t, p.ErrorCode)
			check(p)
			n++
		}
	}
	require.Equal(t, 2, n)
}
