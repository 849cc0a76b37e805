package app

import (
	runtimev1alpha1 "cosmossdk.io/api/cosmos/app/runtime/v1alpha1"
	appv1alpha1 "cosmossdk.io/api/cosmos/app/v1alpha1"
	authmodulev1 "cosmossdk.io/api/cosmos/auth/module/v1"
	authzmodulev1 "cosmossdk.io/api/cosmos/authz/module/v1"
	bankmodulev1 "cosmossdk.io/api/cosmos/bank/module/v1"
	consensusmodulev1 "cosmossdk.io/api/cosmos/consensus/module/v1"
	distrmodulev1 "cosmossdk.io/api/cosmos/distribution/module/v1"
	evidencemodulev1 "cosmossdk.io/api/cosmos/evidence/module/v1"
	feegrantmodulev1 "cosmossdk.io/api/cosmos/feegrant/module/v1"
	genutilmodulev1 "cosmossdk.io/api/cosmos/genutil/module/v1"
	govmodulev1 "cosmossdk.io/api/cosmos/gov/module/v1"
	slashingmodulev1 "cosmossdk.io/api/cosmos/slashing/module/v1"
	stakingmodulev1 "cosmossdk.io/api/cosmos/staking/module/v1"
	txconfigv1 "cosmossdk.io/api/cosmos/tx/config/v1"
	upgrademodulev1 "cosmossdk.io/api/cosmos/upgrade/module/v1"
	"cosmossdk.io/depinject"
	"cosmossdk.io/depinject/appconfig"
	_ "cosmossdk.io/x/evidence" // registers the evidence module with depinject
	evidencetypes "cosmossdk.io/x/evidence/types"
	"cosmossdk.io/x/feegrant"
	_ "cosmossdk.io/x/feegrant/module" // registers the feegrant module with depinject
	_ "cosmossdk.io/x/upgrade"         // registers the upgrade module with depinject
	upgradetypes "cosmossdk.io/x/upgrade/types"
	"github.com/bftlog/bftlog/app/ordering"

	"github.com/cosmos/cosmos-sdk/runtime"
	"github.com/cosmos/cosmos-sdk/types/module"
	_ "github.com/cosmos/cosmos-sdk/x/auth"           // registers the auth module with depinject
	_ "github.com/cosmos/cosmos-sdk/x/auth/tx/config" // registers the "tx" config module with depinject
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	_ "github.com/cosmos/cosmos-sdk/x/authz/module" // registers the authz module with depinject
	_ "github.com/cosmos/cosmos-sdk/x/bank"         // registers the bank module with depinject
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	_ "github.com/cosmos/cosmos-sdk/x/consensus" // registers the consensus module with depinject
	consensustypes "github.com/cosmos/cosmos-sdk/x/consensus/types"
	_ "github.com/cosmos/cosmos-sdk/x/distribution" // registers the distribution module with depinject
	distrtypes "github.com/cosmos/cosmos-sdk/x/distribution/types"
	"github.com/cosmos/cosmos-sdk/x/genutil"
	genutiltypes "github.com/cosmos/cosmos-sdk/x/genutil/types"
	"github.com/cosmos/cosmos-sdk/x/gov"
	govclient "github.com/cosmos/cosmos-sdk/x/gov/client"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	_ "github.com/cosmos/cosmos-sdk/x/slashing" // registers the slashing module with depinject
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	_ "github.com/cosmos/cosmos-sdk/x/staking" // registers the staking module with depinject
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	poatypes "github.com/bftlog/bftlog/x/poa/types"
	poamodulev1 "github.com/bftlog/bftlog/x/poa/types/modulev1"
	_ "github.com/bftlog/bftlog/x/topics" // registers the topics module with depinject
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
	topicsmodulev1 "github.com/bftlog/bftlog/x/topics/types/modulev1"
)

const (
	// AppName is the name of the application (also used as the baseapp name).
	AppName = "bftlog"

	// Bech32 prefixes. Account addresses look like bftlog1..., validator
	// operator addresses bftlogvaloper1..., consensus addresses bftlogvalcons1...
	Bech32PrefixAccAddr  = "bftlog"
	Bech32PrefixAccPub   = Bech32PrefixAccAddr + "pub"
	Bech32PrefixValAddr  = Bech32PrefixAccAddr + "valoper"
	Bech32PrefixValPub   = Bech32PrefixAccAddr + "valoperpub"
	Bech32PrefixConsAddr = Bech32PrefixAccAddr + "valcons"
	Bech32PrefixConsPub  = Bech32PrefixAccAddr + "valconspub"
)

