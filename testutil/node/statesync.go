package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// setAppConfig replaces lines of app.toml (old, new, ...), failing if one is missing.
func setAppConfig(t T, home string, oldNew ...string) {
	replaceLines(t, filepath.Join(home, "config", "app.toml"), oldNew...)
}

func replaceLines(t T, p string, oldNew ...string) {
	if len(oldNew) == 0 {
		return
	}
	bz, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(bz)
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("%s has no line %q", p, oldNew[i])
		}
		s = strings.Replace(s, oldNew[i], oldNew[i+1], 1)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// SnapshotEvery is NetworkOptions.AppConfig for state sync snapshots every interval blocks.
func SnapshotEvery(interval int) []string {
	return []string{"snapshot-interval = 2000", fmt.Sprintf("snapshot-interval = %d", interval)}
}

// AddStateSyncNode starts a full node that joins by state sync: it restores a snapshot offered
// by the validators, verified by a light client against two of their RPCs from the header at
// trustHeight (hash taken from validator 0, as an operator takes it from a source they trust),
// then block-syncs the rest. It returns once the node's height has reached the validators'.
func (net *Network) AddStateSyncNode(name string, trustHeight int64, timeout time.Duration) *Node {
	t := net.t
	t.Helper()
	hash, _, err := net.Nodes[0].BlockHashes(trustHeight)
	if err != nil {
		t.Fatal(err)
	}
	n := net.newFullNode(name)
	replaceLines(t, filepath.Join(n.Home, "config", "config.toml"),
		"enable = false\n\n# RPC servers", "enable = true\n\n# RPC servers",
		`rpc_servers = ""`, fmt.Sprintf(`rpc_servers = "%s,%s"`, net.Nodes[0].RPC, net.Nodes[1].RPC),
		"trust_height = 0", fmt.Sprintf("trust_height = %d", trustHeight),
		`trust_hash = ""`, fmt.Sprintf(`trust_hash = "%s"`, hash),
		`discovery_time = "15s"`, `discovery_time = "5s"`)
	n.Start()
	target, err := net.Nodes[0].Height()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.WaitForHeight(target, timeout); err != nil {
		t.Fatalf("state sync: %v\n--- %s log tail ---\n%s", err, n.Home, n.LogTail(60))
	}
	return n
}
