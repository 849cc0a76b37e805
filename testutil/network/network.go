// Package network starts an in-process bftlog network (the SDK's testutil/network) with the
// real app config, for tests that need a chain but not separate processes.
package network

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	sdknetwork "github.com/cosmos/cosmos-sdk/testutil/network"

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
	net, err := sdknetwork.New(t, t.TempDir(), cfg)
	require.NoError(t, err)
	t.Cleanup(net.Cleanup)
	_, err = net.WaitForHeight(1)
	require.NoError(t, err)
	return net
}
