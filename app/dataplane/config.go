package dataplane

import (
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/spf13/cast"

	"github.com/cosmos/cosmos-sdk/client/flags"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
)

// The [ordering] section of app.toml (docs/digest-ordering.md), as the app reads it.
const (
	FlagByDigest      = "ordering.by-digest"
	FlagPeers         = "ordering.peers"
	FlagListenAddress = "ordering.listen-address" // the data plane's own listener (listener.go)
	FlagKeepHeights   = "ordering.keep-heights"
	FlagKeepBytes     = "ordering.keep-bytes"
)

// A node keeps the transactions blocks named for as many heights as it keeps blocks
// (app.DefaultRetainBlocks, which a test holds equal), so a validator that was away catches up
// by block sync as far back as before, but at most DefaultKeepBytes of them, so the log's bytes
// are not kept a second time: past that window a node rejoins by state sync
// (docs/digest-ordering.md).
const (
	DefaultKeepHeights = 10_000
	DefaultKeepBytes   = 4 << 30
)

// Settings is the [ordering] section of app.toml, as SettingsTemplate writes it.
type Settings struct {
	ByDigest      bool     `mapstructure:"by-digest"`
	Peers         []string `mapstructure:"peers"`
	ListenAddress string   `mapstructure:"listen-address"`
	KeepHeights   int64    `mapstructure:"keep-heights"`
	KeepBytes     int64    `mapstructure:"keep-bytes"`
}

// DefaultSettings are what bftlogd init writes for a new node: ordering by digest on, the
// default windows. An app.toml without the section, from an older release, leaves it off.
func DefaultSettings() Settings {
	return Settings{ByDigest: true, KeepHeights: DefaultKeepHeights, KeepBytes: DefaultKeepBytes}
}

// SettingsTemplate is the [ordering] section of app.toml's template, rendered with the app
// config whose field Ordering holds Settings (cmd/bftlogd).
const SettingsTemplate = `
###############################################################################
###                    Ordering by digest (docs/digest-ordering.md)          ###
###############################################################################

[ordering]

# When true, this node sends each transaction its clients give it once to each of the peers
# below (instead of the mempool's gossip), and its block proposals name, by SHA-256, the
# transactions more than two thirds of the validators hold instead of carrying them: blocks,
# the consensus WAL, the block store and the tx index then hold ~130 bytes per record batch.
# With no peers listed, a node gossips and its proposals carry every transaction, unless it is
# the only validator. Every node executes such blocks whatever this says; on a chain that
# started on an older release, turn it on once every validator runs one that understands them.
by-digest = {{ .Ordering.ByDigest }}

# The other validators' API servers (e.g. ["http://10.0.0.2:1317"]; [api] enable = true and
# reachable from the peers). With by-digest, this node pushes its clients' transactions to
# them; any node asks them for a transaction a block names that it does not hold (it was away).
# Empty: nothing is pushed, and transactions are fetched from the hosts of
# p2p.persistent_peers at this node's own API port.
peers = [{{ range $i, $p := .Ordering.Peers }}{{ if $i }}, {{ end }}"{{ $p }}"{{ end }}]

# The data plane's own listener (e.g. "tcp://0.0.0.0:1318"): pushes, word of what is held and
# fetches between validators, with limits of their own (connections, requests per validator,
# deadlines) and apart from the public API's clients; list the others' data-plane URLs in peers
# then. Requests are authenticated by the validators' consensus keys, never by address. Empty:
# the data plane is served by the API server only.
listen-address = "{{ .Ordering.ListenAddress }}"

# Named transactions are kept on disk (data/pool), to replay after a crash and to serve peers
# that were away, for keep-heights heights but at most keep-bytes bytes, oldest deleted first.
# A node away for longer than the window its peers keep rejoins by state sync.
keep-heights = {{ .Ordering.KeepHeights }}
keep-bytes = {{ .Ordering.KeepBytes }}
`

// Config is what New needs: the [ordering] settings and what the node's other settings say of
// the data plane.
type Config struct {
	Settings
	// Dir holds the height files (<home>/data/pool); "" keeps nothing on disk (a node without a
	// home: an in-memory test chain).
	Dir string
	// FallbackPeers are asked for what this node lacks while Settings.Peers is empty and no
	// validator has set an endpoint on chain: the persistent peers' hosts at this node's own API
	// port, as a network whose nodes serve their API on one port needs nothing more.
	FallbackPeers []string
	// KeyFile is the node's consensus key (config.toml priv_validator_key_file, under the home),
	// which signs its requests and answers; "" or a missing file: it signs nothing.
	KeyFile string
	// DataPlaneKeyFile is the node's data-plane key (<home>/config/data_plane_key.json, made at
	// the first start), which signs for its validator once the operator registers it on chain;
	// "": a key of this process alone.
	DataPlaneKeyFile string
	// MaxTxBytes and MaxTxsBytes are CometBFT's mempool.max_tx_bytes and max_txs_bytes
	// (config.toml): with stubs in the mempool (app/stub.go) the pool holds what they bounded.
	MaxTxBytes, MaxTxsBytes int
}

