package dataplane

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client/flags"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
)

// Without ordering.peers a node asks its persistent peers' hosts at its own API port.
func TestOrderingPeersFromPersistentPeers(t *testing.T) {
	require.Equal(t, []string{"http://10.0.0.2:1317", "http://[fd00::3]:1317"},
		peersFromPersistentPeers("abc@10.0.0.2:26656, def@[fd00::3]:26656,,bad", "tcp://0.0.0.0:1317"))
	require.Nil(t, peersFromPersistentPeers("abc@10.0.0.2:26656", ""))
	require.Equal(t, []string{"http://a.example:9", "http://b.example:9"}, orderingPeers([]any{"http://a.example:9", "http://b.example:9"}))
	require.Equal(t, []string{"http://a.example:9", "http://b.example:9"}, orderingPeers("http://a.example:9, http://b.example:9"))
}

// Unset windows are their defaults; a node with a home keeps its height files and finds its
// consensus key there; push peers are ordering.peers with by-digest only; without
// ordering.peers the persistent peers are asked for what a node lacks.
func TestConfigFromAppOptions(t *testing.T) {
	cfg := ConfigFromAppOptions(simtestutil.AppOptionsMap{
		flags.FlagHome: "/h", FlagPeers: "http://a:1, http://b:1", "p2p.persistent_peers": "x@10.0.0.9:26656", "api.address": "tcp://0.0.0.0:1317",
	})
	require.Equal(t, Settings{Peers: []string{"http://a:1", "http://b:1"}, KeepHeights: DefaultKeepHeights, KeepBytes: DefaultKeepBytes}, cfg.Settings)
	require.Equal(t, filepath.Join("/h", "data", "pool"), cfg.Dir)
	require.Equal(t, filepath.Join("/h", "config", "priv_validator_key.json"), cfg.KeyFile)
	require.Empty(t, cfg.FallbackPeers)
	require.Empty(t, cfg.pushPeers(), "by-digest off: nothing pushed")
	require.Equal(t, 1<<20, cfg.MaxTxBytes)
	require.Equal(t, 1<<30, cfg.MaxTxsBytes)

	opts := simtestutil.AppOptionsMap{FlagByDigest: true, "p2p.persistent_peers": "x@10.0.0.9:26656", "api.address": "tcp://0.0.0.0:1317", "priv_validator_key_file": "/k.json"}
	cfg = ConfigFromAppOptions(opts)
	require.Empty(t, cfg.Dir, "no home: in memory")
	require.Empty(t, cfg.KeyFile, "no home: no key")
	require.Equal(t, []string{"http://10.0.0.9:1317"}, cfg.fetchPeers())
	require.True(t, cfg.peersFromChain())
	require.Empty(t, PushPeers(opts))
}
