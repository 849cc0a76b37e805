package types

import "cosmossdk.io/collections"

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
	// GrantedPrefix keys, by operator address bytes, the stake x/poa minted into the operator's
	// own account (for its create-validator) and has not burned yet: only that much of a
	// self-delegation is taken back, never stake the operator brought itself (genesis).
	GrantedPrefix = collections.NewPrefix(2)
	// ClawbacksPrefix keys (unbonding completion time, operator account) to the granted stake
	// that returns to the operator's account then and is burned in the same end block.
	ClawbacksPrefix = collections.NewPrefix(3)
	// EndpointsPrefix keys, by operator address bytes, the data-plane endpoint the operator set.
	EndpointsPrefix = collections.NewPrefix(4)
	// DataPlaneKeysPrefix keys, by operator address bytes, the data-plane public key the
	// operator set (beside its endpoint, in a map of its own so that state written before it
	// needs no migration).
	DataPlaneKeysPrefix = collections.NewPrefix(5)
)
