package topics

import (
	"cosmossdk.io/core/address"
	"cosmossdk.io/core/appmodule"
	corestore "cosmossdk.io/core/store"
	"cosmossdk.io/depinject"

	"github.com/cosmos/cosmos-sdk/codec"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
	"github.com/bftlog/bftlog/x/topics/types/modulev1"
)

func init() {
	appmodule.Register(&modulev1.Module{}, appmodule.Provide(ProvideModule))
}

// ModuleInputs are what x/topics needs from the app.
type ModuleInputs struct {
	depinject.In

	Config       *modulev1.Module
	Cdc          codec.Codec
	StoreService corestore.KVStoreService
	AddressCodec address.Codec
	// BankKeeper escrows topic deposits in the module account.
	BankKeeper types.BankKeeper
	// RecordStore keeps record batch bytes outside IAVL (keeper.NewRecordStore); without it
	// they stay in the module store.
	RecordStore *keeper.RecordStore `optional:"true"`
}

// ModuleOutputs are what x/topics gives the app.
type ModuleOutputs struct {
	depinject.Out

	TopicsKeeper keeper.Keeper
	Module       appmodule.AppModule
}

// ProvideModule builds the keeper and module; the authority defaults to the gov module account.
func ProvideModule(in ModuleInputs) ModuleOutputs {
	authority := authtypes.NewModuleAddress(govtypes.ModuleName)
	if in.Config.Authority != "" {
		authority = authtypes.NewModuleAddressOrBech32Address(in.Config.Authority)
	}
	authorityStr, err := in.AddressCodec.BytesToString(authority)
	if err != nil {
		panic(err)
	}
	k := keeper.NewKeeper(in.Cdc, in.AddressCodec, in.StoreService, authorityStr).WithBankKeeper(in.BankKeeper)
	if in.RecordStore != nil {
		k = k.WithRecordStore(*in.RecordStore)
	}
	return ModuleOutputs{TopicsKeeper: k, Module: NewAppModule(in.Cdc, k)}
}
