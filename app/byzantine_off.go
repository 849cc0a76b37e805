//go:build !byzantine

package app

import "github.com/bftlog/bftlog/app/dataplane"

// byzantine is nil in a release build: a validator that follows the protocol. A build with
// -tags byzantine (byzantine.go) plays a faulty validator for the e2e harness; nothing of it is
// in the bftlogd an operator runs.
type byzantine struct{}

func newByzantine(*App) *byzantine { return nil }

// faults are the data plane's faulty acts (dataplane.Faults): none.
func (*byzantine) faults() dataplane.Faults { return nil }

// proposal is what a faulty proposer puts in its block instead of txs.
func (*byzantine) proposal(txs [][]byte, _ int64) [][]byte { return txs }

// start runs a faulty node's own goroutines.
func (*byzantine) start() {}
