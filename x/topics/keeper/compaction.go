package keeper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// compactionBudget is what compaction may still do in this block.
type compactionBudget struct {
	bytes   uint64
	records uint32
}

func (b *compactionBudget) open() bool { return b.bytes > 0 && b.records > 0 }

func (b *compactionBudget) spend(bytes uint64, records uint32) {
	b.bytes -= min(bytes, b.bytes)
	b.records -= min(records, b.records)
}

// maxCompactionGrowth bounds how much compaction may grow a compressed batch, whose kept
// records it writes uncompressed: a hostile producer's highly compressible batches cannot turn
// into many times the disk they paid for.
const maxCompactionGrowth = 2

// keyHash is a record key as KeyOffsets keys it.
func keyHash(key []byte) []byte {
	h := sha256.Sum256(key)
	return h[:]
}

// leftBehindKey marks, in KeyOffsets beside the key's latest offset, that the pass numbered by
// its value left an older record of key hash h in a batch it could not rewrite: h's expired
// tombstone must stay in that pass. One byte longer than a key hash, so never one.
func leftBehindKey(h []byte) []byte {
	return append(bytes.Clone(h), 1)
}

// tombstoneDue is when a tombstone appended at appendMs may go: older than delete.retention.ms
// and old enough to be cleaned.
func tombstoneDue(cfg types.TopicConfig, appendMs int64) int64 {
	return appendMs + max(cfg.EffectiveDeleteRetentionMs()+1, cfg.MinCompactionLagMs)
}

// noteAppended records a batch appended to a compacted partition: its records' offsets as
// their keys' latest, tombstone deadlines, and its bytes as dirty, scheduling a pass once the
// dirty ratio is reached.
func (k Keeper) noteAppended(ctx context.Context, cfg types.TopicConfig, p types.Partition, b types.RecordBatch, keys []kbatch.RecordKey) error {
	tp := types.TopicPartition{Topic: p.Topic, Partition: p.Partition}
	for i, rk := range keys {
		h := keyHash(rk.Key)
		off := b.BaseOffset + uint64(i)
		if err := k.KeyOffsets.Set(ctx, collections.Join(tp, h), off); err != nil {
			return err
		}
		if rk.Tombstone {
			if err := k.TombstoneDue.Set(ctx, collections.Join3(tombstoneDue(cfg, b.LogAppendTimeMs), tp, h), off); err != nil {
				return err
			}
		}
	}
	st, err := k.Compactions.Get(ctx, tp)
	if err != nil && !isNotFound(err) {
		return err
	}
	st.DirtyBytes += b.SizeBytes
	if st.DueMs == 0 && st.DirtyBytes*1000 >= uint64(cfg.EffectiveMinCleanableDirtyRatio())*p.ByteCount {
		if err := k.schedule(ctx, tp, &st, b.LogAppendTimeMs+cfg.MinCompactionLagMs); err != nil {
			return err
		}
	}
	return k.Compactions.Set(ctx, tp, st)
}

// schedule makes tp's next pass due at due, or sooner if it already was; the caller stores st.
func (k Keeper) schedule(ctx context.Context, tp types.TopicPartition, st *types.CompactionState, due int64) error {
	if st.DueMs != 0 && st.DueMs <= due {
		return nil
	}
	if st.DueMs != 0 {
		if err := k.CompactionDue.Remove(ctx, collections.Join(st.DueMs, tp)); err != nil {
			return err
		}
	}
	st.DueMs = due
	return k.CompactionDue.Set(ctx, collections.Join(due, tp), true)
}

// ApplyCompaction runs compaction alone with a whole block's budget.
func (k Keeper) ApplyCompaction(ctx context.Context) error {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	return k.applyCompaction(ctx, params)
}

