package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/testutil/node"
)

// balancer is a TCP load balancer in front of a gateway fleet: each connection goes to the
// first backend, in its order of preference, that accepts it.
type balancer struct {
	ln       net.Listener
	backends []string
}

func newBalancer(t *testing.T) *balancer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return &balancer{ln: ln}
}

func (b *balancer) addr() string { return b.ln.Addr().String() }

func (b *balancer) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			for _, to := range b.backends {
				up, err := net.DialTimeout("tcp", to, time.Second)
				if err != nil {
					continue
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c); up.Close() }()
				_, _ = io.Copy(c, up)
				return
			}
		}()
	}
}

// TestKafkaGatewayFleetSharesGroups is the fleet a team runs: two gateways, each behind its own
// balancer address (preferring it, falling back to the other), and a librdkafka consumer (kcat
// -G) on each in one group. The group is one group on chain: 400 records on 4 partitions are
// read exactly once between the two consumers (each gateway coordinating alone read all 400
// in each consumer). Then two franz-go consumers, one per balancer, read the topic as another
// group, their commits of what they read land on chain, and one gateway dies under them: its
// consumer reconnects through its balancer to the other gateway, which renews its member on chain
// from its next heartbeat, so the group keeps its generation (no rebalance) and each consumer
// goes on from its position: every record is read, none twice, and the commits land on chain.
// (A rebalance would be Kafka's at-least-once: records read since the last commit on chain read
// again by the partition's next owner; the test requires that none happened.)
func TestKafkaGatewayFleetSharesGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node")
	}
	kcat, err := exec.LookPath("kcat")
	require.NoError(t, err)
	n := node.StartSingle(t, "alice")
	lb1, lb2 := newBalancer(t), newBalancer(t)
	gw1 := startGatewayAdvertising(t, n, "alice", lb1.addr())
	gw2 := startGatewayAdvertising(t, n, "alice", lb2.addr())
	lb1.backends = []string{gw1.Addr(), gw2.Addr()}
	lb2.backends = []string{gw2.Addr(), gw1.Addr()}
	go lb1.serve()
	go lb2.serve()

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	producer, err := kgo.NewClient(kgo.SeedBrokers(lb1.addr()), kgo.DefaultProduceTopic("fleet"))
	require.NoError(t, err)
	defer producer.Close()
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "fleet", NumPartitions: 4, ReplicationFactor: -1}}
	cres, err := create.RequestWith(ctx, producer)
	require.NoError(t, err)
	require.Zero(t, cres.Topics[0].ErrorCode)

	var (
		mu   sync.Mutex
		seen = map[string][]int{} // value -> the consumers that read it
	)
	consume := func(i int, lb *balancer) *exec.Cmd {
		cmd := exec.CommandContext(ctx, kcat, "-b", lb.addr(), "-G", "fleet-group", "fleet",
			"-X", "auto.offset.reset=earliest", "-X", "auto.commit.interval.ms=1000", "-q", "-u", "-f", "%s\n")
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		if dbg := os.Getenv("FLEET_DEBUG"); dbg != "" {
			cmd.Args = append(cmd.Args[:1], append([]string{"-d", "cgrp,broker"}, cmd.Args[1:]...)...)
			f, err := os.Create(fmt.Sprintf("%s/kcat-%d.log", dbg, i))
			require.NoError(t, err)
			cmd.Stderr = f
		}
		require.NoError(t, cmd.Start())
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				mu.Lock()
				seen[sc.Text()] = append(seen[sc.Text()], i)
				mu.Unlock()
			}
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	consumers := []*exec.Cmd{consume(1, lb1), consume(2, lb2)}

	// Both consumers in one stable generation on chain.
	type kafkaGroup struct {
		Group struct {
			State      string `json:"state"`
			Generation int    `json:"generation"`
		} `json:"group"`
		Members []struct {
			MemberID string `json:"member_id"`
		} `json:"members"`
	}
	var kg kafkaGroup
	require.Eventually(t, func() bool {
		r := n.CLI("", "query", "topics", "kafka-group", "fleet-group", "-o", "json")
		if r.Err != nil || json.Unmarshal([]byte(r.Stdout), &kg) != nil {
			return false
		}
		return kg.Group.State == "KAFKA_GROUP_STATE_STABLE" && len(kg.Members) == 2
	}, 90*time.Second, 250*time.Millisecond, "the two consumers never formed one stable group")
	t.Logf("group fleet-group: generation %d, members %v", kg.Group.Generation, kg.Members)

	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v-%d", i))})
		}
		require.NoError(t, producer.ProduceSync(ctx, recs...).FirstErr())
	}
	tally := func(from, to int) (distinct, total int, by map[int]int) {
		mu.Lock()
		defer mu.Unlock()
		by = map[int]int{}
		for i := from; i < to; i++ {
			readers := seen[fmt.Sprintf("v-%d", i)]
			if len(readers) > 0 {
				distinct++
			}
			total += len(readers)
			for _, r := range readers {
				by[r]++
			}
		}
		return
	}
	produce(0, 400)
	require.Eventually(t, func() bool { d, _, _ := tally(0, 400); return d == 400 }, 60*time.Second, 200*time.Millisecond)
	time.Sleep(2 * time.Second) // a record read twice would show by now
	distinct, total, by := tally(0, 400)
	require.Equal(t, 400, distinct)
	require.Equal(t, 400, total, "a record was delivered to both consumers")
	require.Positive(t, by[1])
	require.Positive(t, by[2])
	t.Logf("400 records on 4 partitions: consumer on gateway 1 read %d, on gateway 2 read %d, none twice", by[1], by[2])

	// kcat exits when every broker connection drops at once (librdkafka's ALL_BROKERS_DOWN is
	// fatal to it), so the failover is played with franz-go consumers, which reconnect.
	for _, c := range consumers {
		_ = c.Process.Kill()
	}
	// Each read: the record's value, its partition and offset, and the consumer that read it.
	type read struct {
		partition int32
		offset    int64
		by        int
	}
	var (
		kmu   sync.Mutex
		kseen = map[string][]read{}
	)
	member := func(i int, lb *balancer) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(lb.addr()), kgo.ConsumerGroup("fleet-kgo"), kgo.ConsumeTopics("fleet"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(10*time.Second), kgo.HeartbeatInterval(time.Second),
			kgo.AutoCommitInterval(time.Second))
		require.NoError(t, err)
		go func() {
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				if fs.IsClientClosed() {
					return
				}
				fs.EachRecord(func(r *kgo.Record) {
					kmu.Lock()
					kseen[string(r.Value)] = append(kseen[string(r.Value)], read{r.Partition, r.Offset, i})
					kmu.Unlock()
				})
			}
		}()
		return cl
	}
	k1, k2 := member(1, lb1), member(2, lb2)
	defer k1.Close()
	defer k2.Close()
	kread := func() (distinct, total int) {
		kmu.Lock()
		defer kmu.Unlock()
		for _, rs := range kseen {
			distinct, total = distinct+1, total+len(rs)
		}
		return
	}
	require.Eventually(t, func() bool { d, _ := kread(); return d == 400 }, 90*time.Second, 200*time.Millisecond, "the franz-go group did not read the first 400")
	// Their autocommits of the 400 on chain, and the generation both members are in.
	require.NoError(t, chainCommittedSum(n, "fleet-kgo", 400), "the consumers' commits of the first 400 on chain")
	generation := func() (kafkaGroup, error) {
		var g kafkaGroup
		r := n.CLI("", "query", "topics", "kafka-group", "fleet-kgo", "-o", "json")
		if r.Err != nil {
			return g, r.Err
		}
		return g, json.Unmarshal([]byte(r.Stdout), &g)
	}
	before, err := generation()
	require.NoError(t, err)
	require.Equal(t, "KAFKA_GROUP_STATE_STABLE", before.Group.State)
	require.Len(t, before.Members, 2)

	// Gateway 2 dies while both read; its consumer reconnects through its balancer to gateway 1,
	// whose coordinator renews the member on chain from its next heartbeat (well within its 10 s
	// session): the group keeps its generation and each consumer its partitions and position.
	killed := time.Now()
	require.NoError(t, gw2.Close())
	produce(400, 800)
	require.Eventually(t, func() bool { d, _ := kread(); return d == 800 }, 120*time.Second, 200*time.Millisecond, "records were lost across the gateway's death")
	readIn := time.Since(killed)
	time.Sleep(3 * time.Second) // a record read again (a rebalance resuming from a commit) would show by now
	after, err := generation()
	require.NoError(t, err)
	distinct, total = kread()
	kmu.Lock()
	var twice []string
	for v, rs := range kseen {
		if len(rs) > 1 {
			twice = append(twice, fmt.Sprintf("%s %+v", v, rs))
		}
	}
	kmu.Unlock()
	t.Logf("franz-go group: gateway 2 killed; all 800 records read %v later, %d read twice; generation %d before the kill, %d after (state %s, %d members)",
		readIn.Round(100*time.Millisecond), total-distinct, before.Group.Generation, after.Group.Generation, after.Group.State, len(after.Members))
	require.Equal(t, before.Group.Generation, after.Group.Generation, "the gateway's death rebalanced the group")
	require.Len(t, after.Members, 2, "the dead gateway's member expired instead of being renewed by the survivor")
	require.Equal(t, 800, distinct)
	require.Empty(t, twice, "records read twice across the failover (the group did not rebalance, so each consumer went on from its position)")

	// The group's commits are on chain: the committed offsets add up to the 800 records.
	require.NoError(t, chainCommittedSum(n, "fleet-kgo", 800), "the consumers' commits on chain")
}
