package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// TestDeployGuide follows docs/deploy.md as a new user would: it runs every ```sh block of the
// guide as written, in order, each on the host its first line names ("# on: each org", "# on:
// org5", "…, in the background"), with five organisations on network namespaces of their own,
// each with its own address. Four validators come up from the ceremony (keys, gentxs, the
// collected genesis whose hash all four check, peers, the data plane), org2 produces through
// its node, org4 produces through org3's Kafka gateway and reads everything as a consumer group,
// and org5 is admitted by governance and signs blocks. It prints each step's time.
func TestDeployGuide(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five nodes and a gateway")
	}
	if why := node.CanMakeHosts(); why != "" {
		t.Skip("docs/deploy.md puts each organisation on a host of its own (a network namespace): " + why)
	}
	for _, tool := range []string{"bash", "jq", "kcat", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("docs/deploy.md's commands need %s (apt-get install %s)", tool, tool)
		}
	}
	start := time.Now()
	guide, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	require.NoError(t, err)
	blocks := guideBlocks(string(guide))
	require.NotEmpty(t, blocks, "no ```sh blocks in docs/deploy.md")

	// bftlogd on PATH, as an installed binary would be.
	binDir := t.TempDir()
	require.NoError(t, os.Symlink(node.Binary(t), filepath.Join(binDir, "bftlogd")))
	hosts := node.NewHosts(t)
	root := t.TempDir()
	share := filepath.Join(root, "share")
	require.NoError(t, os.MkdirAll(share, 0o755))
	env := []string{
		"PATH=" + binDir + ":" + os.Getenv("PATH"),
		"CHAIN_ID=consortium-test",
		"SHARE=" + share,
		// Unattended: the guide's file keyring would ask for a passphrase.
		"KEYRING_BACKEND=test",
		// Long enough for four votes cast one after the other on a loaded machine.
		"VOTING_PERIOD=25s", "EXPEDITED_VOTING_PERIOD=12s",
	}
	orgs := map[string]*deployOrg{}
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("org%d", i)
		host := hosts.Add()
		env = append(env, fmt.Sprintf("HOST%d=%s", i, host.Addr))
		orgs[name] = &deployOrg{name: name, host: host, home: filepath.Join(root, name)}
	}
	for _, o := range orgs {
		o.env = append(slices.Clone(env), "ORG="+o.name, "MY_HOST="+o.host.Addr, "NODE_HOME="+o.home, "HOME="+o.home)
	}

	var timings []string
	for _, b := range blocks {
		if b.settings {
			// The guide's settings are the test's: each variable it exports, the test sets.
			for _, v := range b.exports {
				require.True(t, slices.ContainsFunc(orgs["org1"].env, func(e string) bool { return strings.HasPrefix(e, v+"=") }),
					"docs/deploy.md's settings export %s, which TestDeployGuide does not set", v)
			}
			continue
		}
		began := time.Now()
		outs := map[string]string{}
		for _, name := range b.on {
			o := orgs[name]
			require.NotNil(t, o, "docs/deploy.md line %d: no host %q", b.line, name)
			if b.background {
				o.startBackground(t, b.script)
				continue
			}
			outs[name] = o.run(t, b, func(out string) string { return deployDiagnostics(orgs, out) })
		}
		took := time.Since(began)
		timings = append(timings, fmt.Sprintf("%-58s %-20s %6.1fs", b.step, strings.Join(b.on, ","), took.Seconds()))
		t.Logf("docs/deploy.md line %d (%s, on %s): %.1fs", b.line, b.step, strings.Join(b.on, ","), took.Seconds())
		checkGuideOutputs(t, b, outs)
	}

	// What the guide's last commands printed was checked above; the chain agrees: each of the
	// five validators, org5 included, signs commits. A loaded machine's node can miss a
	// height's commit (its precommit later than timeout_commit), so signers are gathered over
	// the commits of a minute. RPC listens on org1's loopback only, as the guide sets it.
	signed := map[string]bool{}
	for deadline := time.Now().Add(time.Minute); len(signed) < 5 && time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		out, _ := orgs["org1"].host.Command("curl", "-sf", "--max-time", "5", "http://127.0.0.1:26657/commit").Output()
		addrs, _ := parseCommitSigners(bytes.NewReader(out))
		for _, a := range addrs {
			signed[a] = true
		}
	}
	for _, name := range []string{"org1", "org2", "org3", "org4", "org5"} {
		out, err := exec.Command(node.Binary(t), "comet", "show-validator", "--home", orgs[name].home).Output()
		require.NoError(t, err)
		var pk struct {
			Key []byte `json:"key"`
		}
		require.NoError(t, json.Unmarshal(out, &pk))
		addr := cmted25519.PubKey(pk.Key).Address().String()
		require.True(t, signed[addr], "%s's validator %s signed no commit in a minute; signers %v; its node's log:\n%s",
			name, addr, signed, grepFile(filepath.Join(orgs[name].home, "background.log"), "ERR", "panic"))
	}
	t.Logf("docs/deploy.md: four organisations' chain, a gateway and a consumer group, org5 admitted by governance, in %s:\n%s",
		time.Since(start).Round(time.Second), strings.Join(timings, "\n"))
}

