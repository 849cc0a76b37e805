package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"

	"github.com/bftlog/bftlog/cmd/bftlogd/cmd"
)

// The README quotes the CometBFT settings `bftlogd init` writes (its "Block timing" and
// "Transaction gossip"): each value it quotes is the one config.toml gets, so the docs cannot
// drift from the code (the README once said timeout_propose 3 s while init wrote 1 s).
func TestDocsQuoteTheConfigInitWrites(t *testing.T) {
	home := t.TempDir()
	root := cmd.NewRootCmd()
	root.SetArgs([]string{"init", "docs", "--chain-id", "docs-test", "--home", home})
	require.NoError(t, svrcmd.Execute(root, "BFTLOGD_DOCS_TEST", home))
	raw, err := os.ReadFile(filepath.Join(home, "config", "config.toml"))
	require.NoError(t, err)
	written := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z_]+) = "?([^"\n]*)"?$`).FindAllStringSubmatch(string(raw), -1) {
		written[m[1]] = m[2]
	}
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	text := strings.Join(strings.Fields(string(readme)), " ") // the bullets wrap
	quotes := []struct {
		phrase string // a regex over the README; its groups are the values quoted
		keys   []string
	}{
		{"`timeout_commit` ([0-9a-z]+) is then only", []string{"timeout_commit"}},
		{"`create_empty_blocks_interval` ([0-9a-z]+);", []string{"create_empty_blocks_interval"}},
		{`\x60timeout_propose\x60 ([0-9a-z]+) \(\+([0-9a-z]+) per round\)`, []string{"timeout_propose", "timeout_propose_delta"}},
		{`\x60timeout_prevote\x60/\x60timeout_precommit\x60 ([0-9a-z]+) \(\+([0-9a-z]+) per round\)`, []string{"timeout_prevote", "timeout_prevote_delta"}},
		{`\x60timeout_prevote\x60/\x60timeout_precommit\x60 ([0-9a-z]+) \(\+([0-9a-z]+) per round\)`, []string{"timeout_precommit", "timeout_precommit_delta"}},
		{"`peer_gossip_sleep_duration` and p2p `flush_throttle_timeout` ([0-9a-z]+)", []string{"peer_gossip_sleep_duration"}},
		{"`peer_gossip_sleep_duration` and p2p `flush_throttle_timeout` ([0-9a-z]+)", []string{"flush_throttle_timeout"}},
		{"`mempool.experimental_max_gossip_connections_to_persistent_peers` ([0-9]+)", []string{"experimental_max_gossip_connections_to_persistent_peers"}},
		{"`skip_timeout_commit` (on)", []string{"skip_timeout_commit"}},
	}
	for _, q := range quotes {
		m := regexp.MustCompile(q.phrase).FindStringSubmatch(text)
		require.NotNil(t, m, "the README no longer quotes %s as %q", q.keys, q.phrase)
		for i, key := range q.keys {
			want := m[i+1]
			if want == "on" {
				want = "true"
			}
			require.Contains(t, written, key)
			require.Equal(t, want, written[key], "README quotes %s as %s; bftlogd init writes %s", key, want, written[key])
		}
	}
	t.Logf("the README's %d quoted settings are what bftlogd init writes", len(quotes))
}
