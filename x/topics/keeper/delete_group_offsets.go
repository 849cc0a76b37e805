package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// DeleteGroupOffsetsGasPerPartition is charged per partition of a MsgDeleteGroupOffsets, on
// top of its store reads and writes and before the state is read, as
// DeleteRecordsGasPerPartition is: a refused message pays for every partition it named too,
// and a deleted offset's event and index upkeep are paid for whatever the store charges.
const DeleteGroupOffsetsGasPerPartition = 10_000

// offsetDeletion is a checked MsgDeleteGroupOffsets: the committed offsets it deletes (the
// partitions named that have one, in the message's order) and their distinct topics.
type offsetDeletion struct {
	group  string
	keys   []types.TopicPartition
	topics []string
}

// DeleteGroupOffsets is Kafka's OffsetDelete: the group's committed offsets for the partitions
// named are deleted, all or none, so its consumers start there from their auto.offset.reset
// policy. The group's admin or the authority may, as for MsgResetOffsets; it is refused while
// a live member consumes a topic named (consumedTopics). A partition without a committed
// offset changes nothing.
func (k Keeper) DeleteGroupOffsets(ctx context.Context, msg *types.MsgDeleteGroupOffsets) error {
	plan, err := k.planDeleteGroupOffsets(ctx, msg)
	if err != nil {
		return err
	}
	return k.applyDeleteGroupOffsets(ctx, msg.Authority, plan)
}

// checkDeleteGroupOffsetsBasic runs every check that needs no state.
func checkDeleteGroupOffsetsBasic(parts []types.DeleteGroupOffsetsPartition) error {
	return checkPartitionList(parts, types.MaxDeleteGroupOffsetsPartitions,
		func(dp types.DeleteGroupOffsetsPartition) types.TopicPartition {
			return types.TopicPartition{Topic: dp.Topic, Partition: dp.Partition}
		}, nil)
}

// planDeleteGroupOffsets checks the whole message and reads what it deletes; it writes nothing.
func (k Keeper) planDeleteGroupOffsets(ctx context.Context, msg *types.MsgDeleteGroupOffsets) (offsetDeletion, error) {
	plan := offsetDeletion{group: msg.GroupId}
	if err := k.validAddress(msg.Authority, "authority"); err != nil {
		return plan, err
	}
	if err := types.ValidateGroupID(msg.GroupId); err != nil {
		return plan, err
	}
	if err := checkDeleteGroupOffsetsBasic(msg.Partitions); err != nil {
		return plan, err
	}
	// Charged before the state is read: a refused message pays for its partitions too.
	sdk.UnwrapSDKContext(ctx).GasMeter().ConsumeGas(uint64(len(msg.Partitions))*DeleteGroupOffsetsGasPerPartition, "delete group offsets")
	g, err := k.GetGroup(ctx, msg.GroupId)
	if err != nil {
		return plan, err
	}
	if err := k.checkGroupAdmin(g, msg.Authority); err != nil {
		return plan, err
	}
	// As Kafka does, the partitions must exist (UNKNOWN_TOPIC_OR_PARTITION there); a deleted
	// topic's offsets go with the EndBlocker's purge.
	topics := map[string]types.Topic{}
	var names []string
	for _, dp := range msg.Partitions {
		t, ok := topics[dp.Topic]
		if !ok {
			if t, err = k.GetTopic(ctx, dp.Topic); err != nil {
				return plan, err
			}
			topics[dp.Topic] = t
			names = append(names, dp.Topic)
		}
		if dp.Partition >= t.Partitions {
			return plan, errorsmod.Wrapf(types.ErrInvalidPartition, "topic %q has %d partitions, asked for partition %d", t.Name, t.Partitions, dp.Partition)
		}
	}
	consumed, err := k.consumedTopics(ctx, g, names)
	if err != nil {
		return plan, err
	}
	for _, name := range names {
		if consumed[name] {
			return plan, errorsmod.Wrapf(types.ErrGroupSubscribedToTopic, "a member of group %q consumes topic %q; its offsets there are deleted once no member does", g.GroupId, name)
		}
	}
	planned := map[string]bool{}
	for _, dp := range msg.Partitions {
		tp := types.TopicPartition{Topic: dp.Topic, Partition: dp.Partition}
		has, err := k.Offsets.Has(ctx, collections.Join(g.GroupId, tp))
		if err != nil {
			return plan, err
		}
		if !has {
			continue // nothing committed: nothing to delete
		}
		plan.keys = append(plan.keys, tp)
		if !planned[tp.Topic] {
			planned[tp.Topic] = true
			plan.topics = append(plan.topics, tp.Topic)
		}
	}
	return plan, nil
}

