package app

import (
	"encoding/json"

	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
)

// DefaultBlockMaxGas is the consensus block gas limit written into new genesis files
// (`bftlogd init`, localnet, the test harness). A 4 MiB produce uses about 170M gas (30 per
// stored byte, 10 per transaction byte; TestLargestProduceGas measures it) and clients ask for
// up to x_topics max_tx_gas (300M), so a block holds five such batches — about what the
// default 21 MB block max_bytes holds — or 16 x 5,000-record transactions of the benchmark.
const DefaultBlockMaxGas = 1_500_000_000

// DefaultRetainBlocks is how many recent blocks a node keeps (app.toml min-retain-blocks, and
// the genesis evidence max_age_num_blocks, which the SDK would otherwise let keep 100,000): the
// log lives in the application state, so old blocks only serve evidence, light clients and
// peers catching up by block sync — new nodes join by state sync instead (docs/operations.md).
const DefaultRetainBlocks = 10_000

// SetGenesisConsensusDefaults writes bftlog's consensus params into the genesis file.
func SetGenesisConsensusDefaults(genFile string) error {
	gen, err := genutiltypes.AppGenesisFromFile(genFile)
	if err != nil {
		return err
	}
	if gen.Consensus != nil && gen.Consensus.Params != nil {
		gen.Consensus.Params.Block.MaxGas = DefaultBlockMaxGas
		gen.Consensus.Params.Evidence.MaxAgeNumBlocks = DefaultRetainBlocks
	}
	var state map[string]json.RawMessage
	if err := json.Unmarshal(gen.AppState, &state); err != nil {
		return err
	}
	if err := WithoutHistoricalInfo(state); err != nil {
		return err
	}
	if gen.AppState, err = json.Marshal(state); err != nil {
		return err
	}
	return gen.SaveAs(genFile)
}

// WithoutHistoricalInfo sets staking's historical_entries to 0 in a genesis app state. Staking
// keeps that many past validator sets, one written every block, for IBC light clients, which
// bftlog has none of; with 0 its BeginBlock writes nothing, so a block without transactions
// leaves the state unchanged (empty_blocks.go). x/poa refuses staking's MsgUpdateParams, so it
// stays 0.
func WithoutHistoricalInfo(state map[string]json.RawMessage) error {
	raw, ok := state[stakingtypes.ModuleName]
	if !ok {
		return nil
	}
	var staking map[string]json.RawMessage
	if err := json.Unmarshal(raw, &staking); err != nil {
		return err
	}
	var params map[string]json.RawMessage
	if err := json.Unmarshal(staking["params"], &params); err != nil {
		return err
	}
	params["historical_entries"] = json.RawMessage("0")
	var err error
	if staking["params"], err = json.Marshal(params); err != nil {
		return err
	}
	state[stakingtypes.ModuleName], err = json.Marshal(staking)
	return err
}
