package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/testutil/node"
)

// TestKafkaAdminThroughGateway drives the gateway's admin surface with franz-go's kadm, as
// consumer-group tools (lag dashboards, kafka-consumer-groups) do: a live Kafka group is listed
// and described with its member's client id, host and decoded assignment; a native group the CLI
// created is listed too; the cluster, log dirs and leader epochs are described; a group with a
// member cannot be deleted, an empty one can, and is gone from the chain.
func TestKafkaAdminThroughGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	createTopic(n, "alice", "admin-t", 2, "--allow-producer", n.Address("alice"))
	n.MustCLI("", "tx", "topics", "create-group", "native-g", "--from", "alice")
	producer := must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.DefaultProduceTopic("admin-t")))
	defer producer.Close()
	var recs []*kgo.Record
	for i := 0; i < 20; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("v")})
	}
	require.NoError(t, producer.ProduceSync(ctx, recs...).FirstErr())

	member := must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ClientID("lag-dashboard-test"), kgo.ConsumerGroup("live"),
		kgo.ConsumeTopics("admin-t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())))
	defer member.Close()
	read := 0
	for read < 20 {
		fs := member.PollFetches(ctx)
		require.NoError(t, ctx.Err())
		read += fs.NumRecords()
	}
	require.NoError(t, member.CommitUncommittedOffsets(ctx))

	adm := kadm.NewClient(must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()))))
	defer adm.Close()
	listed, err := adm.ListGroups(ctx)
	require.NoError(t, err)
	require.Contains(t, listed, "live")
	require.Contains(t, listed, "native-g")
	require.Equal(t, "Stable", listed["live"].State)
	require.Equal(t, "consumer", listed["live"].ProtocolType)
	require.Equal(t, "Empty", listed["native-g"].State)

	described, err := adm.DescribeGroups(ctx, "live", "native-g", "no-such-group")
	require.NoError(t, err)
	live := described["live"]
	require.NoError(t, live.Err)
	require.Equal(t, "Stable", live.State)
	require.Len(t, live.Members, 1)
	m := live.Members[0]
	require.Equal(t, "lag-dashboard-test", m.ClientID)
	require.Equal(t, "/127.0.0.1", m.ClientHost)
	joined, ok := m.Join.AsConsumer()
	require.True(t, ok, "the subscription decodes as a consumer's")
	require.Equal(t, []string{"admin-t"}, joined.Topics)
	assigned, ok := m.Assigned.AsConsumer()
	require.True(t, ok, "the assignment decodes as a consumer's")
	require.Len(t, assigned.Topics, 1)
	require.ElementsMatch(t, []int32{0, 1}, assigned.Topics[0].Partitions)
	require.Equal(t, "Empty", described["native-g"].State)
	require.Equal(t, "Dead", described["no-such-group"].State)

	lags, err := adm.Lag(ctx, "live")
	require.NoError(t, err)
	lag := lags["live"]
	require.NoError(t, lag.Error())
	require.Zero(t, lag.Lag.Total(), "every record read and committed")

	// DeleteRecords moves partition 0's log start offset; a consumer asking for offset 0 is
	// answered OFFSET_OUT_OF_RANGE and reset to the new start.
	ends, err := adm.ListEndOffsets(ctx, "admin-t")
	require.NoError(t, err)
	end0, ok := ends.Lookup("admin-t", 0)
	require.True(t, ok)
	require.GreaterOrEqual(t, end0.Offset, int64(2), "partition 0 holds records to delete")
	cut := end0.Offset / 2
	var doomed kadm.Offsets
	doomed.Add(kadm.Offset{Topic: "admin-t", Partition: 0, At: cut})
	dr, err := adm.DeleteRecords(ctx, doomed)
	require.NoError(t, err)
	d0, ok := dr.Lookup("admin-t", 0)
	require.True(t, ok)
	require.NoError(t, d0.Err)
	require.Equal(t, cut, d0.LowWatermark)
	starts, err := adm.ListStartOffsets(ctx, "admin-t")
	require.NoError(t, err)
	s0, _ := starts.Lookup("admin-t", 0)
	require.Equal(t, cut, s0.Offset, "ListOffsets earliest answers the new log start offset")
	require.Contains(t, n.MustCLI("", "query", "topics", "partitions", "admin-t"), fmt.Sprintf("log_start_offset: \"%d\"", cut))
	from0 := must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"admin-t": {0: kgo.NewOffset().At(0)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())))
	defer from0.Close()
	first := int64(-1)
	for first < 0 {
		fs := from0.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "the consumer from 0 read nothing")
		fs.EachRecord(func(r *kgo.Record) {
			if first < 0 {
				first = r.Offset
			}
		})
	}
	require.Equal(t, cut, first, "a consumer from 0 is reset to the new log start offset")

	// DescribeProducers: the producer above is idempotent (franz-go's default); the chain holds
	// its producer id, epoch and last sequence per partition.
	producers, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"admin-t": {0: {}, 1: {}}})
	require.NoError(t, err)
	active := 0
	producers.EachPartition(func(p kadm.DescribedProducersPartition) { require.NoError(t, p.Err) })
	producers.EachProducer(func(p kadm.DescribedProducer) {
		require.GreaterOrEqual(t, p.ProducerID, int64(0))
		require.GreaterOrEqual(t, p.LastSequence, int32(0))
		active++
	})
	require.Positive(t, active, "the idempotent producer is described")

	brokers, err := adm.ListBrokers(ctx)
	require.NoError(t, err)
	require.Len(t, brokers, 1)
	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	require.NoError(t, err)
	var size int64
	dirs.Each(func(d kadm.DescribedLogDir) {
		require.NoError(t, d.Err)
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == "admin-t" {
				size += p.Size
			}
		})
	})
	require.Positive(t, size, "log dirs show the topic's stored bytes")
	epochs, err := adm.OffsetForLeaderEpoch(ctx, kadm.OffsetForLeaderEpochRequest{"admin-t": {0: 0, 1: 0}})
	require.NoError(t, err)
	var end int64
	for _, ps := range epochs {
		for _, o := range ps {
			require.NoError(t, o.Err)
			end += o.EndOffset
		}
	}
	require.Equal(t, int64(20), end, "epoch 0 ends at the high watermarks")

	// Legacy AlterConfigs replaces the whole config: what it does not name returns to its default.
	alterTopic := func(incremental bool, name, value string) {
		t.Helper()
		c := []kadm.AlterConfig{{Name: name, Value: kmsg.StringPtr(value)}}
		var res kadm.AlterConfigsResponses
		var err error
		if incremental {
			res, err = adm.AlterTopicConfigs(ctx, c, "admin-t")
		} else {
			res, err = adm.AlterTopicConfigsState(ctx, c, "admin-t")
		}
		require.NoError(t, err)
		require.NoError(t, res[0].Err)
	}
	topicConfig := func(name string) string {
		rc, err := adm.DescribeTopicConfigs(ctx, "admin-t")
		require.NoError(t, err)
		c, err := rc.On("admin-t", nil)
		require.NoError(t, err)
		for _, kv := range c.Configs {
			if kv.Key == name {
				return kv.MaybeValue()
			}
		}
		return ""
	}
	defaultDeleteRetention := topicConfig("delete.retention.ms")
	alterTopic(true, "delete.retention.ms", "2000")
	require.Equal(t, "2000", topicConfig("delete.retention.ms"))
	alterTopic(false, "retention.ms", "3600000")
	require.Equal(t, "3600000", topicConfig("retention.ms"))
	require.Equal(t, defaultDeleteRetention, topicConfig("delete.retention.ms"), "legacy AlterConfigs reset what it did not name")
	require.Contains(t, n.MustCLI("", "query", "topics", "topic", "admin-t"), "PRODUCER_POLICY_ALLOWLIST",
		"who may produce is not a Kafka config: AlterConfigs keeps it")

	// An open Kafka transaction is listed and described while it is open.
	txp := must(kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.TransactionalID("admin-txn"), kgo.DefaultProduceTopic("admin-t")))
	defer txp.Close()
	require.NoError(t, txp.BeginTransaction())
	require.NoError(t, txp.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")}).FirstErr())
	txns, err := adm.ListTransactions(ctx, nil, nil)
	require.NoError(t, err)
	require.Contains(t, txns, "admin-txn")
	require.Equal(t, "Ongoing", txns["admin-txn"].State)
	dtx, err := adm.DescribeTransactions(ctx, "admin-txn")
	require.NoError(t, err)
	require.NoError(t, dtx["admin-txn"].Err)
	require.Equal(t, "Ongoing", dtx["admin-txn"].State)
	require.Len(t, dtx["admin-txn"].Topics["admin-t"], 1, "the partition the transaction wrote to")
	require.NoError(t, txp.EndTransaction(ctx, kgo.TryAbort))

	// A group with a member cannot be deleted, nor its offsets on the topic it consumes; once
	// the member leaves, both can.
	deleted, err := adm.DeleteGroups(ctx, "live")
	require.NoError(t, err)
	require.ErrorIs(t, deleted["live"].Err, kerr.NonEmptyGroup)
	offDel, err := adm.DeleteOffsets(ctx, "live", kadm.TopicsSet{"admin-t": {0: {}}})
	require.NoError(t, err)
	perr, _ := offDel.Lookup("admin-t", 0)
	require.ErrorIs(t, perr, kerr.GroupSubscribedToTopic)
	member.Close()
	eventually(t, "the member to leave", 30*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, "live")
		return err == nil && d["live"].State == "Empty"
	})
	offDel, err = adm.DeleteOffsets(ctx, "live", kadm.TopicsSet{"admin-t": {0: {}}})
	require.NoError(t, err)
	perr, _ = offDel.Lookup("admin-t", 0)
	require.NoError(t, perr)
	left, err := adm.FetchOffsets(ctx, "live")
	require.NoError(t, err)
	_, has0 := left.Lookup("admin-t", 0)
	_, has1 := left.Lookup("admin-t", 1)
	require.False(t, has0, "partition 0's committed offset deleted")
	require.True(t, has1, "partition 1's kept")
	deleted, err = adm.DeleteGroups(ctx, "live", "native-g")
	require.NoError(t, err)
	require.NoError(t, deleted["live"].Err)
	require.NoError(t, deleted["native-g"].Err)
	listed, err = adm.ListGroups(ctx)
	require.NoError(t, err)
	require.NotContains(t, listed, "live")
	require.NotContains(t, listed, "native-g")
	require.Error(t, n.CLI("", "query", "topics", "group", "live").Err, "the group is gone from the chain")
	t.Logf("kadm: listed %d groups, described the live member (%s from %s, partitions %v), log dirs %d bytes, deleted both groups",
		2, m.ClientID, m.ClientHost, assigned.Topics[0].Partitions, size)
}
