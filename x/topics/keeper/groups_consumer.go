package keeper

import (
	"context"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// KIP-848 consumer groups: Kafka's consumer rebalance protocol with the chain as the group
// coordinator. Members send only what changes (a join, a leave, a new subscription, partitions
// revoked) as MsgConsumerGroupHeartbeat; their gateways keep them alive with MsgKafkaHeartbeat
// and answer every other heartbeat from this state. The chain computes the target assignment
// with a server assignor whenever the group epoch moves and brings every member towards it in
// the same transaction: partitions a member must give up are pending revocation, and no member
// gets a partition until its previous owner said it released it. So no partition is ever owned
// by two members, and a rebalance costs one block per step instead of a round of every client.

// consumerMember is a consumer group member as the shared expiry index sees it.
func consumerMember(m *types.ConsumerMember) memberRef {
	return memberRef{types.GROUP_KIND_CONSUMER, m.GroupId, m.MemberId, &m.ExpiresAtMs}
}

// consumerMembers returns a consumer group's members in join order.
func (k Keeper) consumerMembers(ctx context.Context, group string) ([]types.ConsumerMember, error) {
	return membersOf[types.ConsumerMember](ctx, k.ConsumerMembers, group)
}

// ConsumerGroupState returns a consumer group with its members in join order; a group no
// consumer has joined is an empty one at the group's generation.
func (k Keeper) ConsumerGroupState(ctx context.Context, group string) (types.ConsumerGroup, []types.ConsumerMember, error) {
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return types.ConsumerGroup{}, nil, err
	}
	if g.Kind != types.GROUP_KIND_CONSUMER && g.Kind != types.GROUP_KIND_UNSPECIFIED {
		// As Kafka's ConsumerGroupDescribe: another kind of group is not a consumer group
		// (its admin tools then fall back to DescribeGroups). A group no member gave a kind yet
		// is an empty one of any.
		return types.ConsumerGroup{}, nil, errorsmod.Wrapf(types.ErrUnknownGroup, "group %q is not a consumer group", group)
	}
	cg, err := k.consumerGroup(ctx, g)
	if err != nil {
		return cg, nil, err
	}
	members, err := k.consumerMembers(ctx, group)
	return cg, members, err
}

func (k Keeper) consumerGroup(ctx context.Context, g types.Group) (types.ConsumerGroup, error) {
	cg, err := k.ConsumerGroups.Get(ctx, g.GroupId)
	if isNotFound(err) {
		// Epochs continue the group's generation, so commits fenced before stay fenced.
		e := int32(min(g.Generation, 1<<31-1))
		return types.ConsumerGroup{GroupId: g.GroupId, GroupEpoch: e, AssignmentEpoch: e}, nil
	}
	return cg, err
}

func (k Keeper) setConsumerMember(ctx context.Context, m types.ConsumerMember) error {
	return k.ConsumerMembers.Set(ctx, collections.Join(m.GroupId, m.MemberId), m)
}

// ownedConsumerMember returns a member that owner may act as.
func (k Keeper) ownedConsumerMember(ctx context.Context, group, id, owner string) (types.ConsumerMember, error) {
	return ownedMemberOf[types.ConsumerMember](ctx, k.ConsumerMembers, group, id, owner)
}

