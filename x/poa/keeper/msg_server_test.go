package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	sdkmath "cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"

	"github.com/bftlog/bftlog/x/poa/types"
)

// An operator without a validator is admitted: the record is written with the signer and height,
// and it is given exactly power's worth of stake for its create-validator.
func TestAdmitNewOperator(t *testing.T) {
	f := newFixture(t)
	op, addr := f.operator("newop")

	_, err := f.msgs.AdmitValidator(f.ctx, &types.MsgAdmitValidator{Authority: f.gov, Operator: op, Power: 10})
	require.NoError(t, err)
	f.requireEvent("bftlog.poa.v1.EventValidatorAdmitted")

	a, ok := f.admission(addr)
	require.True(t, ok)
	require.Equal(t, types.Admission{Operator: op, Power: 10, AdmittedHeight: height, AdmittedBy: f.gov}, a)
	require.Equal(t, tokens(10), f.balance(addr))
	require.Equal(t, tokens(10), f.supply())

	// Admitting again at a higher power only tops up the difference; at a lower one mints nothing.
	f.admit(op, 15)
	require.Equal(t, tokens(15), f.balance(addr))
	f.admit(op, 12)
	require.Equal(t, tokens(15), f.balance(addr))
	require.Equal(t, tokens(15), f.supply())
	a, _ = f.admission(addr)
	require.Equal(t, int64(12), a.Power)

	stake, err := f.k.AdmittedStake(f.ctx, 12)
	require.NoError(t, err)
	require.Equal(t, sdk.NewCoin(sdk.DefaultBondDenom, sdkmath.NewInt(12_000_000)), stake)
}

// The create-validator with the granted stake bonds the validator at the admitted power.
func TestAdmittedValidatorBondsAtItsPower(t *testing.T) {
	f := newFixture(t)
	_, addr, _ := f.bondedValidator("bonded", 10)
	v := f.validator(addr)
	require.Equal(t, tokens(10), v.Tokens)
	require.Equal(t, int64(10), v.ConsensusPower(sdk.DefaultPowerReduction))
	require.True(t, f.balance(addr).IsZero())
}

// Only the authority changes the validator set: every Msg from another signer fails with
// ErrUnauthorized and writes nothing.
func TestNonAuthorityRefused(t *testing.T) {
	f := newFixture(t)
	bonded, _, _ := f.bondedValidator("bonded", 10)
	fresh, freshAddr := f.operator("fresh")
	before := f.state()

	for _, signer := range []string{f.alice, "", f.gov + "x"} {
		_, err := f.msgs.AdmitValidator(f.ctx, &types.MsgAdmitValidator{Authority: signer, Operator: fresh, Power: 1})
		require.ErrorIs(t, err, types.ErrUnauthorized, "admit by %q", signer)
		_, err = f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: signer, Operator: bonded, Power: 50})
		require.ErrorIs(t, err, types.ErrUnauthorized, "set power by %q", signer)
		_, err = f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: signer, Operator: bonded})
		require.ErrorIs(t, err, types.ErrUnauthorized, "remove by %q", signer)
	}
	require.Equal(t, before, f.state())
	_, ok := f.admission(freshAddr)
	require.False(t, ok)
	require.True(t, f.balance(freshAddr).IsZero())
}

// Invalid powers and operators are refused with their registered errors before any write.
func TestInvalidInputRefused(t *testing.T) {
	f := newFixture(t)
	op, _ := f.operator("op")
	before := f.state()
	for _, p := range []int64{0, -1, types.MaxPower + 1} {
		_, err := f.msgs.AdmitValidator(f.ctx, &types.MsgAdmitValidator{Authority: f.gov, Operator: op, Power: p})
		require.ErrorIs(t, err, types.ErrInvalidPower, "power %d", p)
	}
	for _, bad := range []string{"", f.alice, "bftlogvaloper1", op + "x"} {
		_, err := f.msgs.AdmitValidator(f.ctx, &types.MsgAdmitValidator{Authority: f.gov, Operator: bad, Power: 1})
		require.ErrorIs(t, err, types.ErrInvalidAddr, "operator %q", bad)
	}
	_, err := f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 3})
	require.ErrorIs(t, err, types.ErrNotAdmitted)
	_, err = f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.ErrorIs(t, err, types.ErrNotAdmitted)
	require.Equal(t, before, f.state())

	// MaxPower itself is allowed.
	f.admit(op, types.MaxPower)
}