// applyCompaction turns the tombstone deadlines that are due into scheduled passes, then runs
// the due passes, earliest first, within the block's budget.
func (k Keeper) applyCompaction(ctx context.Context, params types.Params) error {
	budget := compactionBudget{bytes: params.CompactionBytesPerBlock, records: params.CompactionRecordsPerBlock}
	return k.compact(ctx, &budget)
}

func (k Keeper) compact(ctx context.Context, budget *compactionBudget) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	if err := k.tombstonesDue(ctx, now, budget); err != nil {
		return err
	}
	for budget.open() {
		key, ok, err := k.firstDue(ctx, now)
		if err != nil || !ok {
			return err
		}
		// The turn is taken off the schedule first, then the pass runs isolated: a pass that
		// fails is skipped (EventBlockWorkSkipped) and not retried until produce schedules one.
		if err := k.unschedule(ctx, key); err != nil {
			return err
		}
		tp := key.K2()
		if err := k.isolate(ctx, "compaction", fmt.Sprintf("%s/%d", tp.Topic, tp.Partition), func(ctx context.Context) error {
			st, err := k.Compactions.Get(ctx, tp)
			if err != nil && !isNotFound(err) {
				return err
			}
			finished, next, err := k.compactPartition(ctx, tp, &st, now, budget)
			if err != nil {
				return err
			}
			if !finished { // out of budget: the pass goes on next block, behind the others due
				next = now
			}
			if next != 0 {
				if err := k.schedule(ctx, tp, &st, next); err != nil {
					return err
				}
			}
			return k.Compactions.Set(ctx, tp, st)
		}); err != nil {
			return err
		}
	}
	return nil
}

// unschedule removes a due turn and clears it from the partition's stored state.
func (k Keeper) unschedule(ctx context.Context, key collections.Pair[int64, types.TopicPartition]) error {
	if err := k.CompactionDue.Remove(ctx, key); err != nil {
		return err
	}
	st, err := k.Compactions.Get(ctx, key.K2())
	if isNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if st.DueMs != key.K1() {
		return nil
	}
	st.DueMs = 0
	return k.Compactions.Set(ctx, key.K2(), st)
}

// firstDue is the earliest scheduled pass if it is due.
func (k Keeper) firstDue(ctx context.Context, now int64) (collections.Pair[int64, types.TopicPartition], bool, error) {
	iter, err := k.CompactionDue.Iterate(ctx, nil)
	if err != nil {
		return collections.Pair[int64, types.TopicPartition]{}, false, err
	}
	defer iter.Close()
	if !iter.Valid() {
		return collections.Pair[int64, types.TopicPartition]{}, false, nil
	}
	key, err := iter.Key()
	return key, err == nil && key.K1() <= now, err
}

// tombstonesDue schedules a pass for each tombstone whose deadline has come and that is still
// its key's latest record (a later record for the key, or a pass that already removed it,
// leaves the deadline with nothing to do). Each deadline costs one record of the budget.
func (k Keeper) tombstonesDue(ctx context.Context, now int64, budget *compactionBudget) error {
	type due struct {
		key    collections.Triple[int64, types.TopicPartition, []byte]
		offset uint64
	}
	var todo []due
	err := k.TombstoneDue.Walk(ctx, nil, func(key collections.Triple[int64, types.TopicPartition, []byte], offset uint64) (bool, error) {
		// At most half the block's records: deadlines alone cannot starve the passes.
		if key.K1() > now || uint32(len(todo)) >= max(budget.records/2, 1) {
			return true, nil
		}
		todo = append(todo, due{key, offset})
		return false, nil
	})
	if err != nil {
		return err
	}
	for _, d := range todo {
		budget.spend(0, 1)
		if err := k.TombstoneDue.Remove(ctx, d.key); err != nil {
			return err
		}
		tp := d.key.K2()
		latest, err := k.KeyOffsets.Get(ctx, collections.Join(tp, d.key.K3()))
		if isNotFound(err) || err == nil && latest != d.offset {
			continue
		}
		if err != nil {
			return err
		}
		if err := k.scheduleStored(ctx, tp, now); err != nil {
			return err
		}
	}
	return nil
}

