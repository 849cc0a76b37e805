package poa_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/core/address"
	"cosmossdk.io/math"
	storetypes "cosmossdk.io/store/types"

	addresscodec "github.com/cosmos/cosmos-sdk/codec/address"
	"github.com/cosmos/cosmos-sdk/runtime"
	"github.com/cosmos/cosmos-sdk/testutil"
	sdk "github.com/cosmos/cosmos-sdk/types"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/x/poa"
	"github.com/bftlog/bftlog/x/poa/keeper"
	"github.com/bftlog/bftlog/x/poa/types"
)

// fakeStaking has no validators; the decorator only needs admissions and the bond denom.
type fakeStaking struct{ types.StakingKeeper }

func (fakeStaking) BondDenom(context.Context) (string, error) { return "stake", nil }
func (fakeStaking) PowerReduction(context.Context) math.Int   { return sdk.DefaultPowerReduction }
func (fakeStaking) ValidatorAddressCodec() address.Codec {
	return addresscodec.NewBech32Codec("bftlogvaloper")
}
func (fakeStaking) GetAllValidators(context.Context) ([]stakingtypes.Validator, error) {
	return nil, nil
}
func (fakeStaking) GetValidator(context.Context, sdk.ValAddress) (stakingtypes.Validator, error) {
	return stakingtypes.Validator{}, stakingtypes.ErrNoValidatorFound
}

type fakeBank struct{ minted sdk.Coins }

func (b *fakeBank) MintCoins(_ context.Context, _ string, amt sdk.Coins) error {
	b.minted = b.minted.Add(amt...)
	return nil
}
func (b *fakeBank) SendCoinsFromModuleToAccount(context.Context, string, sdk.AccAddress, sdk.Coins) error {
	return nil
}
func (b *fakeBank) BurnCoins(context.Context, string, sdk.Coins) error { return nil }
func (b *fakeBank) SendCoinsFromAccountToModule(context.Context, sdk.AccAddress, string, sdk.Coins) error {
	return nil
}
func (b *fakeBank) SpendableCoin(_ context.Context, _ sdk.AccAddress, denom string) sdk.Coin {
	return sdk.NewInt64Coin(denom, 0)
}
func (b *fakeBank) GetBalance(_ context.Context, _ sdk.AccAddress, denom string) sdk.Coin {
	return sdk.NewInt64Coin(denom, 0)
}

type fakeSlashing struct{}

func (fakeSlashing) IsTombstoned(context.Context, sdk.ConsAddress) bool { return false }

func setup(t *testing.T) (sdk.Context, keeper.Keeper, poa.AnteDecorator, *fakeBank, string) {
	key := storetypes.NewKVStoreKey(types.StoreKey)
	ctx := testutil.DefaultContextWithDB(t, key, storetypes.NewTransientStoreKey("t")).Ctx.WithBlockHeight(10)
	enc := moduletestutil.MakeTestEncodingConfig(poa.AppModule{})
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	bank := &fakeBank{}
	k := keeper.NewKeeper(enc.Codec, runtime.NewKVStoreService(key), gov, fakeStaking{}, bank, fakeSlashing{})
	d := poa.NewAnteDecorator(k)
	// Before x/poa's genesis ran, genesis transactions create validators freely.
	require.NoError(t, d.Check(ctx, []sdk.Msg{&stakingtypes.MsgCreateValidator{ValidatorAddress: valoper("gentx______________"), Value: sdk.NewInt64Coin("stake", 5)}}))
	require.NoError(t, k.InitGenesis(ctx, &types.GenesisState{}))
	return ctx, k, d, bank, gov
}

func valoper(b string) string {
	s, _ := addresscodec.NewBech32Codec("bftlogvaloper").BytesToString([]byte(b))
	return s
}

