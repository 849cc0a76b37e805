package types

import (
	"context"
	"time"

	"cosmossdk.io/collections"
	"cosmossdk.io/core/address"
	errorsmod "cosmossdk.io/errors"
	"cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/codec"
	"github.com/cosmos/cosmos-sdk/codec/legacy"
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/msgservice"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"
)

const (
	// ModuleName is the module's name, store key and module account.
	ModuleName = "poa"
	StoreKey   = ModuleName
)

// Store prefixes.
var (
	// AdmissionsPrefix keys admissions by operator address bytes.
	AdmissionsPrefix = collections.NewPrefix(0)
	// GenesisDonePrefix marks that x/poa's genesis ran: before it, the genesis transactions
	// create the genesis validators and pass the ante decorator.
	GenesisDonePrefix = collections.NewPrefix(1)
)

// Registered errors of x/poa. Codes are stable.
var (
	ErrUnauthorized  = errorsmod.Register(ModuleName, 2, "only the authority may change the validator set")
	ErrInvalidPower  = errorsmod.Register(ModuleName, 3, "invalid voting power")
	ErrNotAdmitted   = errorsmod.Register(ModuleName, 4, "operator is not admitted")
	ErrBlockedMsg    = errorsmod.Register(ModuleName, 5, "staking message not allowed under proof of authority")
	ErrTombstoned    = errorsmod.Register(ModuleName, 6, "validator is tombstoned for double signing")
	ErrInvalidAddr   = errorsmod.Register(ModuleName, 7, "invalid address")
	ErrWrongStake    = errorsmod.Register(ModuleName, 8, "self-delegation must equal the admitted power")
	ErrAlreadyExists = errorsmod.Register(ModuleName, 9, "validator already exists")
	ErrInvalidGen    = errorsmod.Register(ModuleName, 10, "invalid genesis state")
)

// MaxPower bounds an admitted power (CometBFT caps total voting power at MaxInt64/8).
const MaxPower = 1 << 40

// StakingKeeper is what x/poa needs from x/staking.
type StakingKeeper interface {
	GetValidator(ctx context.Context, addr sdk.ValAddress) (stakingtypes.Validator, error)
	GetAllValidators(ctx context.Context) ([]stakingtypes.Validator, error)
	GetDelegation(ctx context.Context, delAddr sdk.AccAddress, valAddr sdk.ValAddress) (stakingtypes.Delegation, error)
	Delegate(ctx context.Context, delAddr sdk.AccAddress, bondAmt math.Int, tokenSrc stakingtypes.BondStatus, validator stakingtypes.Validator, subtractAccount bool) (math.LegacyDec, error)
	Undelegate(ctx context.Context, delAddr sdk.AccAddress, valAddr sdk.ValAddress, sharesAmount math.LegacyDec) (time.Time, math.Int, error)
	Jail(ctx context.Context, consAddr sdk.ConsAddress) error
	Unjail(ctx context.Context, consAddr sdk.ConsAddress) error
	BondDenom(ctx context.Context) (string, error)
	PowerReduction(ctx context.Context) math.Int
	ValidatorAddressCodec() address.Codec
}

// BankKeeper mints the stake an admitted operator creates its validator with.
type BankKeeper interface {
	MintCoins(ctx context.Context, moduleName string, amt sdk.Coins) error
	SendCoinsFromModuleToAccount(ctx context.Context, senderModule string, recipientAddr sdk.AccAddress, amt sdk.Coins) error
}

// SlashingKeeper tells whether a validator double-signed.
type SlashingKeeper interface {
	IsTombstoned(ctx context.Context, consAddr sdk.ConsAddress) bool
}

// RegisterLegacyAminoCodec registers amino names for explorers and amino-JSON signing.
func RegisterLegacyAminoCodec(cdc *codec.LegacyAmino) {
	legacy.RegisterAminoMsg(cdc, &MsgAdmitValidator{}, "bftlog/poa/MsgAdmitValidator")
	legacy.RegisterAminoMsg(cdc, &MsgSetValidatorPower{}, "bftlog/poa/MsgSetValidatorPower")
	legacy.RegisterAminoMsg(cdc, &MsgRemoveValidator{}, "bftlog/poa/MsgRemoveValidator")
}

// RegisterInterfaces registers the module's messages.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil), &MsgAdmitValidator{}, &MsgSetValidatorPower{}, &MsgRemoveValidator{})
	msgservice.RegisterMsgServiceDesc(registry, &_Msg_serviceDesc)
}

// ValidatePower checks an admitted power.
func ValidatePower(p int64) error {
	if p <= 0 || p > MaxPower {
		return errorsmod.Wrapf(ErrInvalidPower, "power %d must be in [1, %d]", p, int64(MaxPower))
	}
	return nil
}
