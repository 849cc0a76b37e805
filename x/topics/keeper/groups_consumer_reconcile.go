package keeper

import (
	"context"
	"slices"

	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// reconcileConsumerGroup brings a consumer group's members towards its target assignment, as
// Kafka's coordinator does member by member, for all of them at once: the target is recomputed
// when the group epoch moved (or the subscribed topics' partitions changed); then each member
// keeps what its target still holds, is asked to revoke the rest (keeping its epoch until it
// has), and, once it revoked nothing pending, moves to the assignment epoch with every
// partition of its target no other member still holds. The caller stored the member its
// message changed; reconcile stores cg and every member it moves.
func (k Keeper) reconcileConsumerGroup(ctx context.Context, g types.Group, cg *types.ConsumerGroup, now int64, reason string) error {
	members, err := k.consumerMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	counts, err := k.consumerPartitionCounts(ctx, members)
	if err != nil {
		return err
	}
	if !slices.Equal(counts, cg.PartitionCounts) {
		cg.PartitionCounts = counts
		cg.GroupEpoch++ // partitions were added, or a topic deleted or created for a regex
	}
	if cg.GroupEpoch > cg.AssignmentEpoch {
		if err := k.assignConsumerTargets(ctx, cg, members); err != nil {
			return err
		}
	}
	// owners: who holds each partition, as assigned or pending revocation.
	owners := map[types.TopicPartition]string{}
	for _, m := range members {
		for tp := range types.NewPartitionSet(m.Assigned, m.PendingRevocation) {
			owners[tp] = m.MemberId
		}
	}
	for i := range members {
		m := &members[i]
		before := *m
		advanceConsumer(m, cg.AssignmentEpoch, owners, now)
		if sameProgress(before, *m) {
			continue
		}
		if m.RevokeDeadlineMs > 0 && m.RevokeDeadlineMs < m.ExpiresAtMs {
			// It must revoke within its rebalance timeout, or it is expired and its
			// partitions go to the others.
			if err := k.setExpiry(ctx, consumerMember(m), m.RevokeDeadlineMs); err != nil {
				return err
			}
		}
		if err := k.setConsumerMember(ctx, *m); err != nil {
			return err
		}
	}
	if len(members) == 0 {
		cg.PartitionCounts = nil
	}
	g, err = k.GetGroup(ctx, g.GroupId)
	if err != nil {
		return err
	}
	if g.Generation != uint64(cg.GroupEpoch) {
		g.Generation = uint64(cg.GroupEpoch)
		if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
			return err
		}
	}
	return k.ConsumerGroups.Set(ctx, cg.GroupId, *cg)
}

// assignConsumerTargets computes every member's target with the group's server assignor and
// makes it the assignment epoch's. The assignor's work (members x partitions, not metered as
// store access) is charged to the signer that moved the epoch; the EndBlocker's meter is
// unlimited and its expiries are budgeted instead (consumerRebalanceCost).
func (k Keeper) assignConsumerTargets(ctx context.Context, cg *types.ConsumerGroup, members []types.ConsumerMember) error {
	partitions := map[string]uint32{}
	var total uint64
	for _, c := range cg.PartitionCounts {
		partitions[c.Topic] = c.Partitions
		total += uint64(c.Partitions)
	}
	sdk.UnwrapSDKContext(ctx).GasMeter().ConsumeGas(uint64(len(members)+1)*(total+1)*types.RebalanceGasPerUnit, "consumer group assignment")
	cg.Assignor = chooseServerAssignor(members)
	inputs := make([]types.ConsumerAssignInput, len(members))
	for i, m := range members {
		inputs[i] = types.ConsumerAssignInput{Member: m.MemberId, Topics: subscribedTopics(m), Previous: m.Target}
	}
	targets := types.AssignConsumers(cg.Assignor, inputs, partitions)
	ids := make([]string, len(members))
	for i := range members {
		members[i].Target = targets[i]
		ids[i] = members[i].MemberId
	}
	cg.AssignmentEpoch = cg.GroupEpoch
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventGroupRebalanced{
		GroupId: cg.GroupId, Generation: uint64(cg.GroupEpoch), Members: ids, Reason: "target",
	})
}

