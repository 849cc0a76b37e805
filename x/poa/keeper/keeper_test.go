package keeper_test

import (
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/core/address"
	"cosmossdk.io/log"
	sdkmath "cosmossdk.io/math"
	storetypes "cosmossdk.io/store/types"

	addresscodec "github.com/cosmos/cosmos-sdk/codec/address"
	"github.com/cosmos/cosmos-sdk/crypto/keys/ed25519"
	"github.com/cosmos/cosmos-sdk/runtime"
	"github.com/cosmos/cosmos-sdk/testutil/integration"
	sdk "github.com/cosmos/cosmos-sdk/types"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"
	"github.com/cosmos/cosmos-sdk/x/auth"
	authkeeper "github.com/cosmos/cosmos-sdk/x/auth/keeper"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	"github.com/cosmos/cosmos-sdk/x/bank"
	bankkeeper "github.com/cosmos/cosmos-sdk/x/bank/keeper"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	slashingkeeper "github.com/cosmos/cosmos-sdk/x/slashing/keeper"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	"github.com/cosmos/cosmos-sdk/x/staking"
	stakingkeeper "github.com/cosmos/cosmos-sdk/x/staking/keeper"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/x/poa"
	"github.com/bftlog/bftlog/x/poa/keeper"
	"github.com/bftlog/bftlog/x/poa/types"
)

// height is the block height of the fixture's context, so admissions record it.
const height = 5

// fixture is an x/poa keeper over an in-memory multistore with the real auth, bank, staking and
// slashing keepers it drives (module accounts as in app/app_config.go).
type fixture struct {
	t        *testing.T
	ctx      sdk.Context
	k        keeper.Keeper
	msgs     types.MsgServer
	query    types.QueryServer
	staking  *stakingkeeper.Keeper
	bank     bankkeeper.BaseKeeper
	slashing slashingkeeper.Keeper
	valCodec address.Codec
	accCodec address.Codec
	gov      string
	alice    string // an ordinary account
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	enc := moduletestutil.MakeTestEncodingConfig(auth.AppModuleBasic{}, bank.AppModuleBasic{}, staking.AppModuleBasic{}, poa.AppModule{})
	keys := storetypes.NewKVStoreKeys(authtypes.StoreKey, banktypes.StoreKey, stakingtypes.StoreKey, slashingtypes.StoreKey, types.StoreKey)
	logger := log.NewNopLogger()
	cms := integration.CreateMultiStore(keys, logger)
	ctx := sdk.NewContext(cms, cmtproto.Header{Height: height, Time: time.Unix(1_700_000_000, 0).UTC()}, false, logger)

	accCodec := addresscodec.NewBech32Codec("bftlog")
	valCodec := addresscodec.NewBech32Codec("bftlogvaloper")
	consCodec := addresscodec.NewBech32Codec("bftlogvalcons")
	str := func(b []byte) string { s, err := accCodec.BytesToString(b); require.NoError(t, err); return s }
	gov := str(authtypes.NewModuleAddress(govtypes.ModuleName))

	ak := authkeeper.NewAccountKeeper(enc.Codec, runtime.NewKVStoreService(keys[authtypes.StoreKey]), authtypes.ProtoBaseAccount,
		map[string][]string{
			stakingtypes.BondedPoolName:    {authtypes.Burner, authtypes.Staking},
			stakingtypes.NotBondedPoolName: {authtypes.Burner, authtypes.Staking},
			types.ModuleName:               {authtypes.Minter, authtypes.Burner},
		}, accCodec, "bftlog", gov)
	bk := bankkeeper.NewBaseKeeper(enc.Codec, runtime.NewKVStoreService(keys[banktypes.StoreKey]), ak, nil, gov, logger)
	sk := stakingkeeper.NewKeeper(enc.Codec, runtime.NewKVStoreService(keys[stakingtypes.StoreKey]), ak, bk, gov, valCodec, consCodec)
	require.NoError(t, sk.SetParams(ctx, stakingtypes.DefaultParams()))
	slk := slashingkeeper.NewKeeper(enc.Codec, enc.Amino, runtime.NewKVStoreService(keys[slashingtypes.StoreKey]), sk, gov)
	require.NoError(t, slk.SetParams(ctx, slashingtypes.DefaultParams()))

	k := keeper.NewKeeper(enc.Codec, runtime.NewKVStoreService(keys[types.StoreKey]), gov, sk, bk, slk)
	return &fixture{
		t: t, ctx: ctx, k: k, msgs: keeper.NewMsgServerImpl(k), query: keeper.NewQueryServer(k),
		staking: sk, bank: bk, slashing: slk, valCodec: valCodec, accCodec: accCodec, gov: gov,
		alice: str([]byte("alice_______________")),
	}
}

