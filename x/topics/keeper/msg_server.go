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

func (m msgServer) JoinGroup(ctx context.Context, msg *types.MsgJoinGroup) (*types.MsgJoinGroupResponse, error) {
	return m.k.JoinGroup(ctx, msg)
}

func (m msgServer) LeaveGroup(ctx context.Context, msg *types.MsgLeaveGroup) (*types.MsgLeaveGroupResponse, error) {
	if err := m.k.LeaveGroup(ctx, msg.Member, msg.GroupId); err != nil {
		return nil, err
	}
	return &types.MsgLeaveGroupResponse{}, nil
}

func (m msgServer) Heartbeat(ctx context.Context, msg *types.MsgHeartbeat) (*types.MsgHeartbeatResponse, error) {
	return m.k.Heartbeat(ctx, msg.Member, msg.GroupId)
}

func (m msgServer) CommitOffsets(ctx context.Context, msg *types.MsgCommitOffsets) (*types.MsgCommitOffsetsResponse, error) {
	if err := m.k.CommitOffsets(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgCommitOffsetsResponse{}, nil
}

func (m msgServer) ResetOffsets(ctx context.Context, msg *types.MsgResetOffsets) (*types.MsgResetOffsetsResponse, error) {
	offsets, err := m.k.ResetOffsets(ctx, msg)
	if err != nil {
		return nil, err
	}
	return &types.MsgResetOffsetsResponse{Offsets: offsets}, nil
}

func (m msgServer) DeleteGroup(ctx context.Context, msg *types.MsgDeleteGroup) (*types.MsgDeleteGroupResponse, error) {
	if err := m.k.DeleteGroup(ctx, msg.Authority, msg.GroupId); err != nil {
		return nil, err
	}
	return &types.MsgDeleteGroupResponse{}, nil
}

func (m msgServer) CreateGroup(ctx context.Context, msg *types.MsgCreateGroup) (*types.MsgCreateGroupResponse, error) {
	if err := m.k.CreateGroup(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgCreateGroupResponse{}, nil
}

func (m msgServer) UpdateGroupPolicy(ctx context.Context, msg *types.MsgUpdateGroupPolicy) (*types.MsgUpdateGroupPolicyResponse, error) {
	if err := m.k.UpdateGroupPolicy(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgUpdateGroupPolicyResponse{}, nil
}

func (m msgServer) RemoveGroupMember(ctx context.Context, msg *types.MsgRemoveGroupMember) (*types.MsgRemoveGroupMemberResponse, error) {
	if err := m.k.RemoveGroupMember(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgRemoveGroupMemberResponse{}, nil
}

func (m msgServer) TransferGroupAdmin(ctx context.Context, msg *types.MsgTransferGroupAdmin) (*types.MsgTransferGroupAdminResponse, error) {
	if err := m.k.TransferGroupAdmin(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgTransferGroupAdminResponse{}, nil
}

func (m msgServer) KafkaJoinGroup(ctx context.Context, msg *types.MsgKafkaJoinGroup) (*types.MsgKafkaJoinGroupResponse, error) {
	kg, err := m.k.KafkaJoinGroup(ctx, msg)
	if err != nil {
		return nil, err
	}
	return &types.MsgKafkaJoinGroupResponse{Group: kg}, nil
}

func (m msgServer) KafkaSyncGroup(ctx context.Context, msg *types.MsgKafkaSyncGroup) (*types.MsgKafkaSyncGroupResponse, error) {
	kg, err := m.k.KafkaSyncGroup(ctx, msg)
	if err != nil {
		return nil, err
	}
	return &types.MsgKafkaSyncGroupResponse{Group: kg}, nil
}

func (m msgServer) ConsumerGroupHeartbeat(ctx context.Context, msg *types.MsgConsumerGroupHeartbeat) (*types.MsgConsumerGroupHeartbeatResponse, error) {
	member, err := m.k.ConsumerGroupHeartbeat(ctx, msg)
	if err != nil {
		return nil, err
	}
	return &types.MsgConsumerGroupHeartbeatResponse{Member: member}, nil
}

func (m msgServer) ShareGroupHeartbeat(ctx context.Context, msg *types.MsgShareGroupHeartbeat) (*types.MsgShareGroupHeartbeatResponse, error) {
	member, err := m.k.ShareGroupHeartbeat(ctx, msg)
	if err != nil {
		return nil, err
	}
	return &types.MsgShareGroupHeartbeatResponse{Member: member}, nil
}

func (m msgServer) ShareFetch(ctx context.Context, msg *types.MsgShareFetch) (*types.MsgShareFetchResponse, error) {
	return m.k.ShareFetch(ctx, msg)
}

func (m msgServer) SetShareGroupConfig(ctx context.Context, msg *types.MsgSetShareGroupConfig) (*types.MsgSetShareGroupConfigResponse, error) {
	if err := m.k.SetShareGroupConfig(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgSetShareGroupConfigResponse{}, nil
}

func (m msgServer) AlterShareGroupOffsets(ctx context.Context, msg *types.MsgAlterShareGroupOffsets) (*types.MsgAlterShareGroupOffsetsResponse, error) {
	if err := m.k.AlterShareGroupOffsets(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgAlterShareGroupOffsetsResponse{}, nil
}

func (m msgServer) KafkaHeartbeat(ctx context.Context, msg *types.MsgKafkaHeartbeat) (*types.MsgKafkaHeartbeatResponse, error) {
	kg, err := m.k.KafkaHeartbeat(ctx, msg)
	if err != nil {
		return nil, err
	}
	return &types.MsgKafkaHeartbeatResponse{Group: kg}, nil
}

func (m msgServer) KafkaLeaveGroup(ctx context.Context, msg *types.MsgKafkaLeaveGroup) (*types.MsgKafkaLeaveGroupResponse, error) {
	if err := m.k.KafkaLeaveGroup(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgKafkaLeaveGroupResponse{}, nil
}

func (m msgServer) DeleteRecords(ctx context.Context, msg *types.MsgDeleteRecords) (*types.MsgDeleteRecordsResponse, error) {
	results, err := m.k.DeleteRecords(ctx, msg)
	if err != nil {
		return nil, err
	}
	return &types.MsgDeleteRecordsResponse{Results: results}, nil
}

func (m msgServer) DeleteGroupOffsets(ctx context.Context, msg *types.MsgDeleteGroupOffsets) (*types.MsgDeleteGroupOffsetsResponse, error) {
	if err := m.k.DeleteGroupOffsets(ctx, msg); err != nil {
		return nil, err
	}
	return &types.MsgDeleteGroupOffsetsResponse{}, nil
}
