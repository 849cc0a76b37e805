// Package network starts an in-process bftlog network (the SDK's testutil/network) built with
// app.New, so its validators run exactly the app bftlogd runs, ante decorators included.
package network

import (
	"testing"
	"time"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	pruningtypes "cosmossdk.io/store/pruning/types"

	"github.com/cosmos/cosmos-sdk/baseapp"
	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"

	"github.com/bftlog/bftlog/app"
)

// New starts an in-process network of n validators and stops it when the test ends.
func New(t *testing.T, n int) *sdknetwork.Network {
	t.Helper()
	cfg, err := sdknetwork.DefaultConfigWithAppConfig(app.AppConfig)
	require.NoError(t, err)
	cfg.NumValidators = n
	cfg.MinGasPrices = "0stake"                // as bftlogd's default app.toml
	cfg.TimeoutCommit = 200 * time.Millisecond // bftlogd's block timing
	cfg.AppConstructor = func(val sdknetwork.ValidatorI) servertypes.Application {
		return app.New(val.GetCtx().Logger, dbm.NewMemDB(), nil, true,
			simtestutil.NewAppOptionsWithFlagHome(val.GetCtx().Config.RootDir),
			baseapp.SetPruning(pruningtypes.NewPruningOptionsFromString(val.GetAppConfig().Pruning)),
			baseapp.SetMinGasPrices(val.GetAppConfig().MinGasPrices),
			baseapp.SetChainID(cfg.ChainID),
		)
	}
	net, err := sdknetwork.New(t, t.TempDir(), cfg)
	require.NoError(t, err)
	t.Cleanup(net.Cleanup)
	_, err = net.WaitForHeight(1)
	require.NoError(t, err)
	return net
}
