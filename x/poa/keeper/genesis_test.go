package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/poa/types"
)

// Export → import into a fresh chain → export gives the same admissions, and marks genesis done.
func TestGenesisRoundTrip(t *testing.T) {
	f := newFixture(t)
	require.NoError(t, f.k.InitGenesis(f.ctx, &types.GenesisState{}))
	op1, _, _ := f.bondedValidator("one", 10)
	op2, _ := f.operator("two")
	f.admit(op2, 3)
	_, err := f.msgs.SetValidatorPower(f.ctx, &types.MsgSetValidatorPower{Authority: f.gov, Operator: op1, Power: 12})
	require.NoError(t, err)

	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, []types.Admission{
		{Operator: op1, Power: 12, AdmittedHeight: height, AdmittedBy: f.gov},
		{Operator: op2, Power: 3, AdmittedHeight: height, AdmittedBy: f.gov},
	}, exported.Admissions)

	g := newFixture(t)
	done, err := g.k.GenesisDone.Has(g.ctx)
	require.NoError(t, err)
	require.False(t, done)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	done, err = g.k.GenesisDone.Get(g.ctx)
	require.NoError(t, err)
	require.True(t, done)
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)
	// Listed admissions are imported as they are: no stake minted, no validator adopted.
	require.True(t, g.supply().IsZero())
}

// With no admissions listed, every bonded validator the genesis transactions created is admitted
// at its genesis power by "genesis"; a validator without power is not.
func TestGenesisAdoptsGenesisValidators(t *testing.T) {
	f := newFixture(t)
	op, addr := f.operator("gentx")
	f.fund(addr, 7)
	f.createValidator(op, tokens(7))
	f.endBlock()
	unbonded, unbondedAddr := f.operator("late")
	f.fund(unbondedAddr, 2)
	f.createValidator(unbonded, tokens(2)) // created after the set update: not bonded yet

	require.NoError(t, f.k.InitGenesis(f.ctx, &types.GenesisState{}))
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.Equal(t, []types.Admission{{Operator: op, Power: 7, AdmittedHeight: height, AdmittedBy: "genesis"}}, gs.Admissions)
}

// A genesis with an invalid admission is refused.
func TestInitGenesisRefusesInvalidAdmissions(t *testing.T) {
	f := newFixture(t)
	op, _ := f.operator("op")
	err := f.k.InitGenesis(f.ctx, &types.GenesisState{Admissions: []types.Admission{{Operator: op, Power: 0}}})
	require.ErrorIs(t, err, types.ErrInvalidPower)
	err = f.k.InitGenesis(f.ctx, &types.GenesisState{Admissions: []types.Admission{{Operator: f.alice, Power: 1}}})
	require.ErrorIs(t, err, types.ErrInvalidAddr)
}
