package keeper

import (
	"context"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// KIP-932 share groups: queues on Kafka's API. Members join and leave with
// MsgShareGroupHeartbeat; the chain deals the subscribed partitions to them (several members
// may share one) and keeps, per partition, which records are delivered to whom
// (share_partitions.go). Their gateways keep them alive with MsgKafkaHeartbeat, as for the
// other Kafka kinds.

func shareMemberRef(m *types.ShareMember) memberRef {
	return memberRef{types.GROUP_KIND_SHARE, m.GroupId, m.MemberId, &m.ExpiresAtMs}
}

// shareMembers returns a share group's members in join order.
func (k Keeper) shareMembers(ctx context.Context, group string) ([]types.ShareMember, error) {
	return membersOf[types.ShareMember](ctx, k.ShareMembers, group)
}

// ShareGroupState returns a share group with its members in join order; ErrUnknownGroup for a
// group that is not a share group.
func (k Keeper) ShareGroupState(ctx context.Context, group string) (types.ShareGroup, []types.ShareMember, error) {
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return types.ShareGroup{}, nil, err
	}
	if g.Kind != types.GROUP_KIND_SHARE && g.Kind != types.GROUP_KIND_UNSPECIFIED {
		return types.ShareGroup{}, nil, errorsmod.Wrapf(types.ErrUnknownGroup, "group %q is not a share group", group)
	}
	sg, err := k.shareGroup(ctx, g)
	if err != nil {
		return sg, nil, err
	}
	members, err := k.shareMembers(ctx, group)
	return sg, members, err
}

// shareGroup is g's share state, with Kafka's default share.* configs for a group that has none.
func (k Keeper) shareGroup(ctx context.Context, g types.Group) (types.ShareGroup, error) {
	sg, err := k.ShareGroups.Get(ctx, g.GroupId)
	if isNotFound(err) {
		return types.ShareGroup{GroupId: g.GroupId, GroupEpoch: int32(min(g.Generation, 1<<31-1)),
			RecordLockDurationMs: types.DefaultShareRecordLockDurationMs, DeliveryCountLimit: types.DefaultShareDeliveryCountLimit}, nil
	}
	return sg, err
}

func (k Keeper) setShareMember(ctx context.Context, m types.ShareMember) error {
	return k.ShareMembers.Set(ctx, collections.Join(m.GroupId, m.MemberId), m)
}

// ownedShareMember returns a member that owner may act as.
func (k Keeper) ownedShareMember(ctx context.Context, group, id, owner string) (types.ShareMember, error) {
	return ownedMemberOf[types.ShareMember](ctx, k.ShareMembers, group, id, owner)
}

