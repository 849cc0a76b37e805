package cmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"

	svrcmd "github.com/cosmos/cosmos-sdk/server/cmd"

	"github.com/bftlog/bftlog/cmd/bftlogd/cmd"
)

// The README quotes the CometBFT settings `bftlogd init` writes (its "Block timing" and
// "Transaction gossip"): each value it quotes is the one config.toml gets, so the docs cannot
// drift from the code (the README once said timeout_propose 3 s while init wrote 1 s).
func TestDocsQuoteTheConfigInitWrites(t *testing.T) {
	home := initHome(t)
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

// Every setting the docs quote as `key = value` (README, docs/, the module's README; not
// docs/performance.md and docs/scale-model.md, which record the settings of past runs) is what
// `bftlogd init` writes to config.toml, app.toml or the genesis file, unless the quote is one of
// the changes the docs tell an operator to make, listed here with why. A changed default, or a
// new quote of a wrong one, fails here.
func TestDocsQuoteEverySettingInitWrites(t *testing.T) {
	home := initHome(t)
	var files []*viper.Viper
	for _, name := range []string{"config.toml", "app.toml"} {
		v := viper.New()
		v.SetConfigFile(filepath.Join(home, "config", name))
		require.NoError(t, v.ReadInConfig())
		files = append(files, v)
	}
	genesis, err := os.ReadFile(filepath.Join(home, "config", "genesis.json"))
	require.NoError(t, err)
	var gen struct {
		Consensus struct {
			Params map[string]map[string]any `json:"params"`
		} `json:"consensus"`
	}
	require.NoError(t, json.Unmarshal(genesis, &gen))
	// written lists every value init writes for key: "section.key" names one, a bare key every
	// section's (app.toml has two `address`es).
	written := func(key string) []string {
		var out []string
		for _, v := range files {
			for _, k := range v.AllKeys() {
				if k == key || strings.HasSuffix(k, "."+key) {
					out = append(out, fmt.Sprint(v.Get(k)))
				}
			}
		}
		if section, field, ok := strings.Cut(key, "."); ok && gen.Consensus.Params[section] != nil {
			if x, ok := gen.Consensus.Params[section][field]; ok {
				out = append(out, fmt.Sprint(x))
			}
		}
		return out
	}
	// Changes the docs tell an operator to make, not defaults: each must differ from init's.
	changes := map[string]string{
		`address = "tcp://0.0.0.0:1317"`:                           "expose REST to an explorer or to peers (init binds localhost)",
		`snapshot-interval = 0`:                                    "validators that serve no joining node",
		`tx_index.indexer = "null"`:                                "nodes nobody queries by transaction",
		`mempool.broadcast = false`:                                "ordering by digest's validators, which push batches themselves",
		`peers = ["http://10.0.0.2:1317", "http://10.0.0.3:1317"]`: "an example list of peers overriding the chain's",
	}
	quote := regexp.MustCompile("`([a-z_.-]+) = ([^`]+)`")
	docs, err := filepath.Glob("../../../docs/*.md")
	require.NoError(t, err)
	docs = append(docs, "../../../README.md", "../../../x/topics/README.md")
	checked := 0
	for _, doc := range docs {
		if base := filepath.Base(doc); base == "performance.md" || base == "scale-model.md" {
			continue
		}
		raw, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range quote.FindAllStringSubmatch(string(raw), -1) {
			key, value := m[1], strings.Trim(m[2], `"`)
			values := written(key)
			if why, ok := changes[m[1]+" = "+m[2]]; ok {
				require.NotContains(t, values, value, "%s quotes %s as a change (%s), but init writes it", doc, m[0], why)
				continue
			}
			require.NotEmpty(t, values, "%s quotes %s: init writes no %s", doc, m[0], key)
			require.Contains(t, values, value, "%s quotes %s; init writes %s", doc, m[0], values)
			checked++
		}
	}
	require.Greater(t, checked, 10)
	t.Logf("%d quoted settings in the docs are what bftlogd init writes; %d quoted changes differ from it", checked, len(changes))
}

// initHome runs `bftlogd init` in a new home and returns it.
func initHome(t *testing.T) string {
	home := t.TempDir()
	root := cmd.NewRootCmd()
	root.SetArgs([]string{"init", "docs", "--chain-id", "docs-test", "--home", home})
	require.NoError(t, svrcmd.Execute(root, "BFTLOGD_DOCS_TEST", home))
	return home
}
