// Package node runs real bftlogd processes on 127.0.0.1 for end-to-end tests: it builds the
// binary, initialises a chain, starts validators with their own homes and ports, and runs
// CLI commands against them.
package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// T is what the harness needs from a test (testing.TB satisfies it), so that benchmarks and
// programs outside `go test` can run networks too.
type T interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	TempDir() string
	Cleanup(func())
}

// ChainID is the chain id of test networks.
const ChainID = "bftlog-test"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary builds bftlogd once per test process, with the ldflags of make build, and returns
// its path: binDirPrefix<pid>/bftlogd in the temporary directory. The binary is ~150 MB, so
// each build first removes those of processes that have ended, and a TestMain may remove its
// own with RemoveBinary.
func Binary(t T) string {
	t.Helper()
	buildOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			buildErr = err
			return
		}
		removeStaleBinaries()
		dir := filepath.Join(os.TempDir(), binDirPrefix+strconv.Itoa(os.Getpid()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "bftlogd")
		// The same name, version and commit as make build (scripts/ldflags.sh), so that the
		// processes under test report what a released binary reports.
		ldflags, err := exec.Command(filepath.Join(root, "scripts", "ldflags.sh")).Output()
		if err != nil {
			buildErr = fmt.Errorf("scripts/ldflags.sh: %w", err)
			return
		}
		cmd := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(ldflags)), "-o", buildPath, "./cmd/bftlogd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build bftlogd: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// binDirPrefix starts the name of each test process's build directory; the process's pid ends it.
const binDirPrefix = "bftlogd-bin-pid-"

// Main runs a package's tests and then removes the bftlogd they built: a package whose tests
// start nodes calls it from TestMain, os.Exit(node.Main(m)).
func Main(m *testing.M) int {
	defer RemoveBinary()
	return m.Run()
}

// RemoveBinary removes this process's build of bftlogd, if any; call it when no node runs any
// more.
func RemoveBinary() {
	if buildPath != "" {
		_ = os.RemoveAll(filepath.Dir(buildPath))
	}
}

// removeStaleBinaries removes the build directories of processes that are gone.
func removeStaleBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), binDirPrefix+"*"))
	for _, dir := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), binDirPrefix))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the bftlog module")
	}
	return filepath.Dir(gomod), nil
}

var (
	portsMu sync.Mutex
	given   = map[int]bool{}
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and that this process
// has not handed out before (the kernel may offer a just-closed port again).
func FreePort(t T) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !given[port] {
			given[port] = true
			return port
		}
	}
}

// Node is one bftlogd process (validator or full node) with its own home and ports.
type Node struct {
	t    T
	Bin  string
	Home string
	RPC  string // tcp://127.0.0.1:port
	GRPC string // 127.0.0.1:port
	API  string // http://127.0.0.1:port
	// DataPlane is the node's own data-plane listener (ordering.listen-address), which the
	// others' ordering.peers name.
	DataPlane string // http://127.0.0.1:port
	// Prometheus is CometBFT's instrumentation endpoint, which serves /metrics.
	Prometheus string // http://127.0.0.1:port
	// Pprof is the node's net/http/pprof address (127.0.0.1:port) when BFTLOG_PPROF_LADDR is
	// set: "auto" gives every node a port of its own, any other value is used as it is.
	Pprof   string
	P2PPort int
	// Peers is the persistent_peers list the node starts with (id@127.0.0.1:port,...).
	Peers string
	// Env is added to the process's environment (BFTLOGD_<SECTION>_<KEY> overrides config).
	Env []string
	// Host is where the process runs: a host of its own (Hosts.Add), or 127.0.0.1 when unset.
	Host Host
	// keyFile is the consensus key's file when a remote signer in this process holds it.
	keyFile string
	rpcPort int
	cmd     *exec.Cmd
	logFile *os.File
	exited  chan error
}

// StartSingle initialises a one-validator chain with funded keys (the first is the validator)
// and starts it. The node is stopped when the test ends.
func StartSingle(t T, keys ...string) *Node {
	t.Helper()
	if len(keys) == 0 {
		keys = []string{"alice"}
	}
	bin := Binary(t)
	n := &Node{t: t, Bin: bin, Home: t.TempDir()}
	n.mustRun("init", "node0", "--chain-id", ChainID)
	for _, k := range keys {
		n.mustRun("keys", "add", k, "--keyring-backend", "test")
		n.mustRun("genesis", "add-genesis-account", k, "1000000000000stake", "--keyring-backend", "test")
	}
	n.mustRun("genesis", "gentx", keys[0], "100000000stake", "--chain-id", ChainID, "--keyring-backend", "test")
	n.mustRun("genesis", "collect-gentxs")
	n.StartAndWait()
	return n
}