// ShareGroupHeartbeat is KIP-932's ShareGroupHeartbeat when it changes something: a join
// (epoch 0), a leave (-1) or a new subscription. It returns the member as the chain left it.
func (k Keeper) ShareGroupHeartbeat(ctx context.Context, msg *types.MsgShareGroupHeartbeat) (types.ShareMember, error) {
	if err := k.validAddress(msg.Owner, "owner"); err != nil {
		return types.ShareMember{}, err
	}
	if err := msg.Validate(); err != nil {
		return types.ShareMember{}, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	now := sdkCtx.BlockTime().UnixMilli()
	g, err := k.Groups.Get(ctx, msg.GroupId)
	create := isNotFound(err)
	switch {
	case create && msg.MemberEpoch != 0:
		return types.ShareMember{}, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of share group %q", msg.MemberId, msg.GroupId)
	case create:
		g = newGroup(msg.GroupId, msg.Owner, types.JOIN_POLICY_UNSPECIFIED, nil, types.ASSIGNOR_UNSPECIFIED, 0, sdkCtx.BlockHeight())
	case err != nil:
		return types.ShareMember{}, err
	}
	if msg.MemberEpoch == types.ConsumerLeaveEpoch {
		return k.leaveShareGroup(ctx, g, msg)
	}
	if !create {
		if err := mayJoin(g, msg.Owner); err != nil {
			return types.ShareMember{}, err
		}
	}
	kindBefore := g.Kind
	if msg.MemberEpoch == 0 && !create {
		if err := k.claimKind(ctx, &g, types.GROUP_KIND_SHARE); err != nil {
			return types.ShareMember{}, err
		}
	} else if !create && g.Kind != types.GROUP_KIND_SHARE {
		return types.ShareMember{}, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of share group %q", msg.MemberId, msg.GroupId)
	}
	g.Kind = types.GROUP_KIND_SHARE
	if !create && g.Kind != kindBefore {
		// The group was another kind's, empty: what that kind left goes with it.
		if err := k.dropProtocolState(ctx, g.GroupId, types.GROUP_KIND_UNSPECIFIED); err != nil {
			return types.ShareMember{}, err
		}
	}
	sg, err := k.shareGroup(ctx, g)
	if err != nil {
		return types.ShareMember{}, err
	}
	m, err := k.ShareMembers.Get(ctx, collections.Join(msg.GroupId, msg.MemberId))
	found := err == nil
	if err != nil && !isNotFound(err) {
		return m, err
	}
	switch {
	case found && m.Owner != msg.Owner:
		return m, errorsmod.Wrapf(types.ErrGroupAuthorization, "member %q of group %q belongs to %s, not %s", msg.MemberId, msg.GroupId, m.Owner, msg.Owner)
	case !found && msg.MemberEpoch > 0:
		return m, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of share group %q", msg.MemberId, msg.GroupId)
	case found && msg.MemberEpoch > m.MemberEpoch:
		return m, errorsmod.Wrapf(types.ErrFencedMemberEpoch, "member %q of group %q is at epoch %d, the heartbeat carries %d", msg.MemberId, msg.GroupId, m.MemberEpoch, msg.MemberEpoch)
	}
	bump := !found || !slices.Equal(m.SubscribedTopicNames, msg.SubscribedTopicNames)
	if !bump {
		// The subscribed topics grew, or were made or deleted, since the members were dealt.
		counts, err := k.shareCounts(ctx, msg.GroupId, nil)
		if err != nil {
			return m, err
		}
		bump = !slices.Equal(counts, sg.PartitionCounts)
	}
	if !found {
		members, err := k.shareMembers(ctx, msg.GroupId)
		if err != nil {
			return m, err
		}
		params, err := k.Params.Get(ctx)
		if err != nil {
			return m, err
		}
		if uint32(len(members)) >= params.MaxGroupMembers {
			return m, errorsmod.Wrapf(types.ErrGroupFull, "group %q has %d members, the limit is %d", msg.GroupId, len(members), params.MaxGroupMembers)
		}
		m = types.ShareMember{GroupId: msg.GroupId, MemberId: msg.MemberId, Owner: msg.Owner}
		for _, x := range members {
			m.JoinOrder = max(m.JoinOrder, x.JoinOrder+1)
		}
	}
	m.ClientId, m.RackId, m.SubscribedTopicNames = msg.ClientId, msg.RackId, msg.SubscribedTopicNames
	if err := k.setExpiry(ctx, shareMemberRef(&m), now+g.SessionTimeoutMs); err != nil {
		return m, err
	}
	if err := k.setShareMember(ctx, m); err != nil {
		return m, err
	}
	if create {
		if err := k.createGroup(ctx, &g, msg.Owner); err != nil {
			return m, err
		}
	} else if g.Kind != kindBefore {
		if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
			return m, err
		}
	}
	if bump {
		if err := k.checkShareSubscription(ctx, msg.GroupId); err != nil {
			return m, err
		}
		sg.GroupEpoch++
		if err := k.reassignShareGroup(ctx, &sg, "join"); err != nil {
			return m, err
		}
	} else if err := k.ShareGroups.Set(ctx, sg.GroupId, sg); err != nil {
		return m, err
	}
	return k.ShareMembers.Get(ctx, collections.Join(m.GroupId, m.MemberId))
}

// leaveShareGroup removes the member, releases the records it holds on its partitions for
// another member, and deals its partitions to the rest.
func (k Keeper) leaveShareGroup(ctx context.Context, g types.Group, msg *types.MsgShareGroupHeartbeat) (types.ShareMember, error) {
	m, err := k.ownedShareMember(ctx, msg.GroupId, msg.MemberId, msg.Owner)
	if err != nil {
		return m, err
	}
	sg, err := k.shareGroup(ctx, g)
	if err != nil {
		return m, err
	}
	if err := k.releaseMemberRecords(ctx, sg, m); err != nil {
		return m, err
	}
	if err := k.removeMember(ctx, shareMemberRef(&m)); err != nil {
		return m, err
	}
	sg.GroupEpoch++
	m.MemberEpoch = msg.MemberEpoch
	return m, k.reassignShareGroup(ctx, &sg, "leave")
}

