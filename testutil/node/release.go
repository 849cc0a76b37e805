package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BinaryAt builds bftlogd as it was at an earlier commit of this repository — a previous
// release, for upgrade tests — stamped with version, and returns its path. ok is false when the
// clone does not hold that commit (a shallow clone).
func BinaryAt(t T, commit, version string) (path string, ok bool) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run() != nil {
		return "", false
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
