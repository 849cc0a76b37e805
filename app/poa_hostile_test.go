package app_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	cmttypes "github.com/cometbft/cometbft/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/baseapp"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	"github.com/cosmos/cosmos-sdk/testutil/mock"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	govkeeper "github.com/cosmos/cosmos-sdk/x/gov/keeper"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"

	"github.com/bftlog/bftlog/app"
	poakeeper "github.com/bftlog/bftlog/x/poa/keeper"
	poatypes "github.com/bftlog/bftlog/x/poa/types"
)

// chainWithValidators is a bftlog app after its genesis block, with a genesis validator (the
// validator tombstoned, as after double signing) and one funded account.
func chainWithValidators(t *testing.T) (*app.App, sdk.Context, []sdk.ValAddress, sdk.AccAddress) {
	t.Helper()
	a := app.New(log.NewNopLogger(), dbm.NewMemDB(), nil, true, simtestutil.NewAppOptionsWithFlagHome(t.TempDir()), baseapp.SetChainID("hostile"))
	var vals []*cmttypes.Validator
	for i := 0; i < 1; i++ { // the SDK helper funds the bonded pool for one validator only
		pk, err := mock.NewPV().GetPubKey()
		require.NoError(t, err)
		vals = append(vals, cmttypes.NewValidator(pk, 1))
	}
	valSet := cmttypes.NewValidatorSet(vals)
	priv := secp256k1.GenPrivKey()
	acc := authtypes.NewBaseAccount(priv.PubKey().Address().Bytes(), priv.PubKey(), 0, 0)
	balance := banktypes.Balance{Address: acc.GetAddress().String(), Coins: sdk.NewCoins(sdk.NewCoin(sdk.DefaultBondDenom, sdkmath.NewInt(1e15)))}
	gen, err := simtestutil.GenesisStateWithValSet(a.AppCodec(), a.DefaultGenesis(), valSet, []authtypes.GenesisAccount{acc}, balance)
	require.NoError(t, err)
	state, err := json.Marshal(gen)
	require.NoError(t, err)
	_, err = a.InitChain(&abci.RequestInitChain{ChainId: "hostile", ConsensusParams: simtestutil.DefaultConsensusParams, AppStateBytes: state})
	require.NoError(t, err)
	_, err = a.FinalizeBlock(&abci.RequestFinalizeBlock{Height: 1, NextValidatorsHash: valSet.Hash()})
	require.NoError(t, err)
	_, err = a.Commit()
	require.NoError(t, err)
	ctx := a.NewUncachedContext(false, cmtproto.Header{ChainID: "hostile", Height: 2})
	var ops []sdk.ValAddress
	for _, v := range valSet.Validators {
		ops = append(ops, sdk.ValAddress(v.Address))
	}
	cons := sdk.ConsAddress(valSet.Validators[0].Address)
	require.NoError(t, a.SlashingKeeper.SetValidatorSigningInfo(ctx, cons, slashingtypes.NewValidatorSigningInfo(cons, 1, 0, ctx.BlockTime(), false, 0)))
	require.NoError(t, a.SlashingKeeper.Tombstone(ctx, cons))
	return a, ctx, ops, acc.GetAddress()
}

// validatorState is everything x/poa moves: admissions, the staking validators and the stake
// supply.
func validatorState(t *testing.T, a *app.App, ctx sdk.Context) string {
	t.Helper()
	gs, err := a.PoaKeeper.ExportGenesis(ctx)
	require.NoError(t, err)
	vals, err := a.StakingKeeper.GetAllValidators(ctx)
	require.NoError(t, err)
	out := a.AppCodec().MustMarshalJSON(gs)
	for i := range vals {
		out = append(out, a.AppCodec().MustMarshalJSON(&vals[i])...)
	}
	return string(out) + a.BankKeeper.GetSupply(ctx, sdk.DefaultBondDenom).String()
}

