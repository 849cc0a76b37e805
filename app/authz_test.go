package app_test

import (
	"fmt"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	storetypes "cosmossdk.io/store/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	authzkeeper "github.com/cosmos/cosmos-sdk/x/authz/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	poatypes "github.com/bftlog/bftlog/x/poa/types"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// grant is owner's x/authz grant of auth to grantee, without expiry.
func grant(t *testing.T, owner, grantee sdk.AccAddress, auth authz.Authorization) *authz.MsgGrant {
	t.Helper()
	msg, err := authz.NewMsgGrant(owner, grantee, auth, nil)
	require.NoError(t, err)
	return msg
}

// exec is grantee's MsgExec of msgs.
func exec(grantee sdk.AccAddress, msgs ...sdk.Msg) *authz.MsgExec {
	m := authz.NewMsgExec(grantee, msgs)
	return &m
}

// refused runs account i's transaction in a block and returns its result, which must be a
// refusal after the ante handler (the sequence moves on).
func (c *feeChain) refused(i int, gas uint64, msgs ...sdk.Msg) (codespace string, code uint32, gasUsed int64) {
	c.t.Helper()
	r := c.block(c.tx(i, c.fee(gas), gas, msgs...))[0]
	require.NotZero(c.t, r.Code, "refused")
	c.seqs[i]++
	return r.Codespace, r.Code, r.GasUsed
}

// A topic owner authorizes a gateway to produce in its name to one topic (ProduceAuthorization).
// The gateway's MsgExec of MsgProduce appends records whose producer is the owner, and pays the
// same per-byte gas as the owner's own MsgProduce (plus the grant's read); to a topic the grant
// does not name it is refused with x/topics' code 52 and appends nothing; an account without a
// grant, and the gateway once the grant is revoked, are refused with x/authz's "authorization
// not found".
func TestAttackProduceGrantIsScopedToItsTopics(t *testing.T) {
	c := newFeeChain(t, 1e15, 1e15, 1e15)
	owner, gateway, stranger := c.addr(0), c.addr(1), c.addr(2)
	c.deliver(0, 2_000_000, createMsg(owner, "orders", 1))
	c.deliver(0, 2_000_000, createMsg(owner, "secrets", 1))
	c.deliver(0, 2_000_000, grant(t, owner, gateway, topicstypes.NewProduceAuthorization("orders")))

	const gas = 20_000_000
	bare := c.deliver(0, gas, produceMsg(owner, "orders", 100, 1000))
	wrapped := c.deliver(1, gas, exec(gateway, produceMsg(owner, "orders", 100, 1000)))
	t.Logf("100 records of 1,000 B: the owner's MsgProduce %d gas, the gateway's MsgExec of it %d gas (+%d)",
		bare.GasUsed, wrapped.GasUsed, wrapped.GasUsed-bare.GasUsed)
	require.GreaterOrEqual(t, wrapped.GasUsed, bare.GasUsed, "the wrapped produce pays at least the bare one's gas")
	recs := fetchFrom(t, c, "orders", 100)
	require.Len(t, recs.Records, 100)
	require.Equal(t, owner.String(), recs.Records[0].Producer, "the records are the owner's")

	space, code, used := c.refused(1, gas, exec(gateway, produceMsg(owner, "secrets", 100, 1000)))
	t.Logf("MsgExec to a topic outside the grant: %s/%d, %d gas used", space, code, used)
	require.Equal(t, topicstypes.ErrTopicNotAuthorized.Codespace(), space)
	require.Equal(t, topicstypes.ErrTopicNotAuthorized.ABCICode(), code)
	// One batch outside the grant refuses the whole message.
	mixed := produceMsg(owner, "orders", 10, 100)
	mixed.Batches = append(mixed.Batches, produceMsg(owner, "secrets", 10, 100).Batches...)
	space, code, _ = c.refused(1, gas, exec(gateway, mixed))
	require.Equal(t, topicstypes.ErrTopicNotAuthorized.ABCICode(), code, space)
	require.Empty(t, fetchFrom(t, c, "secrets", 0).Records, "nothing appended to secrets")
	require.Len(t, fetchFrom(t, c, "orders", 0).Records, 200, "nor to orders by the mixed message")

	space, code, _ = c.refused(2, gas, exec(stranger, produceMsg(owner, "orders", 1, 10)))
	require.Equal(t, authz.ErrNoAuthorizationFound.Codespace(), space)
	require.Equal(t, authz.ErrNoAuthorizationFound.ABCICode(), code)

	revoke := authz.NewMsgRevoke(owner, gateway, sdk.MsgTypeURL(&topicstypes.MsgProduce{}))
	c.deliver(0, 2_000_000, &revoke)
	space, code, _ = c.refused(1, gas, exec(gateway, produceMsg(owner, "orders", 1, 10)))
	require.Equal(t, authz.ErrNoAuthorizationFound.ABCICode(), code, space)
	require.Len(t, fetchFrom(t, c, "orders", 0).Records, 200)
}

// A grant gives no more than the granter has: a grantee produces to a topic the grant names
// but the granter may not produce to, and is refused as the granter would be.
func TestProduceGrantNeedsTheGrantersRight(t *testing.T) {
	c := newFeeChain(t, 1e15, 1e15, 1e15)
	owner, granter, gateway := c.addr(0), c.addr(1), c.addr(2)
	c.deliver(0, 2_000_000, &topicstypes.MsgCreateTopic{Owner: owner.String(), Name: "audit", Partitions: 1,
		Config: topicstypes.TopicConfig{ProducerPolicy: topicstypes.PRODUCER_POLICY_ALLOWLIST, AllowedProducers: []string{owner.String()}}})
	c.deliver(1, 2_000_000, grant(t, granter, gateway, topicstypes.NewProduceAuthorization("audit")))
	space, code, _ := c.refused(2, 20_000_000, exec(gateway, produceMsg(granter, "audit", 1, 10)))
	require.Equal(t, topicstypes.ErrUnauthorizedProducer.ABCICode(), code, space)
}

// Grants are checked when made: no topic, a topic twice or an invalid name are refused.
func TestProduceAuthorizationValidateBasic(t *testing.T) {
	require.NoError(t, topicstypes.NewProduceAuthorization("a", "b").ValidateBasic())
	for _, bad := range [][]string{nil, {"a", "a"}, {"bad name"}, make([]string, topicstypes.MaxAuthorizedTopics+1)} {
		require.Error(t, topicstypes.NewProduceAuthorization(bad...).ValidateBasic(), "%q", bad)
	}
}

// x/poa's rule that voting power changes only by governance holds inside MsgExec: a delegation
// the delegator authorized its grantee to make is refused before any fee is taken, as the
// delegator's own is.
func TestAttackMsgExecOfStakingRefused(t *testing.T) {
	c := newFeeChain(t, 1e15, 1e15)
	delegator, grantee := c.addr(0), c.addr(1)
	vals, err := c.app.StakingKeeper.GetAllValidators(c.ctx())
	require.NoError(t, err)
	delegate := &stakingtypes.MsgDelegate{DelegatorAddress: delegator.String(), ValidatorAddress: vals[0].OperatorAddress, Amount: sdk.NewInt64Coin(sdk.DefaultBondDenom, 1_000_000)}
	c.deliver(0, 2_000_000, grant(t, delegator, grantee, authz.NewGenericAuthorization(sdk.MsgTypeURL(delegate))))
	before := c.balance(grantee)
	const gas = 2_000_000
	r := c.block(c.tx(1, c.fee(gas), gas, exec(grantee, delegate)))[0]
	t.Logf("MsgExec of MsgDelegate: %s/%d, %d gas used, fee taken %s", r.Codespace, r.Code, r.GasUsed, before.Sub(c.balance(grantee)))
	require.Equal(t, poatypes.ErrBlockedMsg.Codespace(), r.Codespace)
	require.Equal(t, poatypes.ErrBlockedMsg.ABCICode(), r.Code)
	require.Equal(t, before, c.balance(grantee), "refused before the fee")
	tokens := vals[0].Tokens
	vals, err = c.app.StakingKeeper.GetAllValidators(c.ctx())
	require.NoError(t, err)
	require.Equal(t, tokens, vals[0].Tokens, "no stake moved")
}

// Expired grants are pruned by x/authz's BeginBlock, in blocks without transactions too; an
// expired grant is refused before then.
func TestExpiredProduceGrantIsRefusedAndPruned(t *testing.T) {
	c := newFeeChain(t, 1e15, 1e15)
	owner, gateway := c.addr(0), c.addr(1)
	c.deliver(0, 2_000_000, createMsg(owner, "orders", 1))
	now := c.ctx().BlockTime()
	end := now.Add(time.Hour)
	msg, err := authz.NewMsgGrant(owner, gateway, topicstypes.NewProduceAuthorization("orders"), &end)
	require.NoError(t, err)
	c.deliver(0, 2_000_000, msg)
	grants, err := c.app.AuthzKeeper.GetAuthorizations(c.ctx(), gateway, owner)
	require.NoError(t, err)
	require.Len(t, grants, 1)
	c.blockAt(end.Add(time.Second))
	grants, err = c.app.AuthzKeeper.GetAuthorizations(c.ctx(), gateway, owner)
	require.NoError(t, err)
	require.Empty(t, grants, "pruned at the first block past its end")
	space, code, _ := c.refused(1, 2_000_000, exec(gateway, produceMsg(owner, "orders", 1, 10)))
	require.Equal(t, authz.ErrNoAuthorizationFound.ABCICode(), code, space)
}

// blockAt runs an empty block at time at and commits it.
func (c *feeChain) blockAt(at time.Time) {
	c.t.Helper()
	_, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Time: at})
	require.NoError(c.t, err)
	_, err = c.app.Commit()
	require.NoError(c.t, err)
	c.height++
}

