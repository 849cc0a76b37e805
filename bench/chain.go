package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cosmos/cosmos-sdk/client"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// chain is a running bftlog network with funded producer accounts, all clients on node 0.
type chain struct {
	net     *node.Network
	n0      *node.Node
	signers []*txclient.Signer
	cctxs   []client.Context
}

// startChain starts n validators with `accounts` producer accounts prod0, prod1, ...
// (ordering by digest on with -order-by-digest).
func startChain(t *runT, cfg Config, n, accounts int) (*chain, error) {
	return startNetwork(t, cfg, node.NetworkOptions{Validators: n, Ordering: cfg.ordering()}, accounts)
}

// startNetwork is startChain for a network shaped by opts (its Accounts are the producers').
func startNetwork(t *runT, cfg Config, opts node.NetworkOptions, accounts int) (*chain, error) {
	names := make([]string, accounts)
	for i := range names {
		names[i] = fmt.Sprintf("prod%d", i)
	}
	cfg.Log("starting %d validator(s)", opts.Validators)
	opts.Accounts = names
	net := node.StartNetwork(t, opts)
	c := &chain{net: net, n0: net.Nodes[0], signers: make([]*txclient.Signer, accounts), cctxs: make([]client.Context, accounts)}
	// Producers submit through the node's binary ingress and readers use its gRPC, as a
	// production client should: JSON-RPC and the SDK's gRPC interceptor spend most of the
	// node's CPU on large transactions (README, Performance).
	conn, err := grpc.NewClient(c.n0.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { conn.Close() })
	for i, a := range names {
		c.cctxs[i], c.signers[i] = c.n0.ClientContext(c.n0.Home, a)
		c.cctxs[i] = c.cctxs[i].WithGRPCClient(conn)
		c.signers[i].SetFixedGas()
		c.signers[i].UseRawIngress(c.n0.API + app.RawTxPath)
	}
	return c, nil
}

func (c *chain) createTopic(name string, partitions int) error {
	_, err := c.signers[0].SubmitAndWait(&types.MsgCreateTopic{Owner: c.signers[0].Address(), Name: name, Partitions: uint32(partitions)})
	return err
}

// diskPerRecord is node 0's data directory per record of a log of `records` records, in all
// and by database (logged), so a disk figure says what holds the bytes.
func (c *chain) diskPerRecord(cfg Config, records uint64) (float64, map[string]float64) {
	by := map[string]float64{}
	var total uint64
	names := []string{}
	for name, b := range c.n0.DataBreakdown() {
		total += b
		by[name] = float64(b) / float64(records)
		names = append(names, name)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, name := range names {
		if by[name] >= 0.5 {
			parts = append(parts, fmt.Sprintf("%s %.0f", name, by[name]))
		}
	}
	cfg.Log("  disk of node 0 per record: %.0f B (%s)", float64(total)/float64(records), strings.Join(parts, ", "))
	return float64(total) / float64(records), by
}

// logSize sums a topic's high watermarks and stored bytes (the partitions' byte counts).
func (c *chain) logSize(ctx context.Context, topic string) (records, bytes uint64, err error) {
	parts, err := types.NewQueryClient(c.cctxs[0]).Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range parts.Partitions {
		records += p.HighWatermark
		bytes += p.ByteCount
	}
	return records, bytes, nil
}

// waitCommitted waits one block past the current one: a block's results are visible before
// the app has committed it, so state read right after the tracker saw a block may lag it.
func (c *chain) waitCommitted() {
	if h, err := c.n0.Height(); err == nil {
		_ = c.n0.WaitForHeight(h+1, 30*time.Second)
	}
}

func (c *chain) pids() []int {
	out := make([]int, len(c.net.Nodes))
	for i, v := range c.net.Nodes {
		out[i] = v.Pid()
	}
	return out
}

// cpuTimes reads the CPU time used so far by every validator and by this process, and returns
// a function that gives what each used since. On a shared machine CPU per record moves far
// less between runs than records/s does.
func (c *chain) cpuTimes() func() (validators, harness time.Duration) {
	pids := c.pids()
	before := make([]time.Duration, len(pids))
	for i, pid := range pids {
		before[i] = node.ProcCPU(pid)
	}
	self := node.ProcCPU(os.Getpid())
	return func() (validators, harness time.Duration) {
		for i, pid := range pids {
			validators += node.ProcCPU(pid) - before[i]
		}
		return validators, node.ProcCPU(os.Getpid()) - self
	}
}

// resetPeakRSS starts a new peak-RSS window on every validator, so each measured phase
// reports its own peak rather than the largest since the node started.
func (c *chain) resetPeakRSS() { node.ResetPeakRSS(c.pids()...) }

// peakRSS is every validator's peak RSS in MiB since the last reset.
func (c *chain) peakRSS() []int {
	out := make([]int, len(c.net.Nodes))
	for i, v := range c.net.Nodes {
		out[i] = int(v.PeakRSS() >> 20)
	}
	return out
}
