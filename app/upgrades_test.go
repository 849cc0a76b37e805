package app_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
	storetypes "cosmossdk.io/store/types"
	"cosmossdk.io/x/feegrant"
	upgradetypes "cosmossdk.io/x/upgrade/types"

	"github.com/cosmos/cosmos-sdk/baseapp"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/module"
	"github.com/cosmos/cosmos-sdk/x/authz"
	authzkeeper "github.com/cosmos/cosmos-sdk/x/authz/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/x/topics"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// upgradeApp is a bftlog app over an in-memory store with a home of its own (where x/upgrade
// writes upgrade-info.json when it halts).
func upgradeApp(t *testing.T) *app.App {
	t.Helper()
	return app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true, simtestutil.NewAppOptionsWithFlagHome(t.TempDir()), baseapp.SetChainID("fees"))
}

// scheduleUpgrade stores a plan, as a passed MsgSoftwareUpgrade proposal does, for the upgrade
// named name at height: x/upgrade's PreBlocker runs its handler at the start of that block.
func scheduleUpgrade(t *testing.T, c *feeChain, name string, height int64) {
	t.Helper()
	require.NoError(t, c.app.UpgradeKeeper.ScheduleUpgrade(c.ctx(), upgradetypes.Plan{Name: name, Height: height}))
}

// moduleVersions is the module version map x/upgrade has stored (the handler's fromVM).
func moduleVersions(t *testing.T, c *feeChain) module.VersionMap {
	t.Helper()
	vm, err := c.app.UpgradeKeeper.GetModuleVersionMap(c.ctx())
	require.NoError(t, err)
	return vm
}

// storesDiffer names the first key whose value differs between two apps' committed stores, in
// every module store but except's, or returns "". x/staking's historical info is left out: it
// keeps each block's header, whose app hash covers every store, except's too.
func storesDiffer(t *testing.T, a, b *feeChain, except string) string {
	t.Helper()
	for _, key := range a.app.GetStoreKeys() {
		kv, ok := key.(*storetypes.KVStoreKey)
		if !ok || kv.Name() == except {
			continue
		}
		other := b.app.GetKey(kv.Name())
		require.NotNil(t, other, kv.Name())
		ia, ib := a.ctx().KVStore(kv).Iterator(nil, nil), b.ctx().KVStore(other).Iterator(nil, nil)
		if kv.Name() == stakingtypes.StoreKey {
			ia, ib = skipPrefix(ia, stakingtypes.HistoricalInfoKey), skipPrefix(ib, stakingtypes.HistoricalInfoKey)
		}
		for ; ia.Valid() || ib.Valid(); ia.Next() {
			switch {
			case !ib.Valid():
				return fmt.Sprintf("store %s: key %x only in the first", kv.Name(), ia.Key())
			case !ia.Valid():
				return fmt.Sprintf("store %s: key %x only in the second", kv.Name(), ib.Key())
			case !bytes.Equal(ia.Key(), ib.Key()):
				return fmt.Sprintf("store %s: key %x against %x", kv.Name(), ia.Key(), ib.Key())
			case !bytes.Equal(ia.Value(), ib.Value()):
				return fmt.Sprintf("store %s: key %x holds %x against %x", kv.Name(), ia.Key(), ia.Value(), ib.Value())
			}
			ib.Next()
		}
		require.NoError(t, ia.Close())
		require.NoError(t, ib.Close())
	}
	return ""
}

// skipPrefix is it without the keys under prefix.
func skipPrefix(it storetypes.Iterator, prefix []byte) storetypes.Iterator {
	return &filtered{Iterator: it, skip: prefix}
}

type filtered struct {
	storetypes.Iterator
	skip []byte
}

func (f *filtered) Valid() bool {
	for f.Iterator.Valid() && bytes.HasPrefix(f.Iterator.Key(), f.skip) {
		f.Iterator.Next()
	}
	return f.Iterator.Valid()
}

