package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/consumer"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

type consumed map[string]int

func (c consumed) add(recs []consumer.Record) {
	for _, r := range recs {
		c[fmt.Sprintf("%s/%d/%d", r.Topic, r.Partition, r.Offset)]++
	}
}

// Two consumers on two validator processes share a group: they split the partitions, one
// commits part of its work and leaves, the other takes over from the committed offsets, and
// every record is consumed exactly once across the group.
func TestConsumerGroupSplitAndTakeOver(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an in-process network")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 2})
	ctx := context.Background()
	// Each consumer signs as its own validator's account and talks to its own node.
	ctxA, sigA := net.Nodes[0].ClientContext(net.Nodes[0].Home, "val0")
	ctxB, sigB := net.Nodes[1].ClientContext(net.Nodes[1].Home, "val1")

	_, err := sigA.SubmitAndWait(&types.MsgCreateTopic{Owner: sigA.Address(), Name: "events", Partitions: 4,
		Config: types.TopicConfig{RetentionMs: -1, RetentionBytes: -1}})
	require.NoError(t, err)
	var batches []types.ProduceBatch
	for p := uint32(0); p < 4; p++ {
		var recs []types.BatchRecord
		for i := 0; i < 10; i++ {
			recs = append(recs, types.BatchRecord{Value: &types.Bytes{Data: []byte(fmt.Sprintf("p%d-%d", p, i))}})
		}
		b, err := types.NewProduceBatch("events", p, recs, kbatch.CompressionNone)
		require.NoError(t, err)
		batches = append(batches, b)
	}
	_, err = sigA.SubmitAndWait(&types.MsgProduce{Producer: sigA.Address(), Batches: batches})
	require.NoError(t, err)

	// A group admits only its admin unless the admin says otherwise: val0 sets it up for val1.
	_, err = sigA.SubmitAndWait(&types.MsgCreateGroup{Admin: sigA.Address(), GroupId: "workers",
		JoinPolicy: types.JOIN_POLICY_ALLOWLIST, AllowedMembers: []string{sigB.Address()}})
	require.NoError(t, err)
	a, err := consumer.Join(ctx, ctxA, sigA, "workers", []string{"events"})
	require.NoError(t, err)
	require.Equal(t, []types.TopicPartitions{{Topic: "events", Partitions: []uint32{0, 1, 2, 3}}}, a.Assignment())
	b, err := consumer.Join(ctx, ctxB, sigB, "workers", []string{"events"})
	require.NoError(t, err)
	require.Equal(t, a.Generation()+1, b.Generation())
	require.ErrorIs(t, a.Heartbeat(ctx), consumer.ErrRebalanced)
	require.Equal(t, b.Generation(), a.Generation())
	require.Len(t, a.Assignment()[0].Partitions, 2)
	require.Len(t, b.Assignment()[0].Partitions, 2)
	require.NotEqual(t, a.Assignment()[0].Partitions, b.Assignment()[0].Partitions)

	seen := consumed{}
	// A reads 5 records and commits them, then leaves.
	recs, err := a.Poll(ctx, 5)
	require.NoError(t, err)
	require.Len(t, recs, 5)
	seen.add(recs)
	require.NoError(t, a.Commit(ctx))
	require.NoError(t, a.Leave(ctx))

	// B reads all of its own partitions, commits, then learns of the rebalance and takes over
	// A's partitions from A's committed offsets.
	for {
		recs, err := b.Poll(ctx, 7)
		require.NoError(t, err)
		seen.add(recs)
		err = b.Commit(ctx)
		if errors.Is(err, consumer.ErrRebalanced) {
			continue // positions now come from the committed offsets of the new assignment
		}
		require.NoError(t, err)
		if len(recs) == 0 {
			break
		}
	}
	require.Equal(t, []types.TopicPartitions{{Topic: "events", Partitions: []uint32{0, 1, 2, 3}}}, b.Assignment())
	require.Len(t, seen, 40, "every record consumed")
	for k, n := range seen {
		require.Equal(t, 1, n, "%s consumed %d times", k, n)
	}
	lag, err := types.NewQueryClient(ctxB).Lag(ctx, &types.QueryLagRequest{GroupId: "workers"})
	require.NoError(t, err)
	for _, l := range lag.Lags {
		require.Zero(t, l.Lag, "%s/%d", l.Topic, l.Partition)
	}
}

