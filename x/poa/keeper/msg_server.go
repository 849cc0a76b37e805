package keeper

import (
	"context"

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

func (m msgServer) SetDataPlaneEndpoint(ctx context.Context, msg *types.MsgSetDataPlaneEndpoint) (*types.MsgSetDataPlaneEndpointResponse, error) {
	return &types.MsgSetDataPlaneEndpointResponse{}, m.k.SetEndpoint(ctx, msg.Operator, msg.Endpoint, msg.DataPlaneKey, msg.DataPlaneKeyProof)
}

func (m msgServer) RemoveValidator(ctx context.Context, msg *types.MsgRemoveValidator) (*types.MsgRemoveValidatorResponse, error) {
	return &types.MsgRemoveValidatorResponse{}, m.k.Remove(ctx, msg.Authority, msg.Operator)
}
