package cmd

import (
	"time"

	pruningtypes "cosmossdk.io/store/pruning/types"
	cmtcfg "github.com/cometbft/cometbft/config"

	serverconfig "github.com/cosmos/cosmos-sdk/server/config"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/app/dataplane"
	"github.com/bftlog/bftlog/x/topics/metrics"
)

// Block timing used for new homes (written to config/config.toml by
// `bftlogd init`). bftlog is a log of small entries that should be visible
// quickly, so instead of CometBFT's 1s/5s defaults we aim for a block every
// few hundred milliseconds. The propose/prevote/precommit timeouts only fire
// when a round stalls (e.g. an offline proposer); with a healthy network a
// block takes roughly TimeoutCommit plus execution/gossip time. Multi-machine
// networks with high latency may need larger values (edit config.toml).
//
// TimeoutPropose is 1 s, a third of CometBFT's default: with ordering by digest (on by
// default) a proposal names its record batches in ~130 bytes each, so it arrives and is checked
// in milliseconds, and the timeout is what a paused or crashed proposer's turn costs every
// producer (the fault row: p99 6.5 s at 3 s, 3.6 s at 1 s; docs/performance.md). A network whose
// blocks carry the batches (no ordering.peers) should set 3 s: at 1 s, 7 validators carrying
// several megabytes per block on one 2-core machine needed three rounds per height.
const (
	blockTimeoutPropose        = 1 * time.Second
	blockTimeoutProposeDelta   = 200 * time.Millisecond
	blockTimeoutPrevote        = 300 * time.Millisecond
	blockTimeoutPrevoteDelta   = 100 * time.Millisecond
	blockTimeoutPrecommit      = 300 * time.Millisecond
	blockTimeoutPrecommitDelta = 100 * time.Millisecond
	blockTimeoutCommit         = 200 * time.Millisecond
	peerGossipSleep            = 10 * time.Millisecond
	emptyBlocksInterval        = time.Second
)

// initCometBFTConfig returns the default CometBFT config of bftlogd.
func initCometBFTConfig() *cmtcfg.Config {
	cfg := cmtcfg.DefaultConfig()

	cfg.Consensus.TimeoutPropose = blockTimeoutPropose
	cfg.Consensus.TimeoutProposeDelta = blockTimeoutProposeDelta
	cfg.Consensus.TimeoutPrevote = blockTimeoutPrevote
	cfg.Consensus.TimeoutPrevoteDelta = blockTimeoutPrevoteDelta
	cfg.Consensus.TimeoutPrecommit = blockTimeoutPrecommit
	cfg.Consensus.TimeoutPrecommitDelta = blockTimeoutPrecommitDelta
	cfg.Consensus.TimeoutCommit = blockTimeoutCommit
	// The next height starts as soon as every precommit is in; timeout_commit is then only
	// what a missing one is waited for. Blocks without transactions change nothing
	// (app/empty_blocks.go), so an idle chain does not make them back to back: after a block
	// with transactions comes one that proves its app hash, then the next waits for
	// transactions, or makes an empty block after create_empty_blocks_interval, which keeps
	// block time (retention, session timeouts) moving.
	cfg.Consensus.SkipTimeoutCommit = true
	cfg.Consensus.CreateEmptyBlocksInterval = emptyBlocksInterval
	// CometBFT sends a peer proposals, block parts and votes from loops that, having nothing
	// to send, sleep this long before looking again: at the default 100 ms a vote that arrives
	// just after the loop slept waits up to that long at each hop, and a height has three of
	// them (proposal, prevotes, precommits). With blocks that name batches the messages are
	// small; the cost is a few hundred wakeups per second per peer (docs/performance.md,
	// Capacity).
	cfg.Consensus.PeerGossipSleepDuration = peerGossipSleep

	// A transaction carries a whole record batch: let it be larger than the module's
	// default max_batch_bytes (4 MiB) plus its encoding.
	cfg.Mempool.MaxTxBytes = 8 << 20
	// The mempool holds transactions in memory until a block takes them: CometBFT's 1 GB
	// default alone would break a validator's memory budget (docs/performance.md: RSS at a
	// large log) once producers outrun blocks. 128 MiB is ~6 full blocks of record batches;
	// past it CheckTx answers "mempool is full" and clients retry.
	cfg.Mempool.MaxTxsBytes = 128 << 20
	// The RPC carries such a tx base64-encoded in broadcast_tx and hex-encoded in a simulate
	// abci_query, so its request body limit must cover twice max_tx_bytes.
	cfg.RPC.MaxBodyBytes = 20 << 20
	// Record batches make the p2p traffic bulk data: CometBFT's 5 MB/s per-peer send and
	// receive limits capped a 4-validator network at a few thousand 100-byte records/s.
	cfg.P2P.SendRate = 100 << 20
	cfg.P2P.RecvRate = 100 << 20
	cfg.P2P.MaxPacketMsgPayloadSize = 64 << 10
	// Votes are tiny and wait for the connection's flush: CometBFT's 100 ms throttle added up
	// to that to every prevote and precommit.
	cfg.P2P.FlushThrottleTimeout = 10 * time.Millisecond
	// Validators of a consortium peer with each other persistently (often a full mesh). With
	// every node relaying every transaction to every peer, each validator receives each
	// record batch once per peer, all but one of them duplicates that cost the decryption,
	// decoding and hashing of megabytes (and, in CometBFT 0.38, a hex dump for a debug line).
	// Relaying to two persistent peers leaves about one duplicate each. A validator the
	// relays miss still gets the batches in the blocks, and the node that took a transaction
	// always holds it, so every transaction reaches a proposer (docs/performance.md).
	cfg.Mempool.ExperimentalMaxGossipConnectionsToPersistentPeers = 2

	// Serve Prometheus metrics (CometBFT's, the SDK's telemetry and x/topics' bftlog_topics_*,
	// all in one registry) by default. On loopback, like the RPC: a node should not publish an
	// endpoint whose scrapes read state (group lag) until its operator chooses to.
	cfg.Instrumentation.Prometheus = true
	cfg.Instrumentation.PrometheusListenAddr = "127.0.0.1:26660"

	return cfg
}