// grantQueueLen counts x/authz's grant queue entries (granter, grantee, expiry).
func (c *feeChain) grantQueueLen() int {
	c.t.Helper()
	it := c.ctx().KVStore(c.app.GetKey(authzkeeper.StoreKey)).Iterator(authzkeeper.GrantQueuePrefix, storetypes.PrefixEndBytes(authzkeeper.GrantQueuePrefix))
	defer it.Close()
	n := 0
	for ; it.Valid(); it.Next() {
		n++
	}
	return n
}

// An account makes 450 grants, to 450 grantees, over three blocks, all ending at one instant.
// The SDK's x/authz BeginBlock would delete them all in the first block past it; here at most
// app.AuthzPrunePerBlock go per block (200, 200, 50), each with its grant.
func TestAttackExpiredGrantsPrunedInBoundedBatches(t *testing.T) {
	c := newFeeChain(t, 1e15)
	owner := c.addr(0)
	c.deliver(0, 2_000_000, createMsg(owner, "orders", 1))
	end := c.ctx().BlockTime().Add(time.Hour)
	var grantees []sdk.AccAddress
	var gasUsed int64
	for tx := 0; tx < 3; tx++ {
		var msgs []sdk.Msg
		for i := 0; i < 150; i++ {
			g := sdk.AccAddress(fmt.Appendf(nil, "grantee-%03d-%011d", tx, i))
			grantees = append(grantees, g)
			m, err := authz.NewMsgGrant(owner, g, topicstypes.NewProduceAuthorization("orders"), &end)
			require.NoError(t, err)
			msgs = append(msgs, m)
		}
		gasUsed += c.deliver(0, 60_000_000, msgs...).GasUsed
	}
	require.Equal(t, 450, c.grantQueueLen())
	t.Logf("450 grants ending at one instant: %d gas for the granter (%d per grant)", gasUsed, gasUsed/450)
	for i, left := range []int{250, 50, 0} {
		start := time.Now()
		c.blockAt(end.Add(time.Duration(i+1) * time.Second))
		t.Logf("block %d past the end: %d entries left, block ran in %s", i+1, c.grantQueueLen(), time.Since(start).Round(time.Microsecond))
		require.Equal(t, left, c.grantQueueLen())
	}
	for _, g := range []sdk.AccAddress{grantees[0], grantees[449]} {
		grants, err := c.app.AuthzKeeper.GetAuthorizations(c.ctx(), g, owner)
		require.NoError(t, err)
		require.Empty(t, grants, "each grant deleted with its entry")
	}
}
