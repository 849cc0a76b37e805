package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/testutil/node"
)

// groupRun is one group's consumers reading a topic: which records each read, and when each
// consumer last had its partitions assigned or revoked.
type groupRun struct {
	t     *testing.T
	ctx   context.Context
	addr  string
	group string
	topic string
	opts  []kgo.Opt

	mu       sync.Mutex
	seen     map[string]int
	assigned map[string]map[int32]bool // consumer -> partitions it holds now
	changed  time.Time                 // the last assignment or revocation
	wg       sync.WaitGroup
}

func (g *groupRun) consumer(name string) (*kgo.Client, func()) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(g.addr), kgo.ConsumerGroup(g.group), kgo.ConsumeTopics(g.topic), kgo.ClientID(name),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, p := range m[g.topic] {
				g.assigned[name][p] = true
			}
			g.changed = time.Now()
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			// As franz-go does by default: commit what was read before giving the partitions up.
			_ = cl.CommitUncommittedOffsets(ctx)
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, p := range m[g.topic] {
				delete(g.assigned[name], p)
			}
			g.changed = time.Now()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, p := range m[g.topic] {
				delete(g.assigned[name], p)
			}
			g.changed = time.Now()
		}),
	}, g.opts...)
	cl, err := kgo.NewClient(opts...)
	require.NoError(g.t, err)
	g.mu.Lock()
	g.assigned[name] = map[int32]bool{}
	g.mu.Unlock()
	ctx, cancel := context.WithCancel(g.ctx)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			fs.EachRecord(func(r *kgo.Record) {
				g.mu.Lock()
				g.seen[string(r.Value)]++
				g.mu.Unlock()
			})
		}
	}()
	return cl, func() {
		cancel()
		cl.Close() // leaves the group, committing what was read (franz-go's autocommit)
		g.mu.Lock()
		delete(g.assigned, name)
		g.mu.Unlock()
	}
}

