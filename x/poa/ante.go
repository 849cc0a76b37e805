package poa

import (
	errorsmod "cosmossdk.io/errors"

	cryptotypes "github.com/cosmos/cosmos-sdk/crypto/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/x/poa/keeper"
	"github.com/bftlog/bftlog/x/poa/types"
)

// maxNesting bounds how deep the decorator looks into messages that wrap messages.
const maxNesting = 6

// AnteDecorator rejects every staking path around governance: create-validator by an operator
// without an admission (or with the wrong stake), delegate, redelegate, undelegate, cancel
// unbonding, staking param changes, and unjail without an admission — also inside authz
// MsgExec, gov proposals, or any message that carries messages.
type AnteDecorator struct{ k keeper.Keeper }

// NewAnteDecorator returns the decorator.
func NewAnteDecorator(k keeper.Keeper) AnteDecorator { return AnteDecorator{k} }

// AnteHandle implements sdk.AnteDecorator.
func (d AnteDecorator) AnteHandle(ctx sdk.Context, tx sdk.Tx, simulate bool, next sdk.AnteHandler) (sdk.Context, error) {
	if err := d.Check(ctx, tx.GetMsgs()); err != nil {
		return ctx, err
	}
	return next(ctx, tx, simulate)
}

// Check applies the rules to msgs. Genesis transactions, which genutil runs before x/poa's
// genesis (whatever the chain's initial height), create the genesis validators and pass.
func (d AnteDecorator) Check(ctx sdk.Context, msgs []sdk.Msg) error {
	if done, err := d.k.GenesisDone.Has(ctx); err != nil {
		return err
	} else if !done {
		return nil
	}
	for _, m := range msgs {
		if err := d.check(ctx, m, 0); err != nil {
			return err
		}
	}
	return nil
}

type wrapsMessages interface{ GetMessages() ([]sdk.Msg, error) }
type wrapsMsgs interface{ GetMsgs() ([]sdk.Msg, error) }

func (d AnteDecorator) check(ctx sdk.Context, msg sdk.Msg, depth int) error {
	if depth > maxNesting {
		return errorsmod.Wrapf(types.ErrBlockedMsg, "messages nested deeper than %d", maxNesting)
	}
	switch m := msg.(type) {
	case *stakingtypes.MsgCreateValidator:
		return d.checkCreateValidator(ctx, m)
	case *stakingtypes.MsgDelegate, *stakingtypes.MsgBeginRedelegate, *stakingtypes.MsgUndelegate,
		*stakingtypes.MsgCancelUnbondingDelegation, *stakingtypes.MsgUpdateParams:
		return errorsmod.Wrapf(types.ErrBlockedMsg, "%s: voting power changes only through governance (x/poa)", sdk.MsgTypeURL(msg))
	case *slashingtypes.MsgUnjail:
		op, err := d.k.StakingValidatorAddress(m.ValidatorAddr)
		if err != nil {
			return err
		}
		if _, ok, err := d.k.IsAdmitted(ctx, op); err != nil {
			return err
		} else if !ok {
			return errorsmod.Wrapf(types.ErrNotAdmitted, "%s was removed by governance and may not unjail without a new admission", m.ValidatorAddr)
		}
		return nil
	case *authz.MsgExec:
		inner, err := m.GetMessages()
		if err != nil {
			return err
		}
		return d.checkAll(ctx, inner, depth)
	case *govv1.MsgSubmitProposal:
		inner, err := m.GetMsgs()
		if err != nil {
			return err
		}
		return d.checkAll(ctx, inner, depth)
	case wrapsMessages:
		inner, err := m.GetMessages()
		if err != nil {
			return err
		}
		return d.checkAll(ctx, inner, depth)
	case wrapsMsgs:
		inner, err := m.GetMsgs()
		if err != nil {
			return err
		}
		return d.checkAll(ctx, inner, depth)
	}
	return nil
}

func (d AnteDecorator) checkAll(ctx sdk.Context, msgs []sdk.Msg, depth int) error {
	for _, m := range msgs {
		if err := d.check(ctx, m, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (d AnteDecorator) checkCreateValidator(ctx sdk.Context, m *stakingtypes.MsgCreateValidator) error {
	op, err := d.k.StakingValidatorAddress(m.ValidatorAddress)
	if err != nil {
		return err
	}
	a, ok, err := d.k.IsAdmitted(ctx, op)
	if err != nil {
		return err
	}
	if !ok {
		return errorsmod.Wrapf(types.ErrNotAdmitted, "%s has no admission: a governance proposal must admit it first", m.ValidatorAddress)
	}
	want, err := d.k.AdmittedStake(ctx, a.Power)
	if err != nil {
		return err
	}
	if !m.Value.Equal(want) {
		return errorsmod.Wrapf(types.ErrWrongStake, "admitted power %d needs a self-delegation of exactly %s, got %s", a.Power, want, m.Value)
	}
	// A removed validator's record goes once its stake has unbonded, so Admit can no longer see
	// that its key double-signed: the key itself is checked here.
	if m.Pubkey == nil {
		return nil // staking refuses it
	}
	if pk, ok := m.Pubkey.GetCachedValue().(cryptotypes.PubKey); ok && d.k.IsTombstonedKey(ctx, pk) {
		return errorsmod.Wrapf(types.ErrTombstoned, "consensus key of %s double-signed", m.ValidatorAddress)
	}
	return nil
}
