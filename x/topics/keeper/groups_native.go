package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Native groups (GROUP_KIND_NATIVE): members join with MsgJoinGroup naming the topics they
// subscribe to, and the chain assigns the partitions (types.Assign, the group's assignor) at
// every join, leave, expiry and removal. Members are known by their address.

// GroupMembers returns a group's members in address order.
func (k Keeper) GroupMembers(ctx context.Context, id string) ([]types.Member, error) {
	var out []types.Member
	err := k.Members.Walk(ctx, collections.NewPrefixedPairRange[string, string](id), func(_ collections.Pair[string, string], m types.Member) (bool, error) {
		out = append(out, m)
		return false, nil
	})
	return out, err
}

func (k Keeper) getMember(ctx context.Context, group, member string) (types.Member, error) {
	m, err := k.Members.Get(ctx, collections.Join(group, member))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return m, errorsmod.Wrapf(types.ErrUnknownMember, "%s is not a member of group %q", member, group)
	}
	return m, err
}

// JoinGroup adds member to group (creating the group with member as admin) or updates its
// subscription, then rebalances.
func (k Keeper) JoinGroup(ctx context.Context, msg *types.MsgJoinGroup) (*types.MsgJoinGroupResponse, error) {
	if err := k.validAddress(msg.Member, "member"); err != nil {
		return nil, err
	}
	if err := types.ValidateGroupID(msg.GroupId); err != nil {
		return nil, err
	}
	if len(msg.Topics) == 0 {
		return nil, errorsmod.Wrap(types.ErrInvalidRequest, "subscribe to at least one topic")
	}
	seen := map[string]bool{}
	for _, t := range msg.Topics {
		if err := types.ValidateTopicName(t); err != nil {
			return nil, err
		}
		if seen[t] {
			return nil, errorsmod.Wrapf(types.ErrInvalidRequest, "topic %q listed twice", t)
		}
		seen[t] = true
	}
	if _, ok := types.Assignor_name[int32(msg.Assignor)]; !ok {
		return nil, errorsmod.Wrapf(types.ErrInvalidRequest, "unknown assignor %d", msg.Assignor)
	}
	if msg.SessionTimeoutMs != 0 && (msg.SessionTimeoutMs < types.MinSessionTimeoutMs || msg.SessionTimeoutMs > types.MaxSessionTimeoutMs) {
		return nil, errorsmod.Wrapf(types.ErrInvalidSessionTimeout, "%d ms is outside [%d, %d]", msg.SessionTimeoutMs, types.MinSessionTimeoutMs, types.MaxSessionTimeoutMs)
	}
	for _, t := range msg.Topics {
		if _, err := k.GetTopic(ctx, t); err != nil {
			return nil, err
		}
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	params, err := k.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	g, err := k.Groups.Get(ctx, msg.GroupId)
	create := isNotFound(err)
	switch {
	case create:
		// Implicit creation (a first join) is closed: only the joiner, now admin, may join
		// until it opens the group or allowlists others (JOIN_POLICY_UNSPECIFIED).
		g = newGroup(msg.GroupId, msg.Member, types.JOIN_POLICY_UNSPECIFIED, nil, msg.Assignor, msg.SessionTimeoutMs, sdkCtx.BlockHeight())
	case err != nil:
		return nil, err
	default:
		if err := mayJoin(g, msg.Member); err != nil {
			return nil, err
		}
		if err := k.claimKind(ctx, &g, types.GROUP_KIND_NATIVE); err != nil {
			return nil, err
		}
	}
	g.Kind = types.GROUP_KIND_NATIVE
	members, err := k.GroupMembers(ctx, msg.GroupId)
	if err != nil {
		return nil, err
	}
	m, found := types.Member{}, false
	for _, x := range members {
		if x.Member == msg.Member {
			m, found = x, true
		}
	}
	if !found {
		if uint32(len(members)) >= params.MaxGroupMembers {
			return nil, errorsmod.Wrapf(types.ErrGroupFull, "group %q has %d members, the limit is %d", msg.GroupId, len(members), params.MaxGroupMembers)
		}
		m = types.Member{GroupId: msg.GroupId, Member: msg.Member, JoinedHeight: sdkCtx.BlockHeight()}
	}
	// The subscription after this join (the union over members) bounds the rebalance below.
	topics := append([]string(nil), msg.Topics...)
	for _, x := range members {
		if x.Member != msg.Member {
			topics = append(topics, x.Topics...)
		}
	}
	total, err := k.subscribedPartitions(ctx, topics)
	if err != nil {
		return nil, err
	}
	if total > uint64(params.MaxGroupSubscribedPartitions) {
		return nil, errorsmod.Wrapf(types.ErrSubscriptionTooLarge, "group %q would subscribe to %d partitions, the limit is %d", msg.GroupId, total, params.MaxGroupSubscribedPartitions)
	}
	if create {
		if err := k.createGroup(ctx, &g, msg.Member); err != nil {
			return nil, err
		}
	}
	m.Topics = append([]string(nil), msg.Topics...)
	if err := k.setExpiry(ctx, nativeMember(&m), sdkCtx.BlockTime().UnixMilli()+g.SessionTimeoutMs); err != nil {
		return nil, err
	}
	if err := k.Members.Set(ctx, collections.Join(m.GroupId, m.Member), m); err != nil {
		return nil, err
	}
	if err := k.rebalance(ctx, &g, "join"); err != nil {
		return nil, err
	}
	m, err = k.Members.Get(ctx, collections.Join(msg.GroupId, msg.Member))
	if err != nil {
		return nil, err
	}
	return &types.MsgJoinGroupResponse{Generation: g.Generation, Assignment: m.Assignment}, nil
}

// subscribedPartitions counts the partitions of the distinct topics (unknown topics count 0).
func (k Keeper) subscribedPartitions(ctx context.Context, topics []string) (uint64, error) {
	seen := map[string]bool{}
	var total uint64
	for _, t := range topics {
		if seen[t] {
			continue
		}
		seen[t] = true
		topic, err := k.Topics.Get(ctx, t)
		if isNotFound(err) {
			continue
		} else if err != nil {
			return 0, err
		}
		total += uint64(topic.Partitions)
	}
	return total, nil
}

// rebalanceCost is the work of rebalancing a group: members x subscribed partitions, plus one
// per member read.
func (k Keeper) rebalanceCost(ctx context.Context, group string) (uint64, error) {
	members, err := k.GroupMembers(ctx, group)
	if err != nil {
		return 0, err
	}
	var topics []string
	for _, m := range members {
		topics = append(topics, m.Topics...)
	}
	parts, err := k.subscribedPartitions(ctx, topics)
	if err != nil {
		return 0, err
	}
	n := uint64(len(members))
	return n*parts + n, nil
}

func (k Keeper) countMembers(ctx context.Context, group string) (uint32, error) {
	var n uint32
	err := k.Members.Walk(ctx, collections.NewPrefixedPairRange[string, string](group), func(collections.Pair[string, string], types.Member) (bool, error) {
		n++
		return false, nil
	})
	return n, err
}

// rebalance bumps the generation and recomputes every member's assignment from the
// subscriptions and the topics' current partition counts.
func (k Keeper) rebalance(ctx context.Context, g *types.Group, reason string) error {
	members, err := k.GroupMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	g.Generation++
	inputs := make([]types.AssignInput, len(members))
	partitions := map[string]uint32{}
	for i, m := range members {
		inputs[i] = types.AssignInput{Member: m.Member, Topics: m.Topics}
		for _, t := range m.Topics {
			if _, ok := partitions[t]; ok {
				continue
			}
			topic, err := k.Topics.Get(ctx, t)
			if errorsmod.IsOf(err, collections.ErrNotFound) {
				partitions[t] = 0 // deleted since the member subscribed: nothing to assign
				continue
			} else if err != nil {
				return err
			}
			partitions[t] = topic.Partitions
		}
	}
	// The assignor's work (members x partitions, not metered as store access) is charged to the
	// signer that triggers the rebalance; the EndBlocker's meter is unlimited and budgeted instead.
	var total uint64
	for _, n := range partitions {
		total += uint64(n)
	}
	sdk.UnwrapSDKContext(ctx).GasMeter().ConsumeGas(uint64(len(members))*total*types.RebalanceGasPerUnit, "group rebalance")
	assignments := types.Assign(g.Assignor, inputs, partitions)
	ids := make([]string, len(members))
	for i, m := range members {
		m.Assignment = assignments[i]
		ids[i] = m.Member
		if err := k.Members.Set(ctx, collections.Join(m.GroupId, m.Member), m); err != nil {
			return err
		}
	}
	if err := k.Groups.Set(ctx, g.GroupId, *g); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventGroupRebalanced{
		GroupId: g.GroupId, Generation: g.Generation, Members: ids, Reason: reason,
	})
}