var (
	// moduleAccPerms are the module account permissions. There is no mint
	// module, so nothing has the Minter permission (no inflation).
	moduleAccPerms = []*authmodulev1.ModuleAccountPermission{
		{Account: authtypes.FeeCollectorName},
		{Account: distrtypes.ModuleName},
		{Account: stakingtypes.BondedPoolName, Permissions: []string{authtypes.Burner, stakingtypes.ModuleName}},
		{Account: stakingtypes.NotBondedPoolName, Permissions: []string{authtypes.Burner, stakingtypes.ModuleName}},
		{Account: govtypes.ModuleName, Permissions: []string{authtypes.Burner}},
		// x/poa mints the stake that gives an admitted validator its power, and burns it when
		// the power is lowered or the validator removed.
		{Account: poatypes.ModuleName, Permissions: []string{authtypes.Minter, authtypes.Burner}},
		// x/topics escrows topic and partition deposits (no mint, no burn).
		{Account: topicstypes.ModuleName},
	}

	// blockAccAddrs are module accounts that may not receive funds through
	// regular bank sends. The gov module account is allowed to receive funds.
	blockAccAddrs = []string{
		authtypes.FeeCollectorName,
		distrtypes.ModuleName,
		stakingtypes.BondedPoolName,
		stakingtypes.NotBondedPoolName,
		// Only deposits may reach the escrow, so it always equals the topics' deposits.
		topicstypes.ModuleName,
	}

	// appConfig is the depinject app configuration of bftlog.
	appConfig = appconfig.Compose(&appv1alpha1.Config{
		Modules: []*appv1alpha1.ModuleConfig{
			{
				Name: runtime.ModuleName,
				Config: appconfig.WrapAny(&runtimev1alpha1.Module{
					AppName: AppName,
					// upgrade must come first so a pending upgrade halts the
					// chain before anything else runs; auth cleans up expired
					// unordered-tx nonces (required since SDK v0.53).
					PreBlockers: []string{
						upgradetypes.ModuleName,
						authtypes.ModuleName,
					},
					// distribution runs before slashing so the validator fee
					// pool is emptied before any slashing; staking's BeginBlock
					// keeps no historical info (historical_entries 0), and
					// distribution's and slashing's run only in blocks with
					// transactions (empty_blocks.go).
					BeginBlockers: []string{
						distrtypes.ModuleName,
						slashingtypes.ModuleName,
						evidencetypes.ModuleName,
						stakingtypes.ModuleName,
						// prunes the grants expired by the block's time (writes nothing otherwise)
						authz.ModuleName,
					},
					EndBlockers: []string{
						govtypes.ModuleName,
						stakingtypes.ModuleName,
						// after staking: burns the stake its completed unbondings returned
						poatypes.ModuleName,
						topicstypes.ModuleName,
						// prunes at most 200 expired fee allowances (writes nothing otherwise)
						feegrant.ModuleName,
					},
					// x/topics moves the block's record bytes to its record store.
					Precommiters: []string{topicstypes.ModuleName},
					// Keep the store key of auth as "acc" like every SDK chain.
					OverrideStoreKeys: []*runtimev1alpha1.StoreKeyConfig{
						{
							ModuleName: authtypes.ModuleName,
							KvStoreKey: "acc",
						},
					},
					// genutil must come after staking (pools get their genesis
					// tokens first) and after auth (it reads auth params).
					// ExportGenesis is not set, so export uses this order too.
					InitGenesis: []string{
						authtypes.ModuleName,
						banktypes.ModuleName,
						distrtypes.ModuleName,
						stakingtypes.ModuleName,
						slashingtypes.ModuleName,
						govtypes.ModuleName,
						genutiltypes.ModuleName,
						poatypes.ModuleName, // after genutil: admits the genesis validators
						evidencetypes.ModuleName,
						upgradetypes.ModuleName,
						consensustypes.ModuleName,
						topicstypes.ModuleName,
						authz.ModuleName,
						feegrant.ModuleName,
					},
				}),
			},
			{
				Name: authtypes.ModuleName,
				Config: appconfig.WrapAny(&authmodulev1.Module{
					Bech32Prefix:             Bech32PrefixAccAddr,
					ModuleAccountPermissions: moduleAccPerms,
					// Unordered transactions carry no account sequence, so several
					// processes may sign with one key (gateways sharing a key, a gateway
					// and the CLI). Each costs extra gas for its nonce, kept until its
					// timeout (at most 10 minutes), so the nonce store stays paid for.
					EnableUnorderedTransactions: true,
					// Authority defaults to the gov module account.
				}),
			},
			{
				Name: banktypes.ModuleName,
				Config: appconfig.WrapAny(&bankmodulev1.Module{
					BlockedModuleAccountsOverride: blockAccAddrs,
				}),
			},
			{
				Name: stakingtypes.ModuleName,
				Config: appconfig.WrapAny(&stakingmodulev1.Module{
					Bech32PrefixValidator: Bech32PrefixValAddr,
					Bech32PrefixConsensus: Bech32PrefixConsAddr,
				}),
			},
			{
				Name:   slashingtypes.ModuleName,
				Config: appconfig.WrapAny(&slashingmodulev1.Module{}),
			},
			{
				Name:   distrtypes.ModuleName,
				Config: appconfig.WrapAny(&distrmodulev1.Module{}),
			},
			{
				Name:   govtypes.ModuleName,
				Config: appconfig.WrapAny(&govmodulev1.Module{}),
			},
			{
				Name:   consensustypes.ModuleName,
				Config: appconfig.WrapAny(&consensusmodulev1.Module{}),
			},
			{
				Name:   genutiltypes.ModuleName,
				Config: appconfig.WrapAny(&genutilmodulev1.Module{}),
			},
			{
				Name:   upgradetypes.ModuleName,
				Config: appconfig.WrapAny(&upgrademodulev1.Module{}),
			},
			{
				Name:   evidencetypes.ModuleName,
				Config: appconfig.WrapAny(&evidencemodulev1.Module{}),
			},
			{
				// A topic owner lets another account (a gateway) produce in its name: MsgExec of
				// MsgProduce, scoped by ProduceAuthorization to topics (x/topics/README.md).
				Name:   authz.ModuleName,
				Config: appconfig.WrapAny(&authzmodulev1.Module{}),
			},
			{
				// An organisation pays its producers' fees; the tx module's ante handler gets
				// the feegrant keeper through depinject, so --fee-granter deducts from the granter.
				Name:   feegrant.ModuleName,
				Config: appconfig.WrapAny(&feegrantmodulev1.Module{}),
			},
			{
				// The "tx" module provides the TxConfig and, since
				// SkipAnteHandler is false, the standard SDK ante handler
				// (ante.NewAnteHandler with auth + bank keepers) and the
				// default post handler. Keeping the ante handler here (instead
				// of setting it in New) means apps built only from AppConfig,
				// e.g. by testutil/network, behave exactly like bftlogd.
				Name:   "tx",
				Config: appconfig.WrapAny(&txconfigv1.Config{}),
			},
			{
				Name:   topicstypes.ModuleName,
				Config: appconfig.WrapAny(&topicsmodulev1.Module{}),
			},
			{
				Name:   poatypes.ModuleName,
				Config: appconfig.WrapAny(&poamodulev1.Module{}),
			},
		},
	})

	// AppConfig is the full depinject configuration of the application. Tests
	// can use it with network.DefaultConfigWithAppConfig(app.AppConfig).
	AppConfig = depinject.Configs(
		appConfig,
		depinject.Supply(
			// Custom module basics: the genesis CLI needs the concrete
			// genutil.AppModuleBasic (with the default gentx validator), and
			// gov gets its basic with (no) legacy proposal handlers.
			map[string]module.AppModuleBasic{
				genutiltypes.ModuleName: genutil.NewAppModuleBasic(genutiltypes.DefaultMessageValidator),
				govtypes.ModuleName:     gov.NewAppModuleBasic([]govclient.ProposalHandler{}),
			},
		),
		// Blocks may carry MsgOrderedTx in place of transactions (ordering.go): the app's
		// decoder, the REST API's and the CLI's read it, so explorers show such blocks.
		depinject.Invoke(ordering.RegisterInterfaces),
	)
)

// GetMaccPerms returns a copy of the module account permissions.
func GetMaccPerms() map[string][]string {
	perms := make(map[string][]string, len(moduleAccPerms))
	for _, p := range moduleAccPerms {
		perms[p.Account] = append([]string(nil), p.Permissions...)
	}
	return perms
}

// BlockedAddresses returns the module account names that are blocked from
// receiving funds.
func BlockedAddresses() map[string]bool {
	blocked := make(map[string]bool, len(blockAccAddrs))
	for _, name := range blockAccAddrs {
		blocked[name] = true
	}
	return blocked
}
