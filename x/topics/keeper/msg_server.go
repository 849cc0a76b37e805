package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

type msgServer struct{ k Keeper }

var _ types.MsgServer = msgServer{}

// NewMsgServerImpl returns the Msg service of x/topics; each handler delegates to the keeper.
func NewMsgServerImpl(k Keeper) types.MsgServer { return msgServer{k} }

func (m msgServer) CreateTopic(ctx context.Context, msg *types.MsgCreateTopic) (*types.MsgCreateTopicResponse, error) {
	if err := m.k.CreateTopic(ctx, msg.Owner, msg.Name, msg.Partitions, msg.Config); err != nil {
		return nil, err
	}
	return &types.MsgCreateTopicResponse{}, nil
}

func (m msgServer) UpdateTopicConfig(ctx context.Context, msg *types.MsgUpdateTopicConfig) (*types.MsgUpdateTopicConfigResponse, error) {
	if err := m.k.UpdateTopicConfig(ctx, msg.Authority, msg.Name, msg.Config); err != nil {
		return nil, err
	}
	return &types.MsgUpdateTopicConfigResponse{}, nil
}

func (m msgServer) AddPartitions(ctx context.Context, msg *types.MsgAddPartitions) (*types.MsgAddPartitionsResponse, error) {
	if err := m.k.AddPartitions(ctx, msg.Authority, msg.Name, msg.Partitions); err != nil {
		return nil, err
	}
	return &types.MsgAddPartitionsResponse{}, nil
}

func (m msgServer) DeleteTopic(ctx context.Context, msg *types.MsgDeleteTopic) (*types.MsgDeleteTopicResponse, error) {
	if err := m.k.DeleteTopic(ctx, msg.Authority, msg.Name); err != nil {
		return nil, err
	}
	return &types.MsgDeleteTopicResponse{}, nil
}

func (m msgServer) Produce(ctx context.Context, msg *types.MsgProduce) (*types.MsgProduceResponse, error) {
	results, err := m.k.Produce(ctx, msg.Producer, msg.Batches)
	if err != nil {
		return nil, err
	}
	return &types.MsgProduceResponse{Results: results}, nil
}

func (m msgServer) UpdateParams(ctx context.Context, msg *types.MsgUpdateParams) (*types.MsgUpdateParamsResponse, error) {
	if msg.Authority != m.k.authority {
		return nil, errorsmod.Wrapf(types.ErrUnauthorized, "params can only be changed by %s, not %s", m.k.authority, msg.Authority)
	}
	if err := m.k.SetParams(ctx, msg.Params); err != nil {
		return nil, err
	}
	if err := sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventParamsUpdated{Authority: msg.Authority, Params: msg.Params}); err != nil {
		return nil, err
	}
	return &types.MsgUpdateParamsResponse{}, nil
}
