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
		endpoint, key := app.validatorDataPlane(ctx, v.OperatorAddress)
		set = append(set, dataplane.Validator{PubKey: cpk, Power: power, Endpoint: endpoint, DataPlaneKey: key})
	}
	app.plane.SetValidators(app.ChainID(), set)
}

// checkStateHeader is a header for reading the latest committed state.
func (app *App) checkStateHeader() (h cmtproto.Header) {
	h.Height = app.LastBlockHeight()
	h.ChainID = app.ChainID()
	return h
}

// validatorDataPlane is the data-plane endpoint ("" if none) and key (nil if none) the
// operator set on chain (x/poa).
func (app *App) validatorDataPlane(ctx sdk.Context, operator string) (string, cmtcrypto.PubKey) {
	op, err := app.StakingKeeper.ValidatorAddressCodec().StringToBytes(operator)
	if err != nil {
		return "", nil
	}
	endpoint, err := app.PoaKeeper.Endpoint(ctx, op)
	if err != nil {
		app.Logger().Error("data plane: reading a validator's endpoint", "operator", operator, "err", err)
	}
	key, err := app.PoaKeeper.DataPlaneKey(ctx, op)
	if err != nil {
		app.Logger().Error("data plane: reading a validator's data-plane key", "operator", operator, "err", err)
	}
	if len(key) != ed25519.PubKeySize {
		return endpoint, nil // none registered (x/poa takes no other size)
	}
	return endpoint, ed25519.PubKey(key)
}
