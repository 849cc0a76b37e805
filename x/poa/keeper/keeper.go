// Package keeper holds x/poa: admissions decided by governance on top of x/staking.
package keeper

import (
	"context"
	"time"

	"cosmossdk.io/collections"
	"cosmossdk.io/core/address"
	corestore "cosmossdk.io/core/store"
	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/codec"
	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/internal/blockstep"
	"github.com/bftlog/bftlog/x/poa/types"
)

// Keeper stores admissions and moves x/staking to match them.
type Keeper struct {
	authority string
	staking   types.StakingKeeper
	bank      types.BankKeeper
	slashing  types.SlashingKeeper
	valCodec  address.Codec

	Schema      collections.Schema
	Admissions  collections.Map[[]byte, types.Admission]
	GenesisDone collections.Item[bool]
	Granted     collections.Map[[]byte, math.Int]
	Clawbacks   collections.Map[collections.Pair[time.Time, []byte], math.Int]
	// Endpoints are the data-plane endpoints operators set (endpoints.go).
	Endpoints collections.Map[[]byte, string]
	// DataPlaneKeys are the data-plane public keys operators set (endpoints.go).
	DataPlaneKeys collections.Map[[]byte, types.DataPlaneKeyRegistration]
}

// NewKeeper builds the keeper; authority is a bech32 account address (gov by default).
func NewKeeper(cdc codec.BinaryCodec, store corestore.KVStoreService, authority string, sk types.StakingKeeper, bk types.BankKeeper, slk types.SlashingKeeper) Keeper {
	sb := collections.NewSchemaBuilder(store)
	k := Keeper{
		authority: authority, staking: sk, bank: bk, slashing: slk, valCodec: sk.ValidatorAddressCodec(),
		Admissions:    collections.NewMap(sb, types.AdmissionsPrefix, "admissions", collections.BytesKey, codec.CollValue[types.Admission](cdc)),
		GenesisDone:   collections.NewItem(sb, types.GenesisDonePrefix, "genesis_done", collections.BoolValue),
		Granted:       collections.NewMap(sb, types.GrantedPrefix, "granted", collections.BytesKey, sdk.IntValue),
		Clawbacks:     collections.NewMap(sb, types.ClawbacksPrefix, "clawbacks", collections.PairKeyCodec(sdk.TimeKey, collections.BytesKey), sdk.IntValue),
		Endpoints:     collections.NewMap(sb, types.EndpointsPrefix, "data_plane_endpoints", collections.BytesKey, collections.StringValue),
		DataPlaneKeys: collections.NewMap(sb, types.DataPlaneKeysPrefix, "data_plane_keys", collections.BytesKey, codec.CollValue[types.DataPlaneKeyRegistration](cdc)),
	}
	schema, err := sb.Build()
	if err != nil {
		panic(err)
	}
	k.Schema = schema
	return k
}

// Authority returns the address allowed to change the validator set.
func (k Keeper) Authority() string { return k.authority }

func (k Keeper) operator(op string) (sdk.ValAddress, error) {
	bz, err := k.valCodec.StringToBytes(op)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidAddr, "operator %q: %v", op, err)
	}
	return bz, nil
}

func (k Keeper) checkAuthority(signer string) error {
	if signer != k.authority {
		return errorsmod.Wrapf(types.ErrUnauthorized, "expected %s, got %s", k.authority, signer)
	}
	return nil
}

// IsAdmitted tells whether the operator holds an admission.
func (k Keeper) IsAdmitted(ctx context.Context, op sdk.ValAddress) (types.Admission, bool, error) {
	a, err := k.Admissions.Get(ctx, op)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return a, false, nil
	}
	return a, err == nil, err
}

// tokens is the stake that gives power.
func (k Keeper) tokens(ctx context.Context, power int64) math.Int {
	return k.staking.PowerReduction(ctx).MulRaw(power)
}

