package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	evidencetypes "cosmossdk.io/x/evidence/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/types"
)

// TestFaultNetworkPartition is scenario 3: one validator is cut off from its peers (every peer
// connection runs through a proxy that the test cuts), the other three keep committing, and
// once healed it catches up with the same blocks.
func TestFaultNetworkPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: []string{"producer"}, Proxied: true})
	p, stop := startProducer(t, net, "partition")
	p.waitAcks(50, 60*time.Second, "first acknowledgements")

	cut := net.Nodes[3]
	net.Isolate(3)
	start := time.Now()
	hCut, err := cut.Height()
	require.NoError(t, err)
	p.waitAcks(50, 60*time.Second, "commits while a validator is cut off")
	if d := 15*time.Second - time.Since(start); d > 0 {
		time.Sleep(d)
	}
	hStill, err := cut.Height()
	require.NoError(t, err)
	hOthers, err := net.Nodes[0].Height()
	require.NoError(t, err)
	// A block already in flight may still finish on the cut node; nothing after that.
	require.LessOrEqual(t, hStill, hCut+1, "the cut-off node kept committing: it was not cut off")
	require.Greater(t, hOthers, hStill+5, "the other validators stalled")
	cutFor := time.Since(start)
	net.Reconnect(3)
	healed := time.Now()
	require.NoError(t, cut.WaitForHeight(hOthers, 90*time.Second), cut.LogTail(30))
	caughtUp := time.Since(healed)
	p.waitAcks(20, 60*time.Second, "commits after healing")
	stop()
	h, err := net.Nodes[0].Height()
	require.NoError(t, err)
	net.WaitAllAt(h, 60*time.Second)
	top := net.CheckAgreement()
	for i, n := range net.Nodes {
		t.Logf("scenario 3: node %d verified %d acknowledged records", i, p.verify(t, n))
	}
	t.Logf("scenario 3: cut off %s at height %d (stayed at %d while the others reached %d); caught up %s after healing; blocks 1..%d agree on all 4; retried submissions %d; losses 0",
		cutFor.Round(time.Second), hCut, hStill, hOthers, caughtUp.Round(100*time.Millisecond), top, p.faults)
}

// TestFaultDoubleSign is scenario 4: a second process signs with validator 3's key. The equivocation
// is committed as evidence, the validator is slashed, jailed and tombstoned, and the chain goes
// on with the honest three, all agreeing on every block.
func TestFaultDoubleSign(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: []string{"producer"}})
	n0 := net.Nodes[0]
	p, stop := startProducer(t, net, "equivocation")
	p.waitAcks(30, 60*time.Second, "first acknowledgements")

	valoper := strings.TrimSpace(net.Nodes[3].MustRun("keys", "show", "val3", "--bech", "val", "-a", "--keyring-backend", "test"))
	cctx := n0.MustClientCtx()
	staking := stakingtypes.NewQueryClient(cctx)
	before, err := staking.Validator(context.Background(), &stakingtypes.QueryValidatorRequest{ValidatorAddr: valoper})
	require.NoError(t, err)
	require.False(t, before.Validator.Jailed)

	twinStart := time.Now()
	twin := net.StartTwin(3)
	var after *stakingtypes.QueryValidatorResponse
	eventually(t, "the double-signing validator to be jailed", 180*time.Second, func() bool {
		after, err = staking.Validator(context.Background(), &stakingtypes.QueryValidatorRequest{ValidatorAddr: valoper})
		return err == nil && after.Validator.Jailed
	})
	jailedIn := time.Since(twinStart)
	twin.Stop()

	ev, err := evidencetypes.NewQueryClient(cctx).AllEvidence(context.Background(), &evidencetypes.QueryAllEvidenceRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, ev.Evidence, "no evidence committed")
	var equivocation evidencetypes.Equivocation
	require.NoError(t, equivocation.Unmarshal(ev.Evidence[0].Value))
	require.NoError(t, after.Validator.UnpackInterfaces(cctx.InterfaceRegistry))
	consAddr, err := after.Validator.GetConsAddr()
	require.NoError(t, err)
	require.Equal(t, sdk.ConsAddress(consAddr).String(), equivocation.ConsensusAddress)
	info, err := slashingtypes.NewQueryClient(cctx).SigningInfo(context.Background(), &slashingtypes.QuerySigningInfoRequest{ConsAddress: equivocation.ConsensusAddress})
	require.NoError(t, err)
	require.True(t, info.ValSigningInfo.Tombstoned, "a double signer is tombstoned")
	require.True(t, after.Validator.Tokens.LT(before.Validator.Tokens), "tokens %s not slashed from %s", after.Validator.Tokens, before.Validator.Tokens)

	// The chain goes on with three validators.
	p.waitAcks(50, 90*time.Second, "commits after the double signer was jailed")
	stop()
	h, err := n0.Height()
	require.NoError(t, err)
	net.WaitAllAt(h, 60*time.Second)
	top := net.CheckAgreement()
	for i, n := range net.Nodes[:3] {
		t.Logf("scenario 4: honest node %d verified %d acknowledged records", i, p.verify(t, n))
	}
	t.Logf("scenario 4: equivocation at height %d committed; jailed %s after the twin started; tokens %s -> %s; tombstoned; blocks 1..%d agree on all 4 nodes; retried submissions %d; losses 0",
		equivocation.Height, jailedIn.Round(100*time.Millisecond), before.Validator.Tokens, after.Validator.Tokens, top, p.faults)
}

