package node

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bftlog/bftlog/internal/testnet"
)

// Network is several bftlogd validator processes that peer with each other, on 127.0.0.1 or
// on hosts of their own (NetworkOptions.Hosts).
type Network struct {
	t     T
	Nodes []*Node
	// Genesis is the final genesis file every node runs.
	Genesis string
	// Links are the peer-connection proxies of a Proxied network.
	Links []*Link
	// Hosts are the hosts of a network started with Hosts: true (Nodes[i] on the i-th); more
	// can be added for other processes on the network.
	Hosts *Hosts
	ids   []string
}

// Ordering is how a network's blocks hold record batches (app/ordering.go).
type Ordering string

const (
	OrderingByDigest Ordering = "by-digest" // blocks name the batches the validators hold
	OrderingCarry    Ordering = "carry"     // blocks carry every transaction whole
)

// NetworkOptions shape a test network.
type NetworkOptions struct {
	Validators int
	// Accounts are extra funded test-keyring keys, created in node 0's home.
	Accounts []string
	// TestKeys are keys of scripts/test-keys.txt to recover and fund in node 0's home.
	TestKeys []string
	// EditGenesis may change the genesis app state before the validators' gentxs.
	EditGenesis func(appState map[string]any)
	// Proxied routes every peer connection through a Link (see Isolate) and turns off peer
	// exchange so that nodes cannot learn each other's direct addresses.
	Proxied bool
	// AppConfig replaces lines of every validator's app.toml before it starts (old, new, ...).
	AppConfig []string
	// Binary is the bftlogd the validators run (an earlier release: BinaryAt); empty means
	// this tree's (Binary).
	Binary string
	// Ordering sets ordering.by-digest on every validator (app/ordering.go); empty leaves the
	// binary's default.
	Ordering Ordering
	// Hosts runs each validator on a host of its own (a network namespace with an address of
	// its own, Hosts): needs root; the test is skipped without it.
	Hosts bool
	// RemoteSigners are the validators whose consensus keys leave their homes for a signer in
	// the test process (CometBFT's remote-signer protocol), as with an HSM or a KMS.
	RemoteSigners []int
	// PeersFromChain leaves ordering.peers empty: the validators' data-plane peers are the
	// endpoints their operators set on chain (x/poa MsgSetDataPlaneEndpoint; SetEndpoints).
	PeersFromChain bool
}

// StartNetwork creates a chain with opts.Validators validators of equal power ("val0", ...,
// each key in its own node's home), starts them peered with each other and waits for blocks.
func StartNetwork(t T, opts NetworkOptions) *Network {
	t.Helper()
	bin := opts.Binary
	if bin == "" {
		bin = Binary(t)
	}
	net := &Network{t: t}
	if opts.Hosts {
		if opts.Proxied {
			t.Fatal("a network on hosts of their own is not Proxied")
		}
		net.Hosts = NewHosts(t)
	}
	root := t.TempDir()
	for i := 0; i < opts.Validators; i++ {
		n := &Node{t: t, Bin: bin, Home: filepath.Join(root, fmt.Sprintf("node%d", i)), P2PPort: FreePort(t)}
		if net.Hosts != nil {
			n.Host = net.Hosts.Add()
		}
		net.Nodes = append(net.Nodes, n)
	}
	n0 := net.Nodes[0]
	homes := make([]string, len(net.Nodes))
	for i, n := range net.Nodes {
		homes[i] = n.Home
	}
	// The ceremony operators run (internal/testnet, docs/deploy.md); mustRun fails the test
	// itself, so the runner never returns an error.
	spec := testnet.NewSpec(ChainID, homes)
	spec.BeforeGentxs = func(gen string) error {
		for _, a := range opts.Accounts {
			n0.mustRun("keys", "add", a, "--keyring-backend", "test")
		}
		for _, a := range opts.TestKeys {
			n0.RecoverTestKey(a)
			opts.Accounts = append(opts.Accounts, a)
		}
		for _, a := range opts.Accounts {
			n0.mustRun("genesis", "add-genesis-account", a, "1000000000000stake", "--keyring-backend", "test")
		}
		if opts.EditGenesis != nil {
			editGenesis(t, gen, opts.EditGenesis)
		}
		return nil
	}
	res, err := testnet.Generate(func(i int, args ...string) (string, error) {
		return net.Nodes[i].mustRun(args...), nil
	}, spec)
	if err != nil {
		t.Fatal(err)
	}
	net.Genesis = res.Genesis
	net.ids = res.NodeIDs
	for _, n := range net.Nodes {
		allowLoopbackPeers(t, n.Home)
		if opts.Proxied {
			setConfig(t, n.Home, "pex = true", "pex = false")
		}
		setAppConfig(t, n.Home, opts.AppConfig...)
	}
	for _, i := range opts.RemoteSigners {
		net.Nodes[i].useRemoteSigner()
	}
	// Each node pushes to and fetches from the others' data-plane listeners (ordering.peers),
	// so all ports are known before any node starts.
	for _, n := range net.Nodes {
		n.assignPorts()
	}
	peers := make([]testnet.Peer, len(net.Nodes))
	for j, m := range net.Nodes {
		peers[j] = testnet.Peer{ID: net.ids[j], Host: m.addr(), P2PPort: m.P2PPort, DataPlane: m.dataPlaneURL()}
	}
	for i, n := range net.Nodes {
		if !opts.PeersFromChain {
			n.Env = append(n.Env, "BFTLOGD_ORDERING_PEERS="+strings.Join(testnet.DataPlanePeers(peers, i), ","))
		}
		switch opts.Ordering {
		case OrderingByDigest:
			n.Env = append(n.Env, "BFTLOGD_ORDERING_BY_DIGEST=true")
		case OrderingCarry:
			n.Env = append(n.Env, "BFTLOGD_ORDERING_BY_DIGEST=false")
		}
	}
	for i, n := range net.Nodes {
		dial := peers
		if opts.Proxied { // every other node through a link of its own on 127.0.0.1
			dial = slices.Clone(peers)
			for j, m := range net.Nodes {
				if j != i {
					l := newLink(t, i, j, m.P2PPort)
					net.Links = append(net.Links, l)
					dial[j].Host, dial[j].P2PPort = "127.0.0.1", l.Port
				}
			}
		}
		n.Peers = testnet.PersistentPeers(dial, i)
		n.Start()
	}
	for _, n := range net.Nodes {
		if err := n.WaitForHeight(2, 90*time.Second); err != nil {
			t.Fatalf("%v\n--- %s log tail ---\n%s", err, n.Home, n.LogTail(40))
		}
	}
	return net
}

