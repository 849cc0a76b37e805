package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"

	"github.com/bftlog/bftlog/x/poa/types"
)

// SetEndpoint sets, or with "" clears, the data-plane endpoint of the operator whose account
// signed: only an admitted operator, and only its own (the operator is the signer's account,
// so no account can set another's). Peers push to and fetch from it; a wrong one costs its own
// validator the data plane, since every answer there is checked against its key.
func (k Keeper) SetEndpoint(ctx context.Context, signer, endpoint string) error {
	// The signer's prefix was checked when its signature was (the message's signer field).
	_, acc, err := bech32.DecodeAndConvert(signer)
	if err != nil || len(acc) == 0 {
		return errorsmod.Wrapf(types.ErrInvalidAddr, "operator account %q: %v", signer, err)
	}
	op := sdk.ValAddress(acc)
	if _, ok, err := k.IsAdmitted(ctx, op); err != nil {
		return err
	} else if !ok {
		return errorsmod.Wrapf(types.ErrNotAdmitted, "%s (account %s) may not set a data-plane endpoint", opStr(k, op), signer)
	}
	if err := types.ValidateEndpoint(endpoint); err != nil {
		return err
	}
	if endpoint == "" {
		err = k.Endpoints.Remove(ctx, op)
	} else {
		err = k.Endpoints.Set(ctx, op, endpoint)
	}
	if err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventDataPlaneEndpointSet{Operator: opStr(k, op), Endpoint: endpoint})
}

// Endpoint is the data-plane endpoint operator set, "" if none.
func (k Keeper) Endpoint(ctx context.Context, op sdk.ValAddress) (string, error) {
	e, err := k.Endpoints.Get(ctx, op)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return "", nil
	}
	return e, err
}

// AllEndpoints lists the data-plane endpoints by operator address.
func (k Keeper) AllEndpoints(ctx context.Context) ([]types.DataPlaneEndpoint, error) {
	var out []types.DataPlaneEndpoint
	err := k.Endpoints.Walk(ctx, nil, func(op []byte, e string) (bool, error) {
		s, err := k.valCodec.BytesToString(op)
		if err != nil {
			return true, err
		}
		out = append(out, types.DataPlaneEndpoint{Operator: s, Endpoint: e})
		return false, nil
	})
	return out, err
}

func opStr(k Keeper, op sdk.ValAddress) string {
	s, err := k.valCodec.BytesToString(op)
	if err != nil {
		return op.String()
	}
	return s
}
