package app_test

import (
	"testing"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/testutil/network"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/app"
)

// The modules every bftlog genesis must contain.
var expectedGenesisModules = []string{
	"auth", "bank", "staking", "slashing", "distribution", "gov",
	"genutil", "upgrade", "evidence", "topics", "poa",
}

func TestAppConfigWorksWithTestNetwork(t *testing.T) {
	cfg, err := network.DefaultConfigWithAppConfig(app.AppConfig)
	require.NoError(t, err)
	for _, m := range expectedGenesisModules {
		require.Contains(t, cfg.GenesisState, m)
	}
	require.NotContains(t, cfg.GenesisState, "mint")
}

func TestNew(t *testing.T) {
	a := app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true,
		simtestutil.NewAppOptionsWithFlagHome(t.TempDir()))

	require.NotNil(t, a.AppCodec())
	require.NotNil(t, a.InterfaceRegistry())
	require.NotNil(t, a.TxConfig())
	require.NotNil(t, a.LegacyAmino())
	require.NotNil(t, a.StakingKeeper)
	require.NotNil(t, a.GovKeeper)
	require.NotNil(t, a.UpgradeKeeper)
	require.NotNil(t, a.GetKey("acc"))
	require.NotNil(t, a.GetKey("bank"))
	require.Nil(t, a.GetKey("does-not-exist"))

	genesis := a.DefaultGenesis()
	for _, m := range expectedGenesisModules {
		require.Contains(t, genesis, m)
	}

	require.Equal(t, "bftlog", sdk.GetConfig().GetBech32AccountAddrPrefix())
	require.Contains(t, app.GetMaccPerms(), "fee_collector")
	require.True(t, app.BlockedAddresses()["bonded_tokens_pool"])
	require.False(t, app.BlockedAddresses()["gov"])
}