// DataPlaneKeyPath is where a node's data-plane key is kept under its home.
func DataPlaneKeyPath(home string) string {
	return filepath.Join(home, "config", "data_plane_key.json")
}

// ConfigFromAppOptions reads Config from the node's settings (app.toml and config.toml, as the
// server hands them to the app); an unset window is its default.
func ConfigFromAppOptions(appOpts servertypes.AppOptions) Config {
	cfg := Config{Settings: Settings{
		ByDigest:      cast.ToBool(appOpts.Get(FlagByDigest)),
		Peers:         orderingPeers(appOpts.Get(FlagPeers)),
		ListenAddress: cast.ToString(appOpts.Get(FlagListenAddress)),
		KeepHeights:   cast.ToInt64(appOpts.Get(FlagKeepHeights)),
		KeepBytes:     cast.ToInt64(appOpts.Get(FlagKeepBytes)),
	}}
	if cfg.KeepHeights <= 0 {
		cfg.KeepHeights = DefaultKeepHeights
	}
	if cfg.KeepBytes <= 0 {
		cfg.KeepBytes = DefaultKeepBytes
	}
	if len(cfg.Peers) == 0 {
		cfg.FallbackPeers = peersFromPersistentPeers(cast.ToString(appOpts.Get("p2p.persistent_peers")), cast.ToString(appOpts.Get("api.address")))
	}
	if home := cast.ToString(appOpts.Get(flags.FlagHome)); home != "" {
		cfg.Dir = filepath.Join(home, "data", "pool")
		file := cast.ToString(appOpts.Get("priv_validator_key_file"))
		if file == "" {
			file = filepath.Join("config", "priv_validator_key.json")
		}
		if !filepath.IsAbs(file) {
			file = filepath.Join(home, file)
		}
		cfg.KeyFile = file
		cfg.DataPlaneKeyFile = DataPlaneKeyPath(home)
	}
	cfg.MaxTxBytes = mempoolLimit(appOpts, "mempool.max_tx_bytes", 1<<20)
	cfg.MaxTxsBytes = mempoolLimit(appOpts, "mempool.max_txs_bytes", 1<<30)
	return cfg
}

// PushPeers are the API servers a node with ordering.by-digest on sends its clients'
// transactions to (push.go): ordering.peers as configured, never guessed from the persistent
// peers, since a node that pushes stops its mempool's gossip (cmd/bftlogd). A node that has none
// gossips, and its proposals name only what no peer needs (a single validator).
func PushPeers(appOpts servertypes.AppOptions) []string {
	if !cast.ToBool(appOpts.Get(FlagByDigest)) {
		return nil
	}
	return orderingPeers(appOpts.Get(FlagPeers))
}

// pushPeers is PushPeers of a Config.
func (c Config) pushPeers() []string {
	if !c.ByDigest {
		return nil
	}
	return c.Peers
}

// peersFromChain: without ordering.peers, the peers are the other validators' endpoints on
// chain (x/poa MsgSetDataPlaneEndpoint), read after each commit (Plane.SetValidators); until
// one is set, fetches go to FallbackPeers and nothing is pushed.
func (c Config) peersFromChain() bool { return c.ByDigest && len(c.Peers) == 0 }

// fetchPeers are the peers asked for what this node lacks before any validator set is read.
func (c Config) fetchPeers() []string {
	if len(c.Peers) == 0 {
		return c.FallbackPeers
	}
	return c.Peers
}

// mempoolLimit is a mempool setting of config.toml, or CometBFT's default when unset (as in
// tests without a home).
func mempoolLimit(appOpts servertypes.AppOptions, key string, def int) int {
	if v := cast.ToInt(appOpts.Get(key)); v > 0 {
		return v
	}
	return def
}

// peersFromPersistentPeers is ordering.peers when app.toml leaves it empty: the persistent
// peers' hosts (id@host:port,...) at this node's own API port, as a network whose nodes serve
// their API on one port needs nothing more.
func peersFromPersistentPeers(persistent, apiAddress string) []string {
	u, err := url.Parse(apiAddress)
	if err != nil || u.Port() == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(persistent, ",") {
		p = strings.TrimSpace(p)
		if i := strings.LastIndex(p, "@"); i >= 0 {
			p = p[i+1:]
		}
		if host, _, err := net.SplitHostPort(p); err == nil && host != "" {
			out = append(out, "http://"+net.JoinHostPort(host, u.Port()))
		}
	}
	return out
}

// orderingPeers reads ordering.peers: a list in app.toml, or one string of URLs separated by
// commas or spaces (BFTLOGD_ORDERING_PEERS).
func orderingPeers(v any) []string {
	var out []string
	for _, s := range cast.ToStringSlice(v) {
		out = append(out, strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	return out
}