// reassignShareGroup deals the subscribed partitions to the members at the group's epoch and
// gives every partition newly dealt a delivery state (from its high watermark, or its log start
// offset with share.auto.offset.reset=earliest). The assignor's work (members x partitions) is
// charged to the signer; the EndBlocker's expiries are budgeted (shareRebalanceCost).
func (k Keeper) reassignShareGroup(ctx context.Context, sg *types.ShareGroup, reason string) error {
	members, err := k.shareMembers(ctx, sg.GroupId)
	if err != nil {
		return err
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	partitions := map[string]uint32{}
	topics := map[string]types.Topic{}
	counts, err := k.shareCounts(ctx, sg.GroupId, members)
	if err != nil {
		return err
	}
	// Dealt at most max_group_subscribed_partitions, topics by name: a subscription that grew
	// past it since (topics made or enlarged after it) deals its first partitions only, so the
	// work stays what the bound allows, in a transaction or in the EndBlocker.
	var total uint64
	for _, c := range counts {
		n := uint32(min(uint64(c.Partitions), uint64(params.MaxGroupSubscribedPartitions)-min(total, uint64(params.MaxGroupSubscribedPartitions))))
		topic, err := k.Topics.Get(ctx, c.Topic)
		if err != nil {
			return err
		}
		partitions[c.Topic], topics[c.Topic] = n, topic
		total += uint64(n)
	}
	sg.PartitionCounts = counts
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	sdkCtx.GasMeter().ConsumeGas(uint64(len(members)+1)*(total+uint64(len(counts))+1)*types.RebalanceGasPerUnit, "share group assignment")
	inputs := make([]types.ShareAssignInput, len(members))
	for i, m := range members {
		inputs[i] = types.ShareAssignInput{Member: m.MemberId, Topics: m.SubscribedTopicNames}
	}
	assigned := types.AssignShare(inputs, partitions)
	ids := make([]string, len(members))
	dealt := types.PartitionSet{}
	for i := range members {
		members[i].Assigned, members[i].MemberEpoch = assigned[i], sg.GroupEpoch
		ids[i] = members[i].MemberId
		for tp := range types.NewPartitionSet(assigned[i]) {
			dealt[tp] = true
		}
		if err := k.setShareMember(ctx, members[i]); err != nil {
			return err
		}
	}
	for _, tps := range dealt.List() {
		for _, p := range tps.Partitions {
			if _, err := k.sharePartition(ctx, *sg, topics[tps.Topic], p); err != nil {
				return err
			}
		}
	}
	if err := k.ShareGroups.Set(ctx, sg.GroupId, *sg); err != nil {
		return err
	}
	g, err := k.GetGroup(ctx, sg.GroupId)
	if err != nil {
		return err
	}
	g.Generation = uint64(sg.GroupEpoch)
	if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
		return err
	}
	return sdkCtx.EventManager().EmitTypedEvent(&types.EventGroupRebalanced{
		GroupId: sg.GroupId, Generation: g.Generation, Members: ids, Reason: reason,
	})
}

// shareMembersGone deals a share group's partitions again after members expired; the records
// they hold go back when their locks run out.
func (k Keeper) shareMembersGone(ctx context.Context, group, reason string) error {
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return err
	}
	sg, err := k.shareGroup(ctx, g)
	if err != nil {
		return err
	}
	sg.GroupEpoch++
	return k.reassignShareGroup(ctx, &sg, reason)
}