// operator is a fresh validator operator address (bech32) for seed.
func (f *fixture) operator(seed string) (string, sdk.ValAddress) {
	f.t.Helper()
	bz := []byte(seed + "____________________")[:20]
	s, err := f.valCodec.BytesToString(bz)
	require.NoError(f.t, err)
	return s, sdk.ValAddress(bz)
}

// tokens is the stake of power (the default power reduction, 10^6).
func tokens(power int64) sdkmath.Int { return sdk.DefaultPowerReduction.MulRaw(power) }

// balance is the operator account's bond-denom balance.
func (f *fixture) balance(op sdk.ValAddress) sdkmath.Int {
	return f.bank.GetBalance(f.ctx, sdk.AccAddress(op), sdk.DefaultBondDenom).Amount
}

func (f *fixture) supply() sdkmath.Int {
	return f.bank.GetSupply(f.ctx, sdk.DefaultBondDenom).Amount
}

// createValidator sends the operator's create-validator through the staking Msg service with
// stake self-delegated, as the operator would after its admission. It returns the consensus address.
func (f *fixture) createValidator(op string, stake sdkmath.Int) sdk.ConsAddress {
	f.t.Helper()
	pk := ed25519.GenPrivKey().PubKey()
	msg, err := stakingtypes.NewMsgCreateValidator(op, pk, sdk.NewCoin(sdk.DefaultBondDenom, stake),
		stakingtypes.NewDescription("v", "", "", "", ""),
		stakingtypes.NewCommissionRates(sdkmath.LegacyNewDecWithPrec(1, 1), sdkmath.LegacyNewDecWithPrec(2, 1), sdkmath.LegacyNewDecWithPrec(1, 2)),
		sdkmath.OneInt())
	require.NoError(f.t, err)
	_, err = stakingkeeper.NewMsgServerImpl(f.staking).CreateValidator(f.ctx, msg)
	require.NoError(f.t, err)
	return sdk.ConsAddress(pk.Address())
}

// endBlock applies staking's end block: validator set updates, so created validators bond and
// jailed ones leave.
func (f *fixture) endBlock() {
	f.t.Helper()
	_, err := f.staking.EndBlocker(f.ctx)
	require.NoError(f.t, err)
}

func (f *fixture) validator(op sdk.ValAddress) stakingtypes.Validator {
	f.t.Helper()
	v, err := f.staking.GetValidator(f.ctx, op)
	require.NoError(f.t, err)
	return v
}

// admission reads the stored admission; ok is false when there is none.
func (f *fixture) admission(op sdk.ValAddress) (types.Admission, bool) {
	f.t.Helper()
	a, ok, err := f.k.IsAdmitted(f.ctx, op)
	require.NoError(f.t, err)
	return a, ok
}

func (f *fixture) admit(op string, power int64) {
	f.t.Helper()
	_, err := f.msgs.AdmitValidator(f.ctx, &types.MsgAdmitValidator{Authority: f.gov, Operator: op, Power: power})
	require.NoError(f.t, err)
}

// bondedValidator admits op at power, creates its validator with the granted stake and bonds it.
func (f *fixture) bondedValidator(seed string, power int64) (string, sdk.ValAddress, sdk.ConsAddress) {
	f.t.Helper()
	op, addr := f.operator(seed)
	f.admit(op, power)
	cons := f.createValidator(op, tokens(power))
	f.endBlock()
	require.True(f.t, f.validator(addr).IsBonded())
	return op, addr, cons
}

// state is everything x/poa moves: admissions, the staking validators and the stake supply.
func (f *fixture) state() string {
	f.t.Helper()
	gs, err := f.k.ExportGenesis(f.ctx)
	require.NoError(f.t, err)
	out := gs.String()
	vals, err := f.staking.GetAllValidators(f.ctx)
	require.NoError(f.t, err)
	for _, v := range vals {
		out += "|" + v.String()
	}
	return out + "|" + f.supply().String()
}

// requireEvent checks that the last event emitted has type typ.
func (f *fixture) requireEvent(typ string) {
	f.t.Helper()
	evs := f.ctx.EventManager().Events()
	require.NotEmpty(f.t, evs)
	require.Equal(f.t, typ, evs[len(evs)-1].Type)
}

// fund gives the operator's account power's worth of stake, as genesis accounts have.
func (f *fixture) fund(op sdk.ValAddress, power int64) {
	f.t.Helper()
	coins := sdk.NewCoins(sdk.NewCoin(sdk.DefaultBondDenom, tokens(power)))
	require.NoError(f.t, f.bank.MintCoins(f.ctx, types.ModuleName, coins))
	require.NoError(f.t, f.bank.SendCoinsFromModuleToAccount(f.ctx, types.ModuleName, sdk.AccAddress(op), coins))
}