// fetchFrom is the records of partition 0 of topic from offset on, as a Fetch at the latest
// height answers them.
func fetchFrom(t *testing.T, c *feeChain, topic string, offset uint64) *topicstypes.QueryFetchResponse {
	t.Helper()
	bz, err := (&topicstypes.QueryFetchRequest{Topic: topic, Offset: offset, MaxRecords: 10_000}).Marshal()
	require.NoError(t, err)
	res, err := c.app.Query(context.Background(), &abci.RequestQuery{Path: "/bftlog.topics.v1.Query/Fetch", Data: bz})
	require.NoError(t, err)
	require.Zero(t, res.Code, res.Log)
	var out topicstypes.QueryFetchResponse
	require.NoError(t, out.Unmarshal(res.Value))
	return &out
}

// Upgrade v3 by its plan, on a chain with topics, records and a group's committed offsets: at
// the plan's height x/upgrade runs the v3 handler, which records the upgrade as done there,
// clears the plan and keeps every module at its version (x/topics at 2). It changes no module's
// state: a twin of the chain from the same genesis, running the same blocks without the plan,
// holds the same key-value pairs in every store but x/upgrade's, and serves the same records,
// at the upgrade block and after it, when both delete records (v3's MsgDeleteRecords) and
// produce. The upgrade cannot be scheduled a second time.
func TestUpgradeV3ChangesNoModuleState(t *testing.T) {
	secret := []byte("upgrade v3")
	upgraded := newChainFrom(t, upgradeApp(t), secret, 1e15, 1e15)
	twin := newChainFrom(t, upgradeApp(t), secret, 1e15, 1e15)
	require.True(t, upgraded.app.UpgradeKeeper.HasHandler(app.UpgradeV3))
	both := func(f func(c *feeChain)) {
		f(upgraded)
		f(twin)
	}
	both(func(c *feeChain) {
		alice, bob := c.addr(0), c.addr(1)
		c.deliver(0, 2_000_000, createMsg(alice, "orders", 2))
		c.deliver(0, 20_000_000, produceMsg(alice, "orders", 50, 100))
		c.deliver(0, 1_000_000, &topicstypes.MsgCreateGroup{Admin: alice.String(), GroupId: "ledger", JoinPolicy: topicstypes.JOIN_POLICY_ANYONE})
		c.deliver(1, 5_000_000, &topicstypes.MsgJoinGroup{Member: bob.String(), GroupId: "ledger", Topics: []string{"orders"}, SessionTimeoutMs: 60_000})
		g, err := c.app.TopicsKeeper.GetGroup(c.ctx(), "ledger")
		require.NoError(t, err)
		c.deliver(1, 1_000_000, &topicstypes.MsgCommitOffsets{Member: bob.String(), GroupId: "ledger", Generation: g.Generation,
			Offsets: []topicstypes.OffsetCommit{{Topic: "orders", Partition: 0, Offset: 30}}})
	})
	require.Empty(t, storesDiffer(t, upgraded, twin, ""), "the twins start alike")
	before, res, err := fetchLatest(upgraded.app, "orders")
	require.NoError(t, err)
	require.Zero(t, res.Code, res.Log)
	require.Len(t, before.Records, 50)
	fromVM := moduleVersions(t, upgraded)
	require.Equal(t, upgraded.app.ModuleManager.GetVersionMap(), fromVM)
	require.Equal(t, uint64(topics.ConsensusVersion), fromVM[topicstypes.ModuleName])

	h := upgraded.height
	scheduleUpgrade(t, upgraded, app.UpgradeV3, h)
	plan, err := upgraded.app.UpgradeKeeper.GetUpgradePlan(upgraded.ctx())
	require.NoError(t, err)
	require.Equal(t, h, plan.Height)

	// The upgrade block carries a produce on both chains.
	both(func(c *feeChain) { c.deliver(0, 20_000_000, produceMsg(c.addr(0), "orders", 10, 100)) })
	done, err := upgraded.app.UpgradeKeeper.GetDoneHeight(upgraded.ctx(), app.UpgradeV3)
	require.NoError(t, err)
	require.Equal(t, h, done, "v3 applied at its plan's height")
	_, err = upgraded.app.UpgradeKeeper.GetUpgradePlan(upgraded.ctx())
	require.ErrorIs(t, err, upgradetypes.ErrNoUpgradePlanFound, "the plan is cleared")
	require.Equal(t, fromVM, moduleVersions(t, upgraded), "every module at its version: v3 migrates no store")
	name, at, err := upgraded.app.UpgradeKeeper.GetLastCompletedUpgrade(upgraded.ctx())
	require.NoError(t, err)
	require.Equal(t, app.UpgradeV3, name)
	require.Equal(t, h, at)
	require.Empty(t, storesDiffer(t, upgraded, twin, upgradetypes.StoreKey), "v3 changes no module's state")
	_, err = twin.app.UpgradeKeeper.GetDoneHeight(twin.ctx(), app.UpgradeV3)
	require.NoError(t, err)

	// After it, blocks go on alike on both: v3's MsgDeleteRecords, then a produce.
	both(func(c *feeChain) {
		c.deliver(0, 2_000_000, &topicstypes.MsgDeleteRecords{Authority: c.addr(0).String(),
			Partitions: []topicstypes.DeleteRecordsPartition{{Topic: "orders", Partition: 0, Offset: 25}}})
		c.deliver(0, 20_000_000, produceMsg(c.addr(0), "orders", 5, 100))
	})
	require.Empty(t, storesDiffer(t, upgraded, twin, upgradetypes.StoreKey))
	got, want := fetchFrom(t, upgraded, "orders", 25), fetchFrom(t, twin, "orders", 25)
	p, err := upgraded.app.TopicsKeeper.GetPartition(upgraded.ctx(), "orders", 0)
	require.NoError(t, err)
	require.Equal(t, [2]uint64{25, 65}, [2]uint64{p.LogStartOffset, p.HighWatermark})
	require.Equal(t, want.Records, got.Records)
	require.Len(t, got.Records, 50+10+5-25, "records below offset 25 deleted, the rest kept, new ones appended")
	require.Equal(t, uint64(25), got.Records[0].Offset)
	require.Equal(t, before.Records[25:], got.Records[:25], "the records before the upgrade, as they were")

	err = upgraded.app.UpgradeKeeper.ScheduleUpgrade(upgraded.ctx(), upgradetypes.Plan{Name: app.UpgradeV3, Height: upgraded.height + 10})
	require.ErrorContains(t, err, "already been completed")
	t.Logf("v3 applied at height %d; module versions %v; every store but upgrade equal to the twin's; %d records served alike after MsgDeleteRecords",
		done, moduleVersions(t, upgraded), len(got.Records))
}

