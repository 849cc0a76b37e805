package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/poa/types"
)

type msgServer struct{ k Keeper }

// NewMsgServerImpl returns the x/poa Msg service.
func NewMsgServerImpl(k Keeper) types.MsgServer { return msgServer{k} }

func (m msgServer) AdmitValidator(ctx context.Context, msg *types.MsgAdmitValidator) (*types.MsgAdmitValidatorResponse, error) {
	return &types.MsgAdmitValidatorResponse{}, m.k.Admit(ctx, msg.Authority, msg.Operator, msg.Power)
}

func (m msgServer) SetValidatorPower(ctx context.Context, msg *types.MsgSetValidatorPower) (*types.MsgSetValidatorPowerResponse, error) {
	return &types.MsgSetValidatorPowerResponse{}, m.k.SetPower(ctx, msg.Authority, msg.Operator, msg.Power)
}

func (m msgServer) RemoveValidator(ctx context.Context, msg *types.MsgRemoveValidator) (*types.MsgRemoveValidatorResponse, error) {
	return &types.MsgRemoveValidatorResponse{}, m.k.Remove(ctx, msg.Authority, msg.Operator)
}

type queryServer struct{ k Keeper }

// NewQueryServer returns the x/poa Query service.
func NewQueryServer(k Keeper) types.QueryServer { return queryServer{k} }

func (q queryServer) Admissions(ctx context.Context, req *types.QueryAdmissionsRequest) (*types.QueryAdmissionsResponse, error) {
	out := &types.QueryAdmissionsResponse{}
	err := q.k.Admissions.Walk(ctx, nil, func(_ []byte, a types.Admission) (bool, error) {
		st, err := q.k.Status(ctx, a)
		if err != nil {
			return true, err
		}
		if req == nil || !req.PendingOnly || st.Status == "pending" {
			out.Admissions = append(out.Admissions, st)
		}
		return false, nil
	})
	return out, err
}

func (q queryServer) Admission(ctx context.Context, req *types.QueryAdmissionRequest) (*types.QueryAdmissionResponse, error) {
	if req == nil {
		return nil, errorsmod.Wrap(types.ErrInvalidAddr, "empty request")
	}
	op, err := q.k.operator(req.Operator)
	if err != nil {
		return nil, err
	}
	a, ok, err := q.k.IsAdmitted(ctx, op)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errorsmod.Wrapf(types.ErrNotAdmitted, "%s", req.Operator)
	}
	st, err := q.k.Status(ctx, a)
	if err != nil {
		return nil, err
	}
	return &types.QueryAdmissionResponse{Admission: st}, nil
}

// InitGenesis stores the admissions; with none listed, every validator the genesis
// transactions created is admitted at its genesis power. From then on the ante decorator applies.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := k.initAdmissions(ctx, gs); err != nil {
		return err
	}
	return k.GenesisDone.Set(ctx, true)
}

func (k Keeper) initAdmissions(ctx context.Context, gs *types.GenesisState) error {
	for _, a := range gs.Admissions {
		op, err := k.operator(a.Operator)
		if err != nil {
			return err
		}
		if err := types.ValidatePower(a.Power); err != nil {
			return err
		}
		if err := k.Admissions.Set(ctx, op, a); err != nil {
			return err
		}
	}
	if len(gs.Admissions) > 0 {
		return nil
	}
	vals, err := k.staking.GetAllValidators(ctx)
	if err != nil {
		return err
	}
	height := sdk.UnwrapSDKContext(ctx).BlockHeight()
	for _, v := range vals {
		op, err := k.operator(v.OperatorAddress)
		if err != nil {
			return err
		}
		power := v.ConsensusPower(k.staking.PowerReduction(ctx))
		if power <= 0 {
			continue
		}
		if err := k.Admissions.Set(ctx, op, types.Admission{Operator: v.OperatorAddress, Power: power, AdmittedHeight: height, AdmittedBy: "genesis"}); err != nil {
			return err
		}
	}
	return nil
}

// ExportGenesis exports every admission.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	gs := &types.GenesisState{}
	err := k.Admissions.Walk(ctx, nil, func(_ []byte, a types.Admission) (bool, error) {
		gs.Admissions = append(gs.Admissions, a)
		return false, nil
	})
	return gs, err
}