// SetPower raises a bonded validator's tokens by delegating new stake from the poa module
// account, and lowers them by undelegating, module delegation first, then self-delegation.
func TestSetPowerOfBondedValidator(t *testing.T) {
	f := newFixture(t)
	op, addr, _ := f.bondedValidator("bonded", 10)
	moduleAddr := authtypes.NewModuleAddress(types.ModuleName)

	_, err := f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 25})
	require.NoError(t, err)
	f.requireEvent("bftlog.poa.v1.EventValidatorPowerSet")
	a, _ := f.admission(addr)
	require.Equal(t, int64(25), a.Power)
	require.Equal(t, int64(height), a.AdmittedHeight) // SetPower keeps the original admission
	require.Equal(t, tokens(25), f.validator(addr).Tokens)
	d, err := f.staking.GetDelegation(f.ctx, moduleAddr, addr)
	require.NoError(t, err)
	require.Equal(t, sdkmath.LegacyNewDecFromInt(tokens(15)), d.Shares)
	require.Equal(t, tokens(25), f.supply())
	f.endBlock()
	require.Equal(t, int64(25), f.validator(addr).ConsensusPower(sdk.DefaultPowerReduction))

	// Down to 4: the module's 15 go first, then 6 of the operator's own 10.
	_, err = f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 4})
	require.NoError(t, err)
	require.Equal(t, tokens(4), f.validator(addr).Tokens)
	_, err = f.staking.GetDelegation(f.ctx, moduleAddr, addr)
	require.Error(t, err)
	self, err := f.staking.GetDelegation(f.ctx, sdk.AccAddress(addr), addr)
	require.NoError(t, err)
	require.Equal(t, sdkmath.LegacyNewDecFromInt(tokens(4)), self.Shares)
	f.endBlock()
	require.Equal(t, int64(4), f.validator(addr).ConsensusPower(sdk.DefaultPowerReduction))

	// The same power again changes nothing.
	before := f.state()
	_, err = f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 4})
	require.NoError(t, err)
	require.Equal(t, before, f.state())
}

// Before its validator exists, a raised power tops up the operator's stake; a lowered one takes
// the surplus back and burns it.
func TestSetPowerOfPendingAdmission(t *testing.T) {
	f := newFixture(t)
	op, addr := f.operator("pending")
	f.admit(op, 3)
	_, err := f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 8})
	require.NoError(t, err)
	require.Equal(t, tokens(8), f.balance(addr))
	_, err = f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op, Power: 2})
	require.NoError(t, err)
	require.Equal(t, tokens(2), f.balance(addr))
	require.Equal(t, tokens(2), f.supply())
	a, _ := f.admission(addr)
	require.Equal(t, int64(2), a.Power)
}

// Remove deletes the admission and jails the validator, which leaves the set at the end block;
// a new admission unjails it at the new power.
func TestRemoveAndReadmit(t *testing.T) {
	f := newFixture(t)
	op, addr, _ := f.bondedValidator("removed", 10)
	_, otherAddr, _ := f.bondedValidator("other", 5)

	_, err := f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.NoError(t, err)
	f.requireEvent("bftlog.poa.v1.EventValidatorRemoved")
	_, ok := f.admission(addr)
	require.False(t, ok)
	require.True(t, f.validator(addr).IsJailed())
	f.endBlock()
	require.False(t, f.validator(addr).IsBonded())
	// The other validator is untouched.
	_, ok = f.admission(otherAddr)
	require.True(t, ok)
	require.True(t, f.validator(otherAddr).IsBonded())
	require.False(t, f.validator(otherAddr).IsJailed())

	// Removing twice is refused.
	_, err = f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.ErrorIs(t, err, types.ErrNotAdmitted)

	f.admit(op, 7)
	v := f.validator(addr)
	require.False(t, v.IsJailed())
	require.Equal(t, tokens(7), v.Tokens)
	a, ok := f.admission(addr)
	require.True(t, ok)
	require.Equal(t, int64(7), a.Power)
	f.endBlock()
	require.True(t, f.validator(addr).IsBonded())
	require.Equal(t, int64(7), f.validator(addr).ConsensusPower(sdk.DefaultPowerReduction))
}

// A validator that double-signed (tombstoned) is never admitted again, and the refusal writes
// nothing: no admission, no unjail, no minted stake.
func TestTombstonedReadmissionRefused(t *testing.T) {
	f := newFixture(t)
	op, addr, cons := f.bondedValidator("twin", 10)
	_, err := f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: op})
	require.NoError(t, err)
	require.NoError(t, f.slashing.SetValidatorSigningInfo(f.ctx, cons, slashingtypes.NewValidatorSigningInfo(cons, 1, 0, f.ctx.BlockTime(), false, 0)))
	require.NoError(t, f.slashing.Tombstone(f.ctx, cons))
	require.True(t, f.slashing.IsTombstoned(f.ctx, cons))

	before := f.state()
	_, err = f.msgs.AdmitValidator(f.ctx, &types.MsgAdmitValidator{Authority: f.gov, Operator: op, Power: 20})
	require.ErrorIs(t, err, types.ErrTombstoned)
	require.Equal(t, before, f.state())
	_, ok := f.admission(addr)
	require.False(t, ok)
	require.True(t, f.validator(addr).IsJailed())
	require.True(t, f.validator(addr).Tokens.IsZero()) // Remove unbonded it all
}
