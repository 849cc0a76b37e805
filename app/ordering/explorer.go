package ordering

// What a node's REST answers for blocks and transactions say of the transactions blocks named
// by digest (app/ordering_query.go, docs/explorers.md). The routes explorers read —
// /cosmos/tx/v1beta1/txs/{hash} (by the reference's hash or the named transaction's),
// /cosmos/tx/v1beta1/txs/block/{height}, the event search /cosmos/tx/v1beta1/txs and
// /cosmos/base/tendermint/v1beta1/blocks/{height} — show the named transaction in its
// reference's place while the node holds it, and add NamedTxsField to the answer's JSON
// object, one NamedTx per reference the answer met; the answer for one transaction adds
// NamedTxField, its one NamedTx, as an object (which explorers' JSON views show unfolded).
const (
	NamedTxsField = "named_txs"
	NamedTxField  = "named_tx"
)

// The status of a reference in an answer.
const (
	// NamedShown: the answer carries the named transaction in the reference's place (and, in a
	// transaction answer, its hash as txhash).
	NamedShown = "shown"
	// NamedNotHeld: this node no longer holds the named transaction (its pool keeps them for
	// [ordering] keep-heights heights, at most keep-bytes): the answer carries the reference
	// (MsgOrderedTx), whose result is the named transaction's.
	NamedNotHeld = "not_held"
	// NamedOverBudget: showing it would make the answer carry more than MaxShownBytes of named
	// transactions: the answer carries the reference; ask for the transaction by its hash.
	NamedOverBudget = "over_budget"
	// NamedUndecodable: the node holds the named transaction but could not turn it into the
	// answer's JSON: the answer carries the reference.
	NamedUndecodable = "undecodable"
)

// NamedStatusField is added to an answer the node did not expand because MaxExpanding answers
// were being expanded already; its value is NamedBusy. The answer is the SDK's, references
// unreplaced; ask again.
const (
	NamedStatusField = "named_txs_status"
	NamedBusy        = "busy"
)

// MaxExpanding bounds the answers a node expands at once: each holds several copies of up to
// MaxShownBytes.
const MaxExpanding = 2

// PlainParam=false in a request's query asks for the SDK's answer unexpanded (named=false):
// what a client reading only a block's header sends, costing the node no expansion.
const PlainParam = "named"

// MaxShownBytes bounds the named transactions one answer carries, so a request costs the node
// no more than a block's worth of reading (a block names up to 21 MB of transactions).
const MaxShownBytes = 32 << 20

// MaxListedBytes is the smaller budget of answers listing transactions: a block's transactions
// and the event search (whose pages may span blocks).
const MaxListedBytes = 8 << 20

// NamedTx is one reference an answer met. Hashes are upper-case hex, as CometBFT and the SDK
// write transaction hashes.
type NamedTx struct {
	// Index is the position in the answer's list of transactions: tx_responses and txs,
	// block.data.txs; 0 in NamedTxField.
	Index int `json:"index"`
	// ReferenceHash is the hash of the block's transaction (the MsgOrderedTx), which CometBFT
	// indexes; TxHash the named transaction's own, which its producer was given.
	ReferenceHash string `json:"reference_hash"`
	TxHash        string `json:"tx_hash"`
	TxBytes       uint64 `json:"tx_bytes"`
	Status        string `json:"status"`
	Note          string `json:"note,omitempty"`
}

// NoteOf says in words what a status means, for people reading an answer in an explorer.
func NoteOf(status string) string {
	switch status {
	case NamedNotHeld:
		return "this node no longer holds the transaction this block named by digest: shown is the reference (MsgOrderedTx); the result is the named transaction's"
	case NamedOverBudget:
		return "not shown: the answer would carry too many bytes of named transactions; ask for it by tx_hash"
	case NamedUndecodable:
		return "not shown: this node could not decode the transaction this block named; shown is the reference (MsgOrderedTx)"
	}
	return ""
}
