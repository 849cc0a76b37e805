package keeper

import (
	"context"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// DeleteRecordsGasPerPartition is charged per partition of a MsgDeleteRecords, on top of its
// store reads and writes: the deletion itself happens in later blocks, where retention visits
// the partition and deletes the batches wholly below its new log start offset within the
// block's cleanup budget (retention.go), which no transaction pays for.
const DeleteRecordsGasPerPartition = 10_000

// logStartMove is one checked partition of a MsgDeleteRecords: its state and the log start
// offset it gets, never below the current one.
type logStartMove struct {
	p  types.Partition
	to uint64
}

// DeleteRecords is Kafka's DeleteRecords: each partition's log start offset moves up to its
// offset (the high watermark for to_high_watermark), all partitions or none. It deletes no
// batch: reads below the log start offset are refused from now on (fetch.go, list_offsets.go),
// and retention deletes the batches wholly below it over the next blocks, within the
// EndBlocker's budget, so the message's work is bounded by its partition count whatever the
// number of batches. A batch holding the new log start offset stays until the offset passes
// its end; Fetch serves it whole, as Kafka does, and FetchRecords and Record only its records
// from the offset on.
func (k Keeper) DeleteRecords(ctx context.Context, msg *types.MsgDeleteRecords) ([]types.DeleteRecordsResult, error) {
	moves, err := k.planDeleteRecords(ctx, msg)
	if err != nil {
		return nil, err
	}
	return k.applyDeleteRecords(ctx, msg.Authority, moves)
}

// checkDeleteRecordsBasic runs every check that needs no state.
func checkDeleteRecordsBasic(parts []types.DeleteRecordsPartition) error {
	return checkPartitionList(parts, types.MaxDeleteRecordsPartitions,
		func(dp types.DeleteRecordsPartition) types.TopicPartition {
			return types.TopicPartition{Topic: dp.Topic, Partition: dp.Partition}
		},
		func(dp types.DeleteRecordsPartition) error {
			if dp.ToHighWatermark && dp.Offset != 0 {
				return errorsmod.Wrapf(types.ErrInvalidRequest, "%s/%d: offset %d with to_high_watermark; give one or the other", dp.Topic, dp.Partition, dp.Offset)
			}
			return nil
		})
}

// checkPartitionList runs the stateless checks a message naming partitions has: at least one,
// at most limit, each topic name valid, then check (if any), each (topic, partition) once, in
// that order per entry.
func checkPartitionList[P any](parts []P, limit int, key func(P) types.TopicPartition, check func(P) error) error {
	if len(parts) == 0 {
		return errorsmod.Wrap(types.ErrInvalidRequest, "the message names no partitions")
	}
	if len(parts) > limit {
		return errorsmod.Wrapf(types.ErrTooManyPartitions, "%d partitions in one message; at most %d", len(parts), limit)
	}
	seen := make(map[types.TopicPartition]bool, len(parts))
	for i, p := range parts {
		tp := key(p)
		if err := types.ValidateTopicName(tp.Topic); err != nil {
			return errorsmod.Wrapf(err, "partition %d of the message", i)
		}
		if check != nil {
			if err := check(p); err != nil {
				return err
			}
		}
		if seen[tp] {
			return errorsmod.Wrapf(types.ErrInvalidRequest, "%s/%d named twice", tp.Topic, tp.Partition)
		}
		seen[tp] = true
	}
	return nil
}

// planDeleteRecords checks the whole message and reads what it changes; it writes nothing.
func (k Keeper) planDeleteRecords(ctx context.Context, msg *types.MsgDeleteRecords) ([]logStartMove, error) {
	if err := k.validAddress(msg.Authority, "authority"); err != nil {
		return nil, err
	}
	if err := checkDeleteRecordsBasic(msg.Partitions); err != nil {
		return nil, err
	}
	// Charged before the state is read: a refused message pays for its partitions too.
	sdk.UnwrapSDKContext(ctx).GasMeter().ConsumeGas(uint64(len(msg.Partitions))*DeleteRecordsGasPerPartition, "delete records")
	topics := map[string]types.Topic{}
	moves := make([]logStartMove, 0, len(msg.Partitions))
	for _, dp := range msg.Partitions {
		t, ok := topics[dp.Topic]
		if !ok {
			var err error
			if t, err = k.GetTopic(ctx, dp.Topic); err != nil {
				return nil, err
			}
			if err := k.checkAdmin(t, msg.Authority); err != nil {
				return nil, err
			}
			if !t.Config.Deletes() {
				return nil, errorsmod.Wrapf(types.ErrPolicyViolation, "topic %q has cleanup.policy %s; records are deleted only where it includes delete", t.Name, t.Config.CleanupPolicy)
			}
			topics[dp.Topic] = t
		}
		if dp.Partition >= t.Partitions {
			return nil, errorsmod.Wrapf(types.ErrInvalidPartition, "topic %q has %d partitions, asked for partition %d", t.Name, t.Partitions, dp.Partition)
		}
		p, err := k.GetPartition(ctx, dp.Topic, dp.Partition)
		if err != nil {
			return nil, err
		}
		to := dp.Offset
		if dp.ToHighWatermark {
			to = p.HighWatermark
		}
		if to > p.HighWatermark {
			return nil, errorsmod.Wrapf(types.ErrOffsetOutOfRange, "offset %d of %s is past the high watermark %d", to, p.Label(), p.HighWatermark)
		}
		// Never backwards: at or below the log start offset, nothing changes.
		moves = append(moves, logStartMove{p: p, to: max(to, p.LogStartOffset)})
	}
	return moves, nil
}

// applyDeleteRecords writes the checked moves and answers each partition's low watermark.
func (k Keeper) applyDeleteRecords(ctx context.Context, authority string, moves []logStartMove) ([]types.DeleteRecordsResult, error) {
	events := sdk.UnwrapSDKContext(ctx).EventManager()
	results := make([]types.DeleteRecordsResult, 0, len(moves))
	for _, m := range moves {
		p, old := m.p, m.p.LogStartOffset
		if m.to > old {
			p.LogStartOffset = m.to
			if err := k.Partitions.Set(ctx, types.TopicPartition{Topic: p.Topic, Partition: p.Partition}, p); err != nil {
				return nil, err
			}
			if err := events.EmitTypedEvent(&types.EventRecordsDeleted{
				Topic: p.Topic, Partition: p.Partition, OldLogStartOffset: old, NewLogStartOffset: p.LogStartOffset, Authority: authority,
			}); err != nil {
				return nil, err
			}
		}
		results = append(results, types.DeleteRecordsResult{Topic: p.Topic, Partition: p.Partition, LowWatermark: p.LogStartOffset})
	}
	return results, nil
}