// scheduleStored schedules tp's next turn at due, or sooner if it already was, in its stored
// compaction state.
func (k Keeper) scheduleStored(ctx context.Context, tp types.TopicPartition, due int64) error {
	st, err := k.Compactions.Get(ctx, tp)
	if err != nil && !isNotFound(err) {
		return err
	}
	if err := k.schedule(ctx, tp, &st, due); err != nil {
		return err
	}
	return k.Compactions.Set(ctx, tp, st)
}

// compactPartition runs tp's pass within the budget and reports whether it ended, and when a
// pass that ended should run again (0: when produce says so). A partition that is gone, or
// whose topic no longer compacts, ends at once.
func (k Keeper) compactPartition(ctx context.Context, tp types.TopicPartition, st *types.CompactionState, now int64, budget *compactionBudget) (bool, int64, error) {
	budget.spend(0, 1) // every turn costs, so a block's turns are bounded too
	p, err := k.Partitions.Get(ctx, tp)
	if isNotFound(err) {
		return true, 0, nil
	}
	if err != nil {
		return false, 0, err
	}
	topic, err := k.Topics.Get(ctx, tp.Topic)
	if err != nil {
		return false, 0, err
	}
	cfg := topic.Config
	if !cfg.Compacts() {
		// The topic stopped compacting: its key entries go, then its state.
		if st.SweepBelow != math.MaxUint64 { // a retention sweep under way becomes this one
			st.SweepBelow, st.SweepAfter = math.MaxUint64, nil
		}
		if done, err := k.sweepKeys(ctx, tp, st, math.MaxUint64, budget); err != nil || !done {
			return false, 0, err
		}
		*st = types.CompactionState{DueMs: st.DueMs}
		return true, 0, nil
	}
	if st.SweepBelow == math.MaxUint64 { // compacting again before the sweep of its entries ended
		st.SweepBelow, st.SweepAfter = 0, nil
	}
	if st.SweepBelow != 0 || cfg.Deletes() && p.LogStartOffset > st.SweptBelow && p.LogStartOffset-st.SweptBelow >= p.RecordCount {
		// Retention moved the log start offset: the entries of keys whose records it deleted
		// go. Only once it has deleted as many records as are left since the last sweep, so a
		// sweep (one record of budget per entry: at most the records left and deleted) costs
		// at most two per record retention deleted, however often the offset moves.
		if done, err := k.sweepKeys(ctx, tp, st, p.LogStartOffset, budget); err != nil || !done {
			return false, 0, err
		}
	}
	if !st.InPass {
		st.InPass, st.PassOffset, st.PassCleanBytes, st.PassRecordsRemoved, st.PassLeftObsolete = true, p.LogStartOffset, 0, 0, false
		st.PassEnd = p.HighWatermark
		st.Passes++
	}
	// MsgDeleteRecords moved the log start offset past where the pass is: the batches in
	// between are retention's to delete, not worth cleaning. (Retention's own moves leave no
	// batch there, so this changes nothing for them.)
	st.PassOffset = max(st.PassOffset, p.LogStartOffset)
	height := sdk.UnwrapSDKContext(ctx).BlockHeight()
	horizon := now - cfg.MinCompactionLagMs
	young := false // the pass stopped at records too young to clean, not at the log's last batch
	for {
		key, b, ok, err := k.batchAt(ctx, tp, st.PassOffset)
		if err != nil {
			return false, 0, err
		}
		if !ok || key.K2()+1 >= st.PassEnd { // the last batch when the pass began is never cleaned
			break
		}
		if b.LogAppendTimeMs > horizon || b.Height == height { // younger than the lag, or appended in this block
			young = true
			break
		}
		if !budget.open() {
			return false, 0, k.Partitions.Set(ctx, tp, p)
		}
		if err := k.compactBatch(ctx, cfg, &p, st, key, b, now, budget); err != nil {
			return false, 0, err
		}
		st.PassOffset = key.K2() + 1
	}
	st.InPass = false
	st.DirtyBytes = p.ByteCount - min(st.PassCleanBytes, p.ByteCount)
	if err := k.Partitions.Set(ctx, tp, p); err != nil {
		return false, 0, err
	}
	// What the pass had to leave is all older than the lag by now + lag: if it is still the
	// dirty ratio's share, come back then rather than wait for the next produce (a topic may
	// have stopped receiving writes), at most once per lag; what was appended during the pass
	// is the next pass's, in the next block.
	var next int64
	if st.DirtyBytes*1000 >= uint64(cfg.EffectiveMinCleanableDirtyRatio())*p.ByteCount {
		switch {
		case young:
			next = now + max(cfg.MinCompactionLagMs, 1)
		case st.PassEnd < p.HighWatermark:
			next = now + 1
		}
	}
	return true, next, sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventPartitionCompacted{
		Topic: tp.Topic, Partition: tp.Partition, CleanThrough: st.PassOffset, RecordsRemoved: st.PassRecordsRemoved, ByteCount: p.ByteCount,
	})
}

