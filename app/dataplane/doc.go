// Package dataplane is a validator's data plane for ordering by digest
// (docs/digest-ordering.md): validators push their clients' transactions to each other and
// answer, signed, what they hold; each keeps what it admitted in a pool, in memory and in
// per-height files, so that a block can name a transaction by its SHA-256 instead of carrying
// it; a node fetches what a block names and it lacks. The app (package app) owns consensus:
// CheckTx, proposals and FinalizeBlock call the Plane; the plane calls the app back only
// through Host (staging a pushed transaction for the mempool) and, in the e2e harness's faulty
// validator, Faults. It is node-local: nothing here enters the app hash.
//
// # Protocol
//
// Three paths, on the API server and on the plane's own listener ([ordering] listen-address):
//
//   - Push, POST PushPath (push.go). The body is frames: a big-endian uint32 length and a
//     transaction of 64 bytes to MaxTxBytes, at most 8,192 frames; a sender packs at most
//     8 MiB, frame headers included, or one larger transaction alone, one queue of 64 MiB per
//     peer; a request that failed is sent again up to 5 times, 100 ms after the first failure
//     and twice as long after each next (never one refused, 4xx). The answer is one byte per frame, '1' held, '0' refused, signed by the
//     answering validator over the request's digest and the answer: that answer is a receipt
//     (receipts.go). A signed push is held at once and answered before CheckTx, then given to
//     the mempool in arrival order (through Host.StageTx: a stub of it, app/stub.go); an
//     unsigned push is a client's: CheckTx first, then sent on to this node's own peers. A
//     validator's push is never sent on.
//   - Held word, POST HeldPath (push.go, receipts.go). Once the signed answers tell the node
//     that took a batch that more than two thirds of the voting power hold it (its own power
//     counted), it sends each peer the batch's hash, after the batch on the same queue, with
//     the receipts: u32 claims, 32-byte hashes; u32 receipts, each u8 length + signer, u64
//     signed-at ms, u8 length + signature, u32 frames, the frames' hashes, the answer bytes.
//     At most 4 MiB and 1,024 receipts. A receiver takes it only signed by the validator whose
//     push brought the batch, and only for the claims the receipts prove: the sender's power
//     plus that of each validator whose receipt checks (once each, never the sender's own) must
//     pass two thirds. A proposer then names the batch at once (Pool.ForProposal).
//   - Fetch, GET PoolPath + hex SHA-256 (pool_fetch.go). Unsigned: the receiver checks the
//     hash of what arrives and reads no more than the size the block's reference names. A
//     proposal's gaps are asked of all peers at once, 16 transactions at a time, within the
//     app's wait (FetchOnce); a finalized block's until they come (FetchAll), each attempt
//     bounded by 5 s plus 1 s per MiB. Each answer has an 8 s write deadline.
//
// The listener (listener.go) reads headers within 5 s, bodies and answers within 60 s, closes
// idle connections after 90 s, holds at most 512 connections, and runs at most 8 requests of one
// validator at once (by the validator its headers name, checked against the set) and 32
// unsigned ones, answering 503 at once past that.
//
// # Trust
//
// Nothing is decided by a source address or a host name. Keys come from the chain: the app
// hands over the last committed validator set after each commit (SetValidators: public keys,
// voting powers, the data-plane keys and endpoints operators registered in x/poa). A node signs
// for its validator with the data-plane key registered for it (config/data_plane_key.json, made
// at the first start) or, while none is registered, with its consensus key
// (priv_validator_key.json); a node without its consensus key (a remote signer's) finds its
// validator by its registered data-plane key; a full node signs nothing and pushes as a client.
// A signed request or answer carries Bftlog-Validator (hex consensus address), Bftlog-Signed-At
// (Unix ms, refused 30 s off the receiver's clock) and Bftlog-Signature: ed25519 over
// "bftlog/data-plane/v2\x00", the chain ID, 0, the signer's address, 0, the path (answers:
// path + "#answer"), 0, the time as a big-endian uint64 and a digest (a
// push: SHA-256 of its frames' SHA-256s; an answer: SHA-256 of that and the answer bytes; a held
// word: SHA-256 of its body). What is checked when:
//
//   - before a body is read: that the named signer is a validator and the time is fresh
//     (otherwise 403, nothing held);
//   - once the frames are hashed: the signature, and that the same signer, time and digest
//     were not seen for as long as that time is accepted (replay cache of two 60 s
//     generations, 2^18 requests per signer in each);
//   - on an answer: its signature; an unsigned one counts for no quorum;
//   - on a held word: its signature, then each receipt's.
//
// Budgets are per sender: what one validator pushed may hold 64 MiB here before CheckTx judges
// it and 64 MiB waiting for the mempool, past either its frames are answered '0'; what CheckTx
// refuses is dropped and counted against it (bftlog_data_plane_refused_total{sender,reason}).
// Clients' pushes count against the clients' share of the pool (mempool.max_txs_bytes, at most
// 128 MiB), which validators' pushes and copies fetched for proposals do not use up.
//
// # The pool
//
// pool.go holds admitted transactions of 1 KiB to 64 MiB in memory (256 MiB, oldest first;
// their decoding up to 128 MiB), by SHA-256, with an index by length and last 64 bytes that is
// only a hint (at most four candidates per key, each compared byte for byte): identity is the
// full hash, so a look-alike neither censors nor displaces what it imitates. A transaction a
// block named is remembered as ordered for 100 heights; one no block named leaves after 100.
//
// # Height files
//
// pool_disk.go writes what a proposal names to <home>/data/pool/<height> before this node
// votes for it. A file is a sequence of entries: the transaction's SHA-256 (32 bytes), its
// length (big-endian uint32) and its bytes. Crash safety:
//
//   - the file is synced before the vote, and its directory too when this write created it
//     (O_EXCL tells), so a validator that voted for a block can execute and serve it after a
//     crash;
//   - a failed write is cut back to where it began, and a file it created is removed;
//   - a transaction named again at a later height is written again in that height's file;
//   - at start each file is scanned: the index keeps each hash's newest copy, and a file is
//     cut at a torn entry or a length past the end or over 64 MiB;
//   - what is read back is hashed again before it is served or executed;
//   - files are deleted after keep-heights heights or, oldest first, once they hold more than
//     keep-bytes.
package dataplane
