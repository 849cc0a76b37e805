package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// escrow moves a deposit from owner into the module account and returns what it took (nil
// without a bank keeper). State objects that would otherwise live for ever (topics, partitions)
// are paid for by locking stake until deletion.
func (k Keeper) escrow(ctx context.Context, owner string, amt sdk.Coins) (sdk.Coins, error) {
	if k.bank == nil || amt.IsZero() {
		return nil, nil
	}
	addr, err := k.addressCodec.StringToBytes(owner)
	if err != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidAddress, "owner %q: %v", owner, err)
	}
	return amt, k.bank.SendCoinsFromAccountToModule(ctx, addr, types.ModuleName, amt)
}

// refund returns a topic's escrowed deposit to its owner (also when the authority deletes it).
func (k Keeper) refund(ctx context.Context, t types.Topic) error {
	return k.refundTo(ctx, t.Owner, t.Deposit)
}

// refundTo pays an escrowed deposit back to to.
func (k Keeper) refundTo(ctx context.Context, to string, amt sdk.Coins) error {
	if k.bank == nil || amt.IsZero() {
		return nil
	}
	addr, err := k.addressCodec.StringToBytes(to)
	if err != nil {
		return errorsmod.Wrapf(types.ErrInvalidAddress, "deposit owner %q: %v", to, err)
	}
	return k.bank.SendCoinsFromModuleToAccount(ctx, types.ModuleName, addr, amt)
}

// EscrowedDeposits is the sum of every topic's and group's deposit: what the module account
// must hold.
func (k Keeper) EscrowedDeposits(ctx context.Context) (sdk.Coins, error) {
	total := sdk.Coins{}
	err := k.Topics.Walk(ctx, nil, func(_ string, t types.Topic) (bool, error) {
		total = total.Add(t.Deposit...)
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	err = k.Groups.Walk(ctx, nil, func(_ string, g types.Group) (bool, error) {
		total = total.Add(g.Deposit...)
		return false, nil
	})
	return total, err
}

// checkEscrow requires the module account (funded by bank genesis, which runs first) to hold
// exactly the topics' deposits: every refund is then covered and nothing is left unowned.
func (k Keeper) checkEscrow(ctx context.Context) error {
	if k.bank == nil {
		return nil
	}
	want, err := k.EscrowedDeposits(ctx)
	if err != nil {
		return err
	}
	have := k.bank.GetAllBalances(ctx, authtypes.NewModuleAddress(types.ModuleName))
	if !have.Equal(want) {
		return errorsmod.Wrapf(types.ErrInvalidGenesis, "module account holds %s but topics escrow %s", have, want)
	}
	return nil
}