// shareRebalanceCost is the work of dealing a share group's partitions again: members x (the
// partitions dealt, at most max_group_subscribed_partitions, and the names subscribed), plus one
// per member.
func (k Keeper) shareRebalanceCost(ctx context.Context, group string) (uint64, error) {
	members, err := k.shareMembers(ctx, group)
	if err != nil || len(members) == 0 {
		return 0, err
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	parts := uint64(params.MaxGroupSubscribedPartitions)
	for _, m := range members {
		parts += uint64(len(m.SubscribedTopicNames))
	}
	n := uint64(len(members))
	return n*parts + n, nil
}

// shareCounts lists the partition counts of the topics a share group's members subscribe to
// that exist, by name (members nil: read them).
func (k Keeper) shareCounts(ctx context.Context, group string, members []types.ShareMember) ([]types.TopicPartitionCount, error) {
	if members == nil {
		var err error
		if members, err = k.shareMembers(ctx, group); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	var names []string
	for _, m := range members {
		for _, t := range m.SubscribedTopicNames {
			if !seen[t] {
				seen[t] = true
				names = append(names, t)
			}
		}
	}
	slices.Sort(names)
	var out []types.TopicPartitionCount
	for _, t := range names {
		topic, err := k.Topics.Get(ctx, t)
		if isNotFound(err) {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, types.TopicPartitionCount{Topic: t, Partitions: topic.Partitions})
	}
	return out, nil
}

// checkShareSubscription bounds a share group's subscription as for the other kinds: its
// partitions, and the names its members give (a name of no topic costs a reassignment too).
func (k Keeper) checkShareSubscription(ctx context.Context, group string) error {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	members, err := k.shareMembers(ctx, group)
	if err != nil {
		return err
	}
	counts, err := k.shareCounts(ctx, group, members)
	if err != nil {
		return err
	}
	var total, names uint64
	for _, c := range counts {
		total += uint64(c.Partitions)
	}
	for _, m := range members {
		names += uint64(len(m.SubscribedTopicNames))
	}
	if total > uint64(params.MaxGroupSubscribedPartitions) || names > uint64(params.MaxGroupSubscribedPartitions) {
		return errorsmod.Wrapf(types.ErrSubscriptionTooLarge, "share group %q would subscribe to %d partitions by %d names, the limit is %d", group, total, names, params.MaxGroupSubscribedPartitions)
	}
	return nil
}

func (k Keeper) countShareMembers(ctx context.Context, group string) (uint64, error) {
	return countMembersOf(ctx, k.ShareMembers, group)
}

// dropShareGroup removes a share group's state: members with their expiry entries, every share
// partition with its lock entry.
func (k Keeper) dropShareGroup(ctx context.Context, group string) error {
	members, err := k.shareMembers(ctx, group)
	if err != nil {
		return err
	}
	for _, m := range members {
		if err := k.removeMember(ctx, shareMemberRef(&m)); err != nil {
			return err
		}
	}
	var parts []types.SharePartition
	err = k.SharePartitions.Walk(ctx, collections.NewPrefixedPairRange[string, types.TopicPartition](group), func(_ collections.Pair[string, types.TopicPartition], sp types.SharePartition) (bool, error) {
		parts = append(parts, sp)
		return false, nil
	})
	if err != nil {
		return err
	}
	for _, sp := range parts {
		tp := types.TopicPartition{Topic: sp.Topic, Partition: sp.Partition}
		if sp.NextLockDeadlineMs != 0 {
			if err := k.ShareLockDue.Remove(ctx, collections.Join3(sp.NextLockDeadlineMs, group, tp)); err != nil {
				return err
			}
		}
		if err := k.SharePartitions.Remove(ctx, collections.Join(group, tp)); err != nil {
			return err
		}
	}
	return k.ShareGroups.Remove(ctx, group)
}

// renewShareMembers is MsgKafkaHeartbeat for a share group: it extends the owner's members'
// sessions.
func (k Keeper) renewShareMembers(ctx context.Context, g types.Group, msg *types.MsgKafkaHeartbeat) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	for _, id := range msg.MemberIds {
		m, err := k.ownedShareMember(ctx, msg.GroupId, id, msg.Owner)
		if err != nil {
			return err
		}
		if err := k.setExpiry(ctx, shareMemberRef(&m), now+g.SessionTimeoutMs); err != nil {
			return err
		}
		if err := k.setShareMember(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// removeShareAccount is RemoveGroupMember for a share group: every member msg.Member's account
// joined goes, with the records it holds released.
func (k Keeper) removeShareAccount(ctx context.Context, g types.Group, msg *types.MsgRemoveGroupMember) error {
	members, err := k.shareMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	sg, err := k.shareGroup(ctx, g)
	if err != nil {
		return err
	}
	removed := 0
	for _, m := range members {
		if m.Owner != msg.Member {
			continue
		}
		if err := k.releaseMemberRecords(ctx, sg, m); err != nil {
			return err
		}
		if err := k.removeMember(ctx, shareMemberRef(&m)); err != nil {
			return err
		}
		removed++
	}
	if removed == 0 {
		return errorsmod.Wrapf(types.ErrUnknownMember, "%s has no share member in group %q", msg.Member, g.GroupId)
	}
	if err := k.dropAllowed(ctx, &g, msg); err != nil {
		return err
	}
	if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
		return err
	}
	sg.GroupEpoch++
	return k.reassignShareGroup(ctx, &sg, "remove")
}

// adminShareGroup loads a group for a share administration by signer: a share group, or one no
// member has given a kind yet (it becomes a share group).
func (k Keeper) adminShareGroup(ctx context.Context, signer, group string) (types.Group, types.ShareGroup, error) {
	g, err := k.adminGroup(ctx, signer, group)
	if err != nil {
		return g, types.ShareGroup{}, err
	}
	kind, err := k.groupKind(ctx, g)
	if err != nil {
		return g, types.ShareGroup{}, err
	}
	if kind != types.GROUP_KIND_SHARE && kind != types.GROUP_KIND_UNSPECIFIED {
		return g, types.ShareGroup{}, errorsmod.Wrapf(types.ErrInconsistentGroupProtocol, "group %q is not a share group (%s)", group, kind)
	}
	if kind == types.GROUP_KIND_UNSPECIFIED {
		g.Kind = types.GROUP_KIND_SHARE
		if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
			return g, types.ShareGroup{}, err
		}
	}
	sg, err := k.shareGroup(ctx, g)
	return g, sg, err
}

// SetShareGroupConfig sets a share group's share.* configs; locks already held keep their
// deadlines, deliveries already counted their counts.
func (k Keeper) SetShareGroupConfig(ctx context.Context, msg *types.MsgSetShareGroupConfig) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	_, sg, err := k.adminShareGroup(ctx, msg.Authority, msg.GroupId)
	if err != nil {
		return err
	}
	sg.RecordLockDurationMs, sg.DeliveryCountLimit, sg.AutoOffsetResetEarliest = msg.RecordLockDurationMs, msg.DeliveryCountLimit, msg.AutoOffsetResetEarliest
	return k.ShareGroups.Set(ctx, sg.GroupId, sg)
}

// AlterShareGroupOffsets moves (within [log start offset, high watermark]) or deletes the start
// offsets of a share group without members, every partition or none; what was in flight there is
// forgotten.
func (k Keeper) AlterShareGroupOffsets(ctx context.Context, msg *types.MsgAlterShareGroupOffsets) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	g, sg, err := k.adminShareGroup(ctx, msg.Authority, msg.GroupId)
	if err != nil {
		return err
	}
	if err := k.requireEmpty(ctx, g); err != nil {
		return err
	}
	type change struct {
		key collections.Pair[string, types.TopicPartition]
		sp  types.SharePartition
		del bool
	}
	var changes []change
	for _, o := range msg.Offsets {
		tp := types.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		topic, err := k.Topics.Get(ctx, o.Topic)
		if isNotFound(err) {
			return errorsmod.Wrapf(types.ErrUnknownTopic, "topic %q", o.Topic)
		} else if err != nil {
			return err
		}
		if o.Partition >= topic.Partitions {
			return errorsmod.Wrapf(types.ErrInvalidPartition, "%s/%d", o.Topic, o.Partition)
		}
		key := collections.Join(sg.GroupId, tp)
		old, err := k.SharePartitions.Get(ctx, key)
		if err != nil && !isNotFound(err) {
			return err
		}
		if o.Delete {
			changes = append(changes, change{key: key, sp: old, del: true})
			continue
		}
		p, err := k.Partitions.Get(ctx, tp)
		if err != nil {
			return err
		}
		if o.StartOffset < p.LogStartOffset || o.StartOffset > p.HighWatermark {
			return errorsmod.Wrapf(types.ErrOffsetOutOfRange, "offset %d of %s/%d is outside [log start offset %d, high watermark %d]", o.StartOffset, o.Topic, o.Partition, p.LogStartOffset, p.HighWatermark)
		}
		sp := types.SharePartition{GroupId: sg.GroupId, Topic: o.Topic, Partition: o.Partition, StartOffset: o.StartOffset, EndOffset: o.StartOffset,
			TopicCreatedHeight: topic.CreatedHeight, NextLockDeadlineMs: old.NextLockDeadlineMs}
		changes = append(changes, change{key: key, sp: sp})
	}
	for _, c := range changes {
		if c.del {
			if err := k.setLockDue(ctx, &c.sp, 0); err != nil {
				return err
			}
			if err := k.SharePartitions.Remove(ctx, c.key); err != nil {
				return err
			}
			continue
		}
		if err := k.saveSharePartition(ctx, &c.sp); err != nil {
			return err
		}
	}
	return k.ShareGroups.Set(ctx, sg.GroupId, sg)
}