// consumedTopics tells which of topics a live member of g consumes. A native group's members
// carry their subscriptions (Member.topics) and assignments, read as they are. A Kafka group's
// members carry theirs inside the consumer protocol's metadata and the leader's assignment,
// bytes the chain stores without decoding (the module has no parser for them), so while a
// Kafka group has any member, every topic the group has committed offsets on counts as
// consumed: its offsets are deleted once the group is empty. A topic it has no offsets on has
// nothing to delete either way.
func (k Keeper) consumedTopics(ctx context.Context, g types.Group, topics []string) (map[string]bool, error) {
	out := map[string]bool{}
	kind, err := k.groupKind(ctx, g)
	if err != nil {
		return nil, err
	}
	if kind == types.GROUP_KIND_KAFKA {
		n, err := k.countKafkaMembers(ctx, g.GroupId)
		if err != nil || n == 0 {
			return out, err
		}
		for _, t := range topics {
			has, err := k.GroupTopics.Has(ctx, collections.Join(t, g.GroupId))
			if err != nil {
				return nil, err
			}
			out[t] = has
		}
		return out, nil
	}
	if kind == types.GROUP_KIND_CONSUMER {
		members, err := k.consumerMembers(ctx, g.GroupId)
		for _, m := range members {
			for _, t := range subscribedTopics(m) {
				out[t] = true
			}
			for _, a := range m.Assigned {
				out[a.Topic] = true
			}
			for _, a := range m.PendingRevocation {
				out[a.Topic] = true
			}
		}
		return out, err
	}
	// Native (an UNSPECIFIED group has no members; its lookups miss in the native map).
	err = k.Members.Walk(ctx, collections.NewPrefixedPairRange[string, string](g.GroupId), func(_ collections.Pair[string, string], m types.Member) (bool, error) {
		for _, t := range m.Topics {
			out[t] = true
		}
		for _, a := range m.Assignment {
			out[a.Topic] = true
		}
		return false, nil
	})
	return out, err
}

// applyDeleteGroupOffsets deletes the planned offsets, one event each, and drops the
// group-topic index entry of each topic the group has no offset left on (the index holds
// (topic, group) exactly while the group has an offset on the topic, for the topic's delete).
func (k Keeper) applyDeleteGroupOffsets(ctx context.Context, authority string, plan offsetDeletion) error {
	events := sdk.UnwrapSDKContext(ctx).EventManager()
	for _, tp := range plan.keys {
		if err := k.Offsets.Remove(ctx, collections.Join(plan.group, tp)); err != nil {
			return err
		}
		if err := events.EmitTypedEvent(&types.EventGroupOffsetsDeleted{
			GroupId: plan.group, Topic: tp.Topic, Partition: tp.Partition, Authority: authority,
		}); err != nil {
			return err
		}
	}
	for _, t := range plan.topics {
		iter, err := k.Offsets.Iterate(ctx, groupTopicOffsets(plan.group, t))
		if err != nil {
			return err
		}
		left := iter.Valid()
		if err := iter.Close(); err != nil {
			return err
		}
		if left {
			continue
		}
		if err := k.GroupTopics.Remove(ctx, collections.Join(t, plan.group)); err != nil {
			return err
		}
	}
	return nil
}
