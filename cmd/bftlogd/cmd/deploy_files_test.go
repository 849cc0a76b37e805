package cmd_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"

	"github.com/bftlog/bftlog/cmd/bftlogd/cmd"
)

// The container file and the systemd unit (scripts/deploy/) cannot be run here (no container
// engine, no running systemd), so what can drift is checked: the Containerfile builds with the
// Makefile's own target in a Go image of go.mod's minor version and runs what it built; every
// flag of the unit's ExecStart is one `bftlogd start` takes; and the unit passes
// `systemd-analyze verify` where that is installed (with the binary's path pointed at an
// executable that exists).
func TestDeployFilesMatchTheBuild(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	read := func(path string) string {
		bz, err := os.ReadFile(filepath.Join(root, path))
		require.NoError(t, err)
		return string(bz)
	}

	// The Containerfile: the Makefile's build target, go.mod's Go, the binary it built.
	container, makefile, gomod := read("scripts/deploy/Containerfile"), read("Makefile"), read("go.mod")
	require.Regexp(t, `(?m)^build:\n\tgo build -ldflags '\$\(VERSION_LDFLAGS\)' -o \$\(BUILD_DIR\)/bftlogd \./cmd/bftlogd$`, makefile,
		"make build is what the Containerfile runs; change both together")
	buildDir := regexp.MustCompile(`(?m)^RUN .*\bmake build BUILD_DIR=(\S+)$`).FindStringSubmatch(container)
	require.NotNil(t, buildDir, "the Containerfile builds with make build")
	require.Contains(t, container, "COPY --from=build "+buildDir[1]+"/bftlogd /usr/local/bin/bftlogd")
	require.Contains(t, container, `ENTRYPOINT ["/usr/local/bin/bftlogd"]`)
	// Stopped as the unit stops it, and as a user whose UID the docs tell operators to chown to.
	require.Contains(t, container, "\nSTOPSIGNAL SIGINT\n")
	require.Contains(t, read("scripts/deploy/bftlogd.service"), "\nKillSignal=SIGINT\n")
	require.Contains(t, container, "useradd --system --uid 10001 ")
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(gomod)
	require.NotNil(t, goVersion)
	require.Regexp(t, `(?m)^FROM docker\.io/library/golang:`+regexp.QuoteMeta(goVersion[1])+`-\S+ AS build$`, container,
		"the build image's Go is go.mod's %s", goVersion[1])

	// The unit's ExecStart: bftlogd start with flags start knows.
	unit := read("scripts/deploy/bftlogd.service")
	exec_ := regexp.MustCompile(`(?m)^ExecStart=(\S+) start (.*)$`).FindStringSubmatch(unit)
	require.NotNil(t, exec_, "ExecStart runs bftlogd start")
	// `bftlogd start --help` as the binary prints it: svrcmd.Execute adds the root's --home and
	// --log_* flags.
	rootCmd := cmd.NewRootCmd()
	var help bytes.Buffer
	rootCmd.SetOut(&help)
	rootCmd.SetArgs([]string{"start", "--help"})
	require.NoError(t, svrcmd.Execute(rootCmd, "BFTLOGD_DEPLOY_TEST", t.TempDir()))
	require.Contains(t, help.String(), "Usage:\n  bftlogd start")
	for _, arg := range strings.Fields(exec_[2]) {
		name, isFlag := strings.CutPrefix(arg, "--")
		if !isFlag {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		require.Regexp(t, `(?m)^\s+(-\w, )?--`+regexp.QuoteMeta(name)+`\b`, help.String(), "bftlogd start --help has no flag --%s (the unit's ExecStart)", name)
	}
	require.Contains(t, unit, "ReadWritePaths=/var/lib/bftlogd")
	require.Contains(t, exec_[2], "--home /var/lib/bftlogd", "the unit's node home is the one it may write")

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: the unit's syntax not verified")
		return
	}
	self, err := os.Executable()
	require.NoError(t, err)
	copyPath := filepath.Join(t.TempDir(), "bftlogd.service")
	require.NoError(t, os.WriteFile(copyPath, []byte(strings.ReplaceAll(unit, exec_[1], self)), 0o644))
	out, err := exec.Command(analyze, "verify", copyPath).CombinedOutput()
	require.NoError(t, err, "systemd-analyze verify:\n%s", out)
	// A setting systemd cannot parse is only a warning ("..., ignoring"): none is allowed.
	require.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify warns")
	t.Log("systemd-analyze verify: the unit passes without a warning")
}