// TestFaultTamperedState is scenario 5: while validator 3 is stopped its application store is
// edited (the committed digest of one acknowledged batch rewritten in place, same height). On restart it
// refuses to run on the edited state with a clear log line; the others go on and serve the
// original record.
func TestFaultTamperedState(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four nodes")
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Accounts: []string{"producer"}})
	p, stop := startProducer(t, net, "tamper")
	p.waitAcks(50, 60*time.Second, "first acknowledgements")

	victim := net.Nodes[3]
	victim.Stop()
	// The third batch (records r-2-0..r-2-4, partition 2, offsets 0-4) is acknowledged, so
	// stored on every node. Its bytes live in the record store outside IAVL; what the state
	// commits to is their SHA-256 in the batch's entry, so that is what an editor who rewrote
	// a record would have to change: replace it with the digest of other bytes.
	tam, err := victim.TamperAppState("topics", types.BatchStoreKey("tamper", 2, 4), func(v []byte) ([]byte, error) {
		var b types.RecordBatch
		if err := b.Unmarshal(v); err != nil {
			return nil, err
		}
		forged := sha256.Sum256([]byte("X-2-0"))
		b.RecordBatchSha256 = forged[:]
		return b.Marshal()
	})
	require.NoError(t, err)
	require.NotEqual(t, tam.Original, tam.Tampered)
	victim.Start()
	exitErr, exited := victim.WaitExit(60 * time.Second)
	require.True(t, exited, "a node on tampered state kept running:\n%s", victim.LogTail(30))
	require.Error(t, exitErr)
	const line = "state.AppHash does not match AppHash after replay"
	require.Contains(t, victim.Log(), line)

	p.waitAcks(50, 60*time.Second, "commits with the tampered validator out")
	stop()
	// The network's app hash for that height is the original, not the edited one.
	_, appHash, err := net.Nodes[0].BlockHashes(tam.Height + 1)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("%X", tam.Original), appHash)
	top := net.CheckAgreement()
	for i, n := range net.Nodes[:3] {
		t.Logf("scenario 5: honest node %d verified %d acknowledged records", i, p.verify(t, n))
	}
	t.Logf("scenario 5: edited batch digest at height %d (app hash %X -> %X); the node exited with %q; blocks 1..%d agree on the other 3; losses 0",
		tam.Height, tam.Original[:6], tam.Tampered[:6], line, top)
}
