package app_test

import (
	"encoding/json"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/baseapp"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"

	"github.com/bftlog/bftlog/app"
	topicskeeper "github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// The attack, through the whole app: governance lowers x/topics' limits below what existing
// topics and groups have, and `bftlogd export` must still give a genesis that `bftlogd genesis
// validate` accepts and a new chain starts from (InitChain used to panic). The new chain
// exports the same x/topics and x/poa state.
func TestAttackExportAfterLoweringParamsRestarts(t *testing.T) {
	c := newFeeChain(t, 1e15)
	alice := c.addr(0)
	// Blocks with a real block time (LogAppendTime of the batches), as CometBFT gives.
	now := time.Unix(1_750_000_000, 0).UTC()
	deliver := func(gas uint64, msg sdk.Msg) {
		t.Helper()
		now = now.Add(time.Second)
		res, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Time: now, Txs: [][]byte{c.tx(0, c.fee(gas), gas, msg)}})
		require.NoError(t, err)
		require.Equal(t, uint32(0), res.TxResults[0].Code, res.TxResults[0].Log)
		_, err = c.app.Commit()
		require.NoError(t, err)
		c.height++
		c.seqs[0]++
	}
	deliver(5_000_000, createMsg(alice, "wide", 4))
	deliver(20_000_000, produceMsg(alice, "wide", 50, 2_000))
	deliver(20_000_000, produceMsg(alice, "wide", 50, 2_000))
	deliver(5_000_000, &topicstypes.MsgCreateGroup{Admin: alice.String(), GroupId: "g"})

	p := c.params()
	p.MaxPartitionsPerTopic, p.MaxRecordBytes, p.MaxBatchBytes, p.MaxRecordsPerBatch = 1, 1, 1, 1
	p.MaxHeadersPerRecord, p.MaxGroupMembers, p.MaxGroupSubscribedPartitions = 1, 1, 1
	_, err := topicskeeper.NewMsgServerImpl(c.app.TopicsKeeper).UpdateParams(c.ctx(), &topicstypes.MsgUpdateParams{
		Authority: c.app.TopicsKeeper.Authority(), Params: p})
	require.NoError(t, err)
	_, err = c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Time: now.Add(time.Second)})
	require.NoError(t, err)
	_, err = c.app.Commit()
	require.NoError(t, err)

	exported, err := c.app.ExportAppStateAndValidators(false, nil, nil)
	require.NoError(t, err)
	var state map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(exported.AppState, &state))
	basics := module.NewBasicManagerFromManager(c.app.ModuleManager, nil)
	err = basics.ValidateGenesis(c.app.AppCodec(), c.app.TxConfig(), state)
	t.Logf("export at height %d (%d KiB of app state) after lowering max_partitions_per_topic and max_record_bytes to 1: genesis validate → %v",
		exported.Height, len(exported.AppState)>>10, err)
	require.NoError(t, err)

	b := app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true, simtestutil.NewAppOptionsWithFlagHome(t.TempDir()), baseapp.SetChainID("fees"))
	_, err = b.InitChain(&abci.RequestInitChain{ChainId: "fees", ConsensusParams: &exported.ConsensusParams, AppStateBytes: exported.AppState, InitialHeight: exported.Height})
	require.NoError(t, err)
	_, err = b.FinalizeBlock(&abci.RequestFinalizeBlock{Height: exported.Height, Time: now.Add(2 * time.Second)})
	require.NoError(t, err)
	_, err = b.Commit()
	require.NoError(t, err)
	again, err := b.ExportAppStateAndValidators(false, nil, nil)
	require.NoError(t, err)
	var stateAgain map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(again.AppState, &stateAgain))
	for _, m := range []string{topicstypes.ModuleName, "poa", "bank"} {
		require.JSONEq(t, string(state[m]), string(stateAgain[m]), m)
	}
}
