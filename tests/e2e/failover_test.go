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
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// ack is one acknowledged produce: when, and how long after its records were handed over.
type ack struct {
	at      time.Time
	latency time.Duration
	records int
}

// ackLog collects acknowledgements for the figures of a time window.
type ackLog struct {
	mu   sync.Mutex
	acks []ack
}

func (l *ackLog) add(handed time.Time, records int) {
	now := time.Now()
	l.mu.Lock()
	l.acks = append(l.acks, ack{at: now, latency: now.Sub(handed), records: records})
	l.mu.Unlock()
}

// window is the records acknowledged in [from, to) per second and their p99 latency.
func (l *ackLog) window(from, to time.Time) (perSec float64, p99 time.Duration, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lat []time.Duration
	for _, a := range l.acks {
		if !a.at.Before(from) && a.at.Before(to) {
			for range a.records {
				lat = append(lat, a.latency)
			}
		}
	}
	if len(lat) == 0 {
		return 0, 0, 0
	}
	slices.Sort(lat)
	return float64(len(lat)) / to.Sub(from).Seconds(), lat[(len(lat)*99+99)/100-1], len(lat)
}

// failoverGateway runs `bftlogd kafka serve` with every node of net in --node and --ingress,
// and records when it logs a switch of node.
type failoverGateway struct {
	addr     string
	mu       sync.Mutex
	switches []time.Time
}

func startFailoverGateway(t *testing.T, net *node.Network, key string) *failoverGateway {
	t.Helper()
	var rpcs, apis []string
	for _, n := range net.Nodes {
		rpcs, apis = append(rpcs, n.RPC), append(apis, n.API)
	}
	g := &failoverGateway{}
	g.addr = runGateway(t, net.Nodes[0], func(line string) {
		if strings.Contains(line, "now using node") {
			g.mu.Lock()
			g.switches = append(g.switches, time.Now())
			g.mu.Unlock()
		}
	}, "--from", key, "--node", strings.Join(rpcs, ","), "--ingress", strings.Join(apis, ","))
	return g
}

// switchAfter is the first switch the gateway logged after t0.
func (g *failoverGateway) switchAfter(t0 time.Time) (time.Time, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.switches {
		if s.After(t0) {
			return s, true
		}
	}
	return time.Time{}, false
}

// goProducers are one idempotent producer per partition, each with its own account, all
// sending through one list of the network's nodes; every acknowledged record goes into p.
func goProducers(ctx context.Context, t *testing.T, net *node.Network, p *ackedProducer, nodes *txclient.Nodes, log *ackLog) *sync.WaitGroup {
	var wg sync.WaitGroup
	for part := 0; part < p.partitions; part++ {
		_, signer := net.Nodes[0].ClientContext(net.Nodes[0].Home, fmt.Sprintf("prod%d", part))
		signer.SetFixedGas()
		signer.UseNodes(nodes)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, seq := 0, uint64(1); ctx.Err() == nil; i++ {
				handed := time.Now()
				var records []types.BatchRecord
				for j := 0; j < 20; j++ {
					records = append(records, types.BatchRecord{Value: &types.Bytes{Data: fmt.Appendf(nil, "go-%d-%d-%d", part, i, j)}})
				}
				batch, err := types.NewProduceBatch(p.topic, uint32(part), records, kbatch.CompressionNone)
				if err != nil {
					t.Errorf("encode batch: %v", err)
					return
				}
				batch.Sequence = seq
				msg := &types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{batch}}
				for ctx.Err() == nil {
					// The same batch and sequence until acknowledged: a resend of a batch the
					// chain has is answered as a duplicate with its offsets.
					res, err := signer.SubmitAndWait(msg)
					if err != nil {
						p.mu.Lock()
						p.faults++
						p.mu.Unlock()
						time.Sleep(100 * time.Millisecond)
						continue
					}
					if err := p.acknowledged(res, records); err != nil {
						t.Error(err)
						return
					}
					log.add(handed, len(records))
					seq++
					break
				}
			}
		}()
	}
	return &wg
}