// The edges of v3. A node that runs this binary before the plan's height refuses the block
// (x/upgrade: "BINARY UPDATED BEFORE TRIGGER"), so validators switch at that height and not
// before; nothing of the block is committed. And a chain still at x/topics consensus version 1
// (one that skipped v2) gets v2's store migration from the v3 handler: its topic stored without
// a cleanup policy gets "delete" and x/topics ends at version 2.
func TestUpgradeV3Edges(t *testing.T) {
	t.Run("binary before the height", func(t *testing.T) {
		c := newFeeChain(t, 1e15)
		c.deliver(0, 2_000_000, createMsg(c.addr(0), "orders", 1))
		scheduleUpgrade(t, c, app.UpgradeV3, c.height+1)
		last := c.app.LastBlockHeight()
		_, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height})
		require.ErrorContains(t, err, `BINARY UPDATED BEFORE TRIGGER! UPGRADE "v3"`)
		require.Equal(t, last, c.app.LastBlockHeight(), "no block committed")
		done, err := c.app.UpgradeKeeper.GetDoneHeight(c.ctx(), app.UpgradeV3)
		require.NoError(t, err)
		require.Zero(t, done)
	})

	t.Run("from x/topics version 1", func(t *testing.T) {
		c := newFeeChain(t, 1e15)
		c.deliver(0, 2_000_000, createMsg(c.addr(0), "orders", 2))
		c.deliver(0, 20_000_000, produceMsg(c.addr(0), "orders", 20, 100))
		// As a v1 node stored them: a topic config without a cleanup policy, x/topics at 1.
		ctx := c.ctx()
		k := c.app.TopicsKeeper
		v1, err := k.Topics.Get(ctx, "orders")
		require.NoError(t, err)
		v1.Config.CleanupPolicy = ""
		require.NoError(t, k.Topics.Set(ctx, "orders", v1))
		vm := moduleVersions(t, c)
		vm[topicstypes.ModuleName] = 1
		require.NoError(t, c.app.UpgradeKeeper.SetModuleVersionMap(ctx, vm))

		h := c.height
		scheduleUpgrade(t, c, app.UpgradeV3, h)
		c.finalize()
		done, err := c.app.UpgradeKeeper.GetDoneHeight(c.ctx(), app.UpgradeV3)
		require.NoError(t, err)
		require.Equal(t, h, done)
		require.Equal(t, uint64(topics.ConsensusVersion), moduleVersions(t, c)[topicstypes.ModuleName], "x/topics migrated to its version")
		require.Equal(t, c.app.ModuleManager.GetVersionMap(), moduleVersions(t, c))
		migrated, err := k.Topics.Get(c.ctx(), "orders")
		require.NoError(t, err)
		want := v1
		want.Config.CleanupPolicy = topicstypes.CleanupPolicyDelete
		require.Equal(t, want, migrated, "Migrate1to2 ran: the policy set, the rest of the topic as it was")
		recs, res, err := fetchLatest(c.app, "orders")
		require.NoError(t, err)
		require.Zero(t, res.Code, res.Log)
		require.Len(t, recs.Records, 20)
	})
}

