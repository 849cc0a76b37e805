package types

import (
	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/legacy"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/msgservice"
)

// RegisterLegacyAminoCodec registers amino names for explorers and amino-JSON signing.
func RegisterLegacyAminoCodec(cdc *codec.LegacyAmino) {
	legacy.RegisterAminoMsg(cdc, &MsgAdmitValidator{}, "bftlog/poa/MsgAdmitValidator")
	legacy.RegisterAminoMsg(cdc, &MsgSetValidatorPower{}, "bftlog/poa/MsgSetValidatorPower")
	legacy.RegisterAminoMsg(cdc, &MsgRemoveValidator{}, "bftlog/poa/MsgRemoveValidator")
	legacy.RegisterAminoMsg(cdc, &MsgSetDataPlaneEndpoint{}, "bftlog/poa/MsgSetDataPlaneEndpoint")
}

// RegisterInterfaces registers the module's messages.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil), &MsgAdmitValidator{}, &MsgSetValidatorPower{}, &MsgRemoveValidator{}, &MsgSetDataPlaneEndpoint{})
	msgservice.RegisterMsgServiceDesc(registry, &_Msg_serviceDesc)
}