// stoppedCompacting schedules a turn of each of t's partitions now, in which their key
// entries go (compactPartition): a topic no longer compacting keeps no key entries.
func (k Keeper) stoppedCompacting(ctx context.Context, t types.Topic) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	for i := uint32(0); i < t.Partitions; i++ {
		if err := k.scheduleStored(ctx, types.TopicPartition{Topic: t.Name, Partition: i}, now); err != nil {
			return err
		}
	}
	return nil
}

// sweepKeys goes on with (or starts, for entries below below) tp's key sweep within the
// budget, each entry examined costing one record, and reports whether it finished.
func (k Keeper) sweepKeys(ctx context.Context, tp types.TopicPartition, st *types.CompactionState, below uint64, budget *compactionBudget) (bool, error) {
	if st.SweepBelow == 0 {
		st.SweepBelow, st.SweepAfter = below, nil
	}
	rng := collections.NewPrefixedPairRange[types.TopicPartition, []byte](tp)
	if len(st.SweepAfter) > 0 {
		rng = rng.StartExclusive(st.SweepAfter)
	}
	iter, err := k.KeyOffsets.Iterate(ctx, rng)
	if err != nil {
		return false, err
	}
	var gone [][]byte
	finished := true
	for ; iter.Valid(); iter.Next() {
		if !budget.open() {
			finished = false
			break
		}
		budget.spend(0, 1)
		kv, err := iter.KeyValue()
		if err != nil {
			iter.Close()
			return false, err
		}
		switch h := kv.Key.K2(); {
		case st.SweepBelow == math.MaxUint64: // every entry
			gone = append(gone, h)
		case len(h) != sha256.Size: // a left-behind mark: only an earlier pass's goes
			if kv.Value != st.Passes || !st.InPass {
				gone = append(gone, h)
			}
		case kv.Value < st.SweepBelow:
			gone = append(gone, h)
		}
		st.SweepAfter = kv.Key.K2()
	}
	iter.Close()
	for _, h := range gone {
		if err := k.KeyOffsets.Remove(ctx, collections.Join(tp, h)); err != nil {
			return false, err
		}
	}
	if finished {
		st.SweptBelow, st.SweepBelow, st.SweepAfter = st.SweepBelow, 0, nil
	}
	return finished, nil
}

// batchAt is the stored batch (metadata) holding offset or the first after it.
func (k Keeper) batchAt(ctx context.Context, tp types.TopicPartition, offset uint64) (collections.Pair[types.TopicPartition, uint64], types.RecordBatch, bool, error) {
	rng := new(collections.Range[collections.Pair[types.TopicPartition, uint64]]).
		StartInclusive(collections.Join(tp, offset)).
		EndInclusive(collections.Join(tp, uint64(math.MaxUint64)))
	iter, err := k.Batches.Iterate(ctx, rng)
	if err != nil {
		return collections.Pair[types.TopicPartition, uint64]{}, types.RecordBatch{}, false, err
	}
	defer iter.Close()
	if !iter.Valid() {
		return collections.Pair[types.TopicPartition, uint64]{}, types.RecordBatch{}, false, nil
	}
	kv, err := iter.KeyValue()
	return kv.Key, kv.Value, err == nil, err
}

