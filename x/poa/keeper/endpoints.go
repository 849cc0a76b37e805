package keeper

import (
	"bytes"
	"context"
	"encoding/base64"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"

	"github.com/bftlog/bftlog/x/poa/types"
)

// SetEndpoint sets the data-plane endpoint and key of the operator whose account signed: only
// an admitted operator, and only its own (the operator is the signer's account, so no account
// can set another's). A key comes with its proof (types.ValidateDataPlaneKey) and no other
// validator may have registered it; an empty key keeps the one registered before, and an empty
// endpoint with no key clears both. Peers push to and fetch from the endpoint and check what the
// validator signs there against the key (its consensus key when none is set); a wrong one of
// either costs its own validator the data plane.
func (k Keeper) SetEndpoint(ctx context.Context, signer, endpoint string, key, proof []byte) error {
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
	if err := types.ValidateDataPlaneKey(op, key, proof); err != nil {
		return err
	}
	if len(key) > 0 {
		// One validator's key: a node without its consensus key finds its validator by it.
		taken := false
		err := k.DataPlaneKeys.Walk(ctx, nil, func(other []byte, reg types.DataPlaneKeyRegistration) (bool, error) {
			taken = !bytes.Equal(other, op) && bytes.Equal(reg.Key, key)
			return taken, nil
		})
		if err != nil {
			return err
		}
		if taken {
			return errorsmod.Wrap(types.ErrInvalidDataPlaneKey, "another validator registered this key")
		}
	}
	if endpoint == "" {
		err = k.Endpoints.Remove(ctx, op)
	} else {
		err = k.Endpoints.Set(ctx, op, endpoint)
	}
	if err != nil {
		return err
	}
	switch {
	case len(key) > 0:
		err = k.DataPlaneKeys.Set(ctx, op, types.DataPlaneKeyRegistration{Key: key, Proof: proof})
	case endpoint == "":
		err = k.DataPlaneKeys.Remove(ctx, op)
	default:
		key, err = k.DataPlaneKey(ctx, op) // kept: named in the event
	}
	if err != nil {
		return err
	}
	var keyText string
	if len(key) > 0 {
		keyText = base64.StdEncoding.EncodeToString(key)
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventDataPlaneEndpointSet{Operator: opStr(k, op), Endpoint: endpoint, DataPlaneKey: keyText})
}

// DataPlaneKey is the data-plane key operator set, nil if none.
func (k Keeper) DataPlaneKey(ctx context.Context, op sdk.ValAddress) ([]byte, error) {
	reg, err := k.DataPlaneKeys.Get(ctx, op)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return nil, nil
	}
	return reg.Key, err
}

// Endpoint is the data-plane endpoint operator set, "" if none.
func (k Keeper) Endpoint(ctx context.Context, op sdk.ValAddress) (string, error) {
	e, err := k.Endpoints.Get(ctx, op)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return "", nil
	}
	return e, err
}

// AllEndpoints lists the data-plane endpoints and keys by operator address bytes (an operator
// with only one of them set has the other empty).
func (k Keeper) AllEndpoints(ctx context.Context) ([]types.DataPlaneEndpoint, error) {
	byOp := map[string]*types.DataPlaneEndpoint{}
	var ops [][]byte
	entry := func(op []byte) (*types.DataPlaneEndpoint, error) {
		if e, ok := byOp[string(op)]; ok {
			return e, nil
		}
		s, err := k.valCodec.BytesToString(op)
		if err != nil {
			return nil, err
		}
		e := &types.DataPlaneEndpoint{Operator: s}
		byOp[string(op)] = e
		ops = append(ops, op)
		return e, nil
	}
	if err := walkEntries(ctx, k.Endpoints, entry, func(e *types.DataPlaneEndpoint, v string) { e.Endpoint = v }); err != nil {
		return nil, err
	}
	if err := walkEntries(ctx, k.DataPlaneKeys, entry, func(e *types.DataPlaneEndpoint, v types.DataPlaneKeyRegistration) {
		e.DataPlaneKey, e.DataPlaneKeyProof = v.Key, v.Proof
	}); err != nil {
		return nil, err
	}
	// In operator-bytes order, whichever map named an operator: the same list on every node.
	slices.SortFunc(ops, bytes.Compare)
	out := make([]types.DataPlaneEndpoint, 0, len(ops))
	for _, op := range ops {
		out = append(out, *byOp[string(op)])
	}
	return out, nil
}

// walkEntries fills each operator's entry from one of the maps.
func walkEntries[V any](ctx context.Context, m collections.Map[[]byte, V], entry func([]byte) (*types.DataPlaneEndpoint, error), set func(*types.DataPlaneEndpoint, V)) error {
	return m.Walk(ctx, nil, func(op []byte, v V) (bool, error) {
		e, err := entry(op)
		if err != nil {
			return true, err
		}
		set(e, v)
		return false, nil
	})
}

func opStr(k Keeper, op sdk.ValAddress) string {
	s, err := k.valCodec.BytesToString(op)
	if err != nil {
		return op.String()
	}
	return s
}