// AddFullNode starts a non-validator node on the network's genesis, peered with every node.
func (net *Network) AddFullNode(name string) *Node {
	net.t.Helper()
	n := net.newFullNode(name)
	n.StartAndWait()
	return n
}

// newFullNode is AddFullNode's node, not started.
func (net *Network) newFullNode(name string) *Node {
	t := net.t
	t.Helper()
	n := &Node{t: t, Bin: net.Nodes[0].Bin, Home: filepath.Join(filepath.Dir(net.Nodes[0].Home), name), P2PPort: FreePort(t)}
	n.mustRun("init", name, "--chain-id", ChainID)
	copyFile(t, net.Genesis, filepath.Join(n.Home, "config", "genesis.json"))
	allowLoopbackPeers(t, n.Home)
	var peers []string
	for _, m := range net.Nodes {
		id := strings.TrimSpace(m.mustRun("comet", "show-node-id"))
		peers = append(peers, fmt.Sprintf("%s@%s:%d", id, m.addr(), m.P2PPort))
	}
	n.Peers = strings.Join(peers, ",")
	var apis []string
	for _, m := range net.Nodes {
		apis = append(apis, m.dataPlaneURL())
	}
	n.Env = []string{"BFTLOGD_ORDERING_PEERS=" + strings.Join(apis, ",")}
	return n
}

// dataPlaneURL is where the others reach m's data plane: its own listener, or its API server
// for a release without one (an earlier release built for an upgrade or a -baseline run, whose
// app.toml has no ordering.listen-address).
func (m *Node) dataPlaneURL() string {
	toml, err := os.ReadFile(filepath.Join(m.Home, "config", "app.toml"))
	if err == nil && strings.Contains(string(toml), "\nlisten-address = ") {
		return m.DataPlane
	}
	return m.API
}

// allowLoopbackPeers lets CometBFT peers share 127.0.0.1.
func allowLoopbackPeers(t T, home string) {
	setConfig(t, home, "addr_book_strict = true", "addr_book_strict = false", "allow_duplicate_ip = false", "allow_duplicate_ip = true")
}

// setConfig replaces lines of config.toml (old, new, old, new, ...), failing if one is missing.
func setConfig(t T, home string, oldNew ...string) {
	replaceLines(t, filepath.Join(home, "config", "config.toml"), oldNew...)
}

func editGenesis(t T, path string, edit func(map[string]any)) {
	bz, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(bz, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc["app_state"].(map[string]any))
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t T, from, to string) {
	bz, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, bz, 0o644); err != nil {
		t.Fatal(err)
	}
}

// ShortGovernance sets a voting period of d, a small deposit and a low quorum, for tests.
func ShortGovernance(d time.Duration) func(map[string]any) {
	return func(app map[string]any) {
		params := app["gov"].(map[string]any)["params"].(map[string]any)
		params["voting_period"] = d.String()
		params["max_deposit_period"] = d.String()
		params["expedited_voting_period"] = (d / 2).String()
		params["min_deposit"] = []any{map[string]any{"denom": "stake", "amount": "1000"}}
		params["expedited_min_deposit"] = []any{map[string]any{"denom": "stake", "amount": "2000"}}
	}
}

// TestMnemonic returns the mnemonic of a key in scripts/test-keys.txt.
func TestMnemonic(t T, name string) string {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bz, err := os.ReadFile(filepath.Join(root, "scripts", "test-keys.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(bz), "\n") {
		if k, m, ok := strings.Cut(line, " "); ok && k == name {
			return m
		}
	}
	t.Fatalf("no test key %s", name)
	return ""
}

// RecoverTestKey adds a key of scripts/test-keys.txt to the node's test keyring.
func (n *Node) RecoverTestKey(name string) {
	n.t.Helper()
	cmd := exec.Command(n.Bin, "keys", "add", name, "--recover", "--keyring-backend", "test", "--home", n.Home)
	cmd.Stdin = strings.NewReader(TestMnemonic(n.t, name) + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		n.t.Fatalf("recover %s: %v\n%s", name, err, out)
	}
}
