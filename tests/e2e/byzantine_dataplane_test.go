package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// One validator of four is faulty on the data plane, playing each behaviour of the harness's
// build (app/byzantine.go) in turn: pushing signed junk to every peer, withholding (answering
// every push "held" and serving nothing), pushing to one peer and claiming that more than two
// thirds hold it, proposing look-alikes it serves (another transaction's signatures on other
// bytes), and proposing what it serves to nobody. Producers send through the three honest
// nodes. For each, the chain keeps committing, producers are acknowledged, the honest nodes
// agree on every block, and every acknowledged record is on each of them exactly once.
func TestAttackByzantineValidatorOnTheDataPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	const window = 8 * time.Second
	byzantine := node.ByzantineBinary(t)
	accounts := []string{"producer", "prod0", "prod1", "prod2", "prod3"}
	// Each validator on a host of its own where the machine allows (root): the faulty one's
	// requests come from its own address, as across a network.
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: accounts, Hosts: node.CanMakeHosts() == ""})
	n0, faulty := net.Nodes[0], net.Nodes[3]
	t.Logf("validators at %s", hostAddrs(net))
	acked, log, stop := steadyProducers(t, net, "byzantine", net.Nodes[:3], 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A client of the faulty node itself, whose transactions it is the one to push.
	createTopic(n0, "producer", "byzantine-side", 1)
	own, err := txclient.NewNodes([]txclient.Node{{RPC: faulty.RPC, API: faulty.API}})
	require.NoError(t, err)
	_, side := n0.ClientContext(n0.Home, "producer")
	side.SetFixedGas()
	side.UseNodes(own)
	var sideAcked atomic.Int64
	go func() {
		for i := 0; ctx.Err() == nil; i++ {
			var records []types.BatchRecord
			for j := 0; j < 20; j++ {
				records = append(records, types.BatchRecord{Value: &types.Bytes{Data: fmt.Appendf(nil, "side-%d-%d-%s", i, j, strings.Repeat("x", 64))}})
			}
			batch, err := types.NewProduceBatch("byzantine-side", 0, records, kbatch.CompressionNone)
			if err != nil {
				return
			}
			if _, err := side.SubmitAndWait(&types.MsgProduce{Producer: side.Address(), Batches: []types.ProduceBatch{batch}}); err == nil {
				sideAcked.Add(1)
			} else {
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	from := time.Now()
	time.Sleep(window)
	honestRate, honestP99, _ := log.window(from, time.Now())
	t.Logf("all four honest: %.0f records/s, p99 %s", honestRate, honestP99.Round(time.Millisecond))

	acts := []string{"junk", "withhold", "false-held", "lookalike", "unheld"}
	if only := os.Getenv("BFTLOG_BYZANTINE_ACTS"); only != "" {
		acts = strings.Split(only, ",")
	}
	for _, act := range acts {
		faulty.Stop()
		faulty.Bin = byzantine
		faulty.Env = append(slicesWithout(faulty.Env, "BFTLOG_BYZANTINE="), "BFTLOG_BYZANTINE="+act)
		faulty.Start()
		// Measured once the act is under way: a proposal's act waits for the faulty node's turn
		// to propose with something to name.
		eventually(t, "the faulty validator playing "+act, 60*time.Second, func() bool {
			return strings.Contains(faulty.Log(), "byzantine: "+act)
		})
		start, err := n0.Height()
		require.NoError(t, err)
		from := time.Now()
		time.Sleep(window)
		rate, p99, n := log.window(from, time.Now())
		end, err := n0.Height()
		require.NoError(t, err)
		played := strings.Count(faulty.Log(), "byzantine: "+act)
		t.Logf("%s: heights %d→%d, %d records acknowledged, %.0f records/s (%.0f%% of all honest), p99 %s; the faulty node logged the act %d times; its own client's batches acknowledged so far: %d",
			act, start, end, n, rate, 100*rate/honestRate, p99.Round(time.Millisecond), played, sideAcked.Load())
		if played == 0 {
			for _, line := range strings.Split(faulty.Log(), "\n") {
				if strings.Contains(line, "byzantine") || strings.Contains(line, "data plane") || strings.Contains(line, "pool:") || strings.Contains(line, "ERR") || strings.Contains(line, "API") || strings.Contains(line, "server") {
					t.Log(line)
				}
			}
		}
		require.Positive(t, played, "the faulty validator played %s", act)
		if act == "false-held" { // its word comes without receipts: every honest node refuses it
			refused := 0.0
			for _, n := range net.Nodes[:3] {
				for labels, v := range series(scrape(t, n.Prometheus+"/metrics"), "bftlog_data_plane_refused_total") {
					if strings.Contains(labels, "reason=held without receipts") {
						refused += v
					}
				}
			}
			t.Logf("false-held: the honest nodes refused %.0f claims without receipts", refused)
			require.Positive(t, refused, "the faulty validator's unproven word was taken")
		}
		require.Greater(t, end, start+3, "the chain kept committing while one validator played %s", act)
		require.Positive(t, n, "producers were acknowledged while one validator played %s", act)
		for h := start; h <= end; h++ {
			b0, a0, err := n0.BlockHashes(h)
			require.NoError(t, err)
			for _, m := range net.Nodes[1:3] {
				b, a, err := m.BlockHashes(h)
				require.NoError(t, err)
				require.Equal(t, b0+a0, b+a, "honest nodes agree on block %d", h)
			}
		}
	}
	cancel()
	stop()
	for i, n := range net.Nodes[:3] {
		t.Logf("honest node %d: %d acknowledged records verified exactly once", i, acked.verify(t, n))
	}
}

func slicesWithout(env []string, prefix string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, prefix) {
			out = append(out, e)
		}
	}
	return out
}