// Start runs the node process on fresh ports and waits for its first block.
func (n *Node) Start() {
	t := n.t
	t.Helper()
	n.assignPorts()
	setPrometheusAddr(t, n.Home, strings.TrimPrefix(n.Prometheus, "http://"))
	logPath := filepath.Join(n.Home, "node.log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	n.logFile = f
	n.cmd = n.Host.Command(n.Bin, "start", "--home", n.Home,
		"--rpc.laddr", n.RPC,
		"--p2p.laddr", "tcp://"+n.addr()+":"+strconv.Itoa(n.P2PPort),
		"--p2p.persistent_peers", n.Peers,
		"--grpc.address", n.GRPC,
		"--api.enable", "--api.address", strings.Replace(n.API, "http://", "tcp://", 1),
		"--api.enabled-unsafe-cors", // as make localnet: browser explorers read the REST API
		"--rpc.pprof_laddr", n.Pprof,
		"--minimum-gas-prices", "0stake",
	)
	n.cmd.Env = append(append(os.Environ(), "BFTLOGD_ORDERING_LISTEN_ADDRESS="+strings.Replace(n.DataPlane, "http://", "tcp://", 1)), n.Env...)
	n.cmd.Stdout, n.cmd.Stderr = f, f
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.exited = make(chan error, 1)
	go func() { n.exited <- n.cmd.Wait() }()
	t.Cleanup(n.Stop)
}

// addr is the node's address: its host's, or 127.0.0.1.
func (n *Node) addr() string {
	if n.Host.Addr != "" {
		return n.Host.Addr
	}
	return "127.0.0.1"
}

// assignPorts picks the node's ports once; restarts keep them so peers find the node again.
func (n *Node) assignPorts() {
	t := n.t
	t.Helper()
	if n.rpcPort == 0 {
		n.rpcPort = FreePort(t)
		a := n.addr()
		n.RPC = "tcp://" + a + ":" + strconv.Itoa(n.rpcPort)
		n.GRPC = a + ":" + strconv.Itoa(FreePort(t))
		n.API = "http://" + a + ":" + strconv.Itoa(FreePort(t))
		n.DataPlane = "http://" + a + ":" + strconv.Itoa(FreePort(t))
		n.Prometheus = "http://" + a + ":" + strconv.Itoa(FreePort(t))
		if n.P2PPort == 0 {
			n.P2PPort = FreePort(t)
		}
		switch laddr := os.Getenv("BFTLOG_PPROF_LADDR"); laddr {
		case "":
		case "auto":
			n.Pprof = a + ":" + strconv.Itoa(FreePort(t))
		default:
			n.Pprof = laddr
		}
	}
}

// setPrometheusAddr gives the node its own instrumentation port: `start` has no flag for it, and
// nodes on one host would otherwise all ask for the same default port.
func setPrometheusAddr(t T, home, addr string) {
	p := filepath.Join(home, "config", "config.toml")
	bz, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^prometheus_listen_addr = ".*"$`)
	if !re.Match(bz) {
		t.Fatalf("%s has no prometheus_listen_addr", p)
	}
	if err := os.WriteFile(p, re.ReplaceAllLiteral(bz, []byte(`prometheus_listen_addr = "`+addr+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// StartAndWait starts the node and waits for height 2.
func (n *Node) StartAndWait() {
	n.t.Helper()
	n.Start()
	if err := n.WaitForHeight(2, 60*time.Second); err != nil {
		n.t.Fatalf("%v\n--- node log tail ---\n%s", err, n.LogTail(40))
	}
}

// Stop ends the node process (SIGTERM, then SIGKILL).
func (n *Node) Stop() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Signal(os.Interrupt)
	select {
	case <-n.exited:
	case <-time.After(15 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
	n.cmd = nil
	if n.logFile != nil {
		n.logFile.Close()
	}
}

// LogTail returns the last lines of the node log.
func (n *Node) LogTail(lines int) string {
	bz, _ := os.ReadFile(filepath.Join(n.Home, "node.log"))
	all := strings.Split(strings.TrimRight(string(bz), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// Height returns the latest committed height from CometBFT RPC.
func (n *Node) Height() (int64, error) {
	resp, err := http.Get("http://" + n.addr() + ":" + strconv.Itoa(n.rpcPort) + "/status")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var st struct {
		Result struct {
			SyncInfo struct {
				LatestBlockHeight string `json:"latest_block_height"`
			} `json:"sync_info"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, err
	}
	return strconv.ParseInt(st.Result.SyncInfo.LatestBlockHeight, 10, 64)
}

// WaitForHeight waits until the node has committed height h.
func (n *Node) WaitForHeight(h int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case err := <-n.exited:
			n.exited <- err
			return fmt.Errorf("node exited: %v", err)
		default:
		}
		got, err := n.Height()
		if err == nil && got >= h {
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("height %d not reached in %s (last error: %v)", h, timeout, last)
}

// Result is the outcome of one CLI run.
type Result struct {
	Stdout, Stderr string
	Err            error
}

// CLI runs bftlogd with the node's home, RPC endpoint, chain id and test keyring.
func (n *Node) CLI(stdin string, args ...string) Result {
	n.t.Helper()
	args = append(args, "--home", n.Home)
	if len(args) > 0 && (args[0] == "tx" || args[0] == "query" || args[0] == "q") && !slices.Contains(args, "--node") {
		args = append(args, "--node", n.RPC)
	}
	if len(args) > 0 && args[0] == "tx" {
		args = append(args, "--chain-id", ChainID, "--keyring-backend", "test", "--yes")
	} else if slices.Contains(args, "--from") { // a query that signs, e.g. consume --group
		args = append(args, "--chain-id", ChainID, "--keyring-backend", "test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, n.Bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	return Result{Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
}

// MustCLI is CLI that fails the test on error.
func (n *Node) MustCLI(stdin string, args ...string) string {
	n.t.Helper()
	r := n.CLI(stdin, args...)
	if r.Err != nil {
		n.t.Fatalf("bftlogd %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Err, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

// Address returns the account address of a test-keyring key.
func (n *Node) Address(key string) string {
	return strings.TrimSpace(n.mustRun("keys", "show", key, "-a", "--keyring-backend", "test"))
}

// MustRun runs a bftlogd command on the node's home (no --node), failing the test on error.
func (n *Node) MustRun(args ...string) string { n.t.Helper(); return n.mustRun(args...) }

func (n *Node) mustRun(args ...string) string {
	n.t.Helper()
	cmd := exec.Command(n.Bin, append(args, "--home", n.Home)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		n.t.Fatalf("bftlogd %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out)
}

// Pid is the node process id (0 when stopped).
func (n *Node) Pid() int {
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// PeakRSS is the process's peak resident set size in bytes (VmHWM), or 0 when unknown.
func (n *Node) PeakRSS() uint64 { return ProcStatus(n.Pid(), "VmHWM") }

// DataBytes is the size of the node's data directory (blocks, state, application store).
func (n *Node) DataBytes() uint64 {
	var total uint64
	for _, b := range n.DataBreakdown() {
		total += b
	}
	return total
}

// DataBreakdown is the data directory's bytes by its top-level entries (application.db,
// blockstore.db, tx_index.db, state.db, cs.wal, ...).
func (n *Node) DataBreakdown() map[string]uint64 {
	out := map[string]uint64{}
	dir := filepath.Join(n.Home, "data")
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out[strings.SplitN(rel, string(filepath.Separator), 2)[0]] += uint64(info.Size())
		}
		return nil
	})
	return out
}

var (
	byzantineOnce sync.Once
	byzantinePath string
	byzantineErr  error
)

// ByzantineBinary builds, once per test process, bftlogd with -tags byzantine beside Binary's:
// a validator that plays the faults BFTLOG_BYZANTINE names (app/byzantine.go). No release has
// them.
func ByzantineBinary(t T) string {
	t.Helper()
	honest := Binary(t)
	byzantineOnce.Do(func() {
		root, err := moduleRoot()
		if err != nil {
			byzantineErr = err
			return
		}
		// Named bftlogd too: the SDK reads BFTLOGD_* settings by the binary's name.
		byzantinePath = filepath.Join(filepath.Dir(honest), "byzantine", "bftlogd")
		cmd := exec.Command("go", "build", "-tags", "byzantine", "-o", byzantinePath, "./cmd/bftlogd")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			byzantineErr = fmt.Errorf("go build -tags byzantine bftlogd: %v\n%s", err, out)
		}
	})
	if byzantineErr != nil {
		t.Fatal(byzantineErr)
	}
	return byzantinePath
}
