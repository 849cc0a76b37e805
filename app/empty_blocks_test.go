package app_test

import (
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtcrypto "github.com/cometbft/cometbft/crypto"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"

	poatypes "github.com/bftlog/bftlog/x/poa/types"
	"github.com/cosmos/cosmos-sdk/baseapp"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"

	"github.com/bftlog/bftlog/app"
)

// votedChain is a one-validator feeChain whose blocks carry the validator's vote (or its
// absence) for the block before, as CometBFT's do, so slashing and distribution see it.
type votedChain struct {
	*feeChain
	val  cmtcrypto.PubKey
	time time.Time
}

func newVotedChain(t *testing.T) *votedChain {
	t.Helper()
	val := cmted25519.GenPrivKeyFromSecret([]byte("empty-blocks")).PubKey()
	a := app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true, simtestutil.NewAppOptionsWithFlagHome(t.TempDir()), baseapp.SetChainID("fees"))
	c := &votedChain{feeChain: newChainOf(t, a, []byte("empty-blocks"), []cmtcrypto.PubKey{val}, 1e15), val: val, time: time.Unix(1_800_000_000, 0)}
	// A gentx's bonding hook would have started the validator's liveness window; the SDK's
	// genesis helper does not run it.
	cons := sdk.ConsAddress(val.Address())
	require.NoError(t, a.SlashingKeeper.SetValidatorSigningInfo(c.ctx(), cons, slashingtypes.NewValidatorSigningInfo(cons, 0, 0, time.Unix(0, 0), false, 0)))
	c.run(true)
	return c
}

// run finalizes and commits a block of txs with the validator's vote for the last one
// (signed or absent) and returns the app hash it leaves.
func (c *votedChain) run(signed bool, txs ...[]byte) []byte {
	c.t.Helper()
	flag := cmtproto.BlockIDFlagCommit
	if !signed {
		flag = cmtproto.BlockIDFlagAbsent
	}
	c.time = c.time.Add(time.Second)
	res, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{
		Height: c.height, Time: c.time, Txs: txs, ProposerAddress: c.val.Address(),
		DecidedLastCommit: abci.CommitInfo{Votes: []abci.VoteInfo{{Validator: abci.Validator{Address: c.val.Address(), Power: 1}, BlockIdFlag: flag}}},
	})
	require.NoError(c.t, err)
	for _, r := range res.TxResults {
		require.Equal(c.t, uint32(0), r.Code, r.Log)
	}
	_, err = c.app.Commit()
	require.NoError(c.t, err)
	c.height++
	return res.AppHash
}

func (c *votedChain) signingInfo() slashingtypes.ValidatorSigningInfo {
	c.t.Helper()
	info, err := c.app.SlashingKeeper.GetValidatorSigningInfo(c.ctx(), sdk.ConsAddress(c.val.Address()))
	require.NoError(c.t, err)
	return info
}

// CometBFT skips timeout_commit (bftlogd init) only if a block without transactions changes
// nothing: otherwise every block needs a "proof block" after it, and the chain makes empty
// blocks back to back. Slashing, distribution and staking wrote on every block; they run in
// blocks with transactions only, where liveness is still counted and fees still allocated.
func TestEmptyBlocksLeaveTheAppHash(t *testing.T) {
	c := newVotedChain(t)
	idle := c.run(true)
	for i := range 5 {
		require.Equal(t, idle, c.run(i%2 == 0), "an empty block, signed or missed, changes nothing")
	}
	before := c.signingInfo()

	fee := c.fee(2_000_000)
	busy := c.run(true, c.tx(0, fee, 2_000_000, createMsg(c.addr(0), "orders", 1)))
	c.seqs[0]++
	require.NotEqual(t, idle, busy)
	collector := authtypes.NewModuleAddress(authtypes.FeeCollectorName)
	require.Equal(t, fee, c.app.BankKeeper.GetAllBalances(c.ctx(), collector), "the fee waits for the next block")
	require.Equal(t, before.IndexOffset+1, c.signingInfo().IndexOffset, "a block with transactions moves the liveness window")

	proof := c.run(false)
	require.Equal(t, busy, proof, "the proof block after it changes nothing either")
	require.Equal(t, before.IndexOffset+1, c.signingInfo().IndexOffset)
	require.Equal(t, fee, c.app.BankKeeper.GetAllBalances(c.ctx(), collector))

	// The next block with transactions counts the vote it carries (missed here) and allocates
	// the fees collected since the last allocation.
	c.run(false, c.tx(0, c.fee(2_000_000), 2_000_000, createMsg(c.addr(0), "audit", 1)))
	c.seqs[0]++
	info := c.signingInfo()
	require.Equal(t, before.IndexOffset+2, info.IndexOffset)
	require.Equal(t, before.MissedBlocksCounter+1, info.MissedBlocksCounter, "a vote missing from a block with transactions counts")
	v, err := c.app.StakingKeeper.GetValidatorByConsAddr(c.ctx(), sdk.ConsAddress(c.val.Address()))
	require.NoError(t, err)
	op, err := sdk.ValAddressFromBech32(v.OperatorAddress)
	require.NoError(t, err)
	rewards, err := c.app.DistrKeeper.GetValidatorOutstandingRewards(c.ctx(), op)
	require.NoError(t, err)
	require.False(t, rewards.Rewards.IsZero(), "the first block's fee reached the validator")
}

