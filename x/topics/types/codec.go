package types

import (
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/legacy"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/msgservice"
	"github.com/cosmos/cosmos-sdk/x/authz"
)

// RegisterLegacyAminoCodec registers the amino names used for amino-JSON signing and explorers.
func RegisterLegacyAminoCodec(cdc *codec.LegacyAmino) {
	legacy.RegisterAminoMsg(cdc, &MsgCreateTopic{}, "bftlog/topics/MsgCreateTopic")
	legacy.RegisterAminoMsg(cdc, &MsgUpdateTopicConfig{}, "bftlog/topics/MsgUpdateTopicConfig")
	legacy.RegisterAminoMsg(cdc, &MsgAddPartitions{}, "bftlog/topics/MsgAddPartitions")
	legacy.RegisterAminoMsg(cdc, &MsgDeleteTopic{}, "bftlog/topics/MsgDeleteTopic")
	legacy.RegisterAminoMsg(cdc, &MsgProduce{}, "bftlog/topics/MsgProduce")
	legacy.RegisterAminoMsg(cdc, &MsgUpdateParams{}, "bftlog/topics/MsgUpdateParams")
	legacy.RegisterAminoMsg(cdc, &MsgJoinGroup{}, "bftlog/topics/MsgJoinGroup")
	legacy.RegisterAminoMsg(cdc, &MsgLeaveGroup{}, "bftlog/topics/MsgLeaveGroup")
	legacy.RegisterAminoMsg(cdc, &MsgHeartbeat{}, "bftlog/topics/MsgHeartbeat")
	legacy.RegisterAminoMsg(cdc, &MsgCommitOffsets{}, "bftlog/topics/MsgCommitOffsets")
	legacy.RegisterAminoMsg(cdc, &MsgResetOffsets{}, "bftlog/topics/MsgResetOffsets")
	legacy.RegisterAminoMsg(cdc, &MsgDeleteGroup{}, "bftlog/topics/MsgDeleteGroup")
	legacy.RegisterAminoMsg(cdc, &MsgCreateGroup{}, "bftlog/topics/MsgCreateGroup")
	legacy.RegisterAminoMsg(cdc, &MsgUpdateGroupPolicy{}, "bftlog/topics/MsgUpdateGroupPolicy")
	legacy.RegisterAminoMsg(cdc, &MsgRemoveGroupMember{}, "bftlog/topics/MsgRemoveGroupMember")
	legacy.RegisterAminoMsg(cdc, &MsgTransferGroupAdmin{}, "bftlog/topics/MsgTransferGroupAdmin")
	legacy.RegisterAminoMsg(cdc, &MsgKafkaJoinGroup{}, "bftlog/topics/MsgKafkaJoinGroup")
	legacy.RegisterAminoMsg(cdc, &MsgKafkaSyncGroup{}, "bftlog/topics/MsgKafkaSyncGroup")
	legacy.RegisterAminoMsg(cdc, &MsgKafkaHeartbeat{}, "bftlog/topics/MsgKafkaHeartbeat")
	legacy.RegisterAminoMsg(cdc, &MsgConsumerGroupHeartbeat{}, "bftlog/topics/MsgConsumerGroupHeartbeat")
	legacy.RegisterAminoMsg(cdc, &MsgShareGroupHeartbeat{}, "bftlog/topics/MsgShareGroupHeartbeat")
	legacy.RegisterAminoMsg(cdc, &MsgShareFetch{}, "bftlog/topics/MsgShareFetch")
	legacy.RegisterAminoMsg(cdc, &MsgSetShareGroupConfig{}, "bftlog/topics/MsgSetShareGroupConfig")
	legacy.RegisterAminoMsg(cdc, &MsgAlterShareGroupOffsets{}, "bftlog/topics/MsgAlterShareGroupOffsets")
	legacy.RegisterAminoMsg(cdc, &MsgKafkaLeaveGroup{}, "bftlog/topics/MsgKafkaLeaveGroup")
	legacy.RegisterAminoMsg(cdc, &MsgDeleteRecords{}, "bftlog/topics/MsgDeleteRecords")
	legacy.RegisterAminoMsg(cdc, &MsgDeleteGroupOffsets{}, "bftlog/topics/MsgDeleteGroupOffsets")
	cdc.RegisterConcrete(&Params{}, "bftlog/x/topics/Params", nil)
	cdc.RegisterConcrete(&ProduceAuthorization{}, "bftlog/topics/ProduceAuthorization", nil)
}

// RegisterInterfaces registers the module's messages.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil),
		&MsgCreateTopic{},
		&MsgUpdateTopicConfig{},
		&MsgAddPartitions{},
		&MsgDeleteTopic{},
		&MsgProduce{},
		&MsgUpdateParams{},
		&MsgJoinGroup{},
		&MsgLeaveGroup{},
		&MsgHeartbeat{},
		&MsgCommitOffsets{},
		&MsgResetOffsets{},
		&MsgDeleteGroup{},
		&MsgCreateGroup{},
		&MsgUpdateGroupPolicy{},
		&MsgRemoveGroupMember{},
		&MsgTransferGroupAdmin{},
		&MsgKafkaJoinGroup{},
		&MsgKafkaSyncGroup{},
		&MsgKafkaHeartbeat{},
		&MsgConsumerGroupHeartbeat{},
		&MsgShareGroupHeartbeat{},
		&MsgShareFetch{},
		&MsgSetShareGroupConfig{},
		&MsgAlterShareGroupOffsets{},
		&MsgKafkaLeaveGroup{},
		&MsgDeleteRecords{},
		&MsgDeleteGroupOffsets{},
	)
	// A topic owner's x/authz grant to a gateway (MsgExec of MsgProduce).
	registry.RegisterImplementations((*authz.Authorization)(nil), &ProduceAuthorization{})
	msgservice.RegisterMsgServiceDesc(registry, &_Msg_serviceDesc)
}
