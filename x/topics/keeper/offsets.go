package keeper

import (
	"context"
	"math"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// CommitOffsets commits offsets for partitions assigned to the member at the current
// generation; a stale generation is rejected (fencing zombie consumers). All or nothing.
func (k Keeper) CommitOffsets(ctx context.Context, msg *types.MsgCommitOffsets) error {
	if err := k.validAddress(msg.Member, "member"); err != nil {
		return err
	}
	if err := types.ValidateGroupID(msg.GroupId); err != nil {
		return err
	}
	if len(msg.Offsets) == 0 {
		return errorsmod.Wrap(types.ErrInvalidRequest, "no offsets to commit")
	}
	g, err := k.GetGroup(ctx, msg.GroupId)
	if err != nil {
		return err
	}
	if msg.KafkaMemberId != "" {
		return k.commitKafkaOffsets(ctx, g, msg)
	}
	m, err := k.getMember(ctx, msg.GroupId, msg.Member)
	if err != nil {
		return err
	}
	// Tightening the policy fences commits at once, before the admin removes the member.
	if err := mayJoin(g, msg.Member); err != nil {
		return err
	}
	if msg.Generation != g.Generation {
		return errorsmod.Wrapf(types.ErrIllegalGeneration, "group %q is at generation %d, the commit carries %d; rejoin or heartbeat for the new assignment", g.GroupId, g.Generation, msg.Generation)
	}
	seen := map[types.TopicPartition]bool{}
	for _, o := range msg.Offsets {
		id := types.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		if seen[id] {
			return errorsmod.Wrapf(types.ErrInvalidRequest, "%s/%d listed twice", o.Topic, o.Partition)
		}
		seen[id] = true
		if !types.Owns(m.Assignment, o.Topic, o.Partition) {
			return errorsmod.Wrapf(types.ErrPartitionNotAssigned, "%s/%d is not assigned to %s in generation %d", o.Topic, o.Partition, m.Member, g.Generation)
		}
		if err := k.checkCommitOffset(ctx, o.Topic, o.Partition, o.Offset); err != nil {
			return err
		}
	}
	committed := make([]types.CommittedOffset, len(msg.Offsets))
	for i, o := range msg.Offsets {
		committed[i] = types.CommittedOffset{GroupId: g.GroupId, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata}
	}
	if err := k.writeOffsets(ctx, msg.Member, committed); err != nil {
		return err
	}
	return k.touch(ctx, g, &m) // a commit is also a liveness signal
}

// commitKafkaOffsets is CommitOffsets for a member of a Kafka group (groups_kafka.go).
func (k Keeper) commitKafkaOffsets(ctx context.Context, g types.Group, msg *types.MsgCommitOffsets) error {
	if err := mayJoin(g, msg.Member); err != nil {
		return err
	}
	check := k.commitAsKafkaMember
	if g.Kind == types.GROUP_KIND_CONSUMER {
		check = func(ctx context.Context, msg *types.MsgCommitOffsets) error {
			return k.commitAsConsumerMember(ctx, g, msg)
		}
	}
	if err := check(ctx, msg); err != nil {
		return err
	}
	seen := map[types.TopicPartition]bool{}
	committed := make([]types.CommittedOffset, len(msg.Offsets))
	for i, o := range msg.Offsets {
		id := types.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		if seen[id] {
			return errorsmod.Wrapf(types.ErrInvalidRequest, "%s/%d listed twice", o.Topic, o.Partition)
		}
		seen[id] = true
		if err := k.checkCommitOffset(ctx, o.Topic, o.Partition, o.Offset); err != nil {
			return err
		}
		committed[i] = types.CommittedOffset{GroupId: g.GroupId, Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Metadata: o.Metadata}
	}
	return k.writeOffsets(ctx, msg.Member, committed)
}

func (k Keeper) checkCommitOffset(ctx context.Context, topic string, partition uint32, offset uint64) error {
	p, err := k.GetPartition(ctx, topic, partition)
	if err != nil {
		return err
	}
	if offset > p.HighWatermark {
		return errorsmod.Wrapf(types.ErrInvalidOffset, "offset %d of %s is above the high watermark %d", offset, p.Label(), p.HighWatermark)
	}
	return nil
}

// writeOffsets stores offsets (filling height and committer) and emits one event.
func (k Keeper) writeOffsets(ctx context.Context, committer string, offsets []types.CommittedOffset) error {
	height := sdk.UnwrapSDKContext(ctx).BlockHeight()
	for i := range offsets {
		o := &offsets[i]
		o.Height, o.Committer = height, committer
		if err := k.Offsets.Set(ctx, collections.Join(o.GroupId, types.TopicPartition{Topic: o.Topic, Partition: o.Partition}), *o); err != nil {
			return err
		}
		if err := k.GroupTopics.Set(ctx, collections.Join(o.Topic, o.GroupId), true); err != nil {
			return err
		}
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventOffsetsCommitted{GroupId: offsets[0].GroupId, Committer: committer, Offsets: offsets})
}

// ResetOffsets moves an empty group's offsets for a topic to earliest, latest, an offset or a
// timestamp (group admin or authority), as kafka-consumer-groups --reset-offsets does.
func (k Keeper) ResetOffsets(ctx context.Context, msg *types.MsgResetOffsets) ([]types.CommittedOffset, error) {
	if err := k.validAddress(msg.Authority, "authority"); err != nil {
		return nil, err
	}
	if err := types.ValidateGroupID(msg.GroupId); err != nil {
		return nil, err
	}
	if err := types.ValidateTopicName(msg.Topic); err != nil {
		return nil, err
	}
	if msg.To == types.OFFSET_SPEC_UNSPECIFIED {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "say where to reset to: earliest, latest, offset or timestamp")
	}
	if _, ok := types.OffsetSpec_name[int32(msg.To)]; !ok {
		return nil, errorsmod.Wrapf(types.ErrInvalidRequest, "unknown offset spec %d", msg.To)
	}
	g, err := k.GetGroup(ctx, msg.GroupId)
	if err != nil {
		return nil, err
	}
	if err := k.checkGroupAdmin(g, msg.Authority); err != nil {
		return nil, err
	}
	if err := k.requireEmpty(ctx, g); err != nil {
		return nil, err
	}
	t, err := k.GetTopic(ctx, msg.Topic)
	if err != nil {
		return nil, err
	}
	parts := msg.Partitions
	if len(parts) == 0 {
		for p := uint32(0); p < t.Partitions; p++ {
			parts = append(parts, p)
		}
	}
	out := make([]types.CommittedOffset, 0, len(parts))
	for _, p := range parts {
		off, err := k.resolveOffset(ctx, msg.Topic, p, msg.To, msg.Offset, msg.TimestampMs)
		if err != nil {
			return nil, err
		}
		out = append(out, types.CommittedOffset{GroupId: g.GroupId, Topic: msg.Topic, Partition: p, Offset: off, Metadata: "reset"})
	}
	if err := k.writeOffsets(ctx, msg.Authority, out); err != nil {
		return nil, err
	}
	return out, nil
}