// steadyProducers are goProducers on a new 4-partition topic of net, sending through these
// nodes, started and past first acknowledgements; stop ends them (also at the test's end).
func steadyProducers(t *testing.T, net *node.Network, topic string, through []*node.Node, first int) (acked *ackedProducer, log *ackLog, stop func()) {
	t.Helper()
	createTopic(net.Nodes[0], "producer", topic, 4)
	var list []txclient.Node
	for _, n := range through {
		list = append(list, txclient.Node{RPC: n.RPC, API: n.API})
	}
	nodes, err := txclient.NewNodes(list)
	require.NoError(t, err)
	acked = &ackedProducer{net: net, topic: topic, partitions: 4, acked: map[ackKey]string{}, t: t}
	log = &ackLog{}
	ctx, cancel := context.WithCancel(context.Background())
	wg := goProducers(ctx, t, net, acked, nodes, log)
	stop = func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	eventually(t, "first acknowledgements", 60*time.Second, func() bool { return acked.count() >= first })
	return acked, log, stop
}

// kafkaProducer produces through the gateway with franz-go (an idempotent producer, as by
// default) ten records at a time and records every acknowledged one in p.
func kafkaProducer(ctx context.Context, t *testing.T, addr string, p *ackedProducer, log *ackLog) *sync.WaitGroup {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(p.topic), kgo.RecordDeliveryTimeout(2*time.Minute))
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cl.Close()
		for i := 0; ctx.Err() == nil; i++ {
			handed := time.Now()
			var recs []*kgo.Record
			for j := 0; j < 10; j++ {
				recs = append(recs, &kgo.Record{Value: fmt.Appendf(nil, "kafka-%d-%d", i, j)})
			}
			results := cl.ProduceSync(context.Background(), recs...)
			if err := results.FirstErr(); err != nil {
				t.Errorf("kafka produce %d: %v", i, err)
				return
			}
			p.mu.Lock()
			for _, r := range results {
				p.acked[ackKey{uint32(r.Record.Partition), uint64(r.Record.Offset)}] = string(r.Record.Value)
			}
			p.mu.Unlock()
			log.add(handed, len(recs))
		}
	}()
	return &wg
}

