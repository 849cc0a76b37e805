package app

import (
	"encoding/json"
	"fmt"
	"sort"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"

	storetypes "cosmossdk.io/store/types"

	servertypes "github.com/cosmos/cosmos-sdk/server/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	slashingtypes "github.com/cosmos/cosmos-sdk/x/slashing/types"
	"github.com/cosmos/cosmos-sdk/x/staking"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
)

// ExportAppStateAndValidators exports the state of the application for a
// genesis file. With forZeroHeight the state is first rewritten so that a new
// chain can be started from it at height 0 (rewards withdrawn, heights reset,
// validators not in jailAllowedAddrs jailed when that list is non-empty).
// modulesToExport restricts the export to the given modules (all if empty).
func (app *App) ExportAppStateAndValidators(
	forZeroHeight bool,
	jailAllowedAddrs []string,
	modulesToExport []string,
) (servertypes.ExportedApp, error) {
	// as if they could withdraw from the start of the next block
	ctx := app.NewContextLegacy(true, cmtproto.Header{Height: app.LastBlockHeight()})

	// We export at last height + 1, because that's the height at which
	// CometBFT will start InitChain.
	height := app.LastBlockHeight() + 1
	if forZeroHeight {
		height = 0
		if err := app.prepForZeroHeightGenesis(ctx, jailAllowedAddrs); err != nil {
			return servertypes.ExportedApp{}, err
		}
	}

	genState, err := app.ModuleManager.ExportGenesisForModules(ctx, app.appCodec, modulesToExport)
	if err != nil {
		return servertypes.ExportedApp{}, err
	}

	appState, err := joinAppState(genState)
	if err != nil {
		return servertypes.ExportedApp{}, err
	}

	validators, err := staking.WriteValidators(ctx, app.StakingKeeper)
	if err != nil {
		return servertypes.ExportedApp{}, err
	}

	return servertypes.ExportedApp{
		AppState:        appState,
		Validators:      validators,
		Height:          height,
		ConsensusParams: app.GetConsensusParams(ctx),
	}, nil
}

// joinAppState writes the modules' JSON as one object, keys sorted as encoding/json sorts them,
// into a buffer sized once. json.MarshalIndent re-encoded every module's JSON and copied it
// twice more, and x/topics' batches can be nearly all of a large chain's state.
func joinAppState(genState map[string]json.RawMessage) ([]byte, error) {
	names := make([]string, 0, len(genState))
	size := 2
	for name, raw := range genState {
		if len(raw) > 0 && !json.Valid(raw) {
			return nil, fmt.Errorf("module %s exported invalid JSON", name)
		}
		names = append(names, name)
		size += len(name) + 8 + len(raw)
	}
	sort.Strings(names)
	out := make([]byte, 0, size)
	out = append(out, '{')
	for i, name := range names {
		if i > 0 {
			out = append(out, ',')
		}
		key, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		out = append(append(out, key...), ':')
		if raw := genState[name]; len(raw) > 0 {
			out = append(out, raw...)
		} else {
			out = append(out, "null"...)
		}
	}
	return append(out, '}'), nil
}

