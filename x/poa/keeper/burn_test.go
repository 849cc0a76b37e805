package keeper_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/crypto/keys/ed25519"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/x/poa"
	"github.com/bftlog/bftlog/x/poa/types"
)

// passUnbonding moves block time past the unbonding period and runs the end blockers in the
// app's order (staking pays out matured unbondings, then x/poa burns what came back).
func (f *fixture) passUnbonding() {
	f.t.Helper()
	ubd, err := f.staking.UnbondingTime(f.ctx)
	require.NoError(f.t, err)
	f.ctx = f.ctx.WithBlockHeight(f.ctx.BlockHeight() + 1).WithBlockTime(f.ctx.BlockTime().Add(ubd + time.Second))
	f.endBlock()
	require.NoError(f.t, f.k.EndBlock(f.ctx))
}

// The attack: every admission, raise, lowering and removal left minted stake in circulation, so
// governance churn (or a captured proposal flow) inflated the bond denom for ever. Now what
// x/poa minted is burned once its unbonding completes: admit → raise → lower → remove brings
// the supply back to where it started.
func TestAttackMintedStakeBurnedOnLowerAndRemove(t *testing.T) {
	f := newFixture(t)
	_, otherAddr, _ := f.bondedValidator("other", 5) // a bystander whose stake must survive
	start := f.supply()
	t.Logf("supply before admission: %s", start)

	op, addr, _ := f.bondedValidator("churn", 10)
	t.Logf("after admit at power 10: supply %s", f.supply())
	require.Equal(t, start.Add(tokens(10)), f.supply())

	_, err := f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 25})
	require.NoError(t, err)
	f.endBlock()
	t.Logf("after raise to 25: supply %s", f.supply())
	require.Equal(t, start.Add(tokens(25)), f.supply())

	_, err = f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 4})
	require.NoError(t, err)
	f.endBlock()
	require.NoError(t, f.k.EndBlock(f.ctx))
	t.Logf("after lower to 4 (21 unbonding): supply %s", f.supply())
	require.Equal(t, int64(4), f.validator(addr).ConsensusPower(sdk.DefaultPowerReduction))
	// Unbonding stake is still slashable and still exists until it matures.
	require.Equal(t, start.Add(tokens(25)), f.supply())

	_, err = f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.NoError(t, err)
	f.endBlock()
	require.NoError(t, f.k.EndBlock(f.ctx))
	t.Logf("after remove (25 unbonding): supply %s", f.supply())
	require.False(t, f.validator(addr).IsBonded())
	require.True(t, f.validator(addr).Tokens.IsZero())

	f.passUnbonding()
	t.Logf("after the unbonding period: supply %s (started at %s)", f.supply(), start)
	require.Equal(t, start, f.supply())
	require.True(t, f.balance(addr).IsZero(), "the operator keeps none of the minted stake")
	require.True(t, f.bank.GetBalance(f.ctx, authtypes.NewModuleAddress(types.ModuleName), sdk.DefaultBondDenom).IsZero())
	require.Equal(t, tokens(5), f.validator(otherAddr).Tokens)
	// Nothing left scheduled: a later end block burns nothing more.
	f.passUnbonding()
	require.Equal(t, start, f.supply())
}

// Stake the operator brought itself (a genesis validator's own, not minted by x/poa) is returned
// to it on a lowering, never burned.
func TestOwnStakeNotBurned(t *testing.T) {
	f := newFixture(t)
	op, addr := f.operator("genesis")
	f.fund(addr, 10) // as a genesis account, not a grant
	f.createValidator(op, tokens(10))
	f.endBlock()
	_, err := f.k.Admissions.Get(f.ctx, addr)
	require.Error(t, err)
	require.NoError(t, f.k.InitGenesis(f.ctx, &types.GenesisState{})) // adopts it at power 10
	start := f.supply()

	_, err = f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 12})
	require.NoError(t, err)
	f.endBlock()
	_, err = f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.NoError(t, err)
	f.endBlock()
	f.passUnbonding()
	t.Logf("genesis validator raised by 2 then removed: supply %s → %s, operator holds %s", start, f.supply(), f.balance(addr))
	require.Equal(t, start, f.supply())
	require.Equal(t, tokens(10), f.balance(addr))
}

