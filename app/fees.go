package app

import (
	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	topicskeeper "github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// FeeDecorator enforces the chain's fee rule from x/topics params in CheckTx AND DeliverTx:
// gas limit ≤ max_tx_gas and fee ≥ gas limit × min_gas_price. The SDK's minimum-gas-prices is
// node-local and only checked in CheckTx, so a proposer running with 0 could otherwise fill
// blocks with free transactions that every validator executes and stores. Simulation is exempt
// (clients learn the gas before they know the fee), and so are genesis transactions (height 0).
type FeeDecorator struct {
	topics topicskeeper.Keeper
}

// NewFeeDecorator builds the decorator over the topics keeper's params.
func NewFeeDecorator(k topicskeeper.Keeper) FeeDecorator { return FeeDecorator{topics: k} }

// AnteHandle refuses a transaction whose gas limit or fee breaks the rule, before any fee is
// deducted or message run.
func (d FeeDecorator) AnteHandle(ctx sdk.Context, tx sdk.Tx, simulate bool, next sdk.AnteHandler) (sdk.Context, error) {
	if simulate || ctx.BlockHeight() == 0 {
		return next(ctx, tx, simulate)
	}
	feeTx, ok := tx.(sdk.FeeTx)
	if !ok {
		return ctx, errorsmod.Wrap(sdkerrors.ErrTxDecode, "transaction is not a FeeTx")
	}
	params, err := d.topics.Params.Get(ctx)
	if err != nil {
		return ctx, err
	}
	if err := CheckFee(params, feeTx.GetGas(), feeTx.GetFee()); err != nil {
		return ctx, err
	}
	return next(ctx, tx, simulate)
}

// CheckFee applies the fee rule to a gas limit and the fee paid.
func CheckFee(params topicstypes.Params, gas uint64, fee sdk.Coins) error {
	if params.MaxTxGas > 0 && gas > params.MaxTxGas {
		return errorsmod.Wrapf(topicstypes.ErrTxGasTooHigh, "gas limit %d is above max_tx_gas %d", gas, params.MaxTxGas)
	}
	if !params.HasMinGasPrice() {
		return nil
	}
	price := params.MinGasPrice
	required := math.LegacyNewDecFromInt(math.NewIntFromUint64(gas)).Mul(price.Amount).Ceil().TruncateInt()
	if paid := fee.AmountOf(price.Denom); paid.LT(required) {
		return errorsmod.Wrapf(topicstypes.ErrInsufficientFee, "fee %s%s is below gas limit %d x min_gas_price %s = %s%s",
			paid, price.Denom, gas, price, required, price.Denom)
	}
	return nil
}
