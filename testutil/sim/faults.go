package sim

import (
	"crypto/sha256"
	"math/rand"

	"github.com/bftlog/bftlog/app"
)

// Faults of a Byzantine proposer on the data plane (docs/digest-ordering.md): before the block
// the honest proposer makes, the node is asked to vote on a proposal another validator made to
// name what the node cannot check or hold. It must vote against each; then the honest block
// runs, and the twin (which never saw the faulty proposal) must agree on every result: a faulty
// proposal that left anything behind (a look-alike that made the real transaction "already
// ordered", a decoding kept under the wrong bytes) shows there.
const (
	faultWithheld   = "names bytes only the proposer holds"
	faultLookAlike  = "names a look-alike of a held transaction"
	faultWrongSize  = "names a held transaction with a wrong size"
	faultWrongOwner = "names a held transaction with another signer"
)

var faultKinds = []string{faultWithheld, faultLookAlike, faultWrongSize, faultWrongOwner}

// byzantineProposal is the honest proposal named (txs as named, the node holding each) made
// faulty by kind; nil when the block gives nothing to do it with. signers[i] signed txs[i].
func byzantineProposal(r *rand.Rand, kind string, txs, named [][]byte, signers []string) [][]byte {
	var held []int // transactions the honest proposal names by digest
	for i := range named {
		if _, ok := app.ParseTxRef(named[i]); ok {
			held = append(held, i)
		}
	}
	bad := append([][]byte(nil), named...)
	if kind == faultWithheld {
		var hash [32]byte
		r.Read(hash[:])
		at := r.Intn(len(bad) + 1)
		return append(bad[:at], append([][]byte{app.TxRef(hash, 200+r.Intn(4000), signers[0])}, bad[at:]...)...)
	}
	if len(held) == 0 {
		return nil
	}
	i := held[r.Intn(len(held))]
	v := txs[i]
	switch kind {
	case faultLookAlike: // one byte before the signatures flipped: the same length and last 64 bytes
		j := append([]byte(nil), v...)
		j[r.Intn(max(1, len(j)-64))] ^= 0x01
		bad[i] = app.TxRef(sha256.Sum256(j), len(j), signers[i])
	case faultWrongSize:
		bad[i] = app.TxRef(sha256.Sum256(v), len(v)+1+r.Intn(1000), signers[i])
	case faultWrongOwner:
		other := signers[(i+1)%len(signers)]
		if other == signers[i] {
			return nil
		}
		bad[i] = app.TxRef(sha256.Sum256(v), len(v), other)
	}
	return bad
}
