// Package poa is x/poa: proof of authority on top of x/staking. Governance admits validators
// with a voting power, changes powers and removes validators; an ante decorator rejects every
// staking message that would go around it.
package poa

import (
	"context"
	"encoding/json"
	"fmt"

	gwruntime "github.com/grpc-ecosystem/grpc-gateway/runtime"

	autocliv1 "cosmossdk.io/api/cosmos/autocli/v1"
	"cosmossdk.io/core/appmodule"
	corestore "cosmossdk.io/core/store"
	"cosmossdk.io/depinject"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/codec"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	slashingkeeper "github.com/cosmos/cosmos-sdk/x/slashing/keeper"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"

	"github.com/bftlog/bftlog/x/poa/keeper"
	"github.com/bftlog/bftlog/x/poa/types"
	"github.com/bftlog/bftlog/x/poa/types/modulev1"
)

var (
	_ module.AppModuleBasic   = AppModule{}
	_ module.HasGenesis       = AppModule{}
	_ module.HasServices      = AppModule{}
	_ appmodule.AppModule     = AppModule{}
	_ appmodule.HasEndBlocker = AppModule{}
)

// AppModule is the x/poa module.
type AppModule struct{ keeper keeper.Keeper }

func (AppModule) IsOnePerModuleType()      {}
func (AppModule) IsAppModule()             {}
func (AppModule) Name() string             { return types.ModuleName }
func (AppModule) ConsensusVersion() uint64 { return 1 }
func (AppModule) RegisterLegacyAminoCodec(cdc *codec.LegacyAmino) {
	types.RegisterLegacyAminoCodec(cdc)
}
func (AppModule) RegisterInterfaces(r codectypes.InterfaceRegistry) { types.RegisterInterfaces(r) }

// RegisterGRPCGatewayRoutes serves the queries over REST.
func (AppModule) RegisterGRPCGatewayRoutes(clientCtx client.Context, mux *gwruntime.ServeMux) {
	if err := types.RegisterQueryHandlerClient(context.Background(), mux, types.NewQueryClient(clientCtx)); err != nil {
		panic(err)
	}
}

// RegisterServices registers the Msg and Query services.
func (am AppModule) RegisterServices(cfg module.Configurator) {
	types.RegisterMsgServer(cfg.MsgServer(), keeper.NewMsgServerImpl(am.keeper))
	types.RegisterQueryServer(cfg.QueryServer(), keeper.NewQueryServer(am.keeper))
}

func (AppModule) DefaultGenesis(cdc codec.JSONCodec) json.RawMessage {
	return cdc.MustMarshalJSON(&types.GenesisState{})
}

func (AppModule) ValidateGenesis(cdc codec.JSONCodec, _ client.TxEncodingConfig, bz json.RawMessage) error {
	var gs types.GenesisState
	if err := cdc.UnmarshalJSON(bz, &gs); err != nil {
		return fmt.Errorf("failed to unmarshal %s genesis state: %w", types.ModuleName, err)
	}
	seen := map[string]bool{}
	for _, a := range gs.Admissions {
		if err := types.ValidatePower(a.Power); err != nil {
			return err
		}
		if seen[a.Operator] {
			return fmt.Errorf("%w: %s admitted twice", types.ErrInvalidGen, a.Operator)
		}
		seen[a.Operator] = true
	}
	if err := gs.ValidateEndpoints(); err != nil {
		return err
	}
	return gs.ValidateStake()
}

func (am AppModule) InitGenesis(ctx sdk.Context, cdc codec.JSONCodec, bz json.RawMessage) {
	var gs types.GenesisState
	cdc.MustUnmarshalJSON(bz, &gs)
	if err := am.keeper.InitGenesis(ctx, &gs); err != nil {
		panic(fmt.Errorf("x/poa genesis: %w", err))
	}
}

func (am AppModule) ExportGenesis(ctx sdk.Context, cdc codec.JSONCodec) json.RawMessage {
	gs, err := am.keeper.ExportGenesis(ctx)
	if err != nil {
		panic(err)
	}
	return cdc.MustMarshalJSON(gs)
}

// AutoCLIOptions generates the CLI; the Msgs are meant for gov proposals (see scripts/proposals).
func (AppModule) AutoCLIOptions() *autocliv1.ModuleOptions {
	return &autocliv1.ModuleOptions{
		Query: &autocliv1.ServiceCommandDescriptor{
			Service: "bftlog.poa.v1.Query",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "Admissions", Use: "admissions", Short: "List admitted validators with their state (--pending-only for those not created yet)"},
				{
					RpcMethod: "Admission", Use: "admission [operator]", Short: "Show one operator's admission",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "operator"}},
				},
				{RpcMethod: "DataPlaneEndpoints", Use: "data-plane-endpoints", Short: "List where each validator serves the data plane between validators"},
			},
		},
		Tx: &autocliv1.ServiceCommandDescriptor{
			Service: "bftlog.poa.v1.Msg",
			RpcCommandOptions: []*autocliv1.RpcCommandOptions{
				{RpcMethod: "AdmitValidator", Skip: true, GovProposal: true},
				{RpcMethod: "SetValidatorPower", Skip: true, GovProposal: true},
				{RpcMethod: "RemoveValidator", Skip: true, GovProposal: true},
				{
					RpcMethod: "SetDataPlaneEndpoint", Use: "set-data-plane-endpoint [endpoint]",
					Short:          "Set where your validator serves the data plane ([ordering] listen-address as http://host:port) and the key it signs there with: `$(bftlogd data-plane-key --operator <your address> --home <node home>)` prints --data-plane-key and --data-plane-key-proof; without them the key registered before stays (none: the consensus key signs); \"\" and no key clear both; sign with the operator's key",
					PositionalArgs: []*autocliv1.PositionalArgDescriptor{{ProtoField: "endpoint"}},
				},
			},
		},
	}
}

// EndBlock burns the stake returned by unbondings that completed in x/staking's end block.
func (am AppModule) EndBlock(ctx context.Context) error { return am.keeper.EndBlock(ctx) }

// Keeper gives the app the keeper, for its ante handler.
func (am AppModule) Keeper() keeper.Keeper { return am.keeper }

func init() {
	appmodule.Register(&modulev1.Module{}, appmodule.Provide(ProvideModule))
}

// ModuleInputs are what x/poa needs.
type ModuleInputs struct {
	depinject.In

	Config         *modulev1.Module
	Cdc            codec.Codec
	StoreService   corestore.KVStoreService
	StakingKeeper  *stakingkeeper.Keeper
	BankKeeper     types.BankKeeper
	SlashingKeeper slashingkeeper.Keeper
}

// ModuleOutputs are what x/poa gives the app.
type ModuleOutputs struct {
	depinject.Out

	PoaKeeper keeper.Keeper
	Module    appmodule.AppModule
}

// ProvideModule wires x/poa; the authority defaults to the gov module account.
func ProvideModule(in ModuleInputs) ModuleOutputs {
	authority := authtypes.NewModuleAddress(govtypes.ModuleName)
	if in.Config.Authority != "" {
		authority = authtypes.NewModuleAddressOrBech32Address(in.Config.Authority)
	}
	k := keeper.NewKeeper(in.Cdc, in.StoreService, authority.String(), in.StakingKeeper, in.BankKeeper, in.SlashingKeeper)
	return ModuleOutputs{PoaKeeper: k, Module: AppModule{keeper: k}}
}
