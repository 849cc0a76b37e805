// Package kbatch is Kafka's record batch v2 (magic 2), bftlog's record format on the wire and
// in the store, in the manner of franz-go's kmsg/kbin: the 61-byte header field by field
// (header.go), the one non-allocating record reader every parser walks (records.go), the
// single-pass check a produce runs, encoding and decoding (batch.go), compaction's read of a
// stored batch and the compacted batch it writes (compact.go), and gzip, snappy, lz4 and zstd
// under a bound (compression.go).
//
// It knows bytes, not the module: it imports nothing of x/topics (types converts its proto
// records to and from Record and KafkaRecord), so the keeper, the gateway and every client
// share one codec. Its refusals are x/topics' registered errors (errors.go), with their codes.
// It is deterministic and starts no goroutine (zstd runs with concurrency 1): the keeper runs
// it in the state machine.
package kbatch