// deployOrg is one organisation of the guide: its host, its node's home and its shell settings.
type deployOrg struct {
	name string
	host node.Host
	home string
	env  []string
}

// run runs a block on the organisation's host with bash (-e: a failing command fails the
// block) and returns its standard output. On a failure it adds diag's report of the block's
// output.
func (o *deployOrg) run(t *testing.T, b guideBlock, diag func(output string) string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := o.host.Command("bash", "-euo", "pipefail", "-c", b.script)
	cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	cmd.Env = o.env
	// A child left holding stdout (a process the block started) must not block Wait.
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("docs/deploy.md line %d (%s) on %s: %v\n--- stdout\n%s\n--- stderr\n%s\n--- node log\n%s\n%s",
			b.line, b.step, o.name, err, stdout.String(), stderr.String(), tailFile(filepath.Join(o.home, "background.log"), 30),
			diag(stdout.String()+stderr.String()))
	}
	return stdout.String()
}

var txHash = regexp.MustCompile(`\b[0-9A-F]{64}\b`)

// deployDiagnostics says where the transactions a failed block names went: each running
// node's mempool size, its log's lines naming them and its answer to `query tx` for each (a
// transaction refused at CheckTx is in no mempool and no block).
func deployDiagnostics(orgs map[string]*deployOrg, output string) string {
	hashes := slices.Compact(slices.Sorted(slices.Values(txHash.FindAllString(output, -1))))
	var b strings.Builder
	fmt.Fprintf(&b, "--- transactions named: %v\n", hashes)
	for i := 1; i <= len(orgs); i++ {
		o := orgs[fmt.Sprintf("org%d", i)]
		logPath := filepath.Join(o.home, "background.log")
		if _, err := os.Stat(logPath); err != nil {
			continue // not started
		}
		out, err := o.host.Command("curl", "-s", "--max-time", "5", "http://127.0.0.1:26657/num_unconfirmed_txs").CombinedOutput()
		fmt.Fprintf(&b, "--- %s /num_unconfirmed_txs (%v): %s\n", o.name, err, bytes.TrimSpace(out))
		for _, h := range hashes {
			fmt.Fprintf(&b, "--- %s log lines naming %s:\n%s\n", o.name, h, grepFile(logPath, h, strings.ToLower(h)))
			// In a block after all, or in none: a wait that missed it, or a transaction dropped.
			q := o.host.Command("bash", "-c", "bftlogd query tx "+h+" --home \"$NODE_HOME\" -o json 2>&1 | head -c 1000")
			q.Env = o.env
			qout, qerr := q.CombinedOutput()
			fmt.Fprintf(&b, "--- %s query tx %s (%v): %s\n", o.name, h, qerr, qout)
		}
		fmt.Fprintf(&b, "--- %s's last warnings and errors:\n%s\n", o.name, grepFile(logPath, "WRN", "ERR"))
	}
	return b.String()
}

// startBackground runs a block that keeps running (a node, a gateway) on the organisation's
// host until the test ends, its output in <home>/background.log.
func (o *deployOrg) startBackground(t *testing.T, script string) {
	t.Helper()
	cmd := o.host.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = o.env
	runUntilTestEnds(t, cmd, filepath.Join(o.home, "background.log"))
}

// runUntilTestEnds starts cmd in a process group of its own, its output appended to logPath,
// and stops the group when the test ends (SIGINT, then SIGKILL after 15 s).
func runUntilTestEnds(t *testing.T, cmd *exec.Cmd, logPath string) {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
	})
}