// advanceConsumer moves one member towards its target (Kafka's CurrentAssignmentBuilder),
// updating owners as partitions change hands.
func advanceConsumer(m *types.ConsumerMember, epoch int32, owners map[types.TopicPartition]string, now int64) {
	switch {
	case m.State == types.CONSUMER_MEMBER_STATE_LEFT_STATIC:
		return // keeps its partitions until it comes back or its session ends
	case len(m.PendingRevocation) > 0:
		return // waits for the client to say it revoked them
	case m.MemberEpoch == epoch && m.State == types.CONSUMER_MEMBER_STATE_STABLE:
		return
	}
	target := types.NewPartitionSet(m.Target)
	kept, revoke := types.PartitionSet{}, types.PartitionSet{}
	for tp := range types.NewPartitionSet(m.Assigned) {
		if target[tp] {
			kept[tp] = true
		} else {
			revoke[tp] = true
		}
	}
	if len(revoke) > 0 {
		m.Assigned, m.PendingRevocation = kept.List(), revoke.List()
		m.State = types.CONSUMER_MEMBER_STATE_UNREVOKED_PARTITIONS
		timeout := int64(m.RebalanceTimeoutMs)
		if timeout <= 0 {
			timeout = types.DefaultSessionTimeoutMs
		}
		m.RevokeDeadlineMs = now + timeout
		return
	}
	// A partition no member holds (released, or never held) is free.
	unreleased := false
	for tp := range target {
		if id, held := owners[tp]; held && id != m.MemberId {
			unreleased = true
			continue
		}
		owners[tp] = m.MemberId
		kept[tp] = true
	}
	m.Assigned, m.RevokeDeadlineMs = kept.List(), 0
	if m.MemberEpoch != epoch {
		m.PreviousMemberEpoch, m.MemberEpoch = m.MemberEpoch, epoch
	}
	m.State = types.CONSUMER_MEMBER_STATE_STABLE
	if unreleased {
		m.State = types.CONSUMER_MEMBER_STATE_UNRELEASED_PARTITIONS
	}
}

// sameProgress tells whether advanceConsumer left a member as it was (what it may change).
func sameProgress(a, b types.ConsumerMember) bool {
	return a.MemberEpoch == b.MemberEpoch && a.PreviousMemberEpoch == b.PreviousMemberEpoch && a.State == b.State &&
		a.RevokeDeadlineMs == b.RevokeDeadlineMs && sameTPs(a.Assigned, b.Assigned) && sameTPs(a.PendingRevocation, b.PendingRevocation)
}

func sameTPs(a, b []types.TopicPartitions) bool {
	return slices.EqualFunc(a, b, func(x, y types.TopicPartitions) bool {
		return x.Topic == y.Topic && slices.Equal(x.Partitions, y.Partitions)
	})
}

// chooseServerAssignor is the server assignor most members asked for (none: uniform), ties
// going to the first of types.ConsumerAssignors.
func chooseServerAssignor(members []types.ConsumerMember) string {
	votes := make([]int, len(types.ConsumerAssignors))
	for _, m := range members {
		a := m.ServerAssignor
		if a == "" {
			a = types.ConsumerAssignorUniform
		}
		if i := slices.Index(types.ConsumerAssignors, a); i >= 0 {
			votes[i]++
		}
	}
	best := 0
	for i := range votes {
		if votes[i] > votes[best] {
			best = i
		}
	}
	return types.ConsumerAssignors[best]
}

