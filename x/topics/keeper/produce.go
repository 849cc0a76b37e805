package keeper

import (
	"context"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// RecordBytesGas is charged per record byte a batch holds once decompressed, on top of the
// transaction-size and store-write gas for its stored bytes: checking costs CPU in proportion
// to the records' size. DecompressedBytesGas is added per decompressed byte of a compressed
// batch: gzip decompresses ~200 MB/s here (the slowest codec), so a block's gas spent on
// decompression (bombs included) takes no longer than the same gas of uncompressed batches.
const (
	RecordBytesGas       = 2
	DecompressedBytesGas = 10
)

// checkProduceBasic runs every check that needs no state, before anything is read.
func checkProduceBasic(batches []types.ProduceBatch) error {
	if len(batches) == 0 {
		return errorsmod.Wrap(types.ErrEmptyBatch, "the message has no batches")
	}
	for i, b := range batches {
		if err := types.ValidateTopicName(b.Topic); err != nil {
			return errorsmod.Wrapf(err, "batch %d", i)
		}
		if len(b.RecordBatch) == 0 || b.RecordCount == 0 {
			return errorsmod.Wrapf(types.ErrEmptyBatch, "batch %d for topic %q has no records", i, b.Topic)
		}
		if kbatch.RecordBatchCount(b.RecordBatch) != b.RecordCount {
			return errorsmod.Wrapf(types.ErrInvalidRecordBatch, "batch %d says %d records, its record batch holds %d", i, b.RecordCount, kbatch.RecordBatchCount(b.RecordBatch))
		}
	}
	return nil
}

// Produce appends the batches atomically and returns where each landed. Each batch is one
// Kafka record batch for one partition, checked in one pass (CheckRecordBatch) and stored as
// it came with its base offset set. Everything is checked before the first write, so a
// rejected message changes nothing even outside a transaction.
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
	sdkCtx := sdk.UnwrapSDKContext(ctx)

	var (
		checked    = make([]*types.ProduceBatch, 0, len(batches)) // passed every check, to write
		topics     = map[string]types.Topic{}
		sequenced  = map[types.TopicPartition]bool{}
		nRecords   uint64
		nBytes     uint64
		duplicates []types.ProduceResult
		infos      = make([]kbatch.BatchInfo, 0, len(batches)) // of checked
		kafkaIdem  = k.newKafkaProducers()
	)
	for i := range batches {
		b := &batches[i]
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
		if b.Partition >= t.Partitions {
			return nil, errorsmod.Wrapf(types.ErrInvalidPartition, "batch %d: topic %q has %d partitions, asked for partition %d", i, b.Topic, t.Partitions, b.Partition)
		}
		if b.Sequence != 0 {
			tp := types.TopicPartition{Topic: b.Topic, Partition: b.Partition}
			if sequenced[tp] {
				return nil, errorsmod.Wrapf(types.ErrInvalidRequest, "two idempotent batches for %s/%d in one message", b.Topic, b.Partition)
			}
			sequenced[tp] = true
			dup, err := k.checkSequence(ctx, producer, b)
			if err != nil {
				return nil, err
			}
			if dup != nil {
				duplicates = append(duplicates, *dup)
				continue
			}
		}
		nRecords += uint64(b.RecordCount)
		if nRecords > uint64(params.MaxRecordsPerBatch) {
			return nil, errorsmod.Wrapf(types.ErrTooManyRecords, "more than %d records in one message", params.MaxRecordsPerBatch)
		}
		nBytes += uint64(len(b.RecordBatch))
		if nBytes > params.MaxBatchBytes {
			return nil, errorsmod.Wrapf(types.ErrBatchTooLarge, "more than %d record batch bytes in one message", params.MaxBatchBytes)
		}
		info, err := kbatch.CheckRecordBatch(b.RecordBatch, kbatch.BatchLimits{
			MaxRecordBytes:       t.Config.EffectiveMaxRecordBytes(params),
			MaxDecompressedBytes: params.MaxBatchBytes,
			MaxHeaders:           params.MaxHeadersPerRecord,
			RequireKeys:          t.Config.Compacts(),
		})
		// Charged before the verdict: a refused decompression bomb pays for the bytes it made
		// the node decompress, up to the bound.
		perByte := uint64(RecordBytesGas)
		if info.Compression != kbatch.CompressionNone {
			perByte += DecompressedBytesGas
		}
		sdkCtx.GasMeter().ConsumeGas(info.RecordBytes*perByte, "record batch check")
		if err != nil {
			return nil, errorsmod.Wrapf(err, "batch %d for %s/%d", i, b.Topic, b.Partition)
		}
		if info.ProducerID >= 0 { // a Kafka idempotent producer's batch (kafka_producers.go)
			dup, err := kafkaIdem.check(ctx, producer, b, info)
			if err != nil {
				return nil, errorsmod.Wrapf(err, "batch %d", i)
			}
			if dup != nil {
				duplicates = append(duplicates, *dup)
				continue
			}
		}
		checked = append(checked, b)
		infos = append(infos, info)
	}

	// Every check passed: now write.
	appendMs := sdkCtx.BlockTime().UnixMilli()
	results := make([]types.ProduceResult, 0, len(checked))
	for i, b := range checked {
		pkey := types.TopicPartition{Topic: b.Topic, Partition: b.Partition}
		batch, part, err := k.appendStored(ctx, pkey, producer, b.RecordBatch, b.RecordCount, appendMs)
		if err != nil {
			return nil, err
		}
		if cfg := topics[b.Topic].Config; cfg.Compacts() {
			if err := k.noteAppended(ctx, cfg, part, batch, infos[i].Keys); err != nil {
				return nil, err
			}
		}
		results = append(results, types.ProduceResult{Topic: b.Topic, Partition: b.Partition, BaseOffset: batch.BaseOffset, Count: b.RecordCount})
		if infos[i].ProducerID >= 0 {
			kafkaIdem.appended(producer, b, infos[i].ProducerID, infos[i].BaseSequence, batch.BaseOffset)
		}
		if b.Sequence != 0 {
			state := types.ProducerState{
				Topic: b.Topic, Partition: b.Partition, Producer: producer,
				LastSequence: b.Sequence, BaseOffset: batch.BaseOffset, Count: b.RecordCount,
			}
			if err := k.ProducerStates.Set(ctx, collections.Join(pkey, producer), state); err != nil {
				return nil, err
			}
		}
	}
	// A Kafka transaction is one message (the gateway submits it at EndTxn), so its batches
	// commit with it: each partition they went to gets the commit marker after them.
	var markers []txnMarker
	for i, b := range checked {
		if !infos[i].Transactional {
			continue
		}
		m := txnMarker{types.TopicPartition{Topic: b.Topic, Partition: b.Partition}, infos[i].ProducerID, infos[i].ProducerEpoch}
		if !slices.Contains(markers, m) {
			markers = append(markers, m)
		}
	}
	for _, m := range markers {
		if _, _, err := k.appendStored(ctx, m.tp, producer, kbatch.EncodeCommitMarker(m.producerID, m.epoch, appendMs), 1, appendMs); err != nil {
			return nil, err
		}
	}
	if err := kafkaIdem.write(ctx); err != nil {
		return nil, err
	}
	return append(results, duplicates...), nil
}