// resolveOffset turns a reset target into a committable offset.
func (k Keeper) resolveOffset(ctx context.Context, topic string, partition uint32, spec types.OffsetSpec, offset uint64, ts int64) (uint64, error) {
	if spec == types.OFFSET_SPEC_OFFSET {
		p, err := k.GetPartition(ctx, topic, partition)
		if err != nil {
			return 0, err
		}
		if offset < p.LogStartOffset || offset > p.HighWatermark {
			return 0, errorsmod.Wrapf(types.ErrOffsetOutOfRange, "offset %d of %s is outside [log start offset %d, high watermark %d]", offset, p.Label(), p.LogStartOffset, p.HighWatermark)
		}
		return offset, nil
	}
	res, err := k.ListOffsets(ctx, topic, partition, spec, ts)
	if err != nil {
		return 0, err
	}
	if res.Offset < 0 { // no record at or after ts: the end of the log, as Kafka does
		p, err := k.GetPartition(ctx, topic, partition)
		return p.HighWatermark, err
	}
	return uint64(res.Offset), nil
}

// groupOffsets returns a group's committed offsets, optionally for one topic.
func (k Keeper) groupOffsets(ctx context.Context, group, topic string) ([]types.CommittedOffset, error) {
	return k.groupOffsetsUpTo(ctx, group, topic, math.MaxUint64)
}

// groupOffsetsUpTo is groupOffsets stopping after limit+1 offsets (more than limit tells the
// caller the answer is too large).
func (k Keeper) groupOffsetsUpTo(ctx context.Context, group, topic string, limit uint64) ([]types.CommittedOffset, error) {
	var rng collections.Ranger[collections.Pair[string, types.TopicPartition]] = collections.NewPrefixedPairRange[string, types.TopicPartition](group)
	if topic != "" {
		rng = groupTopicOffsets(group, topic)
	}
	var out []types.CommittedOffset
	err := k.Offsets.Walk(ctx, rng, func(_ collections.Pair[string, types.TopicPartition], o types.CommittedOffset) (bool, error) {
		out = append(out, o)
		return uint64(len(out)) > limit, nil
	})
	return out, err
}

// groupTopicOffsets ranges over a group's committed offsets for every partition of topic: the
// same keys, in the same order, as a prefix range over (group, topic).
func groupTopicOffsets(group, topic string) *collections.Range[collections.Pair[string, types.TopicPartition]] {
	return new(collections.Range[collections.Pair[string, types.TopicPartition]]).
		StartInclusive(collections.Join(group, types.TopicPartition{Topic: topic, Partition: 0})).
		EndInclusive(collections.Join(group, types.TopicPartition{Topic: topic, Partition: math.MaxUint32}))
}
