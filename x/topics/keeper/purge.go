package keeper

import (
	"context"
	"fmt"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

// purgeTopics removes the batches and producer states of deleted topics within the shared
// cleanup budget, oldest name first, partition by partition, then the groups' committed
// offsets on them; a purge that runs out of budget resumes from its stored next_partition (or
// the offsets left) in the next block. A finished purge frees the name. Each partition
// finished costs one key, so even empty purges are bounded per block.
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
		// Each partition's purge, and the groups' offsets, isolated: one that fails is
		// skipped (EventBlockWorkSkipped, its leftovers stay) and the purge goes on, so one
		// topic cannot hold up every purge and the name is freed.
		for tp.NextPartition < tp.Partitions && budget.open() {
			done := false
			part := types.TopicPartition{Topic: tp.Name, Partition: tp.NextPartition}
			ok, err := k.attempt(ctx, "purge", fmt.Sprintf("%s/%d", part.Topic, part.Partition), func(ctx context.Context) error {
				var err error
				done, err = k.purgePartition(ctx, part, budget)
				return err
			})
			if err != nil {
				return err
			}
			if ok && !done {
				break
			}
			tp.NextPartition++
			budget.spend(0)
		}
		if tp.NextPartition < tp.Partitions {
			return k.TopicPurges.Set(ctx, tp.Name, tp)
		}
		done := false
		ok, err := k.attempt(ctx, "purge", tp.Name, func(ctx context.Context) error {
			var err error
			done, err = k.purgeOffsets(ctx, tp.Name, budget)
			return err
		})
		if err != nil {
			return err
		}
		if ok && !done {
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
	if err := clearWithin(ctx, k.ProducerStates, collections.NewPrefixedPairRange[types.TopicPartition, string](tp), budget); err != nil {
		return false, err
	}
	if err := clearWithin(ctx, k.KafkaProducers, collections.NewPrefixedTripleRange[types.TopicPartition, string, int64](tp), budget); err != nil {
		return false, err
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
	if err := clearWithin(ctx, k.KeyOffsets, collections.NewPrefixedPairRange[types.TopicPartition, []byte](tp), budget); err != nil {
		return err
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

// purgeOffsets removes the committed offsets groups hold on a deleted topic within the budget,
// group by group (one key per offset and per group), and reports whether none are left.
func (k Keeper) purgeOffsets(ctx context.Context, topic string, budget *cleanupBudget) (bool, error) {
	var groups []string
	err := k.GroupTopics.Walk(ctx, collections.NewPrefixedPairRange[string, string](topic), func(key collections.Pair[string, string], _ bool) (bool, error) {
		groups = append(groups, key.K2())
		return uint32(len(groups)) >= budget.keys, nil
	})
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		if err := clearWithin(ctx, k.Offsets, groupTopicOffsets(g, topic), budget); err != nil {
			return false, err
		}
		if !budget.open() {
			// Whether the group has offsets left is found out next block.
			return false, nil
		}
		if err := k.GroupTopics.Remove(ctx, collections.Join(topic, g)); err != nil {
			return false, err
		}
		budget.spend(0)
	}
	// Every group costs a key: with budget left, the walk above saw them all.
	return budget.open(), nil
}

// clearWithin removes m's entries in rng, one key of the budget each, until the budget is
// used up.
func clearWithin[K, V any](ctx context.Context, m collections.Map[K, V], rng collections.Ranger[K], budget *cleanupBudget) error {
	var keys []K
	err := m.Walk(ctx, rng, func(key K, _ V) (bool, error) {
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
		if err := m.Remove(ctx, key); err != nil {
			return err
		}
	}
	return nil
}