// checkGuideOutputs checks what the guide says its commands print.
func checkGuideOutputs(t *testing.T, b guideBlock, outs map[string]string) {
	t.Helper()
	switch {
	case strings.Contains(b.script, "sha256sum"):
		var first string
		for _, name := range b.on {
			h := strings.TrimSpace(outs[name])
			require.Regexp(t, `^[0-9a-f]{64}$`, h, "%s's genesis hash", name)
			if first == "" {
				first = h
			}
			require.Equal(t, first, h, "%s's genesis differs from org1's", name)
		}
		t.Logf("genesis sha256 %s on all of %s", first, strings.Join(b.on, ", "))
	case strings.Contains(b.script, "--group settlement"):
		lines := strings.SplitN(strings.TrimSpace(outs["org4"]), "\n", 2)
		require.Equal(t, "102", strings.TrimSpace(lines[0]), "the consumer group reads 100 records from org2 and 2 through the gateway:\n%s", outs["org4"])
		t.Logf("the consumer group settlement read 102 records; its offsets:\n%s", strings.TrimSpace(lines[1]))
	case strings.Contains(b.script, "query staking validators"):
		for _, name := range b.on {
			t.Logf("validators seen from %s:\n%s", name, strings.TrimSpace(outs[name]))
			bonded := strings.Count(outs[name], "BOND_STATUS_BONDED")
			if strings.Contains(b.script, "create-validator") {
				require.Contains(t, outs[name], "org5 BOND_STATUS_BONDED")
				require.Equal(t, 5, bonded)
			} else {
				require.Equal(t, 4, bonded)
			}
		}
	}
}

// guideBlock is one ```sh block of docs/deploy.md.
type guideBlock struct {
	line       int      // of the opening fence
	step       string   // the heading above it
	on         []string // the organisations it runs on
	background bool
	settings   bool     // the "# settings" block: not run, its variables are the test's
	exports    []string // the settings block's variables
	script     string
}

var (
	onLine   = regexp.MustCompile(`^# on: (each org|org[0-9]+)(, in the background)?$`)
	exportVa = regexp.MustCompile(`\b([A-Z_][A-Z0-9_]*)=`)
)

// guideBlocks reads the guide's ```sh blocks; a block whose first line is neither "# on: ..."
// nor "# settings" is refused, so no command of the guide goes unrun by accident.
func guideBlocks(doc string) []guideBlock {
	var out []guideBlock
	var cur *guideBlock
	step := ""
	var body []string
	sc := bufio.NewScanner(strings.NewReader(doc))
	for ln := 1; sc.Scan(); ln++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "## "):
			step = strings.TrimPrefix(line, "## ")
		case cur == nil && line == "```sh":
			cur, body = &guideBlock{line: ln, step: step}, nil
		case cur != nil && line == "```":
			cur.script = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil && len(body) == 0 && line == "# settings":
			cur.settings = true
			body = append(body, line)
		case cur != nil && len(body) == 0:
			m := onLine.FindStringSubmatch(line)
			if m == nil {
				panic(fmt.Sprintf("docs/deploy.md line %d: a ```sh block starts with %q, not \"# on: each org|orgN[, in the background]\" or \"# settings\"", ln, line))
			}
			cur.on = []string{m[1]}
			if m[1] == "each org" {
				cur.on = []string{"org1", "org2", "org3", "org4"}
			}
			cur.background = m[2] != ""
			body = append(body, line)
		case cur != nil:
			if cur.settings && strings.HasPrefix(line, "export ") {
				code, _, _ := strings.Cut(line, "#")
				for _, m := range exportVa.FindAllStringSubmatch(code, -1) {
					cur.exports = append(cur.exports, m[1])
				}
			}
			body = append(body, line)
		}
	}
	return out
}

// grepFile is the last 20 lines of a file that hold any of words.
func grepFile(path string, words ...string) string {
	bz, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(bz), "\n") {
		if slices.ContainsFunc(words, func(w string) bool { return strings.Contains(l, w) }) {
			out = append(out, l)
		}
	}
	if len(out) > 20 {
		out = out[len(out)-20:]
	}
	return strings.Join(out, "\n")
}

// tailFile is the last lines of a file, or "" when there is none.
func tailFile(path string, lines int) string {
	bz, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	all := strings.Split(strings.TrimRight(string(bz), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