// compactBatch removes from one batch the records whose key has a later offset and the
// tombstones past delete.retention.ms, rewriting or deleting the batch.
func (k Keeper) compactBatch(ctx context.Context, cfg types.TopicConfig, p *types.Partition, st *types.CompactionState, key collections.Pair[types.TopicPartition, uint64], b types.RecordBatch, now int64, budget *compactionBudget) error {
	full, err := k.withBytes(ctx, key, b)
	if err != nil {
		return err
	}
	if kbatch.IsControlBatch(full.RecordBatch) { // a transaction marker stays
		budget.spend(b.SizeBytes, 1)
		st.PassCleanBytes += b.SizeBytes
		return nil
	}
	recs, size, err := kbatch.CompactionRecords(full.RecordBatch)
	if errorsmod.IsOf(err, types.ErrBatchTooLarge, types.ErrUnsupportedCompression, types.ErrInvalidRecordBatch) {
		// Bytes the state holds that compaction cannot read (a batch admitted when governance
		// allowed more than kbatch.MaxDecodedBatchBytes): left as they are, as readers cannot
		// decode them either, rather than failing every pass over the partition.
		budget.spend(kbatch.MaxDecodedBatchBytes, 1)
		st.PassCleanBytes += b.SizeBytes
		return nil
	}
	if err != nil {
		return err
	}
	budget.spend(size, uint32(len(recs)))
	tp := key.K1()
	expired := b.LogAppendTimeMs < now-cfg.EffectiveDeleteRetentionMs()
	kept := make([]kbatch.RecordView, 0, len(recs))
	var forget [][]byte   // keys whose expired tombstone goes with this rewrite
	var obsolete [][]byte // keys of the records this batch holds that a later one replaced
	for _, r := range recs {
		if r.Key == nil { // written before the topic compacted: no key, kept
			kept = append(kept, r)
			continue
		}
		off := r.Offset(b.BaseOffset)
		h := keyHash(r.Key)
		latest, err := k.KeyOffsets.Get(ctx, collections.Join(tp, h))
		found := err == nil
		if err != nil && !isNotFound(err) {
			return err
		}
		leftBehind := false
		if found && latest == off && r.Tombstone() && expired && st.PassLeftObsolete {
			pass, err := k.KeyOffsets.Get(ctx, collections.Join(tp, leftBehindKey(h)))
			if err != nil && !isNotFound(err) {
				return err
			}
			leftBehind = err == nil && pass == st.Passes
		}
		switch {
		case found && latest > off: // a later record has the key
			obsolete = append(obsolete, h)
		case found && latest == off && r.Tombstone() && expired && !leftBehind:
			forget = append(forget, h)
		case found && latest == off && r.Tombstone() && expired:
			// An older record of the key is in a batch this pass left as it was: the tombstone
			// stays until a pass leaves none behind, or readers would see the key come back.
			// No new deadline: the next pass due to the dirty ratio comes back.
			kept = append(kept, r)
		default:
			// The latest record of its key, or one written before the topic compacted (no
			// entry: kept, as nothing says a later record has its key).
			kept = append(kept, r)
			if found && latest == off && r.Tombstone() {
				// Not yet past delete.retention.ms as configured now: make sure a deadline exists.
				if err := k.TombstoneDue.Set(ctx, collections.Join3(tombstoneDue(cfg, b.LogAppendTimeMs), tp, h), off); err != nil {
					return err
				}
			}
		}
	}
	removed := uint64(len(recs) - len(kept))
	// The kept records are written uncompressed (a compressor's output may change between
	// library versions, and the bytes' SHA-256 is consensus). A compressed batch may grow so
	// to at most maxCompactionGrowth times its stored bytes — its producer paid gas for every
	// decompressed byte besides the stored ones, about what the grown bytes cost — else it
	// stays as it is, obsolete records included, until enough of it is obsolete.
	if removed == 0 || len(kept) > 0 && kbatch.CompactedBatchSize(kept) > maxCompactionGrowth*len(full.RecordBatch) {
		st.PassCleanBytes += b.SizeBytes
		st.PassLeftObsolete = st.PassLeftObsolete || len(obsolete) > 0
		for _, h := range obsolete {
			if err := k.KeyOffsets.Set(ctx, collections.Join(tp, leftBehindKey(h)), st.Passes); err != nil {
				return err
			}
		}
		return nil
	}
	for _, h := range forget {
		if err := k.KeyOffsets.Remove(ctx, collections.Join(tp, h)); err != nil {
			return err
		}
		if err := k.KeyOffsets.Remove(ctx, collections.Join(tp, leftBehindKey(h))); err != nil {
			return err
		}
	}
	st.PassRecordsRemoved += removed
	if len(kept) == 0 {
		p.RecordCount -= removed
		p.ByteCount -= b.SizeBytes
		return k.removeBatch(ctx, key)
	}
	nb := b
	nb.RecordBatch = kbatch.CompactedBatch(full.RecordBatch, kept)
	nb.RecordCount = uint32(len(kept))
	nb.LastOffsetDelta = uint32(key.K2() - b.BaseOffset)
	nb.Seal()
	p.RecordCount -= removed
	p.ByteCount = p.ByteCount - b.SizeBytes + nb.SizeBytes
	st.PassCleanBytes += nb.SizeBytes
	return k.setBatch(ctx, key, nb)
}