// memberOf loads group and its native member for a message member signed.
func (k Keeper) memberOf(ctx context.Context, member, group string) (types.Group, types.Member, error) {
	if err := k.validAddress(member, "member"); err != nil {
		return types.Group{}, types.Member{}, err
	}
	if err := types.ValidateGroupID(group); err != nil {
		return types.Group{}, types.Member{}, err
	}
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return g, types.Member{}, err
	}
	m, err := k.getMember(ctx, group, member)
	return g, m, err
}

// LeaveGroup removes member from group and rebalances the rest.
func (k Keeper) LeaveGroup(ctx context.Context, member, group string) error {
	g, m, err := k.memberOf(ctx, member, group)
	if err != nil {
		return err
	}
	if err := k.removeMember(ctx, nativeMember(&m)); err != nil {
		return err
	}
	return k.rebalance(ctx, &g, "leave")
}

// Heartbeat extends a member's session and returns the current generation and assignment.
func (k Keeper) Heartbeat(ctx context.Context, member, group string) (*types.MsgHeartbeatResponse, error) {
	g, m, err := k.memberOf(ctx, member, group)
	if err != nil {
		return nil, err
	}
	// A member the policy no longer admits cannot keep the group busy (and unresettable).
	if err := mayJoin(g, member); err != nil {
		return nil, err
	}
	if err := k.touch(ctx, g, &m); err != nil {
		return nil, err
	}
	return &types.MsgHeartbeatResponse{Generation: g.Generation, Assignment: m.Assignment}, nil
}

func (k Keeper) touch(ctx context.Context, g types.Group, m *types.Member) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	if err := k.setExpiry(ctx, nativeMember(m), now+g.SessionTimeoutMs); err != nil {
		return err
	}
	return k.Members.Set(ctx, collections.Join(m.GroupId, m.Member), *m)
}

// removeNativeMember is RemoveGroupMember for a native group.
func (k Keeper) removeNativeMember(ctx context.Context, g types.Group, msg *types.MsgRemoveGroupMember) error {
	m, err := k.getMember(ctx, msg.GroupId, msg.Member)
	if err != nil {
		return err
	}
	if err := k.removeMember(ctx, nativeMember(&m)); err != nil {
		return err
	}
	if err := k.dropAllowed(ctx, &g, msg); err != nil {
		return err
	}
	return k.rebalance(ctx, &g, "remove")
}
