//go:build !byzantine

package app

// byzantine is nil in a release build: a validator that follows the protocol. A build with
// -tags byzantine (byzantine.go) plays a faulty validator for the e2e harness; nothing of it is
// in the bftlogd an operator runs.
type byzantine struct{}

func newByzantine(*App) *byzantine { return nil }

// withholds: answer every push '1' and hold nothing, serve no fetch.
func (*byzantine) withholds() bool { return false }

// proposal is what a faulty proposer puts in its block instead of txs.
func (*byzantine) proposal(txs [][]byte, _ int64) [][]byte { return txs }

// pushTo is the peers a faulty node pushes a transaction to, and whether it then claims that
// more than two thirds hold it.
func (*byzantine) pushTo(queues []*pushQueue) ([]*pushQueue, bool) { return queues, false }

// start runs a faulty node's own goroutines.
func (*byzantine) start() {}
