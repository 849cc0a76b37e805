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
)
