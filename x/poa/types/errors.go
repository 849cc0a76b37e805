package types

import errorsmod "cosmossdk.io/errors"

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
	// ErrInvalidEndpoint is a data-plane endpoint that is not http(s)://host:port alone.
	ErrInvalidEndpoint = errorsmod.Register(ModuleName, 11, "invalid data-plane endpoint")
	// ErrInvalidDataPlaneKey is a data-plane key that is not an ed25519 public key of 32 bytes.
	ErrInvalidDataPlaneKey = errorsmod.Register(ModuleName, 12, "invalid data-plane key")
)
