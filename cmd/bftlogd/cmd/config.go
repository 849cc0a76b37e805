package cmd

import (
	"time"

	cmtcfg "github.com/cometbft/cometbft/config"

	serverconfig "github.com/cosmos/cosmos-sdk/server/config"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// Block timing used for new homes (written to config/config.toml by
// `bftlogd init`). bftlog is a log of small entries that should be visible
// quickly, so instead of CometBFT's 1s/5s defaults we aim for a block every
// few hundred milliseconds. The propose/prevote/precommit timeouts only fire
// when a round stalls (e.g. an offline proposer); with a healthy network a
// block takes roughly TimeoutCommit plus execution/gossip time. Multi-machine
// networks with high latency may need larger values (edit config.toml).
const (
	blockTimeoutPropose        = 1 * time.Second
	blockTimeoutProposeDelta   = 200 * time.Millisecond
	blockTimeoutPrevote        = 300 * time.Millisecond
	blockTimeoutPrevoteDelta   = 100 * time.Millisecond
	blockTimeoutPrecommit      = 300 * time.Millisecond
	blockTimeoutPrecommitDelta = 100 * time.Millisecond
	blockTimeoutCommit         = 200 * time.Millisecond
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

	// A transaction carries a whole record batch: let it be larger than the module's
	// default max_batch_bytes (4 MiB) plus its encoding.
	cfg.Mempool.MaxTxBytes = 8 << 20
	// The RPC carries such a tx base64-encoded in broadcast_tx and hex-encoded in a simulate
	// abci_query, so its request body limit must cover twice max_tx_bytes.
	cfg.RPC.MaxBodyBytes = 20 << 20
	// Record batches make the p2p traffic bulk data: CometBFT's 5 MB/s per-peer send and
	// receive limits capped a 4-validator network at a few thousand 100-byte records/s.
	cfg.P2P.SendRate = 100 << 20
	cfg.P2P.RecvRate = 100 << 20
	cfg.P2P.MaxPacketMsgPayloadSize = 64 << 10

	return cfg
}

// CustomAppConfig is the app.toml configuration of bftlogd. It is the SDK
// server config; application specific sections can be added here later.
type CustomAppConfig struct {
	serverconfig.Config `mapstructure:",squash"`
}

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

	customAppConfig := CustomAppConfig{Config: *srvCfg}
	return serverconfig.DefaultConfigTemplate, customAppConfig
}
