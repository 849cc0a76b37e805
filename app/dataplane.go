package app

import (
	cmtcrypto "github.com/cometbft/cometbft/crypto"
	"github.com/cometbft/cometbft/crypto/ed25519"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"

	cryptocodec "github.com/cosmos/cosmos-sdk/crypto/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/app/dataplane"
)

// The data plane (app/dataplane) as this app runs it: what it needs of the app (planeHost),
// and the validator set it takes signatures from, read from chain state after each commit.

// The data plane's paths and headers, for clients and tests (app/ordering/contract.go).
const (
	PushPath        = dataplane.PushPath
	HeldPath        = dataplane.HeldPath
	PoolPath        = dataplane.PoolPath
	HeaderValidator = dataplane.HeaderValidator
	HeaderSignedAt  = dataplane.HeaderSignedAt
	HeaderSignature = dataplane.HeaderSignature
)

// planeHost is what the data plane calls back: staging what a validator pushed for the
// mempool (stub.go).
type planeHost struct{ app *App }

func (h planeHost) StageTx(bz []byte, hash [32]byte, sender string) ([]byte, bool, bool, bool) {
	return h.app.stageTx(bz, hash, sender)
}

func (planeHost) ParseStub(tx []byte) ([32]byte, bool) {
	hash, _, ok := parseStub(tx)
	return hash, ok
}

// refreshDataPlaneKeys hands the data plane the validator set of the latest committed state
// (after each Commit): their consensus keys, powers and the data-plane keys their operators
// registered and, when its peers come from the chain, the endpoints they set (x/poa).
func (app *App) refreshDataPlaneKeys() {
	ctx := app.NewUncachedContext(false, app.checkStateHeader())
	vals, err := app.StakingKeeper.GetLastValidators(ctx)
	if err != nil {
		app.Logger().Error("data plane: reading the validator set", "err", err)
		return
	}
	reduction := app.StakingKeeper.PowerReduction(ctx)
	set := make([]dataplane.Validator, 0, len(vals))
	for _, v := range vals {
		pk, err := v.ConsPubKey()
		if err != nil {
			continue
		}
		cpk, err := cryptocodec.ToCmtPubKeyInterface(pk)
		if err != nil {
			continue
		}
		power := v.ConsensusPower(reduction)
		if power <= 0 {
			continue
		}
		val := dataplane.Validator{PubKey: cpk, Power: power, DataPlaneKey: app.validatorDataPlaneKey(ctx, v.OperatorAddress)}
		if app.plane.WantsEndpoint(cpk) {
			val.Endpoint = app.validatorEndpoint(ctx, v.OperatorAddress)
		}
		set = append(set, val)
	}
	app.plane.SetValidators(app.ChainID(), set)
}

// checkStateHeader is a header for reading the latest committed state.
func (app *App) checkStateHeader() (h cmtproto.Header) {
	h.Height = app.LastBlockHeight()
	h.ChainID = app.ChainID()
	return h
}

// validatorEndpoint is the data-plane endpoint the operator set on chain, "" if none.
func (app *App) validatorEndpoint(ctx sdk.Context, operator string) string {
	op, err := app.StakingKeeper.ValidatorAddressCodec().StringToBytes(operator)
	if err != nil {
		return ""
	}
	ep, err := app.PoaKeeper.Endpoint(ctx, op)
	if err != nil {
		app.Logger().Error("data plane: reading a validator's endpoint", "operator", operator, "err", err)
		return ""
	}
	return ep
}

// validatorDataPlaneKey is the data-plane key the operator registered on chain, nil if none.
func (app *App) validatorDataPlaneKey(ctx sdk.Context, operator string) cmtcrypto.PubKey {
	op, err := app.StakingKeeper.ValidatorAddressCodec().StringToBytes(operator)
	if err != nil {
		return nil
	}
	key, err := app.PoaKeeper.DataPlaneKey(ctx, op)
	if err != nil {
		app.Logger().Error("data plane: reading a validator's data-plane key", "operator", operator, "err", err)
		return nil
	}
	if len(key) != ed25519.PubKeySize {
		return nil // none registered (x/poa takes no other size)
	}
	return ed25519.PubKey(key)
}