// v4 is a binary switch like v3: blocks without transactions stop writing (empty_blocks.go),
// no module's store version moves, and it runs once. Its handler drops staking's historical
// info, which a chain before it kept for every block (10,000 of them), and sets
// historical_entries to 0, as new genesis files have it.
func TestUpgradeV4(t *testing.T) {
	c := newChainFrom(t, upgradeApp(t), []byte("upgrade v4"), 1e15)
	require.True(t, c.app.UpgradeKeeper.HasHandler(app.UpgradeV4))
	params, err := c.app.StakingKeeper.GetParams(c.ctx())
	require.NoError(t, err)
	require.Zero(t, params.HistoricalEntries, "a new chain keeps no historical info")
	params.HistoricalEntries = 10_000 // as the SDK's default genesis, before v4
	require.NoError(t, c.app.StakingKeeper.SetParams(c.ctx(), params))
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "orders", 1))
	c.finalize()
	kept, err := c.app.StakingKeeper.GetAllHistoricalInfo(c.ctx())
	require.NoError(t, err)
	require.Len(t, kept, 2, "one per block before v4")
	fromVM := moduleVersions(t, c)
	h := c.height
	scheduleUpgrade(t, c, app.UpgradeV4, h)
	c.deliver(0, 20_000_000, produceMsg(c.addr(0), "orders", 10, 100))
	done, err := c.app.UpgradeKeeper.GetDoneHeight(c.ctx(), app.UpgradeV4)
	require.NoError(t, err)
	require.Equal(t, h, done)
	require.Equal(t, fromVM, moduleVersions(t, c), "v4 migrates no store")
	kept, err = c.app.StakingKeeper.GetAllHistoricalInfo(c.ctx())
	require.NoError(t, err)
	require.Empty(t, kept, "v4 dropped the historical info")
	params, err = c.app.StakingKeeper.GetParams(c.ctx())
	require.NoError(t, err)
	require.Zero(t, params.HistoricalEntries)
	c.deliver(0, 20_000_000, produceMsg(c.addr(0), "orders", 10, 100))
	kept, err = c.app.StakingKeeper.GetAllHistoricalInfo(c.ctx())
	require.NoError(t, err)
	require.Empty(t, kept, "and keeps none after it")
	err = c.app.UpgradeKeeper.ScheduleUpgrade(c.ctx(), upgradetypes.Plan{Name: app.UpgradeV4, Height: c.height + 10})
	require.ErrorContains(t, err, "already been completed")
}

