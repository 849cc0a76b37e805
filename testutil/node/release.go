package node

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// BinaryAt builds bftlogd as it was at an earlier commit of this repository — a previous
// release, for upgrade tests — stamped with version, and returns its path. A clone that lacks
// the commit (CI's shallow clone of main) fetches it from its origin first (fetchCommit). ok is
// false when the commit can be had neither way; the reason is logged when t can log.
func BinaryAt(t T, commit, version string) (path string, ok bool) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if !hasCommit(root, commit) {
		if err := fetchCommit(root, commit); err != nil {
			if l, ok := t.(interface{ Logf(string, ...any) }); ok {
				l.Logf("%v", err)
			}
			return "", false
		}
	}
	src := filepath.Join(t.TempDir(), "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", fmt.Sprintf("git -C %q archive --format=tar %s | tar -x -C %q", root, commit, src))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	ldflags := exec.Command(filepath.Join(root, "scripts", "ldflags.sh"))
	ldflags.Env = append(os.Environ(), "VERSION="+version, "COMMIT="+commit)
	flags, err := ldflags.Output()
	if err != nil {
		t.Fatalf("scripts/ldflags.sh: %v", err)
	}
	// Named bftlogd, in a directory of its own: the SDK reads BFTLOGD_* environment overrides
	// by the executable's name.
	path = filepath.Join(t.TempDir(), version, "bftlogd")
	build := exec.Command("go", "build", "-ldflags", strings.TrimSpace(string(flags)), "-o", path, "./cmd/bftlogd")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build bftlogd at %s: %v\n%s", commit, err, out)
	}
	return path, true
}

func hasCommit(root, commit string) bool {
	return exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run() == nil
}

// fetchTimeout bounds each git fetch of fetchCommit: a remote that does not answer fails the
// caller instead of hanging it.
const fetchTimeout = 5 * time.Minute

// fetchCommit brings commit into the clone at root from its remote origin: the commit alone
// (in a shallow clone, with --depth=1: git archive needs its tree, not its history), then, if the
// remote refuses to serve a commit by its id or commit is abbreviated, the whole history of a
// shallow clone (--unshallow). The error says what was tried and what git answered.
func fetchCommit(root, commit string) error {
	git := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...)
		// Never wait for credentials on a terminal.
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w after %v", ctx.Err(), fetchTimeout)
		}
		return strings.TrimSpace(string(out)), err
	}
	remote, err := git("remote", "get-url", "origin")
	if err != nil {
		return fmt.Errorf("commit %s is not in this clone (%s), which has no remote origin to fetch it from: %v %s", commit, root, err, remote)
	}
	shallow, _ := git("rev-parse", "--is-shallow-repository")
	isShallow := shallow == "true"
	args := []string{"fetch", "--quiet", "--no-tags"}
	if isShallow {
		args = append(args, "--depth=1")
	}
	tried := []string{"git " + strings.Join(append(args, "origin", commit), " ")}
	out, err := git(append(args, "origin", commit)...)
	answers := []string{fmt.Sprintf("%v %s", err, out)}
	if err == nil && hasCommit(root, commit) {
		return nil
	}
	if isShallow {
		tried = append(tried, "git fetch --quiet --no-tags --unshallow origin")
		out, err = git("fetch", "--quiet", "--no-tags", "--unshallow", "origin")
		answers = append(answers, fmt.Sprintf("%v %s", err, out))
		if err == nil && hasCommit(root, commit) {
			return nil
		}
	}
	var msg strings.Builder
	fmt.Fprintf(&msg, "commit %s is not in this clone (%s, shallow: %t) and could not be fetched from origin %s:", commit, root, isShallow, remote)
	for i := range tried {
		fmt.Fprintf(&msg, "\n  %s: %s", tried[i], answers[i])
	}
	return fmt.Errorf("%s", msg.String())
}
