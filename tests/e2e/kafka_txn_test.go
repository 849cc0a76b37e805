package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/testutil/node"
)

// TestKafkaTransactionsExactlyOnce runs franz-go's consume-transform-produce session
// (GroupTransactSession) through the gateway: each Kafka transaction — output records on
// several partitions and the group's input offsets — becomes one chain transaction at EndTxn.
// The first session is killed in the middle of a transaction (records produced, never
// committed); a second, on another gateway, loses that gateway in the middle of one; a third
// with the same transactional id takes over from the committed offsets. A read_committed
// consumer then finds every input record in the output exactly once.
func TestKafkaTransactionsExactlyOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	admin, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()))
	require.NoError(t, err)
	defer admin.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "txn-in", NumPartitions: 3, ReplicationFactor: -1}, {Topic: "txn-out", NumPartitions: 2, ReplicationFactor: -1}}
	_, err = create.RequestWith(ctx, admin)
	require.NoError(t, err)
	const total = 300
	// Small input batches, so that each transaction below takes a few of them.
	for from := 0; from < total; from += 15 {
		var in []*kgo.Record
		for i := from; i < from+15; i++ {
			in = append(in, &kgo.Record{Topic: "txn-in", Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("in-%d", i))})
		}
		require.NoError(t, admin.ProduceSync(ctx, in...).FirstErr())
	}

	session := func(addr string) *kgo.GroupTransactSession {
		s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("transform-1"),
			kgo.ConsumerGroup("transform"), kgo.ConsumeTopics("txn-in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(time.Second),
			kgo.FetchMaxBytes(64), kgo.FetchMaxPartitionBytes(64), kgo.DefaultProduceTopic("txn-out"))
		require.NoError(t, err)
		return s
	}
	// step runs one transaction of up to the fetched records; commit=false leaves it open.
	step := func(s *kgo.GroupTransactSession, commit bool) (int, error) {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		fs := s.PollFetches(pctx)
		pcancel()
		if err := s.Begin(); err != nil {
			return 0, err
		}
		var wg sync.WaitGroup
		count := 0
		fs.EachRecord(func(r *kgo.Record) {
			count++
			wg.Add(1)
			s.Produce(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("out-"), r.Value[3:]...)}, func(_ *kgo.Record, err error) { wg.Done() })
		})
		wg.Wait()
		if !commit {
			return count, nil
		}
		ok, err := s.End(ctx, kgo.TryCommit)
		if err == nil && !ok {
			return 0, fmt.Errorf("transaction aborted")
		}
		return count, err
	}

	first := session(gw.Addr())
	done := 0
	for done < total/3 {
		c, err := step(first, true)
		require.NoError(t, err)
		done += c
	}
	open := 0
	for open == 0 { // killed mid-transaction: records produced, never committed
		open, err = step(first, false)
		require.NoError(t, err)
	}
	first.Close()
	t.Logf("first session committed %d input records, then died with %d records in an open transaction", done, open)

	// Then the gateway dies in the middle of the second session's transaction.
	gw2 := startGateway(t, n, "alice")
	second := session(gw2.Addr())
	for done2 := 0; done2 < total/3; {
		c, err := step(second, true)
		require.NoError(t, err)
		done2 += c
	}
	open = 0
	for open == 0 {
		open, err = step(second, false)
		require.NoError(t, err)
	}
	require.NoError(t, gw2.Close())
	second.Close()
	t.Logf("second session's gateway died with %d records in an open transaction", open)

	gw3 := startGateway(t, n, "alice")
	third := session(gw3.Addr())
	defer third.Close()
	reader, err := kgo.NewClient(kgo.SeedBrokers(gw3.Addr()), kgo.ConsumeTopics("txn-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	require.NoError(t, err)
	defer reader.Close()
	seen := map[string]int{}
	for len(seen) < total && ctx.Err() == nil {
		_, err := step(third, true)
		require.NoError(t, err)
		rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		reader.PollFetches(rctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		rcancel()
	}
	require.Len(t, seen, total, "every input record is in the output")
	for v, c := range seen {
		require.Equal(t, 1, c, "%s is in the output %d times", v, c)
	}
	t.Logf("read_committed consumer: %d output records, each input exactly once, across a client and a gateway killed mid-transaction", len(seen))
}
