package keeper

import (
	"context"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

// purgeTopics removes the batches and producer states of deleted topics within the shared
// cleanup budget, oldest name first, partition by partition; a purge that runs out of budget
// resumes from its stored next_partition in the next block. A finished purge frees the name.
// Each partition finished costs one key, so even empty purges are bounded per block.
func (k Keeper) purgeTopics(ctx context.Context, budget *cleanupBudget) error {
	if !budget.open() { // retention went first and used it all
		return nil
	}
	var purges []types.TopicPurge
	err := k.TopicPurges.Walk(ctx, nil, func(_ string, tp types.TopicPurge) (bool, error) {
		purges = append(purges, tp)
		return uint32(len(purges)) >= budget.keys, nil
	})
	if err != nil {
		return err
	}
	for _, tp := range purges {
		for tp.NextPartition < tp.Partitions && budget.open() {
			done, err := k.purgePartition(ctx, types.TopicPartition{Topic: tp.Name, Partition: tp.NextPartition}, budget)
			if err != nil {
				return err
			}
			if !done {
				break
			}
			tp.NextPartition++
			budget.spend(0)
		}
		if tp.NextPartition < tp.Partitions {
			return k.TopicPurges.Set(ctx, tp.Name, tp)
		}
		if err := k.TopicPurges.Remove(ctx, tp.Name); err != nil {
			return err
		}
	}
	return nil
}

// purgePartition deletes one partition's batches (by their metadata, never decoding a batch)
// and then its producer states, within the budget, and reports whether none are left.
func (k Keeper) purgePartition(ctx context.Context, tp types.TopicPartition, budget *cleanupBudget) (bool, error) {
	var batches []collections.Pair[types.TopicPartition, uint64]
	err := k.BatchMetas.Walk(ctx, collections.NewPrefixedPairRange[types.TopicPartition, uint64](tp),
		func(key collections.Pair[types.TopicPartition, uint64], m types.BatchMeta) (bool, error) {
			if !budget.open() {
				return true, nil
			}
			batches = append(batches, key)
			budget.spend(m.SizeBytes)
			return false, nil
		})
	if err != nil {
		return false, err
	}
	for _, key := range batches {
		if err := k.removeBatch(ctx, key); err != nil {
			return false, err
		}
	}
	var producers []collections.Pair[types.TopicPartition, string]
	err = k.ProducerStates.Walk(ctx, collections.NewPrefixedPairRange[types.TopicPartition, string](tp),
		func(key collections.Pair[types.TopicPartition, string], _ types.ProducerState) (bool, error) {
			if !budget.open() {
				return true, nil
			}
			producers = append(producers, key)
			budget.spend(0)
			return false, nil
		})
	if err != nil {
		return false, err
	}
	for _, key := range producers {
		if err := k.ProducerStates.Remove(ctx, key); err != nil {
			return false, err
		}
	}
	var kafkaProducers []collections.Triple[types.TopicPartition, string, int64]
	err = k.KafkaProducers.Walk(ctx, collections.NewPrefixedTripleRange[types.TopicPartition, string, int64](tp),
		func(key collections.Triple[types.TopicPartition, string, int64], _ types.KafkaProducerState) (bool, error) {
			if !budget.open() {
				return true, nil
			}
			kafkaProducers = append(kafkaProducers, key)
			budget.spend(0)
			return false, nil
		})
	if err != nil {
		return false, err
	}
	for _, key := range kafkaProducers {
		if err := k.KafkaProducers.Remove(ctx, key); err != nil {
			return false, err
		}
	}
	if err := k.purgeCompaction(ctx, tp, budget); err != nil {
		return false, err
	}
	if !budget.open() {
		// Out of budget: whether anything is left is found out next block.
		return false, nil
	}
	return true, nil
}

// purgeCompaction deletes a partition's compaction state within the budget: its keys' latest
// offsets, then its cleaner state and scheduled pass. Tombstone deadlines stay until they come
// and find no key (they are keyed by time first).
func (k Keeper) purgeCompaction(ctx context.Context, tp types.TopicPartition, budget *cleanupBudget) error {
	var keys []collections.Pair[types.TopicPartition, []byte]
	err := k.KeyOffsets.Walk(ctx, collections.NewPrefixedPairRange[types.TopicPartition, []byte](tp),
		func(key collections.Pair[types.TopicPartition, []byte], _ uint64) (bool, error) {
			if !budget.open() {
				return true, nil
			}
			keys = append(keys, key)
			budget.spend(0)
			return false, nil
		})
	if err != nil {
		return err
	}
	for _, key := range keys {
		if err := k.KeyOffsets.Remove(ctx, key); err != nil {
			return err
		}
	}
	if !budget.open() {
		return nil
	}
	st, err := k.Compactions.Get(ctx, tp)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	budget.spend(0)
	if st.DueMs != 0 {
		if err := k.CompactionDue.Remove(ctx, collections.Join(st.DueMs, tp)); err != nil {
			return err
		}
	}
	return k.Compactions.Remove(ctx, tp)
}