// CustomAppConfig is the app.toml configuration of bftlogd: the SDK server
// config and the [topics-metrics] section.
type CustomAppConfig struct {
	serverconfig.Config `mapstructure:",squash"`

	TopicsMetrics TopicsMetricsConfig `mapstructure:"topics-metrics"`
	// Ordering is the [ordering] section (dataplane.SettingsTemplate), read by app.New.
	Ordering dataplane.Settings `mapstructure:"ordering"`
}

// TopicsMetricsConfig is the [topics-metrics] section, read by app.New.
type TopicsMetricsConfig struct {
	Enabled        bool `mapstructure:"enabled"`
	metrics.Config `mapstructure:",squash"`
}

// topicsMetricsTemplate is appended to the SDK's app.toml template. Group ids are
// [a-zA-Z0-9._-] (validated when the node starts), so quoting them is enough.
const topicsMetricsTemplate = `
###############################################################################
###                         x/topics Metrics                                ###
###############################################################################

[topics-metrics]

# Enabled registers the bftlog_topics_* Prometheus metrics. They are served with CometBFT's
# (config.toml instrumentation.prometheus, prometheus_listen_addr, path /metrics) and with the
# SDK's telemetry (API /metrics?format=prometheus when [telemetry] enabled = true and
# prometheus-retention-time > 0).
enabled = {{ .TopicsMetrics.Enabled }}

# The first max-topic-series topics get their own topic label on the append counters; later
# ones are counted under topic="_other" (slots are never freed while the node runs). 0 counts
# every topic under "_other".
max-topic-series = {{ .TopicsMetrics.MaxTopicSeries }}

# At most this many (group, topic, partition) series of bftlog_topics_group_lag, in that order;
# scraping stops there and bftlog_topics_group_lag_truncated is 1. 0 disables the lag gauge.
max-lag-series = {{ .TopicsMetrics.MaxLagSeries }}

# Only these consumer groups get lag series, e.g. ["billing", "audit"]; empty means all.
lag-groups = [{{ range $i, $g := .TopicsMetrics.LagGroups }}{{ if $i }}, {{ end }}"{{ $g }}"{{ end }}]

# When set, only these topics get their own topic label (all others are "_other"), e.g.
# ["orders", "payments"]: anyone may create topics, so max-topic-series alone is first come,
# first served.
label-topics = [{{ range $i, $t := .TopicsMetrics.LabelTopics }}{{ if $i }}, {{ end }}"{{ $t }}"{{ end }}]
`

// initAppConfig returns the app.toml template and default values of bftlogd.
func initAppConfig() (string, interface{}) {
	srvCfg := serverconfig.DefaultConfig()

	// The SDK default minimum-gas-prices is empty, which makes the node log a
	// warning and (for validators) refuse to start with a misconfiguration.
	// Default to zero fees in the bond denom: fine for local/dev networks;
	// operators of public nodes should set a real price to deter spam.
	srvCfg.MinGasPrices = "0" + sdk.DefaultBondDenom
	// The API server limits every request body, the binary produce ingress (/bftlog/tx/raw)
	// included, to this; match mempool.max_tx_bytes rather than the SDK's 1 MB.
	srvCfg.API.RPCMaxBodyBytes = 8 << 20
	// Telemetry on with a Prometheus sink, so the SDK's metrics join CometBFT's and x/topics'
	// in the default registry (and the API serves /metrics?format=prometheus when enabled).
	srvCfg.Telemetry.Enabled = true
	srvCfg.Telemetry.PrometheusRetentionTime = 60

	// Bounded disk (docs/operations.md): IAVL keeps the last 1,000 versions (proofs for reads
	// at recent heights; the SDK's default keeps 362,880), CometBFT the last
	// app.DefaultRetainBlocks blocks, and state sync snapshots — the log's bytes included — are
	// taken every 2,000 blocks, the last two kept for joining nodes.
	srvCfg.Pruning = pruningtypes.PruningOptionCustom
	srvCfg.PruningKeepRecent = "1000"
	srvCfg.PruningInterval = "10"
	srvCfg.MinRetainBlocks = app.DefaultRetainBlocks
	srvCfg.StateSync.SnapshotInterval = 2000
	srvCfg.StateSync.SnapshotKeepRecent = 2

	customAppConfig := CustomAppConfig{
		Config:        *srvCfg,
		TopicsMetrics: TopicsMetricsConfig{Enabled: true, Config: metrics.DefaultConfig()},
		Ordering:      dataplane.DefaultSettings(),
	}
	return serverconfig.DefaultConfigTemplate + topicsMetricsTemplate + dataplane.SettingsTemplate, customAppConfig
}
