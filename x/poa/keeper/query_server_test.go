package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/poa/types"
)

// The queries return the stored admissions joined with their validators' state.
func TestQueries(t *testing.T) {
	f := newFixture(t)
	bonded, _, _ := f.bondedValidator("bonded", 10)
	pending, _ := f.operator("pending")
	f.admit(pending, 3)
	jailed, _, _ := f.bondedValidator("jailed", 4)
	_, err := f.msgs.RemoveValidator(f.ctx, &types.MsgRemoveValidator{Authority: f.gov, Operator: jailed})
	require.NoError(t, err)

	res, err := f.query.Admission(f.ctx, &types.QueryAdmissionRequest{Operator: bonded})
	require.NoError(t, err)
	require.Equal(t, types.AdmissionStatus{
		Admission:    &types.Admission{Operator: bonded, Power: 10, AdmittedHeight: height, AdmittedBy: f.gov},
		Status:       "bonded",
		CurrentPower: 10,
	}, res.Admission)

	res, err = f.query.Admission(f.ctx, &types.QueryAdmissionRequest{Operator: pending})
	require.NoError(t, err)
	require.Equal(t, types.AdmissionStatus{
		Admission: &types.Admission{Operator: pending, Power: 3, AdmittedHeight: height, AdmittedBy: f.gov},
		Status:    "pending",
	}, res.Admission)

	// A removed operator has no admission any more.
	_, err = f.query.Admission(f.ctx, &types.QueryAdmissionRequest{Operator: jailed})
	require.ErrorIs(t, err, types.ErrNotAdmitted)
	_, err = f.query.Admission(f.ctx, &types.QueryAdmissionRequest{Operator: "bftlogvaloper1"})
	require.ErrorIs(t, err, types.ErrInvalidAddr)
	_, err = f.query.Admission(f.ctx, nil)
	require.ErrorIs(t, err, types.ErrInvalidAddr)

	all, err := f.query.Admissions(f.ctx, &types.QueryAdmissionsRequest{})
	require.NoError(t, err)
	got := map[string]string{}
	for _, a := range all.Admissions {
		got[a.Admission.Operator] = a.Status
	}
	require.Equal(t, map[string]string{bonded: "bonded", pending: "pending"}, got)
	nilReq, err := f.query.Admissions(f.ctx, nil)
	require.NoError(t, err)
	require.Equal(t, all, nilReq)

	onlyPending, err := f.query.Admissions(f.ctx, &types.QueryAdmissionsRequest{PendingOnly: true})
	require.NoError(t, err)
	require.Len(t, onlyPending.Admissions, 1)
	require.Equal(t, pending, onlyPending.Admissions[0].Admission.Operator)
}

// A jailed validator that still holds an admission (jailed by x/slashing for downtime, say)
// reports "jailed".
func TestStatusJailed(t *testing.T) {
	f := newFixture(t)
	op, addr, cons := f.bondedValidator("down", 6)
	require.NoError(t, f.staking.Jail(f.ctx, cons))
	res, err := f.query.Admission(f.ctx, &types.QueryAdmissionRequest{Operator: op})
	require.NoError(t, err)
	require.Equal(t, "jailed", res.Admission.Status)
	require.True(t, f.validator(addr).IsJailed())
}
