package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// pendingBatch gathers the records of one MsgProduce that land on one partition, so that
// each (topic, partition) gets exactly one stored batch per message.
type pendingBatch struct {
	topic     string
	partition uint32
	records   []types.BatchRecord
	// size is the sum of the records' stored sizes (RecordSize).
	size uint64
	// sequenced notes the idempotent batch among the records, to record its producer state.
	sequenced *sequencedBatch
}

type sequencedBatch struct {
	sequence   uint64
	firstIndex int
	count      uint32
}

// checkProduceBasic runs every check that needs no state, before anything is read.
func checkProduceBasic(batches []types.ProduceBatch) error {
	if len(batches) == 0 {
		return errorsmod.Wrap(types.ErrEmptyBatch, "the message has no batches")
	}
	for i, b := range batches {
		if err := types.ValidateTopicName(b.Topic); err != nil {
			return errorsmod.Wrapf(err, "batch %d", i)
		}
		if b.Partition < -1 {
			return errorsmod.Wrapf(types.ErrInvalidPartition, "batch %d: partition %d; use -1 to let the partitioner choose", i, b.Partition)
		}
		if len(b.Records) == 0 {
			return errorsmod.Wrapf(types.ErrEmptyBatch, "batch %d for topic %q has no records", i, b.Topic)
		}
		if b.Sequence != 0 && b.Partition < 0 {
			return errorsmod.Wrapf(types.ErrInvalidRequest, "batch %d: an idempotent batch (sequence %d) needs an explicit partition", i, b.Sequence)
		}
	}
	return nil
}

// Produce appends the batches atomically and returns where each (topic, partition) batch
// landed. Everything is checked before the first write, so a rejected message changes nothing
// even outside a transaction.
func (k Keeper) Produce(ctx context.Context, producer string, batches []types.ProduceBatch) ([]types.ProduceResult, error) {
	if err := k.validAddress(producer, "producer"); err != nil {
		return nil, err
	}
	if err := checkProduceBasic(batches); err != nil {
		return nil, err
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}

	var (
		pending    []*pendingBatch
		index      = map[types.TopicPartition]*pendingBatch{}
		topics     = map[string]types.Topic{}
		cursors    = map[string]uint32{}
		cursorList []string // topics whose cursor moved, in first-use order (deterministic writes)
		nRecords   uint64
		nBytes     uint64
		duplicates []types.ProduceResult
	)
	add := func(topic string, partition uint32, r types.BatchRecord, size uint64) {
		key := types.TopicPartition{Topic: topic, Partition: partition}
		pb := index[key]
		if pb == nil {
			pb = &pendingBatch{topic: topic, partition: partition}
			index[key] = pb
			pending = append(pending, pb)
		}
		pb.records = append(pb.records, r)
		pb.size += size
	}

	for i, b := range batches {
		t, ok := topics[b.Topic]
		if !ok {
			if t, err = k.GetTopic(ctx, b.Topic); err != nil {
				return nil, err
			}
			if !t.MayProduce(producer) {
				return nil, errorsmod.Wrapf(types.ErrUnauthorizedProducer, "%s may not produce to topic %q", producer, b.Topic)
			}
			topics[b.Topic] = t
		}
		if b.Partition >= 0 && uint32(b.Partition) >= t.Partitions {
			return nil, errorsmod.Wrapf(types.ErrInvalidPartition, "batch %d: topic %q has %d partitions, asked for partition %d", i, b.Topic, t.Partitions, b.Partition)
		}
		var seq *sequencedBatch
		if b.Sequence != 0 {
			dup, err := k.checkSequence(ctx, producer, b, index)
			if err != nil {
				return nil, err
			}
			if dup != nil {
				duplicates = append(duplicates, *dup)
				continue
			}
			pid := types.TopicPartition{Topic: b.Topic, Partition: uint32(b.Partition)}
			first := 0
			if pb := index[pid]; pb != nil {
				first = len(pb.records)
			}
			seq = &sequencedBatch{sequence: b.Sequence, firstIndex: first, count: uint32(len(b.Records))}
		}
		nRecords += uint64(len(b.Records))
		if nRecords > uint64(params.MaxRecordsPerBatch) {
			return nil, errorsmod.Wrapf(types.ErrTooManyRecords, "more than %d records in one message", params.MaxRecordsPerBatch)
		}
		maxRecord := t.Config.EffectiveMaxRecordBytes(params)

		// Keyless records of a partitioner batch stick together on one partition (Kafka's
		// sticky partitioner); the cursor advances once per such batch.
		spread, spreadUsed := uint32(0), false
		for j, r := range b.Records {
			if len(r.Headers) > int(params.MaxHeadersPerRecord) {
				return nil, errorsmod.Wrapf(types.ErrTooManyHeaders, "batch %d record %d has %d headers, the limit is %d", i, j, len(r.Headers), params.MaxHeadersPerRecord)
			}
			size := r.RecordSize()
			if size > maxRecord {
				return nil, errorsmod.Wrapf(types.ErrRecordTooLarge, "batch %d record %d is %d bytes, topic %q allows %d", i, j, size, b.Topic, maxRecord)
			}
			nBytes += size
			if nBytes > params.MaxBatchBytes {
				return nil, errorsmod.Wrapf(types.ErrBatchTooLarge, "more than %d record bytes in one message", params.MaxBatchBytes)
			}
			var partition uint32
			switch {
			case b.Partition >= 0:
				partition = uint32(b.Partition)
			case r.Key != nil:
				partition = types.KeyPartition(r.Key.Data, t.Partitions)
			default:
				if !spreadUsed {
					if spread, err = k.spreadCursor(ctx, b.Topic, cursors); err != nil {
						return nil, err
					}
					spreadUsed = true
				}
				partition = spread % t.Partitions
			}
			add(b.Topic, partition, r, size)
		}
		if seq != nil {
			index[types.TopicPartition{Topic: b.Topic, Partition: uint32(b.Partition)}].sequenced = seq
		}
		if spreadUsed {
			if _, moved := cursors[b.Topic]; !moved {
				cursorList = append(cursorList, b.Topic)
			}
			cursors[b.Topic] = (spread + 1) % t.Partitions
		}
	}

	// Every check passed: now write.
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	appendMs := sdkCtx.BlockTime().UnixMilli()
	results := make([]types.ProduceResult, 0, len(pending))
	for _, pb := range pending {
		pkey := types.TopicPartition{Topic: pb.topic, Partition: pb.partition}
		part, err := k.Partitions.Get(ctx, pkey)
		if err != nil {
			return nil, err
		}
		n := uint64(len(pb.records))
		batch := types.RecordBatch{
			BaseOffset:      part.HighWatermark,
			Producer:        producer,
			LogAppendTimeMs: appendMs,
			Height:          sdkCtx.BlockHeight(),
			Records:         pb.records,
		}
		batch.SizeBytes = batch.StoredSize(pb.size)
		bkey := collections.Join(pkey, part.HighWatermark+n-1)
		if err := k.Batches.Set(ctx, bkey, batch); err != nil {
			return nil, err
		}
		if err := k.BatchMetas.Set(ctx, bkey, batch.Meta()); err != nil {
			return nil, err
		}
		part.HighWatermark += n
		part.RecordCount += n
		part.ByteCount += batch.SizeBytes
		if err := k.Partitions.Set(ctx, pkey, part); err != nil {
			return nil, err
		}
		results = append(results, types.ProduceResult{Topic: pb.topic, Partition: pb.partition, BaseOffset: batch.BaseOffset, Count: uint32(n)})
		if sq := pb.sequenced; sq != nil {
			state := types.ProducerState{
				Topic: pb.topic, Partition: pb.partition, Producer: producer,
				LastSequence: sq.sequence, BaseOffset: batch.BaseOffset + uint64(sq.firstIndex), Count: sq.count,
			}
			if err := k.ProducerStates.Set(ctx, collections.Join(pkey, producer), state); err != nil {
				return nil, err
			}
		}
		if err := sdkCtx.EventManager().EmitTypedEvent(&types.EventBatchAppended{
			Topic: pb.topic, Partition: pb.partition, BaseOffset: batch.BaseOffset, Count: uint32(n), SizeBytes: batch.SizeBytes, Producer: producer,
		}); err != nil {
			return nil, err
		}
	}
	for _, topic := range cursorList {
		if err := k.SpreadCursors.Set(ctx, topic, cursors[topic]); err != nil {
			return nil, err
		}
	}
	return append(results, duplicates...), nil
}

