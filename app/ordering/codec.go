// Package ordering holds MsgOrderedTx, what a block carries in place of a transaction the
// validators already hold (app/ordering.go, docs/digest-ordering.md), and the contract between
// a node and its clients (contract.go: paths, answers, the event that names a transaction).
package ordering

import (
	codectypes "github.com/cosmos/cosmos-sdk/codec/types"
	sdk "github.com/cosmos/cosmos-sdk/types"
)

// TypeURL is MsgOrderedTx's type URL in a transaction body.
const TypeURL = "/bftlog.ordering.v1.MsgOrderedTx"

// RegisterInterfaces lets the app's decoder, its REST API and explorers read MsgOrderedTx.
func RegisterInterfaces(registry codectypes.InterfaceRegistry) {
	registry.RegisterImplementations((*sdk.Msg)(nil), &MsgOrderedTx{})
}