// Issue "Hostile accounts" item 1 on a real node: bob runs `consume --group` on alice's group
// (created implicitly by alice's own consume) and is refused at the join with a clear message
// and code; he cannot open the group himself; once alice allowlists him he reads; when alice
// removes him his next join is refused again, and alice can reset the group.
func TestAttackGroupJoinRefusedForAnotherAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real node")
	}
	n := node.StartSingle(t, "alice", "bob")
	createTopic(n, "alice", "ledger", 2)
	n.MustCLI("", "tx", "topics", "produce", "ledger", "a", "b", "c", "d", "--from", "alice")
	first := n.MustCLI("", "query", "topics", "consume", "ledger", "--group", "books", "--max", "2", "-o", "json", "--from", "alice")
	require.Len(t, strings.Split(strings.TrimSpace(first), "\n"), 2)

	start := time.Now()
	bad := n.CLI("", "query", "topics", "consume", "ledger", "--group", "books", "--from", "bob")
	require.Error(t, bad.Err)
	require.Contains(t, bad.Stderr, "admits only its admin")
	require.Contains(t, bad.Stderr, fmt.Sprintf("not authorized for group (codespace topics, code %d)", types.ErrGroupAuthorization.ABCICode()))
	t.Logf("bob's consume --group on alice's group refused in %v: %s", time.Since(start), strings.TrimSpace(bad.Stderr))
	code, log := groupTx(t, n, "bob", "update-group-policy", "books", "--join-policy", "anyone")
	require.Equal(t, types.ErrGroupAuthorization.ABCICode(), code, log)

	code, log = groupTx(t, n, "alice", "update-group-policy", "books", "--join-policy", "allowlist", "--allowed-members", n.Address("bob"))
	require.Zero(t, code, log)
	out := n.MustCLI("", "query", "topics", "consume", "ledger", "--group", "books", "--max", "1", "--stay", "-o", "json", "--from", "bob")
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 1)
	// bob stays a member, so the group cannot be reset until alice removes him.
	bad = n.CLI("", "tx", "topics", "reset-offsets", "books", "ledger", "--to-earliest", "--from", "alice")
	require.Error(t, bad.Err)
	require.Contains(t, bad.Stderr+bad.Stdout, "group has active members")
	code, log = groupTx(t, n, "alice", "remove-group-member", "books", n.Address("bob"))
	require.Zero(t, code, log)
	require.Contains(t, n.MustCLI("", "tx", "topics", "reset-offsets", "books", "ledger", "--to-earliest", "--from", "alice"), "reset group books")
	bad = n.CLI("", "query", "topics", "consume", "ledger", "--group", "books", "--from", "bob")
	require.Error(t, bad.Err)
	require.Contains(t, bad.Stderr, "not on the allowlist")
	require.Contains(t, bad.Stderr, "code 35")
}

// groupTx sends an x/topics transaction as from through a command that prints the broadcast
// response (autocli's, create-group, update-group-policy) and waits for its block, returning its
// code and log.
func groupTx(t *testing.T, n *node.Node, from string, args ...string) (uint32, string) {
	t.Helper()
	var sent struct {
		TxHash string `json:"txhash"`
		Code   uint32 `json:"code"`
		RawLog string `json:"raw_log"`
	}
	args = append(append([]string{"tx", "topics"}, args...), "--from", from, "-o", "json")
	var params struct {
		Params struct {
			MinGasPrice json.RawMessage `json:"min_gas_price"`
		} `json:"params"`
	}
	out := n.MustCLI("", "query", "topics", "params", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &params), out)
	var price string // "0.01stake" (amino JSON) or {denom, amount} (proto JSON)
	if json.Unmarshal(params.Params.MinGasPrice, &price) != nil {
		var coin struct{ Denom, Amount string }
		if json.Unmarshal(params.Params.MinGasPrice, &coin) == nil && coin.Denom != "" {
			price = coin.Amount + coin.Denom
		}
	}
	if price != "" {
		args = append(args, "--gas-prices", price) // the consensus minimum fee
	}
	out = n.MustCLI("", args...)
	require.NoError(t, json.Unmarshal([]byte(out), &sent), out)
	if sent.Code != 0 {
		return sent.Code, sent.RawLog
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := n.CLI("", "query", "tx", sent.TxHash, "-o", "json")
		if r.Err == nil {
			var tx struct {
				Code   uint32 `json:"code"`
				RawLog string `json:"raw_log"`
			}
			require.NoError(t, json.Unmarshal([]byte(r.Stdout), &tx), r.Stdout)
			return tx.Code, tx.RawLog
		}
		require.True(t, time.Now().Before(deadline), "tx %s not committed: %s", sent.TxHash, r.Stderr)
		time.Sleep(300 * time.Millisecond)
	}
}