// Every x/poa message with hostile values fails with its specific error and leaves admissions,
// validators and supply exactly as they were.
func TestAttackPoaHostileInputChangesNothing(t *testing.T) {
	a, ctx, ops, alice := chainWithValidators(t)
	msgs := poakeeper.NewMsgServerImpl(a.PoaKeeper)
	gov := a.PoaKeeper.Authority()
	ok, tomb := ops[0].String(), ops[0].String()
	unknown := sdk.ValAddress(strings.Repeat("u", 20)).String()
	badOps := []string{"", "bftlogvaloper1", alice.String(), "cosmosvaloper1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", strings.Repeat("z", 500), ok + "\x00"}
	badPowers := []int64{0, -1, math.MinInt64, poatypes.MaxPower + 1, math.MaxInt64}

	type tc struct {
		name string
		run  func() error
		want error
	}
	var cases []tc
	for _, signer := range []string{"", alice.String(), strings.ToUpper(gov), gov + "x"} {
		cases = append(cases,
			tc{"admit signed by " + signer, func() error {
				_, err := msgs.AdmitValidator(ctx, &poatypes.MsgAdmitValidator{Authority: signer, Operator: unknown, Power: 1})
				return err
			}, poatypes.ErrUnauthorized},
			tc{"set power signed by " + signer, func() error {
				_, err := msgs.SetValidatorPower(ctx, &poatypes.MsgSetValidatorPower{Authority: signer, Operator: ok, Power: 5})
				return err
			}, poatypes.ErrUnauthorized},
			tc{"remove signed by " + signer, func() error {
				_, err := msgs.RemoveValidator(ctx, &poatypes.MsgRemoveValidator{Authority: signer, Operator: ok})
				return err
			}, poatypes.ErrUnauthorized})
	}
	for _, p := range badPowers {
		cases = append(cases,
			tc{"admit with power " + sdkmath.NewInt(p).String(), func() error {
				_, err := msgs.AdmitValidator(ctx, &poatypes.MsgAdmitValidator{Authority: gov, Operator: unknown, Power: p})
				return err
			}, poatypes.ErrInvalidPower},
			tc{"set power " + sdkmath.NewInt(p).String(), func() error {
				_, err := msgs.SetValidatorPower(ctx, &poatypes.MsgSetValidatorPower{Authority: gov, Operator: ok, Power: p})
				return err
			}, poatypes.ErrInvalidPower})
	}
	for _, op := range badOps {
		cases = append(cases,
			tc{"admit operator " + op, func() error {
				_, err := msgs.AdmitValidator(ctx, &poatypes.MsgAdmitValidator{Authority: gov, Operator: op, Power: 1})
				return err
			}, poatypes.ErrInvalidAddr},
			tc{"set power of operator " + op, func() error {
				_, err := msgs.SetValidatorPower(ctx, &poatypes.MsgSetValidatorPower{Authority: gov, Operator: op, Power: 1})
				return err
			}, poatypes.ErrInvalidAddr},
			tc{"remove operator " + op, func() error {
				_, err := msgs.RemoveValidator(ctx, &poatypes.MsgRemoveValidator{Authority: gov, Operator: op})
				return err
			}, poatypes.ErrInvalidAddr})
	}
	cases = append(cases,
		tc{"re-admit a tombstoned validator", func() error {
			_, err := msgs.AdmitValidator(ctx, &poatypes.MsgAdmitValidator{Authority: gov, Operator: tomb, Power: 1})
			return err
		}, poatypes.ErrTombstoned},
		tc{"set power of an operator never admitted", func() error {
			_, err := msgs.SetValidatorPower(ctx, &poatypes.MsgSetValidatorPower{Authority: gov, Operator: unknown, Power: 1})
			return err
		}, poatypes.ErrNotAdmitted},
		tc{"remove an operator never admitted", func() error {
			_, err := msgs.RemoveValidator(ctx, &poatypes.MsgRemoveValidator{Authority: gov, Operator: unknown})
			return err
		}, poatypes.ErrNotAdmitted},
		tc{"query admission of a malformed operator", func() error {
			_, err := poakeeper.NewQueryServer(a.PoaKeeper).Admission(ctx, &poatypes.QueryAdmissionRequest{Operator: "bftlog1\x00"})
			return err
		}, poatypes.ErrInvalidAddr},
		tc{"query admission without a request", func() error {
			_, err := poakeeper.NewQueryServer(a.PoaKeeper).Admission(ctx, nil)
			return err
		}, poatypes.ErrInvalidAddr},
		// Nested: a proposal carrying an admission that names a signer other than gov.
		tc{"proposal with an admission not signed by gov", func() error {
			inner, err := codectypes.NewAnyWithValue(&poatypes.MsgAdmitValidator{Authority: alice.String(), Operator: unknown, Power: 1})
			require.NoError(t, err)
			_, err = govkeeper.NewMsgServerImpl(a.GovKeeper).SubmitProposal(ctx, &govv1.MsgSubmitProposal{
				Messages: []*codectypes.Any{inner}, Proposer: alice.String(), Title: "t", Summary: "s",
				InitialDeposit: sdk.NewCoins(sdk.NewCoin(sdk.DefaultBondDenom, sdkmath.NewInt(1e7))),
			})
			return err
		}, govtypes.ErrInvalidSigner},
	)

	before := validatorState(t, a, ctx)
	for _, c := range cases {
		err := c.run()
		require.ErrorIs(t, err, c.want, c.name)
		require.Equal(t, before, validatorState(t, a, ctx), "%s changed state", c.name)
	}
	t.Logf("%d hostile x/poa inputs refused with their error; state unchanged", len(cases))
}
