package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

type ackKey struct {
	partition uint32
	offset    uint64
}

// ackedProducer writes continuously and records every acknowledged (committed) record. Each
// batch carries an idempotent sequence, so a batch whose outcome was lost with a crashed node is
// retried on another node without duplicating it.
type ackedProducer struct {
	net        *node.Network
	topic      string
	partitions int
	mu         sync.Mutex
	acked      map[ackKey]string
	faults     int // submissions that failed and were retried
	t          *testing.T
}

func (p *ackedProducer) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.acked)
}

// startProducer creates topic (4 partitions) and starts an ackedProducer on it, submitting to
// node 1 first; stop ends it and waits for it.
func startProducer(t *testing.T, net *node.Network, topic string) (p *ackedProducer, stop func()) {
	createTopic(net.Nodes[0], "producer", topic, 4)
	p = &ackedProducer{net: net, topic: topic, partitions: 4, acked: map[ackKey]string{}, t: t}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.run(ctx, t, 1) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return p, stop
}

// waitAcks waits until more records than now have been acknowledged.
func (p *ackedProducer) waitAcks(more int, d time.Duration, what string) {
	target := p.count() + more
	eventually(p.t, what, d, func() bool { return p.count() >= target })
}

func (p *ackedProducer) run(ctx context.Context, t *testing.T, firstNode int) {
	seq := make([]uint64, p.partitions)
	nodeIdx := firstNode
	var signer *txclient.Signer
	connect := func() {
		for i := 0; i < len(p.net.Nodes); i++ {
			n := p.net.Nodes[(nodeIdx+i)%len(p.net.Nodes)]
			if !n.Running() {
				continue
			}
			func() {
				defer func() { _ = recover() }() // a node that just died fails the connect: try the next
				_, signer = n.ClientContext(p.net.Nodes[0].Home, "producer")
			}()
			if signer != nil {
				nodeIdx = (nodeIdx + i) % len(p.net.Nodes)
				return
			}
		}
	}
	for i := 0; ctx.Err() == nil; i++ {
		part := i % p.partitions
		var records []types.BatchRecord
		for j := 0; j < 5; j++ {
			records = append(records, types.BatchRecord{Value: &types.Bytes{Data: []byte(fmt.Sprintf("r-%d-%d", i, j))}})
		}
		batch, err := types.NewProduceBatch(p.topic, uint32(part), records, kbatch.CompressionNone)
		if err != nil {
			t.Errorf("encode batch: %v", err)
			return
		}
		batch.Sequence = seq[part] + 1
		msg := &types.MsgProduce{Producer: "", Batches: []types.ProduceBatch{batch}}
		for ctx.Err() == nil {
			if signer == nil {
				connect()
				if signer == nil {
					time.Sleep(300 * time.Millisecond)
					continue
				}
			}
			msg.Producer = signer.Address()
			res, err := signer.SubmitAndWait(msg)
			if err != nil {
				p.mu.Lock()
				p.faults++
				p.mu.Unlock()
				signer, nodeIdx = nil, nodeIdx+1
				time.Sleep(300 * time.Millisecond)
				continue
			}
			if err := p.acknowledged(res, records); err != nil {
				t.Error(err)
				return
			}
			seq[part]++
			break
		}
	}
}

// acknowledged records the records of a committed one-batch produce at the offsets its
// response gives.
func (p *ackedProducer) acknowledged(res *sdk.TxResponse, records []types.BatchRecord) error {
	out, err := txclient.Responses[types.MsgProduceResponse](p.net.Nodes[0].MustClientCtx(), res)
	if err != nil || len(out) != 1 || len(out[0].Results) != 1 {
		return fmt.Errorf("produce response: %v %v", out, err)
	}
	r := out[0].Results[0]
	p.mu.Lock()
	defer p.mu.Unlock()
	for j, rec := range records {
		p.acked[ackKey{r.Partition, r.BaseOffset + uint64(j)}] = string(rec.Value.Data)
	}
	return nil
}

