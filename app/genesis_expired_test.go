package app_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/x/feegrant"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	"github.com/cosmos/cosmos-sdk/x/authz"

	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// A relaunch from an export at a later genesis time: allowances and grants that expired by then
// (or expire exactly at it) are skipped, not a failed InitChain — x/feegrant's genesis refused
// an expired allowance and x/authz's panicked on a grant expiring at the genesis time.
func TestGenesisSkipsWhatExpiredByItsTime(t *testing.T) {
	c := newFeeChain(t, 1e15)
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := c.ctx().WithBlockTime(at)
	cdc := c.app.AppCodec()
	granter := c.addr(0)
	expired, atGenesis, live := sdk.AccAddress("grantee-expired-0000"), sdk.AccAddress("grantee-at-genesis-0"), sdk.AccAddress("grantee-live-0000000")

	allowance := func(grantee sdk.AccAddress, end time.Time) feegrant.Grant {
		g, err := feegrant.NewGrant(granter, grantee, &feegrant.BasicAllowance{Expiration: &end})
		require.NoError(t, err)
		return g
	}
	fees := &feegrant.GenesisState{Allowances: []feegrant.Grant{
		allowance(expired, at.Add(-time.Hour)), allowance(atGenesis, at), allowance(live, at.Add(time.Hour)),
	}}
	grant := func(grantee sdk.AccAddress, end time.Time) authz.GrantAuthorization {
		g, err := authz.NewGrant(at.Add(-48*time.Hour), topicstypes.NewProduceAuthorization("orders"), &end)
		require.NoError(t, err)
		return authz.GrantAuthorization{Granter: granter.String(), Grantee: grantee.String(), Authorization: g.Authorization, Expiration: &end}
	}
	grants := &authz.GenesisState{Authorization: []authz.GrantAuthorization{
		grant(expired, at.Add(-time.Hour)), grant(atGenesis, at), grant(live, at.Add(time.Hour)),
	}}

	for name, gs := range map[string]json.RawMessage{feegrant.ModuleName: cdc.MustMarshalJSON(fees), authz.ModuleName: cdc.MustMarshalJSON(grants)} {
		mod := c.app.ModuleManager.Modules[name].(module.HasGenesis)
		require.NotPanics(t, func() { mod.InitGenesis(ctx, cdc, gs) }, name)
	}
	for _, g := range []sdk.AccAddress{expired, atGenesis} {
		a, err := c.app.FeeGrantKeeper.GetAllowance(ctx, granter, g)
		require.Error(t, err, "an allowance expired by the genesis time was kept")
		require.Nil(t, a)
		auths, err := c.app.AuthzKeeper.GetAuthorizations(ctx, g, granter)
		require.NoError(t, err)
		require.Empty(t, auths, "a grant expired by the genesis time was kept")
	}
	a, err := c.app.FeeGrantKeeper.GetAllowance(ctx, granter, live)
	require.NoError(t, err)
	require.NotNil(t, a)
	auths, err := c.app.AuthzKeeper.GetAuthorizations(ctx, live, granter)
	require.NoError(t, err)
	require.Len(t, auths, 1)
}