// subscribedTopics is a member's subscription: its topic names and its regex's matches, both
// sorted (Validate, resolveTopicRegex), merged in linear time.
func subscribedTopics(m types.ConsumerMember) []string {
	a, b := m.SubscribedTopicNames, m.RegexTopics
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		switch {
		case len(b) == 0 || (len(a) > 0 && a[0] < b[0]):
			out, a = append(out, a[0]), a[1:]
		case len(a) == 0 || b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return out
}

// consumerPartitionCounts lists the partition counts of the topics the members subscribe to
// that exist, by name.
func (k Keeper) consumerPartitionCounts(ctx context.Context, members []types.ConsumerMember) ([]types.TopicPartitionCount, error) {
	seen := map[string]bool{}
	var topics []string
	for _, m := range members {
		for _, t := range subscribedTopics(m) {
			if !seen[t] {
				seen[t] = true
				topics = append(topics, t)
			}
		}
	}
	slices.Sort(topics)
	var out []types.TopicPartitionCount
	for _, t := range topics {
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

// consumerRebalanceCost is the work of reconciling a consumer group: members x (subscribed
// partitions and names), plus one per member.
func (k Keeper) consumerRebalanceCost(ctx context.Context, group string) (uint64, error) {
	cg, err := k.ConsumerGroups.Get(ctx, group)
	if isNotFound(err) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	members, err := k.consumerMembers(ctx, group)
	if err != nil {
		return 0, err
	}
	var parts uint64
	for _, c := range cg.PartitionCounts {
		parts += uint64(c.Partitions)
	}
	for _, m := range members {
		parts += uint64(len(m.SubscribedTopicNames) + len(m.RegexTopics))
	}
	n := uint64(len(members))
	return n*parts + n, nil
}

func (k Keeper) countConsumerMembers(ctx context.Context, group string) (uint64, error) {
	return countMembersOf(ctx, k.ConsumerMembers, group)
}

// consumerMembersGone reconciles a consumer group some of whose members expired.
func (k Keeper) consumerMembersGone(ctx context.Context, group, reason string) error {
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return err
	}
	cg, err := k.consumerGroup(ctx, g)
	if err != nil {
		return err
	}
	cg.GroupEpoch++
	return k.reconcileConsumerGroup(ctx, g, &cg, sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli(), reason)
}

// dropConsumerGroup removes a consumer group's state and members with their expiry entries.
func (k Keeper) dropConsumerGroup(ctx context.Context, group string) error {
	members, err := k.consumerMembers(ctx, group)
	if err != nil {
		return err
	}
	for _, m := range members {
		if err := k.removeMember(ctx, consumerMember(&m)); err != nil {
			return err
		}
	}
	return k.ConsumerGroups.Remove(ctx, group)
}

// renewConsumerMembers is MsgKafkaHeartbeat for a consumer group: it extends the sessions of
// the owner's members (a static member that left is not renewed: its session runs out).
func (k Keeper) renewConsumerMembers(ctx context.Context, g types.Group, msg *types.MsgKafkaHeartbeat) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	for _, id := range msg.MemberIds {
		m, err := k.ownedConsumerMember(ctx, msg.GroupId, id, msg.Owner)
		if err != nil {
			return err
		}
		if err := k.setConsumerExpiry(ctx, g, &m, now); err != nil {
			return err
		}
		if err := k.setConsumerMember(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// commitAsConsumerMember checks a commit by a consumer group member: owned by the signer, at
// the member's epoch or the one before (the chain may move a member's epoch in another
// member's transaction, before its client heard of it). As in Kafka, the partitions are not
// checked against the assignment.
func (k Keeper) commitAsConsumerMember(ctx context.Context, g types.Group, msg *types.MsgCommitOffsets) error {
	m, err := k.ownedConsumerMember(ctx, msg.GroupId, msg.KafkaMemberId, msg.Member)
	if err != nil {
		return err
	}
	if m.State == types.CONSUMER_MEMBER_STATE_LEFT_STATIC {
		return errorsmod.Wrapf(types.ErrUnknownMember, "member %q of group %q left", m.MemberId, m.GroupId)
	}
	if e := int32(min(msg.Generation, 1<<31-1)); e <= 0 || (e != m.MemberEpoch && e != m.PreviousMemberEpoch) {
		return errorsmod.Wrapf(types.ErrStaleMemberEpoch, "member %q of group %q is at epoch %d, the commit carries %d", m.MemberId, m.GroupId, m.MemberEpoch, msg.Generation)
	}
	if err := k.setConsumerExpiry(ctx, g, &m, sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()); err != nil {
		return err
	}
	return k.setConsumerMember(ctx, m)
}

// removeConsumerAccount is RemoveGroupMember for a consumer group: every member msg.Member's
// account joined goes, and the rest are brought to a new target.
func (k Keeper) removeConsumerAccount(ctx context.Context, g types.Group, msg *types.MsgRemoveGroupMember) error {
	members, err := k.consumerMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	removed := 0
	for _, m := range members {
		if m.Owner != msg.Member {
			continue
		}
		if err := k.removeMember(ctx, consumerMember(&m)); err != nil {
			return err
		}
		removed++
	}
	if removed == 0 {
		return errorsmod.Wrapf(types.ErrUnknownMember, "%s has no consumer member in group %q", msg.Member, g.GroupId)
	}
	if err := k.dropAllowed(ctx, &g, msg); err != nil {
		return err
	}
	if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
		return err
	}
	return k.consumerMembersGone(ctx, g.GroupId, "remove")
}
