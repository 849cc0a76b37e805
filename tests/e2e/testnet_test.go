package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// `bftlogd testnet --hosts` writes four validators' homes that start as they are, each on a
// host of its own at the default ports: blocks signed by all four, the data-plane endpoints in
// genesis, a produce through one node read back through another with the CLI and each home's
// client.toml alone.
func TestTestnetCommandOnHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four validators")
	}
	if why := node.CanMakeHosts(); why != "" {
		t.Skip("bftlogd testnet --hosts puts each validator on a host of its own (a network namespace): " + why)
	}
	began := time.Now()
	bin := node.Binary(t)
	hosts := node.NewHosts(t)
	var addrs []string
	var onHost []node.Host
	for i := 0; i < 4; i++ {
		h := hosts.Add()
		onHost = append(onHost, h)
		addrs = append(addrs, h.Addr)
	}
	dir := filepath.Join(t.TempDir(), "net")
	out, err := exec.Command(bin, "testnet", "--hosts", strings.Join(addrs, ","), "--output-dir", dir, "--chain-id", "testnet-hosts").CombinedOutput()
	require.NoError(t, err, "%s", out)
	t.Logf("bftlogd testnet (%.1fs):\n%s", time.Since(began).Seconds(), out)
	home := func(i int) string { return filepath.Join(dir, fmt.Sprintf("node%d", i)) }
	written := time.Now()

	for i, h := range onHost {
		runUntilTestEnds(t, h.Command(bin, "start", "--home", home(i)), filepath.Join(home(i), "node.log"))
	}
	cli := func(i int, args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append(args, "--home", home(i))...).CombinedOutput()
		require.NoError(t, err, "bftlogd %s: %s\n--- node%d's log\n%s", strings.Join(args, " "), out, i, tailFile(filepath.Join(home(i), "node.log"), 30))
		return string(out)
	}
	// Every validator signs: gathered over the commits of up to a minute (a loaded machine's
	// node can miss one height's commit).
	signed := map[string]bool{}
	rpc := "http://" + addrs[0] + ":26657"
	for deadline := time.Now().Add(90 * time.Second); len(signed) < 4 && time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		got, _ := commitSigners(rpc)
		for _, a := range got {
			signed[a] = true
		}
	}
	require.Len(t, signed, 4, "all four validators sign; node0's log:\n%s", tailFile(filepath.Join(home(0), "node.log"), 30))
	t.Logf("four validators on %s signing %.1fs after their homes were written", strings.Join(addrs, ", "), time.Since(written).Seconds())

	endpoints := cli(2, "query", "poa", "data-plane-endpoints", "-o", "json")
	for _, a := range addrs {
		require.Contains(t, endpoints, "http://"+a+":1318", "each validator's data-plane endpoint is in genesis")
	}
	// No fixed ordering.peers: a fixed list would turn mempool gossip off and hide validators
	// admitted later; the endpoints above are what each node reads instead.
	for i := range addrs {
		app, err := os.ReadFile(filepath.Join(home(i), "config", "app.toml"))
		require.NoError(t, err)
		require.Regexp(t, `(?m)^peers = \[\]$`, string(app), "node%d's ordering.peers", i)
	}
	cli(0, "tx", "topics", "create-topic", "testnet", "--partitions", "2", "--from", "val0")
	cli(1, "tx", "topics", "produce", "testnet", "one", "two", "three", "--from", "val1")
	read := cli(3, "query", "topics", "consume", "testnet")
	require.ElementsMatch(t, []string{"one", "two", "three"}, strings.Fields(read), "read through node3:\n%s", read)
	t.Logf("bftlogd testnet to a produce read back across hosts: %s", time.Since(began).Round(100*time.Millisecond))
}