// initCompaction derives the compaction state of a genesis' compacted partitions from their
// batches (it is not exported): each key's latest offset and tombstone deadline, every byte
// dirty and a pass due at once.
func (k Keeper) initCompaction(ctx context.Context, gs *types.GenesisState) error {
	cfgs := make(map[string]types.TopicConfig, len(gs.Topics))
	for _, t := range gs.Topics {
		if t.Config.Compacts() {
			cfgs[t.Name] = t.Config
		}
	}
	if len(cfgs) == 0 {
		return nil
	}
	for _, b := range gs.Batches { // in offset order: later offsets overwrite earlier ones
		cfg, ok := cfgs[b.Topic]
		if !ok || kbatch.IsControlBatch(b.Batch.RecordBatch) {
			continue
		}
		recs, _, err := kbatch.CompactionRecords(b.Batch.RecordBatch)
		if err != nil {
			return err
		}
		tp := types.TopicPartition{Topic: b.Topic, Partition: b.Partition}
		for _, r := range recs {
			if r.Key == nil {
				continue
			}
			h, off := keyHash(r.Key), r.Offset(b.Batch.BaseOffset)
			if err := k.KeyOffsets.Set(ctx, collections.Join(tp, h), off); err != nil {
				return err
			}
			if r.Tombstone() {
				if err := k.TombstoneDue.Set(ctx, collections.Join3(tombstoneDue(cfg, b.Batch.LogAppendTimeMs), tp, h), off); err != nil {
					return err
				}
			}
		}
	}
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	for _, p := range gs.Partitions {
		if _, ok := cfgs[p.Topic]; !ok {
			continue
		}
		tp := types.TopicPartition{Topic: p.Topic, Partition: p.Partition}
		st := types.CompactionState{DirtyBytes: p.ByteCount}
		if err := k.schedule(ctx, tp, &st, now); err != nil {
			return err
		}
		if err := k.Compactions.Set(ctx, tp, st); err != nil {
			return err
		}
	}
	return nil
}