// Admit records an admission. An operator without a validator gets the stake for its
// create-validator; an existing (removed or re-powered) validator is moved to the power and
// unjailed, unless it double-signed.
func (k Keeper) Admit(ctx context.Context, signer, operator string, power int64) error {
	if err := k.checkAuthority(signer); err != nil {
		return err
	}
	if err := types.ValidatePower(power); err != nil {
		return err
	}
	op, err := k.operator(operator)
	if err != nil {
		return err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	prev, _, err := k.IsAdmitted(ctx, op)
	if err != nil {
		return err
	}
	// Every check comes before the first write, so a refused admission changes nothing.
	val, err := k.staking.GetValidator(ctx, op)
	exists := err == nil
	if err != nil && !errorsmod.IsOf(err, stakingtypes.ErrNoValidatorFound) {
		return err
	}
	var consAddr sdk.ConsAddress
	if exists {
		if consAddr, err = val.GetConsAddr(); err != nil {
			return err
		}
		if k.slashing.IsTombstoned(ctx, consAddr) {
			return errorsmod.Wrapf(types.ErrTombstoned, "%s can not be admitted again", operator)
		}
	}
	if err := k.Admissions.Set(ctx, op, types.Admission{Operator: operator, Power: power, AdmittedHeight: sdkCtx.BlockHeight(), AdmittedBy: signer}); err != nil {
		return err
	}
	if !exists {
		// The operator needs power's worth of stake for its create-validator; a repeated
		// admission only tops up what an earlier one already gave.
		if power > prev.Power {
			if err := k.grantStake(ctx, op, power-prev.Power); err != nil {
				return err
			}
		}
	} else {
		if err := k.setTokens(ctx, val, k.tokens(ctx, power)); err != nil {
			return err
		}
		if val.IsJailed() {
			if err := k.staking.Unjail(ctx, consAddr); err != nil {
				return err
			}
		}
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventValidatorAdmitted{Operator: operator, Power: power})
}

// SetPower changes an admitted validator's power.
func (k Keeper) SetPower(ctx context.Context, signer, operator string, power int64) error {
	if err := k.checkAuthority(signer); err != nil {
		return err
	}
	if err := types.ValidatePower(power); err != nil {
		return err
	}
	op, err := k.operator(operator)
	if err != nil {
		return err
	}
	a, ok, err := k.IsAdmitted(ctx, op)
	if err != nil {
		return err
	}
	if !ok {
		return errorsmod.Wrapf(types.ErrNotAdmitted, "%s", operator)
	}
	val, err := k.staking.GetValidator(ctx, op)
	if errorsmod.IsOf(err, stakingtypes.ErrNoValidatorFound) {
		// Not created yet: the create-validator must bring the new power; top up the stake, or
		// take back and burn the part of the grant the lower power no longer needs.
		if power > a.Power {
			if err := k.grantStake(ctx, op, power-a.Power); err != nil {
				return err
			}
		} else if power < a.Power {
			if err := k.clawback(ctx, sdk.AccAddress(op), k.tokens(ctx, a.Power-power)); err != nil {
				return err
			}
		}
	} else if err != nil {
		return err
	} else if err := k.setTokens(ctx, val, k.tokens(ctx, power)); err != nil {
		return err
	}
	a.Power = power
	if err := k.Admissions.Set(ctx, op, a); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventValidatorPowerSet{Operator: operator, Power: power})
}