// TestFaultProducersFailOver runs Go producers and a Kafka client through the gateway, both given
// all four validators of a network, while the node they use is paused (SIGSTOP) and then the
// next one is killed (kill -9): each switches to another node within about a second, keeps
// being acknowledged during the fault, and every acknowledged record is on chain exactly once
// at its offset. It prints the switch times and throughput and p99 produce→commit latency with
// and without the fault.
func TestFaultProducersFailOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	const hold, settle = 6 * time.Second, 4 * time.Second
	accounts := []string{"producer", "gateway", "prod0", "prod1", "prod2", "prod3"}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: accounts})
	n0 := net.Nodes[0]
	createTopic(n0, "producer", "failover", 4)
	createTopic(n0, "producer", "failover-kafka", 4)
	var list []txclient.Node
	for _, n := range net.Nodes {
		list = append(list, txclient.Node{RPC: n.RPC, API: n.API})
	}
	nodes, err := txclient.NewNodes(list)
	require.NoError(t, err)
	gw := startFailoverGateway(t, net, "gateway")

	goAcked := &ackedProducer{net: net, topic: "failover", partitions: 4, acked: map[ackKey]string{}, t: t}
	kafkaAcked := &ackedProducer{net: net, topic: "failover-kafka", partitions: 4, acked: map[ackKey]string{}, t: t}
	goLog, kafkaLog := &ackLog{}, &ackLog{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	goWG := goProducers(ctx, t, net, goAcked, nodes, goLog)
	kafkaWG := kafkaProducer(ctx, t, gw.addr, kafkaAcked, kafkaLog)
	eventually(t, "first acknowledgements", 60*time.Second, func() bool { return goAcked.count() >= 200 && kafkaAcked.count() >= 50 })

	freeFrom := time.Now()
	time.Sleep(hold)
	freeTo := time.Now()
	report := func(what string, from, to time.Time) {
		for _, c := range []struct {
			name string
			log  *ackLog
		}{{"go producers", goLog}, {"kafka client via gateway", kafkaLog}} {
			rate, p99, n := c.log.window(from, to)
			t.Logf("%s: %s: %d records acknowledged, %.0f records/s, p99 produce→commit %s", what, c.name, n, rate, p99.Round(time.Millisecond))
		}
	}
	report("fault-free", freeFrom, freeTo)

	for _, fault := range []string{"pause", "kill"} {
		i := nodes.Current()
		_, switchesBefore := nodes.Switches()
		victim := net.Nodes[i]
		inject, repair := victim.Pause, victim.Resume
		if fault == "kill" {
			inject, repair = victim.Kill, victim.Start
		}
		t0 := time.Now()
		inject()
		time.Sleep(hold)
		repaired := time.Now()
		repair()
		time.Sleep(settle)
		sw, count := nodes.Switches()
		require.Greater(t, count, switchesBefore, "the Go producers left node %d", i)
		first := sw[len(sw)-(count-switchesBefore)]
		require.Equal(t, i, first.From)
		require.True(t, first.At.Before(repaired), "the Go producers switched while node %d was down (%s), not after", i, fault)
		gwAt, ok := gw.switchAfter(t0)
		require.True(t, ok && gwAt.Before(repaired), "the gateway switched while node %d was down (%s)", i, fault)
		t.Logf("%s node %d: Go producers switched to node %d %s after the fault (%v); the gateway %s after",
			fault, i, first.To, first.At.Sub(t0).Round(time.Millisecond), first.Cause, gwAt.Sub(t0).Round(time.Millisecond))
		_, _, goDuring := goLog.window(first.At, repaired)
		_, _, kafkaDuring := kafkaLog.window(gwAt, repaired)
		require.Positive(t, goDuring, "Go producers acknowledged while node %d was down", i)
		require.Positive(t, kafkaDuring, "the Kafka client was acknowledged while node %d was down", i)
		report(fmt.Sprintf("%s node %d (%s and %s after)", fault, i, hold, settle), t0, time.Now())
	}
	cancel()
	goWG.Wait()
	kafkaWG.Wait()
	for i, n := range net.Nodes {
		t.Logf("node %d: %d Go-produced and %d Kafka-produced acknowledged records verified exactly once at their offsets (%d Go submissions retried)",
			i, goAcked.verify(t, n), kafkaAcked.verify(t, n), goAcked.faults)
	}
}

// After a crash of every node at once (kill -9, then all restarted from disk), producers'
// records are acknowledged again within 10 s of the first new block, none lost or doubled. In
// the soak (seed 1796409545926356329, ac051db) nothing was acknowledged for 60–80 s after each
// such restart: the producers waited out their commit timeout on transactions no node held
// any more.
func TestFaultRestartOfEveryNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	accounts := []string{"producer", "prod0", "prod1", "prod2", "prod3"}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: accounts})
	n0 := net.Nodes[0]
	acked, log, stop := steadyProducers(t, net, "restart", net.Nodes, 200)

	for round := 1; round <= 2; round++ {
		before, err := n0.Height()
		require.NoError(t, err)
		killed := time.Now()
		for _, n := range net.Nodes {
			n.Kill()
		}
		time.Sleep(2 * time.Second)
		for _, n := range net.Nodes {
			n.Start()
		}
		var firstBlock time.Time
		eventually(t, "a new block after the restart", 90*time.Second, func() bool {
			h, err := n0.Height()
			if err == nil && h > before+1 {
				firstBlock = time.Now()
				return true
			}
			return false
		})
		count := acked.count()
		eventually(t, "acknowledgements again", 60*time.Second, func() bool { return acked.count() >= count+40 })
		again := time.Since(firstBlock)
		_, _, during := log.window(killed, firstBlock)
		t.Logf("restart %d of every node: first new block %s after the kill, producers acknowledged again %s after it (%d records acknowledged in between)",
			round, firstBlock.Sub(killed).Round(time.Millisecond), again.Round(time.Millisecond), during)
		require.Less(t, again, 10*time.Second, "producers acknowledged again within 10 s of the first new block")
	}
	stop()
	for i, n := range net.Nodes {
		t.Logf("node %d: %d acknowledged records verified exactly once at their offsets (%d submissions retried)", i, acked.verify(t, n), acked.faults)
	}
}
