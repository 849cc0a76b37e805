package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Kill ends the process with SIGKILL: no shutdown, as in a crash.
func (n *Node) Kill() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	<-n.exited
	n.cmd = nil
	if n.logFile != nil {
		n.logFile.Close()
	}
}

// Pause freezes the process (SIGSTOP); Resume thaws it (SIGCONT).
func (n *Node) Pause() { _ = n.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused process.
func (n *Node) Resume() { _ = n.cmd.Process.Signal(syscall.SIGCONT) }

// Running tells whether the node process is up.
func (n *Node) Running() bool { return n.cmd != nil }

// BlockHashes returns the block hash and app hash (hex) the node has for height.
func (n *Node) BlockHashes(height int64) (blockHash, appHash string, err error) {
	resp, err := http.Get(fmt.Sprintf("%s/block?height=%d", strings.Replace(n.RPC, "tcp://", "http://", 1), height))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	var b struct {
		Result struct {
			BlockID struct {
				Hash string `json:"hash"`
			} `json:"block_id"`
			Block struct {
				Header struct {
					AppHash string `json:"app_hash"`
				} `json:"header"`
			} `json:"block"`
		} `json:"result"`
		Error any `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil {
		return "", "", err
	}
	if b.Error != nil {
		return "", "", fmt.Errorf("block %d: %v", height, b.Error)
	}
	return b.Result.BlockID.Hash, b.Result.Block.Header.AppHash, nil
}

// CheckAgreement fails unless every running node has the same block hash and app hash at every
// height from 1 to the lowest height they all reached.
func (net *Network) CheckAgreement() int64 {
	t := net.t
	t.Helper()
	low := int64(-1)
	for _, n := range net.Nodes {
		if !n.Running() {
			continue
		}
		h, err := n.Height()
		if err != nil {
			t.Fatalf("height of %s: %v", n.Home, err)
		}
		if low < 0 || h < low {
			low = h
		}
	}
	for h := int64(1); h <= low; h++ {
		var ref [2]string
		for i, n := range net.Nodes {
			if !n.Running() {
				continue
			}
			bh, ah, err := n.BlockHashes(h)
			if err != nil {
				t.Fatalf("node %d height %d: %v", i, h, err)
			}
			if ref[0] == "" {
				ref = [2]string{bh, ah}
			} else if ref != [2]string{bh, ah} {
				t.Fatalf("fork at height %d: node %d has block %s app %s, node 0.. has %s %s", h, i, bh, ah, ref[0], ref[1])
			}
		}
	}
	return low
}

// WaitAllAt waits until every running node reaches height h.
func (net *Network) WaitAllAt(h int64, timeout time.Duration) {
	net.t.Helper()
	for i, n := range net.Nodes {
		if !n.Running() {
			continue
		}
		if err := n.WaitForHeight(h, timeout); err != nil {
			net.t.Fatalf("node %d: %v\n%s", i, err, n.LogTail(30))
		}
	}
}

// StartTwin starts a second process that signs with validator i's consensus key (its own home,
// node key and empty sign state): a double-signing validator, as when an operator runs a
// "backup" copy of a live validator. The twin peers directly with every node.
func (net *Network) StartTwin(i int) *Node {
	net.t.Helper()
	twin := net.newTwin(i)
	var peers []string
	for j, m := range net.Nodes {
		peers = append(peers, fmt.Sprintf("%s@127.0.0.1:%d", net.ids[j], m.P2PPort))
	}
	twin.Peers = strings.Join(peers, ",")
	twin.StartAndWait()
	return twin
}

// newTwin is a new home for a second process with validator i's consensus key, not started.
func (net *Network) newTwin(i int) *Node {
	t := net.t
	t.Helper()
	orig := net.Nodes[i]
	twin := &Node{t: t, Bin: orig.Bin, Home: orig.Home + "-twin"}
	twin.mustRun("init", fmt.Sprintf("node%d-twin", i), "--chain-id", ChainID)
	copyFile(t, net.Genesis, filepath.Join(twin.Home, "config", "genesis.json"))
	copyFile(t, filepath.Join(orig.Home, "config", "priv_validator_key.json"), filepath.Join(twin.Home, "config", "priv_validator_key.json"))
	allowLoopbackPeers(t, twin.Home)
	// A twin that votes as the validator does signs the same votes, which is no equivocation:
	// since heights no longer wait timeout_commit, the two rarely disagreed by chance (jailed in
	// minutes, or not within three). This one gives a proposal 1 ms before it prevotes nil, so at
	// nearly every height it prevotes nil where the validator prevotes the block: conflicting
	// votes, which the chain commits as evidence.
	setConfig(t, twin.Home, `timeout_propose = "1s"`, `timeout_propose = "1ms"`, `timeout_propose_delta = "200ms"`, `timeout_propose_delta = "0s"`)
	// It replays the chain from genesis, fetching what blocks named from the validators' data
	// planes (left empty, it asked the persistent peers' hosts at its own API port: itself).
	var planes []string
	for _, m := range net.Nodes {
		planes = append(planes, m.dataPlaneURL())
	}
	twin.Env = []string{"BFTLOGD_ORDERING_PEERS=" + strings.Join(planes, ",")}
	return twin
}

// WaitExit waits for the node process to end by itself and reports how it ended; ok is false
// if it is still running after timeout.
func (n *Node) WaitExit(timeout time.Duration) (exitErr error, ok bool) {
	if n.cmd == nil {
		return nil, true
	}
	select {
	case exitErr = <-n.exited:
	case <-time.After(timeout):
		return nil, false
	}
	n.cmd = nil
	if n.logFile != nil {
		n.logFile.Close()
	}
	return exitErr, true
}

// Log returns the whole node log.
func (n *Node) Log() string {
	bz, _ := os.ReadFile(filepath.Join(n.Home, "node.log"))
	return string(bz)
}
