package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/testutil/node"
)

// TestBinaryKnowsItsVersion checks that bftlogd built like make build (scripts/ldflags.sh)
// tells its name, version and commit: in `bftlogd version --long` and in the node info an
// explorer reads from /cosmos/base/tendermint/v1beta1/node_info, and as the ABCI app version.
func TestBinaryKnowsItsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a real node")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err, "the test compares with the checkout's commit")
	commit := strings.TrimSpace(string(head))
	require.Regexp(t, `^[0-9a-f]{40}$`, commit)

	n := node.StartSingle(t)

	var long struct {
		Name    string `json:"name"`
		AppName string `json:"server_name"`
		Version string `json:"version"`
		Commit  string `json:"commit"`
	}
	out := n.MustRun("version", "--long", "-o", "json")
	require.NoError(t, json.Unmarshal([]byte(out), &long), out)
	require.Equal(t, "bftlog", long.Name)
	require.Equal(t, "bftlogd", long.AppName)
	require.NotEmpty(t, long.Version)
	require.NotEqual(t, "unknown", long.Version, "a git checkout has a version")
	require.Equal(t, commit, long.Commit)

	text := n.MustRun("version", "--long")
	require.Contains(t, text, "name: bftlog\n")
	require.Contains(t, text, "server_name: bftlogd\n")
	// YAML quotes a version that reads as a number (a short commit hash of digits only).
	require.Regexp(t, `(?m)^version: "?`+regexp.QuoteMeta(long.Version)+`"?$`, text)
	require.Contains(t, text, "commit: "+commit+"\n")
	require.Equal(t, long.Version, strings.TrimSpace(n.MustRun("version")))

	var info struct {
		ApplicationVersion struct {
			Name             string `json:"name"`
			AppName          string `json:"app_name"`
			Version          string `json:"version"`
			GitCommit        string `json:"git_commit"`
			CosmosSDKVersion string `json:"cosmos_sdk_version"`
		} `json:"application_version"`
	}
	restJSON(t, n, "/cosmos/base/tendermint/v1beta1/node_info", &info)
	av := info.ApplicationVersion
	require.Equal(t, "bftlog", av.Name)
	require.Equal(t, "bftlogd", av.AppName)
	require.Equal(t, long.Version, av.Version)
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{40}$`), av.GitCommit)
	require.Equal(t, commit, av.GitCommit)
	require.Equal(t, "v0.53.8", av.CosmosSDKVersion)

	// CometBFT's /abci_info carries the app version too (BaseApp.SetVersion).
	var abci struct {
		Result struct {
			Response struct {
				Version string `json:"version"`
			} `json:"response"`
		} `json:"result"`
	}
	resp, err := http.Get(strings.Replace(n.RPC, "tcp://", "http://", 1) + "/abci_info")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.NoError(t, json.Unmarshal(body, &abci), string(body))
	require.Equal(t, long.Version, abci.Result.Response.Version)
}