// An admission whose validator was never created: removing it takes the grant back at once.
func TestPendingGrantBurnedOnRemove(t *testing.T) {
	f := newFixture(t)
	op, addr := f.operator("pending")
	start := f.supply()
	f.admit(op, 6)
	require.Equal(t, start.Add(tokens(6)), f.supply())
	_, err := f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.NoError(t, err)
	t.Logf("pending admission at 6 removed: supply %s → %s", start.Add(tokens(6)), f.supply())
	require.Equal(t, start, f.supply())
	require.Equal(t, sdkmath.ZeroInt(), f.balance(addr))
}

// What x/poa still has to burn survives export and import (a restarted chain still burns the
// grant unbonding now), and a malformed entry is refused.
func TestStakeToBurnSurvivesGenesis(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.k.InitGenesis(f.ctx, &types.GenesisState{}))
	op, addr, _ := f.bondedValidator("restart", 10)
	pendingOp, _ := f.operator("pending")
	f.admit(pendingOp, 2)
	_, err := f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 4})
	require.NoError(t, err)

	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Len(t, exported.Grants, 2)    // 4 left with "restart", 2 with "pending"
	require.Len(t, exported.Clawbacks, 1) // the 6 unbonding from "restart"
	require.Equal(t, sdk.AccAddress(addr).String(), exported.Clawbacks[0].Account)
	require.Equal(t, tokens(6), exported.Clawbacks[0].Amount)
	t.Logf("exported grants %v, clawbacks %v", exported.Grants, exported.Clawbacks)

	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)

	bad := *exported
	bad.Clawbacks = append(append([]types.Clawback(nil), exported.Clawbacks...), exported.Clawbacks[0])
	h := newFixture(t)
	require.ErrorIs(t, h.k.InitGenesis(h.ctx, &bad), types.ErrInvalidGen)
	bad = *exported
	bad.Grants = []types.Grant{{Account: "bftlog1nope", Amount: tokens(1)}}
	require.ErrorIs(t, bad.ValidateStake(), types.ErrInvalidGen)
	bad.Grants = []types.Grant{{Account: exported.Grants[0].Account, Amount: sdkmath.ZeroInt()}}
	require.ErrorIs(t, bad.ValidateStake(), types.ErrInvalidGen)
}

// Removal now unbonds all of a validator's stake, so once the unbonding completes x/staking
// deletes its record and Admit cannot see that it double-signed: the ante decorator refuses a
// create-validator with a tombstoned consensus key instead.
func TestTombstonedKeyRefusedAfterRecordGone(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.k.InitGenesis(f.ctx, &types.GenesisState{}))
	op, addr := f.operator("twin")
	f.admit(op, 10)
	pk := ed25519.GenPrivKey().PubKey()
	newMsg := func(power int64) *stakingtypes.MsgCreateValidator {
		m, err := stakingtypes.NewMsgCreateValidator(op, pk, sdk.NewCoin(sdk.DefaultBondDenom, tokens(power)),
			stakingtypes.NewDescription("v", "", "", "", ""),
			stakingtypes.NewCommissionRates(sdkmath.LegacyNewDecWithPrec(1, 1), sdkmath.LegacyNewDecWithPrec(2, 1), sdkmath.LegacyNewDecWithPrec(1, 2)),
			sdkmath.OneInt())
		require.NoError(t, err)
		return m
	}
	ante := poa.NewAnteDecorator(f.k)
	require.NoError(t, ante.Check(f.ctx, []sdk.Msg{newMsg(10)}))
	_, err := stakingkeeper.NewMsgServerImpl(f.staking).CreateValidator(f.ctx, newMsg(10))
	require.NoError(t, err)
	f.endBlock()
	cons := sdk.ConsAddress(pk.Address())
	require.NoError(t, f.slashing.SetValidatorSigningInfo(f.ctx, cons, slashingtypes.NewValidatorSigningInfo(cons, 1, 0, f.ctx.BlockTime(), false, 0)))
	require.NoError(t, f.slashing.Tombstone(f.ctx, cons))

	_, err = f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.NoError(t, err)
	f.endBlock()
	f.passUnbonding()
	_, err = f.staking.GetValidator(f.ctx, addr)
	require.ErrorIs(t, err, stakingtypes.ErrNoValidatorFound)

	f.admit(op, 3) // no record left to check
	err = ante.Check(f.ctx, []sdk.Msg{newMsg(3)})
	t.Logf("create-validator with the double-signed key after re-admission: %v", err)
	require.ErrorIs(t, err, types.ErrTombstoned)
}