// txnMarker is a partition a Kafka transaction wrote to, with its producer.
type txnMarker struct {
	tp         types.TopicPartition
	producerID int64
	epoch      int16
}

// appendStored appends one checked record batch (count offsets) to a partition and returns
// it with the partition after it.
func (k Keeper) appendStored(ctx context.Context, pkey types.TopicPartition, producer string, raw []byte, count uint32, appendMs int64) (types.RecordBatch, types.Partition, error) {
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	part, err := k.Partitions.Get(ctx, pkey)
	if err != nil {
		return types.RecordBatch{}, part, err
	}
	batch := types.RecordBatch{
		BaseOffset:      part.HighWatermark,
		Producer:        producer,
		LogAppendTimeMs: appendMs,
		Height:          sdkCtx.BlockHeight(),
		RecordCount:     count,
		RecordBatch:     kbatch.WithBaseOffset(raw, part.HighWatermark),
	}
	batch.Seal()
	if err := k.setBatch(ctx, collections.Join(pkey, batch.LastOffset()), batch); err != nil {
		return batch, part, err
	}
	part.HighWatermark += uint64(count)
	part.RecordCount += uint64(count)
	part.ByteCount += batch.SizeBytes
	if err := k.Partitions.Set(ctx, pkey, part); err != nil {
		return batch, part, err
	}
	return batch, part, sdkCtx.EventManager().EmitTypedEvent(&types.EventBatchAppended{
		Topic: pkey.Topic, Partition: pkey.Partition, BaseOffset: batch.BaseOffset, Count: count, SizeBytes: batch.SizeBytes, Producer: producer,
	})
}

// checkSequence applies the idempotent-producer rule to a sequenced batch: the next sequence
// is appended, a resend of the last accepted one is answered with its original offsets, and
// anything else is rejected. A partition may carry one sequenced batch per message.
func (k Keeper) checkSequence(ctx context.Context, producer string, b *types.ProduceBatch) (*types.ProduceResult, error) {
	partition := b.Partition
	tp := types.TopicPartition{Topic: b.Topic, Partition: partition}
	state, err := k.ProducerStates.Get(ctx, collections.Join(tp, producer))
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	switch {
	case state.LastSequence != 0 && b.Sequence == state.LastSequence:
		if b.RecordCount != state.Count {
			return nil, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "sequence %d for %s/%d was accepted with %d records, the resend has %d", b.Sequence, b.Topic, partition, state.Count, b.RecordCount)
		}
		return &types.ProduceResult{Topic: b.Topic, Partition: partition, BaseOffset: state.BaseOffset, Count: state.Count, Duplicate: true}, nil
	case b.Sequence != state.LastSequence+1:
		return nil, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "%s/%d expects sequence %d from %s (last accepted %d), got %d", b.Topic, partition, state.LastSequence+1, producer, state.LastSequence, b.Sequence)
	}
	return nil, nil
}
