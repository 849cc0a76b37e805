package keeper

import (
	"context"
	"time"

	"cosmossdk.io/collections"
	"cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/poa/types"
)

// InitGenesis stores the admissions; with none listed, every validator the genesis
// transactions created is admitted at its genesis power. From then on the ante decorator applies.
func (k Keeper) InitGenesis(ctx context.Context, gs *types.GenesisState) error {
	if err := gs.ValidateStake(); err != nil {
		return err
	}
	if err := gs.ValidateEndpoints(); err != nil {
		return err
	}
	if err := k.initAdmissions(ctx, gs); err != nil {
		return err
	}
	for _, g := range gs.Grants {
		if err := k.Granted.Set(ctx, sdk.MustAccAddressFromBech32(g.Account), g.Amount); err != nil {
			return err
		}
	}
	for _, c := range gs.Clawbacks {
		if err := k.Clawbacks.Set(ctx, collections.Join(c.CompletionTime, []byte(sdk.MustAccAddressFromBech32(c.Account))), c.Amount); err != nil {
			return err
		}
	}
	for _, e := range gs.DataPlaneEndpoints {
		op, err := k.operator(e.Operator)
		if err != nil {
			return err
		}
		if e.Endpoint != "" {
			if err := k.Endpoints.Set(ctx, op, e.Endpoint); err != nil {
				return err
			}
		}
		if len(e.DataPlaneKey) > 0 {
			if err := k.DataPlaneKeys.Set(ctx, op, types.DataPlaneKeyRegistration{Key: e.DataPlaneKey, Proof: e.DataPlaneKeyProof}); err != nil {
				return err
			}
		}
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

// ExportGenesis exports every admission, and the minted stake still to be burned.
func (k Keeper) ExportGenesis(ctx context.Context) (*types.GenesisState, error) {
	gs := &types.GenesisState{}
	err := k.Admissions.Walk(ctx, nil, func(_ []byte, a types.Admission) (bool, error) {
		gs.Admissions = append(gs.Admissions, a)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Granted.Walk(ctx, nil, func(acc []byte, amt math.Int) (bool, error) {
		gs.Grants = append(gs.Grants, types.Grant{Account: sdk.AccAddress(acc).String(), Amount: amt})
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Clawbacks.Walk(ctx, nil, func(key collections.Pair[time.Time, []byte], amt math.Int) (bool, error) {
		gs.Clawbacks = append(gs.Clawbacks, types.Clawback{CompletionTime: key.K1(), Account: sdk.AccAddress(key.K2()).String(), Amount: amt})
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	gs.DataPlaneEndpoints, err = k.AllEndpoints(ctx)
	return gs, err
}
