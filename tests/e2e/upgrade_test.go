package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/testutil/node"
	"github.com/bftlog/bftlog/x/topics/client/verify"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// upgradeFrom is the release before upgrade v2: x/topics at consensus version 1, topic configs
// without cleanup_policy, no v2 handler.
const upgradeFrom = "28feb48950a8071b874347f7d321854465fe2155"

// A software upgrade by governance on four validators: the chain runs the previous release's
// binary, a MsgSoftwareUpgrade proposal for v2 passes, every node halts at the upgrade height,
// the operators start this tree's binary, which runs x/topics' store migration, and the chain
// goes on: every record, offset and committed group offset as before, the migrated topic
// config, verified reads from a trust anchor of the old release, new records appended.
func TestSoftwareUpgradeByGovernance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and starts validator processes")
	}
	old, ok := node.BinaryAt(t, upgradeFrom, "v1.0.0")
	if !ok {
		t.Fatalf("the release before v2 (commit %s) is neither in this clone nor fetchable from its origin (see the log above): it cannot be built", upgradeFrom)
	}
	net := node.StartNetwork(t, node.NetworkOptions{Validators: 4, Binary: old, EditGenesis: node.ShortGovernance(8 * time.Second)})
	v0 := net.Nodes[0]
	require.Contains(t, v0.MustRun("version"), "v1.0.0")
	_, signer := v0.ClientContext(v0.Home, "val0")
	_, err := signer.SubmitAndWait(&types.MsgCreateTopic{Owner: signer.Address(), Name: "ledger", Partitions: 4,
		Config: types.TopicConfig{RetentionMs: -1, RetentionBytes: -1}})
	require.NoError(t, err)
	produce := func(from, to int) {
		for p := uint32(0); p < 4; p++ {
			var recs []types.BatchRecord
			for i := from; i < to; i++ {
				recs = append(recs, types.BatchRecord{Key: types.NewBytes(fmt.Appendf(nil, "k%d", i)), Value: types.NewBytes(fmt.Appendf(nil, "p%d-v%d", p, i))})
			}
			b, err := types.NewProduceBatch("ledger", p, recs, kbatch.CompressionNone)
			require.NoError(t, err)
			_, err = signer.SubmitAndWait(&types.MsgProduce{Producer: signer.Address(), Batches: []types.ProduceBatch{b}})
			require.NoError(t, err)
		}
	}
	produce(0, 50)
	v0.MustCLI("", "query", "topics", "consume", "ledger", "--group", "auditors", "--max", "120", "-o", "json", "--from", "val0")
	offsets := v0.MustCLI("", "query", "topics", "group-offsets", "auditors", "--topic", "ledger", "-o", "json")
	before := logDigest(t, v0.MustClientCtx())
	require.NotContains(t, v0.MustCLI("", "query", "topics", "topic", "ledger", "-o", "json"), "cleanup_policy", "v1 stores no cleanup policy")

	// The proposal: halt at a height well after the voting period ends.
	h, err := v0.Height()
	require.NoError(t, err)
	upgradeHeight := h + 60
	proposal := filepath.Join(t.TempDir(), "upgrade.json")
	require.NoError(t, os.WriteFile(proposal, fmt.Appendf(nil, `{
  "messages": [{"@type": "/cosmos.upgrade.v1beta1.MsgSoftwareUpgrade",
    "authority": "bftlog10d07y265gmmuvt4z0w9aw880jnsr700jsc6t6l",
    "plan": {"name": %q, "height": "%d", "info": ""}}],
  "metadata": "", "deposit": "10000000stake", "title": "Upgrade to v2", "summary": "x/topics v2", "expedited": false
}`, app.UpgradeV2, upgradeHeight), 0o644))
	_, status := passProposal(t, net, proposal, "yes")
	require.Equal(t, "PROPOSAL_STATUS_PASSED", status)
	passed, err := v0.Height()
	require.NoError(t, err)
	require.Less(t, passed, upgradeHeight, "the proposal passed before the upgrade height")

	// Every node of the old release halts at the upgrade height, asking for v2.
	need := fmt.Sprintf(`UPGRADE "%s" NEEDED at height: %d`, app.UpgradeV2, upgradeHeight)
	for i, n := range net.Nodes {
		eventually(t, fmt.Sprintf("node %d to halt for the upgrade", i), 3*time.Minute, func() bool { return strings.Contains(n.Log(), need) })
	}
	for _, n := range net.Nodes {
		hh, err := n.Height()
		require.NoError(t, err)
		// CometBFT stores the block before the app runs it: the store may hold the upgrade
		// height's block, which the old binary refused to execute.
		require.LessOrEqual(t, hh, upgradeHeight, "no node goes past the upgrade height with the old binary")
	}
	newBin := node.Binary(t)
	start := time.Now()
	// The operators stop their halted nodes at once and start the new binary.
	var stopping sync.WaitGroup
	for _, n := range net.Nodes {
		stopping.Add(1)
		go func() { defer stopping.Done(); n.Stop() }()
	}
	stopping.Wait()
	for _, n := range net.Nodes {
		n.Bin = newBin
		n.Start()
	}
	for _, n := range net.Nodes {
		require.NoError(t, n.WaitForHeight(upgradeHeight+3, 2*time.Minute), n.LogTail(40))
	}
	t.Logf("upgrade at height %d: the chain halted on the old binary and went on %s after the operators stopped it", upgradeHeight, time.Since(start).Round(100*time.Millisecond))
	require.Contains(t, v0.Log(), fmt.Sprintf(`applying upgrade "%s" at height: %d`, app.UpgradeV2, upgradeHeight))
	net.CheckAgreement()

	var applied struct {
		Height string `json:"height"`
	}
	require.NoError(t, json.Unmarshal([]byte(v0.MustCLI("", "query", "upgrade", "applied", app.UpgradeV2, "-o", "json")), &applied))
	require.Equal(t, fmt.Sprint(upgradeHeight), applied.Height)
	var versions struct {
		ModuleVersions []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"module_versions"`
	}
	require.NoError(t, json.Unmarshal([]byte(v0.MustCLI("", "query", "upgrade", "module-versions", "topics", "-o", "json")), &versions))
	require.Len(t, versions.ModuleVersions, 1)
	require.Equal(t, "2", versions.ModuleVersions[0].Version, "x/topics migrated to consensus version 2")
	var topic struct {
		Topic struct {
			Config struct {
				CleanupPolicy string `json:"cleanup_policy"`
			} `json:"config"`
		} `json:"topic"`
	}
	require.NoError(t, json.Unmarshal([]byte(v0.MustCLI("", "query", "topics", "topic", "ledger", "-o", "json")), &topic))
	require.Equal(t, types.CleanupPolicyDelete, topic.Topic.Config.CleanupPolicy, "migrated")

	for _, n := range net.Nodes {
		require.Equal(t, before, logDigest(t, n.MustClientCtx()), "every record as before, on every node")
	}
	require.Equal(t, offsets, v0.MustCLI("", "query", "topics", "group-offsets", "auditors", "--topic", "ledger", "-o", "json"))

	// A verifying reader anchored at block 1 — a header of the old release — reads through
	// the upgrade; new records get the next offsets.
	produce(50, 60)
	// A proof of height h is checked against header h+1: read once that header exists.
	h, err = net.Nodes[1].Height()
	require.NoError(t, err)
	require.NoError(t, net.Nodes[1].WaitForHeight(h+2, time.Minute))
	hash1, _, err := v0.BlockHashes(1)
	require.NoError(t, err)
	anchor, err := hex.DecodeString(hash1)
	require.NoError(t, err)
	ctx := context.Background()
	vc, err := verify.New(ctx, verify.Config{ChainID: node.ChainID, Node: net.Nodes[1].RPC, Witnesses: []string{v0.RPC}, TrustHeight: 1, TrustHash: anchor})
	require.NoError(t, err)
	for p := uint32(0); p < 4; p++ {
		res, err := vc.Fetch(ctx, 0, "ledger", p, 0, 100)
		require.NoError(t, err)
		require.Len(t, res.Records, 60)
		require.Equal(t, fmt.Sprintf("p%d-v59", p), string(res.Records[59].Value.GetData()))
		require.Equal(t, uint64(59), res.Records[59].Offset)
	}
}