// ConsumerGroupHeartbeat is KIP-848's ConsumerGroupHeartbeat when it changes something: a
// join (epoch 0), a leave (-1, or -2 for a static member), a new subscription, or partitions the
// member released. It returns the member as the chain left it.
func (k Keeper) ConsumerGroupHeartbeat(ctx context.Context, msg *types.MsgConsumerGroupHeartbeat) (types.ConsumerMember, error) {
	if err := k.validAddress(msg.Owner, "owner"); err != nil {
		return types.ConsumerMember{}, err
	}
	if err := msg.Validate(); err != nil {
		return types.ConsumerMember{}, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	now := sdkCtx.BlockTime().UnixMilli()
	g, err := k.Groups.Get(ctx, msg.GroupId)
	create := isNotFound(err)
	switch {
	case create && msg.MemberEpoch != 0:
		return types.ConsumerMember{}, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of consumer group %q", msg.MemberId, msg.GroupId)
	case !create && err == nil && msg.MemberEpoch < 0 && g.Kind != types.GROUP_KIND_CONSUMER:
		return types.ConsumerMember{}, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of consumer group %q", msg.MemberId, msg.GroupId)
	case create:
		g = newGroup(msg.GroupId, msg.Owner, types.JOIN_POLICY_UNSPECIFIED, nil, types.ASSIGNOR_UNSPECIFIED, 0, sdkCtx.BlockHeight())
	case err != nil:
		return types.ConsumerMember{}, err
	}
	if msg.MemberEpoch < 0 {
		return k.leaveConsumerGroup(ctx, g, msg, now)
	}
	if !create {
		// A member the policy no longer admits cannot keep the group busy.
		if err := mayJoin(g, msg.Owner); err != nil {
			return types.ConsumerMember{}, err
		}
	}
	kindBefore := g.Kind
	if msg.MemberEpoch == 0 && !create {
		if err := k.claimKind(ctx, &g, types.GROUP_KIND_CONSUMER); err != nil {
			return types.ConsumerMember{}, err
		}
	} else if !create && g.Kind != types.GROUP_KIND_CONSUMER {
		return types.ConsumerMember{}, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of consumer group %q", msg.MemberId, msg.GroupId)
	}
	g.Kind = types.GROUP_KIND_CONSUMER
	if !create && g.Kind != kindBefore {
		// The group was another kind's, empty: what that kind left goes with it (a failed
		// heartbeat reverts this with the rest of its transaction).
		if err := k.dropProtocolState(ctx, g.GroupId, types.GROUP_KIND_UNSPECIFIED); err != nil {
			return types.ConsumerMember{}, err
		}
	}
	cg, err := k.consumerGroup(ctx, g)
	if err != nil {
		return types.ConsumerMember{}, err
	}
	m, bump, err := k.admitConsumer(ctx, msg)
	if err != nil {
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
	// Subscription, assignor and client details as the heartbeat gives them.
	subscription := !slices.Equal(m.SubscribedTopicNames, msg.SubscribedTopicNames) || m.SubscribedTopicRegex != msg.SubscribedTopicRegex || m.ServerAssignor != msg.ServerAssignor
	m.SubscribedTopicNames, m.SubscribedTopicRegex, m.ServerAssignor = msg.SubscribedTopicNames, msg.SubscribedTopicRegex, msg.ServerAssignor
	m.ClientId, m.RackId, m.RebalanceTimeoutMs = msg.ClientId, msg.RackId, msg.RebalanceTimeoutMs
	if m.SubscribedTopicRegex != "" {
		// Resolved on every heartbeat the member sends through the chain, so topics created
		// since are picked up.
		matched, err := k.resolveTopicRegex(ctx, m.SubscribedTopicRegex)
		if err != nil {
			return m, err
		}
		subscription = subscription || !slices.Equal(matched, m.RegexTopics)
		m.RegexTopics = matched
	} else {
		m.RegexTopics = nil
	}
	if subscription || bump {
		cg.GroupEpoch++
	}
	if msg.OwnedKnown && m.State == types.CONSUMER_MEMBER_STATE_UNREVOKED_PARTITIONS {
		// The client no longer owns what it had to give up: the partitions are free.
		if !types.NewPartitionSet(msg.Owned).Overlaps(m.PendingRevocation) {
			m.PendingRevocation = nil
			m.RevokeDeadlineMs = 0
		}
	}
	if err := k.setConsumerMember(ctx, m); err != nil {
		return m, err
	}
	if subscription || bump {
		sdkCtx.GasMeter().ConsumeGas(uint64(len(m.SubscribedTopicNames)+len(m.RegexTopics)+1)*types.RebalanceGasPerUnit, "consumer subscription")
		if err := k.checkConsumerSubscription(ctx, g.GroupId); err != nil {
			return m, err
		}
	}
	if err := k.reconcileConsumerGroup(ctx, g, &cg, now, "heartbeat"); err != nil {
		return m, err
	}
	out, err := k.ConsumerMembers.Get(ctx, collections.Join(m.GroupId, m.MemberId))
	if err != nil {
		return out, err
	}
	if err := k.setConsumerExpiry(ctx, g, &out, now); err != nil {
		return out, err
	}
	return out, k.setConsumerMember(ctx, out)
}

// admitConsumer finds or adds the heartbeat's member and checks its epoch: a join of a new
// member id (or of a static member's instance id, which takes over its partitions), a rejoin in
// place (epoch 0 with a known id: the client lost its answer), or a heartbeat at an epoch the
// chain gave the member. bump says the group epoch moves (a new member).
func (k Keeper) admitConsumer(ctx context.Context, msg *types.MsgConsumerGroupHeartbeat) (types.ConsumerMember, bool, error) {
	m, err := k.ConsumerMembers.Get(ctx, collections.Join(msg.GroupId, msg.MemberId))
	found := err == nil
	if err != nil && !isNotFound(err) {
		return m, false, err
	}
	if found && m.Owner != msg.Owner {
		return m, false, errorsmod.Wrapf(types.ErrGroupAuthorization, "member %q of group %q belongs to %s, not %s", msg.MemberId, msg.GroupId, m.Owner, msg.Owner)
	}
	if msg.MemberEpoch > 0 {
		switch {
		case !found:
			return m, false, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of consumer group %q", msg.MemberId, msg.GroupId)
		case m.State == types.CONSUMER_MEMBER_STATE_LEFT_STATIC || msg.MemberEpoch > m.MemberEpoch:
			return m, false, errorsmod.Wrapf(types.ErrFencedMemberEpoch, "member %q of group %q is at epoch %d, the heartbeat carries %d", msg.MemberId, msg.GroupId, m.MemberEpoch, msg.MemberEpoch)
		case msg.MemberEpoch < m.MemberEpoch && msg.OwnedKnown && !types.NewPartitionSet(m.Assigned, m.PendingRevocation).Contains(msg.Owned):
			// An older epoch is the client behind the chain, fine unless it claims partitions
			// the member no longer holds.
			return m, false, errorsmod.Wrapf(types.ErrFencedMemberEpoch, "member %q of group %q is at epoch %d and no longer owns all the partitions of epoch %d", msg.MemberId, msg.GroupId, m.MemberEpoch, msg.MemberEpoch)
		}
		return m, false, nil
	}
	if found {
		if m.State == types.CONSUMER_MEMBER_STATE_LEFT_STATIC { // back within its session
			m.State = types.CONSUMER_MEMBER_STATE_STABLE
			if len(m.PendingRevocation) > 0 {
				m.State = types.CONSUMER_MEMBER_STATE_UNREVOKED_PARTITIONS
			}
		}
		return m, false, nil
	}
	members, err := k.consumerMembers(ctx, msg.GroupId)
	if err != nil {
		return m, false, err
	}
	var order uint64
	for _, x := range members {
		order = max(order, x.JoinOrder+1)
	}
	if msg.InstanceId != "" {
		for _, x := range members {
			if x.InstanceId != msg.InstanceId {
				continue
			}
			if x.State != types.CONSUMER_MEMBER_STATE_LEFT_STATIC || x.Owner != msg.Owner {
				return m, false, errorsmod.Wrapf(types.ErrUnreleasedInstanceID, "instance %q of group %q is member %q, still active", msg.InstanceId, msg.GroupId, x.MemberId)
			}
			// The static member comes back under a new id with its partitions and epoch: no
			// rebalance.
			if err := k.removeMember(ctx, consumerMember(&x)); err != nil {
				return m, false, err
			}
			x.MemberId, x.State, x.ExpiresAtMs = msg.MemberId, types.CONSUMER_MEMBER_STATE_STABLE, 0
			if len(x.PendingRevocation) > 0 {
				x.State = types.CONSUMER_MEMBER_STATE_UNREVOKED_PARTITIONS
			}
			return x, false, nil
		}
	}
	params, err := k.Params.Get(ctx)
	if err != nil {
		return m, false, err
	}
	if uint32(len(members)) >= params.MaxGroupMembers {
		return m, false, errorsmod.Wrapf(types.ErrGroupFull, "group %q has %d members, the limit is %d", msg.GroupId, len(members), params.MaxGroupMembers)
	}
	return types.ConsumerMember{GroupId: msg.GroupId, MemberId: msg.MemberId, Owner: msg.Owner, InstanceId: msg.InstanceId, JoinOrder: order}, true, nil
}

// leaveConsumerGroup removes the member (epoch -1), or keeps a static one's partitions for its
// session (epoch -2), and brings the rest to a new target. A static leave by an account the
// group no longer admits is a leave: it cannot keep partitions it may not read.
func (k Keeper) leaveConsumerGroup(ctx context.Context, g types.Group, msg *types.MsgConsumerGroupHeartbeat, now int64) (types.ConsumerMember, error) {
	m, err := k.ownedConsumerMember(ctx, msg.GroupId, msg.MemberId, msg.Owner)
	if err != nil {
		return m, err
	}
	cg, err := k.consumerGroup(ctx, g)
	if err != nil {
		return m, err
	}
	if msg.MemberEpoch == types.ConsumerLeaveStaticEpoch && m.InstanceId != "" && mayJoin(g, msg.Owner) == nil {
		if m.State == types.CONSUMER_MEMBER_STATE_LEFT_STATIC {
			return m, nil // left already: its session runs out where the first leave set it
		}
		m.State = types.CONSUMER_MEMBER_STATE_LEFT_STATIC
		at := now + g.SessionTimeoutMs
		if m.RevokeDeadlineMs > 0 {
			at = min(at, m.RevokeDeadlineMs)
		}
		if err := k.setExpiry(ctx, consumerMember(&m), at); err != nil {
			return m, err
		}
		return m, k.setConsumerMember(ctx, m)
	}
	if err := k.removeMember(ctx, consumerMember(&m)); err != nil {
		return m, err
	}
	cg.GroupEpoch++
	m.MemberEpoch = msg.MemberEpoch
	return m, k.reconcileConsumerGroup(ctx, g, &cg, now, "leave")
}

// setConsumerExpiry renews a member's session; while it holds unrevoked partitions its
// rebalance timeout caps it, so a member that never revokes cannot hold them for ever.
func (k Keeper) setConsumerExpiry(ctx context.Context, g types.Group, m *types.ConsumerMember, now int64) error {
	at := now + g.SessionTimeoutMs
	if m.State == types.CONSUMER_MEMBER_STATE_LEFT_STATIC {
		return nil // its session runs out where the leave set it
	}
	if m.RevokeDeadlineMs > 0 {
		at = min(at, m.RevokeDeadlineMs)
	}
	return k.setExpiry(ctx, consumerMember(m), at)
}

// resolveTopicRegex lists the topics a subscription regex matches, in name order. The walk
// reads every topic and is paid for as store reads by the heartbeat's signer.
func (k Keeper) resolveTopicRegex(ctx context.Context, re string) ([]string, error) {
	c, insts, err := types.CompileTopicRegex(re)
	if err != nil {
		return nil, err
	}
	meter := sdk.UnwrapSDKContext(ctx).GasMeter()
	meter.ConsumeGas(uint64(insts)*types.RebalanceGasPerUnit, "topic regex compile")
	var out []string
	err = k.Topics.Walk(ctx, nil, func(name string, _ types.Topic) (bool, error) {
		// Matching costs the name's length times the program's size.
		meter.ConsumeGas(uint64(len(name)*insts)/8+1, "topic regex match")
		if c.MatchString(name) {
			out = append(out, name)
		}
		return len(out) >= types.MaxSubscribedTopics, nil
	})
	return out, err
}

// checkConsumerSubscription bounds what a group subscribes to, as for native groups
// (max_group_subscribed_partitions): the assignment's work is members x partitions.
func (k Keeper) checkConsumerSubscription(ctx context.Context, group string) error {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	members, err := k.consumerMembers(ctx, group)
	if err != nil {
		return err
	}
	counts, err := k.consumerPartitionCounts(ctx, members)
	if err != nil {
		return err
	}
	var total, names uint64
	for _, c := range counts {
		total += uint64(c.Partitions)
	}
	for _, m := range members {
		names += uint64(len(m.SubscribedTopicNames) + len(m.RegexTopics))
	}
	if total > uint64(params.MaxGroupSubscribedPartitions) {
		return errorsmod.Wrapf(types.ErrSubscriptionTooLarge, "group %q would subscribe to %d partitions, the limit is %d", group, total, params.MaxGroupSubscribedPartitions)
	}
	// Names of topics that do not exist cost a reconcile as much as partitions do.
	if names > uint64(params.MaxGroupSubscribedPartitions) {
		return errorsmod.Wrapf(types.ErrSubscriptionTooLarge, "group %q's members would name %d topics, the limit is %d", group, names, params.MaxGroupSubscribedPartitions)
	}
	return nil
}
