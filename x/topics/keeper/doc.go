// Package keeper is x/topics' state machine: the collections keeper, its msg and query servers
// and its EndBlocker. Everything here is deterministic (block time, no map order, no goroutines)
// and every path an account can reach is paid for in gas or deposits.
//
// The paths, one obvious place per step:
//
//   - produce: msg_server.go -> produce.go (checks each Kafka record batch once, assigns offsets,
//     idempotence; Kafka producer ids in kafka_producers.go) -> the batch's metadata in IAVL and its bytes in the
//     record store (record_store.go: pending in a transient store during the block, handed to
//     x/topics/internal/recordstore at Precommit; the app hash commits each batch's SHA-256);
//   - fetch: query_server.go -> fetch.go -> the same keys, read from committed state only;
//   - delete records: msg_server.go -> delete_records.go (moves log start offsets only) ->
//     retention.go deletes the batches below them in later blocks;
//   - groups: groups.go (what both kinds share, dispatching on Group.kind), groups_native.go
//     (the chain assigns partitions), groups_kafka.go (Kafka's group protocol: the leader
//     assigns), offsets.go (commits and resets), delete_group_offsets.go (Kafka's
//     OffsetDelete);
//   - block-level work, abci.go: member expiry and rebalances, Kafka join phases, retention,
//     compaction and the purge of deleted topics, each bounded per block
//     and each run isolated (internal/blockstep): what fails on state an account shaped is
//     skipped with EventBlockWorkSkipped, and only the node's own storage may stop it.
//
// Log compaction (cleanup.policy compact), as Kafka's log cleaner does it but inside the state
// machine: deterministic, and bounded per block by compaction_bytes_per_block and
// compaction_records_per_block, whatever the accounts producing do.
//
// Produce records each record's offset as its key's latest (KeyOffsets, by the key's SHA-256:
// one write per record, paid in the producer's gas) and counts the batch's bytes as dirty. Once
// the dirty bytes reach min.cleanable.dirty.ratio of the partition, a pass is scheduled for when
// they are older than min.compaction.lag.ms (CompactionDue); a tombstone schedules one for when
// delete.retention.ms has passed (TombstoneDue). A pass walks the partition from its log start
// offset, over one or more blocks, up to the first batch younger than the lag, appended in the
// current block, or last in the partition (never cleaned, as Kafka never cleans the active
// segment). It removes every record whose key has a later offset, and tombstones older than
// delete.retention.ms; a batch left with some records is rewritten under the same key with the
// same base offset and span, a batch left with none is deleted. Offsets never change and are
// never reused; the high watermark and log start offset keep their meaning. Due passes take
// turns: a partition whose pass used up a block's budget goes behind the other due ones.
package keeper
