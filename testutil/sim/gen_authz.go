package sim

import (
	"context"
	"slices"
	"time"

	"cosmossdk.io/x/feegrant"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/tx/signing"
	authsign "github.com/cosmos/cosmos-sdk/x/auth/signing"
	"github.com/cosmos/cosmos-sdk/x/authz"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Grants: topic owners' ProduceAuthorizations run by their grantees (MsgExec of MsgProduce),
// and fee allowances paying whole transactions (fee granter). A hostile grantee also produces
// outside its grant, which must be refused (topics/52).

// grantActions are the grant writers, drawn in one transaction of six.
var grantActions = []action{
	{"grant_produce", 2, 2, (*gen).grantProduce},
	{"exec_produce", 6, 4, (*gen).execProduce},
	{"fee_grant", 2, 1, (*gen).feeGrant},
}

// grantMsgs writes a grant message for a (or nil) with the grants stream in place of r.
func (g *gen) grantMsgs(a int) []sdk.Msg {
	if g.grants.Intn(6) != 0 {
		return nil
	}
	main := g.r
	g.r = g.grants
	defer func() { g.r = main }()
	return g.pickFrom(grantActions, a)(g, a)
}

// produceGrant is a ProduceAuthorization in the committed state.
type produceGrant struct {
	granter, grantee string
	topics           []string
}

// readGrants adds the grants and allowances to w.
func readGrants(a *app.App, ctx sdk.Context, w *world) error {
	// What has expired by the block's time is refused even before it is pruned: not offered.
	now := ctx.BlockTime()
	a.AuthzKeeper.IterateGrants(ctx, func(granter, grantee sdk.AccAddress, g authz.Grant) bool {
		if g.Expiration != nil && !g.Expiration.After(now) {
			return false
		}
		if auth, ok := g.Authorization.GetCachedValue().(*types.ProduceAuthorization); ok {
			w.grants = append(w.grants, produceGrant{granter.String(), grantee.String(), auth.Topics})
		}
		return false
	})
	w.allowances = map[string][]string{}
	return a.FeeGrantKeeper.IterateAllFeeAllowances(ctx, func(g feegrant.Grant) bool {
		if allowance, err := g.GetGrant(); err == nil {
			if end, err := allowance.ExpiresAt(); err == nil && end != nil && !end.After(now) {
				return false
			}
		}
		w.allowances[g.Grantee] = append(w.allowances[g.Grantee], g.Granter)
		return false
	})
}

// other is an account other than a.
func (g *gen) other(a int) int {
	b := g.someone()
	if b == a {
		b = (a + 1) % len(g.c.addrs)
	}
	return b
}

// grantProduce: a lets another account produce in its name to one or two topics.
func (g *gen) grantProduce(a int) []sdk.Msg {
	var topics []string
	for i := 0; i < 2; i++ {
		if t := g.anyTopic(); t != nil && !slices.Contains(topics, t.Name) {
			topics = append(topics, t.Name)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	m, err := authz.NewMsgGrant(g.c.addrs[a], g.c.addrs[g.other(a)], types.NewProduceAuthorization(topics...), g.expiry(a))
	if err != nil {
		panic(err)
	}
	return []sdk.Msg{m}
}

// execProduce: a produces as a granter's grantee, inside the grant (a hostile account also
// outside it: refused).
func (g *gen) execProduce(a int) []sdk.Msg {
	var mine []produceGrant
	for _, pg := range g.w.grants {
		if pg.grantee == g.addr(a) {
			mine = append(mine, pg)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	pg := mine[g.r.Intn(len(mine))]
	name := pg.topics[g.r.Intn(len(pg.topics))]
	if g.hostile[a] && g.oneOf(2) {
		for _, t := range g.w.topics {
			if !slices.Contains(pg.topics, t.Name) {
				name = t.Name
				g.refused("produce outside the grant", "topics/52")
				break
			}
		}
	}
	t := g.topicNamed(name)
	if t == nil {
		return nil
	}
	b := g.batch(t, uint32(g.r.Intn(int(t.Partitions))), 1+g.r.Intn(8))
	exec := authz.NewMsgExec(g.c.addrs[a], []sdk.Msg{&types.MsgProduce{Producer: pg.granter, Batches: []types.ProduceBatch{b}}})
	return []sdk.Msg{&exec}
}

// expiry is a grant's or an allowance's end: none for half of them, else minutes after the
// block's time; a hostile account's all end at one instant (the next whole ten minutes), so
// x/authz's and x/feegrant's bounded prunes meet many entries due at once.
func (g *gen) expiry(a int) *time.Time {
	if g.oneOf(2) {
		return nil
	}
	end := g.now.Add(time.Duration(1+g.r.Intn(30)) * time.Minute)
	if g.hostile[a] {
		end = g.now.Truncate(10 * time.Minute).Add(10 * time.Minute)
	}
	return &end
}

// feeGrant: a pays another account's fees, up to about 25 of the simulation's transactions.
func (g *gen) feeGrant(a int) []sdk.Msg {
	b := g.other(a)
	if slices.Contains(g.w.allowances[g.addr(b)], g.addr(a)) {
		return nil // one allowance per pair: another is refused
	}
	limit := sdk.NewCoins(sdk.NewCoin(g.w.params.MinGasPrice.Denom, g.w.params.MinGasPrice.Amount.MulInt64(25*signGas).Ceil().TruncateInt()))
	m, err := feegrant.NewMsgGrantAllowance(&feegrant.BasicAllowance{SpendLimit: limit, Expiration: g.expiry(a)}, g.c.addrs[a], g.c.addrs[b])
	if err != nil {
		panic(err)
	}
	return []sdk.Msg{m}
}

// feePayer is a granter whose allowance pays a's next transaction, for one in three of an
// account that has one, or nil.
func (g *gen) feePayer(a int) sdk.AccAddress {
	granters := g.w.allowances[g.addr(a)]
	if len(granters) == 0 || g.grants.Intn(3) != 0 {
		return nil
	}
	return sdk.MustAccAddressFromBech32(granters[g.grants.Intn(len(granters))])
}

// signGranted is sign with the fee paid by granter's allowance.
func (c *chain) signGranted(a int, msgs []sdk.Msg, fee sdk.Coins, seq uint64, granter sdk.AccAddress) ([]byte, error) {
	cfg := c.main.app.TxConfig()
	priv := c.keys[a]
	sig := signing.SignatureV2{PubKey: priv.PubKey(), Data: &signing.SingleSignatureData{SignMode: signing.SignMode_SIGN_MODE_DIRECT}, Sequence: seq}
	b := cfg.NewTxBuilder()
	if err := b.SetMsgs(msgs...); err != nil {
		return nil, err
	}
	b.SetFeeAmount(fee)
	b.SetGasLimit(signGas)
	b.SetFeeGranter(granter)
	if err := b.SetSignatures(sig); err != nil {
		return nil, err
	}
	bytes, err := authsign.GetSignBytesAdapter(context.Background(), cfg.SignModeHandler(), signing.SignMode_SIGN_MODE_DIRECT,
		authsign.SignerData{Address: c.addrs[a].String(), ChainID: chainID, AccountNumber: c.nums[a], Sequence: seq, PubKey: priv.PubKey()}, b.GetTx())
	if err != nil {
		return nil, err
	}
	if sig.Data.(*signing.SingleSignatureData).Signature, err = priv.Sign(bytes); err != nil {
		return nil, err
	}
	if err := b.SetSignatures(sig); err != nil {
		return nil, err
	}
	return cfg.TxEncoder()(b.GetTx())
}