// v5 adds KIP-848 consumer groups: no store moves, and a consumer heartbeat runs after it.
func TestUpgradeV5(t *testing.T) {
	c := newChainFrom(t, upgradeApp(t), []byte("upgrade v5"), 1e15)
	require.True(t, c.app.UpgradeKeeper.HasHandler(app.UpgradeV5))
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "orders", 2))
	c.finalize()
	fromVM := moduleVersions(t, c)
	h := c.height
	scheduleUpgrade(t, c, app.UpgradeV5, h)
	c.deliver(0, 2_000_000, &topicstypes.MsgConsumerGroupHeartbeat{Owner: c.addr(0).String(), GroupId: "g", MemberId: "m", SubscribedTopicNames: []string{"orders"}})
	done, err := c.app.UpgradeKeeper.GetDoneHeight(c.ctx(), app.UpgradeV5)
	require.NoError(t, err)
	require.Equal(t, h, done)
	require.Equal(t, fromVM, moduleVersions(t, c), "v5 migrates no store")
	_, members, err := c.app.TopicsKeeper.ConsumerGroupState(c.ctx(), "g")
	require.NoError(t, err)
	require.Len(t, members, 1)
	require.Len(t, topicstypes.NewPartitionSet(members[0].Assigned), 2)
}

// v6 adds x/authz and x/feegrant. The release before had neither: its version map lacks them
// (deleted here), so the handler runs their InitGenesis, and their stores, which
// app.StoreUpgrades adds at the plan's height on a real chain (tests/e2e
// TestSoftwareUpgradeByGovernance), take grants after it. Every plan of a release without
// them adds the stores, no other.
func TestUpgradeV6(t *testing.T) {
	for _, name := range []string{app.UpgradeV2, app.UpgradeV3, app.UpgradeV4, app.UpgradeV5, app.UpgradeV6} {
		require.Equal(t, []string{authzkeeper.StoreKey, feegrant.StoreKey}, app.StoreUpgrades(name).Added, name)
	}
	require.Nil(t, app.StoreUpgrades("v7"))
	require.Nil(t, app.StoreUpgrades(""))

	c := newChainFrom(t, upgradeApp(t), []byte("upgrade v6"), 1e15, 1e15)
	require.True(t, c.app.UpgradeKeeper.HasHandler(app.UpgradeV6))
	store := c.ctx().KVStore(c.app.GetKey(upgradetypes.StoreKey))
	for _, m := range []string{authz.ModuleName, feegrant.ModuleName} {
		store.Delete(append([]byte{upgradetypes.VersionMapByte}, m...))
	}
	c.finalize()
	fromVM := moduleVersions(t, c)
	require.NotContains(t, fromVM, authz.ModuleName)
	require.NotContains(t, fromVM, feegrant.ModuleName)
	h := c.height
	scheduleUpgrade(t, c, app.UpgradeV6, h)
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "orders", 1))
	done, err := c.app.UpgradeKeeper.GetDoneHeight(c.ctx(), app.UpgradeV6)
	require.NoError(t, err)
	require.Equal(t, h, done)
	vm := moduleVersions(t, c)
	require.Equal(t, c.app.ModuleManager.GetVersionMap(), vm, "every module at its version, authz and feegrant added")

	allowance, err := feegrant.NewMsgGrantAllowance(&feegrant.BasicAllowance{SpendLimit: sdk.NewCoins(sdk.NewInt64Coin(sdk.DefaultBondDenom, 1000))}, c.addr(0), c.addr(1))
	require.NoError(t, err)
	c.deliver(0, 2_000_000, allowance, grant(t, c.addr(0), c.addr(1), topicstypes.NewProduceAuthorization("orders")))
	got, err := c.app.FeeGrantKeeper.GetAllowance(c.ctx(), c.addr(0), c.addr(1))
	require.NoError(t, err)
	require.NotNil(t, got)
	grants, err := c.app.AuthzKeeper.GetAuthorizations(c.ctx(), c.addr(1), c.addr(0))
	require.NoError(t, err)
	require.Len(t, grants, 1)
}