func TestAnteBlocksEveryStakingPath(t *testing.T) {
	ctx, k, d, bank, gov := setup(t)
	admitted, stranger := valoper("admitted____________"), valoper("stranger____________")
	acc := sdk.AccAddress("delegator___________").String()
	require.NoError(t, k.Admit(ctx, gov, admitted, 10))
	require.Equal(t, "10000000stake", bank.minted.String(), "admission mints the stake for create-validator")
	require.ErrorIs(t, k.Admit(ctx, acc, stranger, 10), types.ErrUnauthorized)

	stake := func(n int64) sdk.Coin { return sdk.NewInt64Coin("stake", n) }
	create := func(op string, amt sdk.Coin) *stakingtypes.MsgCreateValidator {
		return &stakingtypes.MsgCreateValidator{ValidatorAddress: op, Value: amt}
	}
	blocked := map[string]sdk.Msg{
		"delegate":       &stakingtypes.MsgDelegate{DelegatorAddress: acc, ValidatorAddress: admitted, Amount: stake(1)},
		"redelegate":     &stakingtypes.MsgBeginRedelegate{DelegatorAddress: acc, ValidatorSrcAddress: admitted, ValidatorDstAddress: stranger, Amount: stake(1)},
		"undelegate":     &stakingtypes.MsgUndelegate{DelegatorAddress: acc, ValidatorAddress: admitted, Amount: stake(1)},
		"cancel unbond":  &stakingtypes.MsgCancelUnbondingDelegation{DelegatorAddress: acc, ValidatorAddress: admitted, Amount: stake(1)},
		"staking params": &stakingtypes.MsgUpdateParams{Authority: gov},
	}
	notAdmitted := map[string]sdk.Msg{
		"create by stranger": create(stranger, stake(10_000_000)),
		"unjail by stranger": &slashingtypes.MsgUnjail{ValidatorAddr: stranger},
	}
	wrongStake := map[string]sdk.Msg{
		"create with less stake": create(admitted, stake(9_999_999)),
		"create with more stake": create(admitted, stake(10_000_001)),
		"create in other denom":  create(admitted, sdk.NewInt64Coin("other", 10_000_000)),
	}
	wrap := func(m sdk.Msg) map[string]sdk.Msg {
		exec := authz.NewMsgExec(sdk.AccAddress("grantee_____________"), []sdk.Msg{m})
		execExec := authz.NewMsgExec(sdk.AccAddress("grantee_____________"), []sdk.Msg{&exec})
		prop, err := govv1.NewMsgSubmitProposal([]sdk.Msg{m}, sdk.NewCoins(), acc, "", "t", "s", false)
		require.NoError(t, err)
		return map[string]sdk.Msg{"plain": m, "in MsgExec": &exec, "in MsgExec in MsgExec": &execExec, "in gov proposal": prop}
	}
	for name, m := range blocked {
		for how, w := range wrap(m) {
			require.ErrorIs(t, d.Check(ctx, []sdk.Msg{w}), types.ErrBlockedMsg, "%s %s", name, how)
		}
	}
	for name, m := range notAdmitted {
		for how, w := range wrap(m) {
			require.ErrorIs(t, d.Check(ctx, []sdk.Msg{w}), types.ErrNotAdmitted, "%s %s", name, how)
		}
	}
	for name, m := range wrongStake {
		for how, w := range wrap(m) {
			require.ErrorIs(t, d.Check(ctx, []sdk.Msg{w}), types.ErrWrongStake, "%s %s", name, how)
		}
	}
	// Allowed: the admitted operator's exact create-validator and unjail, other messages, and
	// a harmless message next to nothing blocked.
	ok := []sdk.Msg{
		create(admitted, stake(10_000_000)),
		&slashingtypes.MsgUnjail{ValidatorAddr: admitted},
		&banktypes.MsgSend{FromAddress: acc, ToAddress: acc, Amount: sdk.NewCoins(stake(1))},
		&types.MsgAdmitValidator{Authority: gov, Operator: stranger, Power: 1},
	}
	for _, m := range ok {
		for how, w := range wrap(m) {
			require.NoError(t, d.Check(ctx, []sdk.Msg{w}), "%T %s", m, how)
		}
	}
	// One blocked message anywhere in a tx rejects the tx.
	require.ErrorIs(t, d.Check(ctx, []sdk.Msg{ok[2], blocked["delegate"]}), types.ErrBlockedMsg)

	// Removal revokes: the removed operator may neither create nor unjail.
	require.NoError(t, k.Remove(ctx, gov, admitted))
	require.ErrorIs(t, d.Check(ctx, []sdk.Msg{&slashingtypes.MsgUnjail{ValidatorAddr: admitted}}), types.ErrNotAdmitted)
	require.ErrorIs(t, k.Remove(ctx, gov, admitted), types.ErrNotAdmitted)
}