// verify reads the whole topic from n and checks every acknowledged record is there exactly
// once at its acknowledged offset with its value, and that offsets have no gaps.
func (p *ackedProducer) verify(t *testing.T, n *node.Node) int {
	t.Helper()
	// Everything acknowledged so far is in a block no higher than the highest node's height:
	// wait for n to get there, then check that snapshot.
	p.mu.Lock()
	acked := make(map[ackKey]string, len(p.acked))
	for k, v := range p.acked {
		acked[k] = v
	}
	p.mu.Unlock()
	var top int64
	for _, m := range p.net.Nodes {
		if m.Running() {
			if h, err := m.Height(); err == nil && h > top {
				top = h
			}
		}
	}
	// +1: a block is in the block store before the app has committed its state.
	require.NoError(t, n.WaitForHeight(top+1, 60*time.Second))
	cctx := n.MustClientCtx()
	q := types.NewQueryClient(cctx)
	parts, err := q.Partitions(context.Background(), &types.QueryPartitionsRequest{Name: p.topic})
	require.NoError(t, err)
	seen := map[string]int{}
	got := map[ackKey]string{}
	for _, part := range parts.Partitions {
		next := part.LogStartOffset
		for next < part.HighWatermark {
			res, err := q.Fetch(context.Background(), &types.QueryFetchRequest{Topic: p.topic, Partition: part.Partition, Offset: next, MaxRecords: 5000})
			require.NoError(t, err)
			for _, r := range res.Records {
				require.Equal(t, next, r.Offset, "gap in %s/%d", p.topic, part.Partition)
				got[ackKey{part.Partition, r.Offset}] = string(r.Value.Data)
				seen[string(r.Value.Data)]++
				next++
			}
		}
	}
	for k, v := range acked {
		require.Equal(t, v, got[k], "acknowledged record at %s/%d offset %d", p.topic, k.partition, k.offset)
	}
	for v, c := range seen {
		require.Equal(t, 1, c, "record %s appears %d times", v, c)
	}
	return len(acked)
}

// TestFaultCrashes runs 4 validator processes under continuous produce and injects crashes:
// (1) kill -9 one validator — commits continue; restarted, it catches up with equal hashes;
// (2) kill -9 two — no blocks while they are down; restarted, the chain resumes;
// (6) kill -9 all four mid-load and restart them — the chain resumes from disk.
// After each, every acknowledged record is present exactly once at its offset.
func TestFaultCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: []string{"producer"}})
	n0 := net.Nodes[0]
	p, stop := startProducer(t, net, "faults")
	waitAcks := p.waitAcks
	waitAcks(50, 60*time.Second, "first acknowledgements")

	// Scenario 1: one validator crashes; 3 of 4 keep committing.
	net.Nodes[3].Kill()
	waitAcks(50, 60*time.Second, "commits with one validator down")
	net.Nodes[3].Start()
	h, err := n0.Height()
	require.NoError(t, err)
	net.WaitAllAt(h, 60*time.Second)
	net.CheckAgreement()
	t.Logf("scenario 1: %d records acknowledged, verified on the restarted node: %d", p.count(), p.verify(t, net.Nodes[3]))

	// Scenario 2: two validators crash; 2 of 4 is not a quorum, so nothing commits.
	net.Nodes[2].Kill()
	net.Nodes[3].Kill()
	time.Sleep(2 * time.Second) // let the block in flight settle
	h1, err := n0.Height()
	require.NoError(t, err)
	acks := p.count()
	time.Sleep(4 * time.Second)
	h2, err := n0.Height()
	require.NoError(t, err)
	require.LessOrEqual(t, h2, h1+1, "no blocks without a quorum")
	require.LessOrEqual(t, p.count(), acks+5, "no acknowledgements without a quorum")
	net.Nodes[2].Start()
	net.Nodes[3].Start()
	waitAcks(50, 90*time.Second, "commits after the quorum is back")
	t.Logf("scenario 2: heights %d..%d while down; %d records acknowledged", h1, h2, p.count())

	// Scenario 6: every validator crashes at once, mid-load, and restarts from disk.
	for _, n := range net.Nodes {
		n.Kill()
	}
	for _, n := range net.Nodes {
		n.Start()
	}
	waitAcks(50, 120*time.Second, "commits after a full restart")
	stop()
	h, err = n0.Height()
	require.NoError(t, err)
	net.WaitAllAt(h, 60*time.Second)
	net.CheckAgreement()
	for i, n := range net.Nodes {
		verified := p.verify(t, n)
		t.Logf("scenario 6: node %d verified %d acknowledged records (retried submissions: %d, losses: 0)", i, verified, p.faults)
	}
}

func jsonDecode(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