// checkSequence applies the idempotent-producer rule to a sequenced batch: the next sequence
// is appended, a resend of the last accepted one is answered with its original offsets, and
// anything else is rejected. A partition may carry one sequenced batch per message.
func (k Keeper) checkSequence(ctx context.Context, producer string, b types.ProduceBatch, index map[types.TopicPartition]*pendingBatch) (*types.ProduceResult, error) {
	partition := uint32(b.Partition)
	tp := types.TopicPartition{Topic: b.Topic, Partition: partition}
	if pb := index[tp]; pb != nil && pb.sequenced != nil {
		return nil, errorsmod.Wrapf(types.ErrInvalidRequest, "two idempotent batches for %s/%d in one message", b.Topic, partition)
	}
	state, err := k.ProducerStates.Get(ctx, collections.Join(tp, producer))
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	switch {
	case state.LastSequence != 0 && b.Sequence == state.LastSequence:
		if uint32(len(b.Records)) != state.Count {
			return nil, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "sequence %d for %s/%d was accepted with %d records, the resend has %d", b.Sequence, b.Topic, partition, state.Count, len(b.Records))
		}
		return &types.ProduceResult{Topic: b.Topic, Partition: partition, BaseOffset: state.BaseOffset, Count: state.Count, Duplicate: true}, nil
	case b.Sequence != state.LastSequence+1:
		return nil, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "%s/%d expects sequence %d from %s (last accepted %d), got %d", b.Topic, partition, state.LastSequence+1, producer, state.LastSequence, b.Sequence)
	}
	return nil, nil
}

// spreadCursor returns the next keyless partition of a topic, preferring this message's
// in-flight value.
func (k Keeper) spreadCursor(ctx context.Context, topic string, inflight map[string]uint32) (uint32, error) {
	if c, ok := inflight[topic]; ok {
		return c, nil
	}
	c, err := k.SpreadCursors.Get(ctx, topic)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return 0, nil
	}
	return c, err
}