// settled waits until the consumers named hold all six partitions between them, each at least
// one, and returns how long that took from since.
func (g *groupRun) settled(since time.Time, names ...string) time.Duration {
	g.t.Helper()
	eventually(g.t, "the group's partitions spread over "+fmt.Sprint(names), 2*time.Minute, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		total := 0
		for _, n := range names {
			if len(g.assigned[n]) == 0 {
				return false
			}
			total += len(g.assigned[n])
		}
		return total == 6 && len(g.assigned) == len(names)
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changed.Sub(since)
}

func (g *groupRun) read(from, to int) (distinct, total int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := from; i < to; i++ {
		if c := g.seen[fmt.Sprintf("r-%d", i)]; c > 0 {
			distinct, total = distinct+1, total+c
		}
	}
	return
}

// runGroupChurn: three consumers read 10,000 records, one leaves and another joins, 10,000
// more are read; every record is read exactly once. It returns how long the join and the leave
// took to settle (the last assignment change after each).
func runGroupChurn(t *testing.T, ctx context.Context, addr, group, topic string, produce func(n int), opts ...kgo.Opt) (join3, leave, join time.Duration) {
	g := &groupRun{t: t, ctx: ctx, addr: addr, group: group, topic: topic, opts: opts, seen: map[string]int{}, assigned: map[string]map[int32]bool{}}
	start := time.Now()
	_, close1 := g.consumer("c1")
	_, close2 := g.consumer("c2")
	_, close3 := g.consumer("c3")
	join3 = g.settled(start, "c1", "c2", "c3")
	produce(10_000)
	eventually(t, "the first 10,000 records read", 2*time.Minute, func() bool { d, _ := g.read(0, 10_000); return d == 10_000 })

	left := time.Now()
	close1()
	leave = g.settled(left, "c2", "c3")
	joined := time.Now()
	_, close4 := g.consumer("c4")
	join = g.settled(joined, "c2", "c3", "c4")
	produce(10_000)
	eventually(t, "all 20,000 records read", 2*time.Minute, func() bool { d, _ := g.read(0, 20_000); return d == 20_000 })
	close2()
	close3()
	close4()
	g.wg.Wait()
	distinct, total := g.read(0, 20_000)
	require.Equal(t, 20_000, distinct)
	require.Equal(t, 20_000, total, "a record was read twice")
	return join3, leave, join
}

// KIP-848 against the chain: franz-go, unchanged, with kgo.ServerSideBalancer() — three
// consumers read 20,000 records across 6 partitions exactly once while one leaves and another
// joins; the same load with the classic protocol beside it, rebalance times printed.
func TestKafkaConsumerProtocolThroughGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	n := node.StartSingle(t, "alice")
	gw := startGateway(t, n, "alice")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(gw.Addr()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	require.NoError(t, err)
	defer producer.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	for _, topic := range []string{"orders", "orders-classic"} {
		create.Topics = append(create.Topics, kmsg.CreateTopicsRequestTopic{Topic: topic, NumPartitions: 6, ReplicationFactor: -1})
	}
	_, err = create.RequestWith(ctx, producer)
	require.NoError(t, err)
	producing := func(topic string) func(int) {
		next := 0
		return func(count int) {
			recs := make([]*kgo.Record, count)
			for i := range recs {
				recs[i] = &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("r-%d", next))}
				next++
			}
			require.NoError(t, producer.ProduceSync(ctx, recs...).FirstErr())
		}
	}

	j3, l, j := runGroupChurn(t, ctx, gw.Addr(), "g848", "orders", producing("orders"), kgo.ServerSideBalancer())
	// ConsumerGroupDescribe (key 69) shows the group the chain ran.
	adm := kadm.NewClient(producer)
	described, err := adm.DescribeConsumerGroups(ctx, "g848")
	require.NoError(t, err)
	d := described["g848"]
	require.NoError(t, d.Err)
	t.Logf("ConsumerGroupDescribe g848: state %s, epoch %d, assignor %s, %d members", d.State, d.Epoch, d.AssignorName, len(d.Members))
	require.Equal(t, "uniform", d.AssignorName, "the chain ran the group: franz-go did not fall back to the classic protocol")
	require.GreaterOrEqual(t, d.Epoch, int32(5), "three joins, a leave and a join each moved the group epoch")
	// ListGroups shows the group's type (v5), as Kafka 4 does.
	list := kmsg.NewPtrListGroupsRequest()
	lres, err := list.RequestWith(ctx, producer)
	require.NoError(t, err)
	groupTypes := map[string]string{}
	for _, lg := range lres.Groups {
		groupTypes[lg.Group] = lg.GroupType
	}
	require.Equal(t, "consumer", groupTypes["g848"])
	// Partitions added to a subscribed topic reach the members without any of them changing
	// anything: the gateway sees the topic grow and the chain deals the new partitions.
	g := &groupRun{t: t, ctx: ctx, addr: gw.Addr(), group: "g848", topic: "orders", opts: []kgo.Opt{kgo.ServerSideBalancer()},
		seen: map[string]int{}, assigned: map[string]map[int32]bool{}}
	_, closeOne := g.consumer("solo")
	g.settled(time.Now(), "solo")
	grow := kmsg.NewPtrCreatePartitionsRequest()
	gt := kmsg.NewCreatePartitionsRequestTopic()
	gt.Topic, gt.Count = "orders", 8
	grow.Topics = append(grow.Topics, gt)
	grown := time.Now()
	gres, err := grow.RequestWith(ctx, producer)
	require.NoError(t, err)
	require.Zero(t, gres.Topics[0].ErrorCode)
	eventually(t, "the two new partitions assigned", time.Minute, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.assigned["solo"]) == 8
	})
	t.Logf("partitions added to a subscribed topic assigned %v after CreatePartitions", time.Since(grown).Round(time.Millisecond))
	closeOne()
	g.wg.Wait()

	// The classic protocol on the same load: its own topic records, a fresh group.
	cj3, cl, cj := runGroupChurn(t, ctx, gw.Addr(), "gclassic", "orders-classic", producing("orders-classic"))
	lres, err = list.RequestWith(ctx, producer)
	require.NoError(t, err)
	for _, lg := range lres.Groups {
		if lg.Group == "gclassic" {
			require.Equal(t, "classic", lg.GroupType)
		}
	}
	t.Logf("rebalance to settle (last assignment change): KIP-848 three join %v, a leave %v, a join %v; classic %v, %v, %v",
		j3.Round(time.Millisecond), l.Round(time.Millisecond), j.Round(time.Millisecond), cj3.Round(time.Millisecond), cl.Round(time.Millisecond), cj.Round(time.Millisecond))
}