// setTokens moves a validator's bonded tokens to target: more stake is minted to the poa module
// account and delegated; less is undelegated, from the module's delegation first and then
// from the operator's self-delegation. x/staking applies the change at the end block. What
// unbonds is burned when the unbonding completes (EndBlock): all of the module's, and of the
// operator's as much as x/poa granted it.
func (k Keeper) setTokens(ctx context.Context, val stakingtypes.Validator, target math.Int) error {
	op, err := k.operator(val.OperatorAddress)
	if err != nil {
		return err
	}
	moduleAddr := authtypes.NewModuleAddress(types.ModuleName)
	switch cur := val.Tokens; {
	case target.GT(cur):
		diff := target.Sub(cur)
		denom, err := k.staking.BondDenom(ctx)
		if err != nil {
			return err
		}
		if err := k.bank.MintCoins(ctx, types.ModuleName, sdk.NewCoins(sdk.NewCoin(denom, diff))); err != nil {
			return err
		}
		_, err = k.staking.Delegate(ctx, moduleAddr, diff, stakingtypes.Unbonded, val, true)
		return err
	case target.LT(cur):
		remaining := cur.Sub(target)
		for _, del := range []sdk.AccAddress{moduleAddr, sdk.AccAddress(op)} {
			if !remaining.IsPositive() {
				break
			}
			d, err := k.staking.GetDelegation(ctx, del, op)
			if errorsmod.IsOf(err, stakingtypes.ErrNoDelegation) {
				continue
			} else if err != nil {
				return err
			}
			val, err = k.staking.GetValidator(ctx, op)
			if err != nil {
				return err
			}
			shares, err := val.SharesFromTokens(remaining)
			if err != nil {
				return err
			}
			if shares.GT(d.Shares) {
				shares = d.Shares
			}
			done, amt, err := k.staking.Undelegate(ctx, del, op, shares)
			if err != nil {
				return err
			}
			remaining = remaining.Sub(amt)
			if !del.Equals(moduleAddr) {
				if err := k.owe(ctx, done, del, amt); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Remove revokes an admission, jails the validator, so it leaves the active set at the next
// end block, and undelegates all its stake, which is burned when the unbonding completes; only
// a new admission brings it back (MsgUnjail is refused without one). For an operator that never
// created its validator, the granted stake is taken back and burned at once.
func (k Keeper) Remove(ctx context.Context, signer, operator string) error {
	if err := k.checkAuthority(signer); err != nil {
		return err
	}
	op, err := k.operator(operator)
	if err != nil {
		return err
	}
	if _, ok, err := k.IsAdmitted(ctx, op); err != nil {
		return err
	} else if !ok {
		return errorsmod.Wrapf(types.ErrNotAdmitted, "%s", operator)
	}
	if err := k.Admissions.Remove(ctx, op); err != nil {
		return err
	}
	val, err := k.staking.GetValidator(ctx, op)
	switch {
	case errorsmod.IsOf(err, stakingtypes.ErrNoValidatorFound):
		if err := k.clawback(ctx, sdk.AccAddress(op), k.tokens(ctx, types.MaxPower)); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		if !val.IsJailed() {
			consAddr, err := val.GetConsAddr()
			if err != nil {
				return err
			}
			if err := k.staking.Jail(ctx, consAddr); err != nil {
				return err
			}
			if val, err = k.staking.GetValidator(ctx, op); err != nil {
				return err
			}
		}
		// A validator whose power was lowered often recently may be at x/staking's limit of
		// unbonding entries: it is still removed (jailed), and its remaining stake stays bonded
		// to it until a later removal can unbond it, rather than refusing the removal.
		if err := k.setTokens(ctx, val, math.ZeroInt()); err != nil && !errorsmod.IsOf(err, stakingtypes.ErrMaxUnbondingDelegationEntries) {
			return err
		}
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventValidatorRemoved{Operator: operator})
}

// Status joins an admission with its validator's state.
func (k Keeper) Status(ctx context.Context, a types.Admission) (types.AdmissionStatus, error) {
	out := types.AdmissionStatus{Admission: &a, Status: "pending"}
	op, err := k.operator(a.Operator)
	if err != nil {
		return out, err
	}
	val, err := k.staking.GetValidator(ctx, op)
	if errorsmod.IsOf(err, stakingtypes.ErrNoValidatorFound) {
		return out, nil
	} else if err != nil {
		return out, err
	}
	out.CurrentPower = val.ConsensusPower(k.staking.PowerReduction(ctx))
	switch {
	case val.IsJailed():
		out.Status = "jailed"
	case val.IsBonded():
		out.Status = "bonded"
	case val.IsUnbonding():
		out.Status = "unbonding"
	default:
		out.Status = "unbonded"
	}
	return out, nil
}

// IsTombstonedKey tells whether the consensus key double-signed.
func (k Keeper) IsTombstonedKey(ctx context.Context, pk cryptotypes.PubKey) bool {
	return k.slashing.IsTombstoned(ctx, sdk.ConsAddress(pk.Address()))
}

// StakingValidatorAddress decodes a validator operator address.
func (k Keeper) StakingValidatorAddress(op string) (sdk.ValAddress, error) { return k.operator(op) }

// AdmittedStake is the self-delegation a create-validator must bring for power.
func (k Keeper) AdmittedStake(ctx context.Context, power int64) (sdk.Coin, error) {
	denom, err := k.staking.BondDenom(ctx)
	if err != nil {
		return sdk.Coin{}, err
	}
	return sdk.NewCoin(denom, k.tokens(ctx, power)), nil
}

// grantStake mints power's worth of stake to the operator's account for its create-validator.
func (k Keeper) grantStake(ctx context.Context, op sdk.ValAddress, power int64) error {
	coin, err := k.AdmittedStake(ctx, power)
	if err != nil {
		return err
	}
	coins := sdk.NewCoins(coin)
	if err := k.bank.MintCoins(ctx, types.ModuleName, coins); err != nil {
		return err
	}
	granted, err := k.granted(ctx, sdk.AccAddress(op))
	if err != nil {
		return err
	}
	if err := k.Granted.Set(ctx, op, granted.Add(coin.Amount)); err != nil {
		return err
	}
	return k.bank.SendCoinsFromModuleToAccount(ctx, types.ModuleName, sdk.AccAddress(op), coins)
}

// granted is the stake minted into acc's account and not burned yet.
func (k Keeper) granted(ctx context.Context, acc sdk.AccAddress) (math.Int, error) {
	g, err := k.Granted.Get(ctx, acc)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return math.ZeroInt(), nil
	}
	return g, err
}

// owe schedules the granted part of amt, unbonding from acc's self-delegation until done, to be
// taken back and burned then. The grant is debited now, so it is never claimed twice.
func (k Keeper) owe(ctx context.Context, done time.Time, acc sdk.AccAddress, amt math.Int) error {
	granted, err := k.granted(ctx, acc)
	if err != nil {
		return err
	}
	amt = math.MinInt(amt, granted)
	if !amt.IsPositive() {
		return nil
	}
	if err := k.setGranted(ctx, acc, granted.Sub(amt)); err != nil {
		return err
	}
	key := collections.Join(done, []byte(acc))
	prev, err := k.Clawbacks.Get(ctx, key)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		prev = math.ZeroInt()
	} else if err != nil {
		return err
	}
	return k.Clawbacks.Set(ctx, key, prev.Add(amt))
}

func (k Keeper) setGranted(ctx context.Context, acc sdk.AccAddress, amt math.Int) error {
	if amt.IsPositive() {
		return k.Granted.Set(ctx, acc, amt)
	}
	return k.Granted.Remove(ctx, acc)
}

// clawback takes back and burns up to amt of the stake still granted to acc.
func (k Keeper) clawback(ctx context.Context, acc sdk.AccAddress, amt math.Int) error {
	granted, err := k.granted(ctx, acc)
	if err != nil {
		return err
	}
	taken, err := k.burnFrom(ctx, acc, math.MinInt(amt, granted))
	if err != nil {
		return err
	}
	return k.setGranted(ctx, acc, granted.Sub(taken))
}

// burnFrom moves up to amt of stake out of acc's account and burns it; it takes at most what
// acc can spend (a slashed unbonding returns less than was scheduled).
func (k Keeper) burnFrom(ctx context.Context, acc sdk.AccAddress, amt math.Int) (math.Int, error) {
	denom, err := k.staking.BondDenom(ctx)
	if err != nil {
		return math.ZeroInt(), err
	}
	amt = math.MinInt(amt, k.bank.SpendableCoin(ctx, acc, denom).Amount)
	if !amt.IsPositive() {
		return math.ZeroInt(), nil
	}
	coins := sdk.NewCoins(sdk.NewCoin(denom, amt))
	if err := k.bank.SendCoinsFromAccountToModule(ctx, acc, types.ModuleName, coins); err != nil {
		return math.ZeroInt(), err
	}
	return amt, k.bank.BurnCoins(ctx, types.ModuleName, coins)
}

// EndBlock runs after x/staking's, which has just paid out the unbondings due at this block
// time: it takes back the granted stake those returned to operators and burns it, with the
// module's own returned delegations. Its work is one entry per governance-ordered undelegation,
// so it is bounded by what governance passed, not by what any account can send.
func (k Keeper) EndBlock(ctx context.Context) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime()
	rng := new(collections.Range[collections.Pair[time.Time, []byte]]).
		EndExclusive(collections.Join(now.Add(time.Nanosecond), []byte{}))
	var due []collections.KeyValue[collections.Pair[time.Time, []byte], math.Int]
	err := k.Clawbacks.Walk(ctx, rng, func(key collections.Pair[time.Time, []byte], amt math.Int) (bool, error) {
		due = append(due, collections.KeyValue[collections.Pair[time.Time, []byte], math.Int]{Key: key, Value: amt})
		return false, nil
	})
	if err != nil {
		return err
	}
	denom, err := k.staking.BondDenom(ctx)
	if err != nil {
		return err
	}
	for _, kv := range due {
		if err := k.Clawbacks.Remove(ctx, kv.Key); err != nil {
			return err
		}
		// The grant was debited when the undelegation was scheduled. An account whose burn
		// fails is skipped (blockstep), not the block.
		acc := sdk.AccAddress(kv.Key.K2())
		skipped, err := blockstep.Isolate(ctx, func(ctx context.Context) error {
			_, err := k.burnFrom(ctx, acc, kv.Value)
			return err
		})
		if err != nil {
			return err
		}
		if skipped != nil {
			sdkCtx := sdk.UnwrapSDKContext(ctx)
			sdkCtx.Logger().Error("x/poa: block work skipped", "account", acc.String(), "err", skipped)
			if err := sdkCtx.EventManager().EmitTypedEvent(&types.EventBlockWorkSkipped{Account: acc.String(), Amount: kv.Value.String(), Reason: skipped.Error()}); err != nil {
				return err
			}
		}
	}
	// Everything the module account holds is minted stake returned by its own undelegations:
	// nothing else is ever sent to it.
	held := k.bank.GetBalance(ctx, authtypes.NewModuleAddress(types.ModuleName), denom)
	if held.IsPositive() {
		return k.bank.BurnCoins(ctx, types.ModuleName, sdk.NewCoins(held))
	}
	return nil
}
