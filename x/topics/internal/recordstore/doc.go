// Package recordstore keeps x/topics' record batch bytes outside the Merkle state: a storage
// engine of files, pointers and fsyncs below the keeper, which reaches it through Store.
//
// # Why outside IAVL
//
// IAVL keeps every value it writes in a leaf node and again in its fast-node index, caches
// nodes by count (a count of ~500 KB batches is gigabytes) and hashes each value when it
// saves a version; for the log's bulk that is memory, disk and CPU spent on bytes that never
// change once written. So the module's batches collection holds each batch's metadata with
// the SHA-256 of its record batch, which the app hash commits to, and the bytes come here
// under the same key (types.RecordBytesPrefix, then the batch key): written and deleted in
// the same block as the metadata, read by Fetch, checked against the proven hash by verifying
// clients. The keeper's RecordStore holds a block's writes until its Precommit applies them
// here (Store.Apply), and charges gas for them as a KV store does.
//
// # Segment files
//
// Record bytes on disk are append-only segment files, as a Kafka broker keeps its log. A
// database holding the bytes themselves rewrites them again and again as it compacts
// (LevelDB: a third of a validator's CPU once its log held 2 GB, and a throughput that fell
// with the log's size); a segment file is written once, read sequentially and deleted whole
// when retention, a topic purge or compaction (which writes a batch's new bytes at the end of
// the log, as Kafka's cleaner writes new segments) has left no batch in it. The database keeps
// only a 20-byte pointer per batch — segment, position, length — so its compactions stay
// small.
//
// Layout: <dir>/<topic>-<partition>/<first batch's last offset, 20 digits>.log, as Kafka names
// its partition directories and segments (a topic name too long for a directory entry, or not
// a valid one, is shortened and hashed: partitionDirBase). A segment is closed once it holds
// segmentBytes. In the database (the app gives its application database under
// types.RecordDBPrefix):
//
//	types.RecordBytesPrefix | batch key           → pointer (segment, position, length)
//	KeptPrefix | batch key | height               → pointer the block at height replaced or deleted
//	KeptByHeightPrefix | height | batch key       → 1 (the kept pointers in height order)
//	SweepPrefix | topic, partition                → 1 (segments to remove after a restart)
//
// NewDBStore is the variant without files, for nodes without a data directory (in-memory test
// chains): the bytes themselves under their keys, nothing kept, no snapshots.
//
// # Crash protocol
//
// A block's bytes are appended and synced — a new segment's directory entry, and a new
// partition directory's in its parent, too — before the pointers are written in a synced
// batch, so a pointer never names bytes that are not on disk; segments are removed only after
// that batch. A node that stops after appending but before the pointers replays the block and
// appends the bytes again, leaving the first copy as unused bytes in its segment, deleted with
// it. A node that stops after the pointers but before removing the segments they no longer
// name finds them listed under SweepPrefix (written in the same batch) and removes them at its
// first Apply, with the partition directories no pointer, current or kept, names (the orphan
// sweep). A segment found shorter than its pointers say (a disk that lost acknowledged
// writes) is never appended to, and reads of the lost bytes fail naming the file.
//
// # Kept versions
//
// One word in this package for the bytes a block replaced or deleted, and their pointers:
// kept. A node that stops after the pointers but before the multistore commits replays the
// block against the state before it — whose batches the block's compaction rewrote or
// deleted, and reads again. Verified reads prove a recent height, not the newest. And a query
// of the last committed height may read while Commit applies the next block here (Precommit
// runs before the multistore commits; queries answer from the last committed height between
// FinalizeBlock and Commit). So a pointer a block replaces or deletes is kept, under
// KeptPrefix with the block's height, for types.RecordHistoryBlocks blocks: reads at those
// heights (the replay's included) find the bytes their state's SHA-256 names among the kept
// ones (Store.Kept), and their segments stay meanwhile. KeptByHeightPrefix indexes them by
// height, to release them in order, those of at most two heights per block.
//
// State sync snapshots hold kept versions longer. A snapshot of height H is taken in the
// background after H commits, while later blocks go on — and their compaction, retention and
// purges replace or delete batches H holds. A pin on H holds back releasing the versions kept
// after H until its snapshot is written; the snapshot walks H's batches in H's state and takes
// each batch's current bytes, or else the kept ones, by the SHA-256 H's state holds: every
// node's snapshot of H carries the same bytes in the same order. Pinning is one height added
// to a short list (Store.Pin), no walk over the batches; a pin goes when its snapshot ends,
// written or failed, and of the pins whose snapshot never started (the SDK's manager skips a
// height while another snapshot runs) the newest maxPins are held. A restore writes to a
// staging directory beside the store's, which replaces it only once every batch is in.
package recordstore