// A change of the validator set that a block without transactions makes (here a governance
// proposal ending in it) still reaches CometBFT in that block: staking's EndBlock keeps its
// writes there whenever it has something to do.
func TestEmptyBlockKeepsAValidatorSetChange(t *testing.T) {
	c := newVotedChain(t)
	ctx := c.ctx()
	v, err := c.app.StakingKeeper.GetValidatorByConsAddr(ctx, sdk.ConsAddress(c.val.Address()))
	require.NoError(t, err)
	params, err := c.app.GovKeeper.Params.Get(ctx)
	require.NoError(t, err)
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	submit, err := govv1.NewMsgSubmitProposal([]sdk.Msg{&poatypes.MsgSetValidatorPower{Authority: gov, Operator: v.OperatorAddress, Power: 2}},
		params.MinDeposit, c.addr(0).String(), "", "power", "two", false)
	require.NoError(t, err)
	c.run(true, c.tx(0, c.fee(2_000_000), 2_000_000, submit))
	c.seqs[0]++
	c.run(true, c.tx(0, c.fee(2_000_000), 2_000_000, govv1.NewMsgVote(c.addr(0), 1, govv1.OptionYes, "")))
	c.seqs[0]++

	idle := c.run(true)
	require.Equal(t, idle, c.run(true))
	c.time = c.time.Add(*params.VotingPeriod)
	res, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Time: c.time, ProposerAddress: c.val.Address(),
		DecidedLastCommit: abci.CommitInfo{Votes: []abci.VoteInfo{{Validator: abci.Validator{Address: c.val.Address(), Power: 1}, BlockIdFlag: cmtproto.BlockIDFlagCommit}}}})
	require.NoError(t, err)
	_, err = c.app.Commit()
	require.NoError(t, err)
	c.height++
	require.Len(t, res.ValidatorUpdates, 1, "the proposal's power change")
	require.EqualValues(t, 2, res.ValidatorUpdates[0].Power)
	require.NotEqual(t, idle, res.AppHash)
	v, err = c.app.StakingKeeper.GetValidatorByConsAddr(c.ctx(), sdk.ConsAddress(c.val.Address()))
	require.NoError(t, err)
	require.EqualValues(t, 2, v.ConsensusPower(sdk.DefaultPowerReduction))
	op, err := sdk.ValAddressFromBech32(v.OperatorAddress)
	require.NoError(t, err)
	last, err := c.app.StakingKeeper.GetLastValidatorPower(c.ctx(), op)
	require.NoError(t, err)
	require.EqualValues(t, 2, last, "staking recorded the power it gave CometBFT")

	res, err = c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Time: c.time.Add(time.Second), ProposerAddress: c.val.Address()})
	require.NoError(t, err)
	_, err = c.app.Commit()
	require.NoError(t, err)
	c.height++
	require.Empty(t, res.ValidatorUpdates, "the change is given once")
}

// The attack the review found: one account's topic with more partitions than retention inspects
// per block (retention_partitions_per_block, 200) made retention move its cursor, a write, in
// every block, so every empty block changed the app hash and CometBFT, skipping timeout_commit,
// would have made empty blocks back to back. Retention's cursor now stays in a block without
// transactions in which it deleted nothing.
func TestAttackWideTopicKeepsEmptyBlocksQuiet(t *testing.T) {
	c := newVotedChain(t)
	params := c.params()
	require.Less(t, params.RetentionPartitionsPerBlock, params.MaxPartitionsPerTopic)
	gas := uint64(50_000_000)
	c.run(true, c.tx(0, c.fee(gas), gas, createMsg(c.addr(0), "wide", params.MaxPartitionsPerTopic)))
	c.seqs[0]++
	proof := c.run(true)
	blocks := 20
	for range blocks {
		require.Equal(t, proof, c.run(true), "an empty block beside a topic of %d partitions changes nothing", params.MaxPartitionsPerTopic)
	}
	t.Logf("a topic of %d partitions (retention inspects %d per block): %d empty blocks after the one that proves the last app hash, app hash unchanged",
		params.MaxPartitionsPerTopic, params.RetentionPartitionsPerBlock, blocks)
}