// prepForZeroHeightGenesis prepares the state for a fresh start at height 0.
// NOTE: zero height genesis is a temporary feature, which will be deprecated
// in favour of export at a block height.
func (app *App) prepForZeroHeightGenesis(ctx sdk.Context, jailAllowedAddrs []string) error {
	applyAllowedAddrs := len(jailAllowedAddrs) > 0
	allowedAddrsMap := make(map[string]bool, len(jailAllowedAddrs))
	for _, addr := range jailAllowedAddrs {
		if _, err := sdk.ValAddressFromBech32(addr); err != nil {
			return fmt.Errorf("invalid jail-allowed validator address %q: %w", addr, err)
		}
		allowedAddrsMap[addr] = true
	}

	valCodec := app.StakingKeeper.ValidatorAddressCodec()

	/* Handle fee distribution state. */

	// withdraw all validator commission
	var iterErr error
	err := app.StakingKeeper.IterateValidators(ctx, func(_ int64, val stakingtypes.ValidatorI) (stop bool) {
		valBz, err := valCodec.StringToBytes(val.GetOperator())
		if err != nil {
			iterErr = err
			return true
		}
		// an error just means there is no commission to withdraw
		_, _ = app.DistrKeeper.WithdrawValidatorCommission(ctx, valBz)
		return false
	})
	if err != nil {
		return err
	}
	if iterErr != nil {
		return iterErr
	}

	// withdraw all delegator rewards
	dels, err := app.StakingKeeper.GetAllDelegations(ctx)
	if err != nil {
		return err
	}
	for _, delegation := range dels {
		valAddr, err := valCodec.StringToBytes(delegation.ValidatorAddress)
		if err != nil {
			return err
		}
		delAddr, err := app.AccountKeeper.AddressCodec().StringToBytes(delegation.DelegatorAddress)
		if err != nil {
			return err
		}
		_, _ = app.DistrKeeper.WithdrawDelegationRewards(ctx, delAddr, valAddr)
	}

	// clear validator slash events
	app.DistrKeeper.DeleteAllValidatorSlashEvents(ctx)

	// clear validator historical rewards
	app.DistrKeeper.DeleteAllValidatorHistoricalRewards(ctx)

	// set context height to zero
	height := ctx.BlockHeight()
	ctx = ctx.WithBlockHeight(0)

	// reinitialize all validators
	err = app.StakingKeeper.IterateValidators(ctx, func(_ int64, val stakingtypes.ValidatorI) (stop bool) {
		valBz, err := valCodec.StringToBytes(val.GetOperator())
		if err != nil {
			iterErr = err
			return true
		}
		// donate any unwithdrawn outstanding reward tokens to the community pool
		scraps, err := app.DistrKeeper.GetValidatorOutstandingRewardsCoins(ctx, valBz)
		if err != nil {
			iterErr = err
			return true
		}
		feePool, err := app.DistrKeeper.FeePool.Get(ctx)
		if err != nil {
			iterErr = err
			return true
		}
		feePool.CommunityPool = feePool.CommunityPool.Add(scraps...)
		if err := app.DistrKeeper.FeePool.Set(ctx, feePool); err != nil {
			iterErr = err
			return true
		}
		if err := app.DistrKeeper.Hooks().AfterValidatorCreated(ctx, valBz); err != nil {
			iterErr = err
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	if iterErr != nil {
		return iterErr
	}

	// reinitialize all delegations
	for _, del := range dels {
		valAddr, err := valCodec.StringToBytes(del.ValidatorAddress)
		if err != nil {
			return err
		}
		delAddr, err := app.AccountKeeper.AddressCodec().StringToBytes(del.DelegatorAddress)
		if err != nil {
			return err
		}
		if err := app.DistrKeeper.Hooks().BeforeDelegationCreated(ctx, delAddr, valAddr); err != nil {
			return fmt.Errorf("error while incrementing period: %w", err)
		}
		if err := app.DistrKeeper.Hooks().AfterDelegationModified(ctx, delAddr, valAddr); err != nil {
			return fmt.Errorf("error while creating a new delegation period record: %w", err)
		}
	}

	// reset context height
	ctx = ctx.WithBlockHeight(height)

	/* Handle staking state. */

	// iterate through redelegations, reset creation height
	err = app.StakingKeeper.IterateRedelegations(ctx, func(_ int64, red stakingtypes.Redelegation) (stop bool) {
		for i := range red.Entries {
			red.Entries[i].CreationHeight = 0
		}
		if err := app.StakingKeeper.SetRedelegation(ctx, red); err != nil {
			iterErr = err
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	if iterErr != nil {
		return iterErr
	}

	// iterate through unbonding delegations, reset creation height
	err = app.StakingKeeper.IterateUnbondingDelegations(ctx, func(_ int64, ubd stakingtypes.UnbondingDelegation) (stop bool) {
		for i := range ubd.Entries {
			ubd.Entries[i].CreationHeight = 0
		}
		if err := app.StakingKeeper.SetUnbondingDelegation(ctx, ubd); err != nil {
			iterErr = err
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	if iterErr != nil {
		return iterErr
	}

	// Iterate through validators by power descending, reset bond heights, and
	// update bond intra-tx counters.
	store := ctx.KVStore(app.GetKey(stakingtypes.StoreKey))
	iter := storetypes.KVStoreReversePrefixIterator(store, stakingtypes.ValidatorsKey)
	for ; iter.Valid(); iter.Next() {
		addr := sdk.ValAddress(stakingtypes.AddressFromValidatorsKey(iter.Key()))
		validator, err := app.StakingKeeper.GetValidator(ctx, addr)
		if err != nil {
			iter.Close()
			return fmt.Errorf("expected validator %s not found: %w", addr, err)
		}

		validator.UnbondingHeight = 0
		if applyAllowedAddrs && !allowedAddrsMap[addr.String()] {
			validator.Jailed = true
		}

		if err := app.StakingKeeper.SetValidator(ctx, validator); err != nil {
			iter.Close()
			return err
		}
	}
	if err := iter.Close(); err != nil {
		return err
	}

	if _, err := app.StakingKeeper.ApplyAndReturnValidatorSetUpdates(ctx); err != nil {
		return err
	}

	/* Handle slashing state. */

	// reset start height on signing infos
	err = app.SlashingKeeper.IterateValidatorSigningInfos(
		ctx,
		func(addr sdk.ConsAddress, info slashingtypes.ValidatorSigningInfo) (stop bool) {
			info.StartHeight = 0
			if err := app.SlashingKeeper.SetValidatorSigningInfo(ctx, addr, info); err != nil {
				iterErr = err
				return true
			}
			return false
		},
	)
	if err != nil {
		return err
	}
	return iterErr
}
