package keeper

import (
	"context"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/poa/types"
)

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
