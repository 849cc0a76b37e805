package node

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
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
		n.mustRun("init", fmt.Sprintf("node%d", i), "--chain-id", ChainID)
		n.mustRun("keys", "add", fmt.Sprintf("val%d", i), "--keyring-backend", "test")
		net.Nodes = append(net.Nodes, n)
	}
	n0 := net.Nodes[0]
	for _, a := range opts.Accounts {
		n0.mustRun("keys", "add", a, "--keyring-backend", "test")
	}
	for _, a := range opts.TestKeys {
		n0.RecoverTestKey(a)
		opts.Accounts = append(opts.Accounts, a)
	}
	for i, n := range net.Nodes {
		addr := strings.TrimSpace(n.mustRun("keys", "show", fmt.Sprintf("val%d", i), "-a", "--keyring-backend", "test"))
		n0.mustRun("genesis", "add-genesis-account", addr, "1000000000000stake")
	}
	for _, a := range opts.Accounts {
		n0.mustRun("genesis", "add-genesis-account", a, "1000000000000stake", "--keyring-backend", "test")
	}
	gen := filepath.Join(n0.Home, "config", "genesis.json")
	if opts.EditGenesis != nil {
		editGenesis(t, gen, opts.EditGenesis)
	}
	gentxDir := filepath.Join(n0.Home, "config", "gentx")
	if err := os.MkdirAll(gentxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, n := range net.Nodes {
		if i > 0 {
			copyFile(t, gen, filepath.Join(n.Home, "config", "genesis.json"))
		}
		out := filepath.Join(gentxDir, fmt.Sprintf("gentx-%d.json", i))
		n.mustRun("genesis", "gentx", fmt.Sprintf("val%d", i), "100000000stake", "--chain-id", ChainID,
			"--keyring-backend", "test", "--output-document", out)
	}
	n0.mustRun("genesis", "collect-gentxs", "--gentx-dir", gentxDir)
	net.Genesis = gen
	for _, n := range net.Nodes {
		copyFile(t, gen, filepath.Join(n.Home, "config", "genesis.json"))
		allowLoopbackPeers(t, n.Home)
		if opts.Proxied {
			setConfig(t, n.Home, "pex = true", "pex = false")
		}
		setAppConfig(t, n.Home, opts.AppConfig...)
		net.ids = append(net.ids, strings.TrimSpace(n.mustRun("comet", "show-node-id")))
	}
	for _, i := range opts.RemoteSigners {
		net.Nodes[i].useRemoteSigner()
	}
	// Each node pushes to and fetches from the others' data-plane listeners (ordering.peers),
	// so all ports are known before any node starts.
	for _, n := range net.Nodes {
		n.assignPorts()
	}
	for i, n := range net.Nodes {
		var apis []string
		for j, m := range net.Nodes {
			if j != i {
				apis = append(apis, m.dataPlaneURL())
			}
		}
		if !opts.PeersFromChain {
			n.Env = append(n.Env, "BFTLOGD_ORDERING_PEERS="+strings.Join(apis, ","))
		}
		switch opts.Ordering {
		case OrderingByDigest:
			n.Env = append(n.Env, "BFTLOGD_ORDERING_BY_DIGEST=true")
		case OrderingCarry:
			n.Env = append(n.Env, "BFTLOGD_ORDERING_BY_DIGEST=false")
		}
	}
	for i, n := range net.Nodes {
		var peers []string
		for j, m := range net.Nodes {
			if j == i {
				continue
			}
			port := m.P2PPort
			if opts.Proxied {
				l := newLink(t, i, j, m.P2PPort)
				net.Links = append(net.Links, l)
				port = l.Port
			}
			host := m.addr()
			if opts.Proxied {
				host = "127.0.0.1"
			}
			peers = append(peers, fmt.Sprintf("%s@%s:%d", net.ids[j], host, port))
		}
		n.Peers = strings.Join(peers, ",")
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
