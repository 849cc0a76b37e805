package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// StartTwinFromCopy is StartTwin for a validator that has been running for a while: a twin
// with an empty home would replay the whole chain before it signs anything (minutes once the
// chain holds gigabytes), so it starts from a copy of the validator's data directory instead.
// The copy is taken while the validator is paused (SIGSTOP), so it is what a kill -9 at that
// moment would leave; the twin gets an empty sign state, which is what makes it sign again
// what the validator signed, and no consensus WAL, whose replay would belong to the validator.
func (net *Network) StartTwinFromCopy(i int) *Node {
	t := net.t
	t.Helper()
	orig := net.Nodes[i]
	twin := net.newTwin(i)
	data := filepath.Join(twin.Home, "data")
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	orig.Pause()
	out, err := exec.Command("cp", "-a", filepath.Join(orig.Home, "data"), data).CombinedOutput()
	orig.Resume()
	if err != nil {
		t.Fatalf("copy %s's data: %v\n%s", orig.Home, err, out)
	}
	if err := os.RemoveAll(filepath.Join(data, "cs.wal")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "priv_validator_state.json"), []byte(`{"height":"0","round":0,"step":0}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var peers []string
	for j, m := range net.Nodes {
		peers = append(peers, fmt.Sprintf("%s@127.0.0.1:%d", net.ids[j], m.P2PPort))
	}
	twin.Peers = strings.Join(peers, ",")
	twin.StartAndWait()
	return twin
}
