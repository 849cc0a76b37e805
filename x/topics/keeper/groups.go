package keeper

import (
	"context"
	"sort"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// GetGroup returns a group or ErrUnknownGroup.
func (k Keeper) GetGroup(ctx context.Context, id string) (types.Group, error) {
	g, err := k.Groups.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return g, errorsmod.Wrapf(types.ErrUnknownGroup, "group %q does not exist", id)
	}
	return g, err
}

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

// setMemberExpiry moves a member's expiry index entry (a new member has none to remove).
func (k Keeper) setMemberExpiry(ctx context.Context, m *types.Member, expiresAt int64) error {
	if err := k.MemberExpiry.Remove(ctx, collections.Join3(m.ExpiresAtMs, m.GroupId, m.Member)); err != nil {
		return err
	}
	m.ExpiresAtMs = expiresAt
	return k.MemberExpiry.Set(ctx, collections.Join3(expiresAt, m.GroupId, m.Member), true)
}

func (k Keeper) removeMember(ctx context.Context, m types.Member) error {
	if err := k.MemberExpiry.Remove(ctx, collections.Join3(m.ExpiresAtMs, m.GroupId, m.Member)); err != nil {
		return err
	}
	return k.Members.Remove(ctx, collections.Join(m.GroupId, m.Member))
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
	g, err := k.Groups.Get(ctx, msg.GroupId)
	switch {
	case errorsmod.IsOf(err, collections.ErrNotFound):
		g = types.Group{GroupId: msg.GroupId, Admin: msg.Member, Assignor: msg.Assignor, SessionTimeoutMs: msg.SessionTimeoutMs, CreatedHeight: sdkCtx.BlockHeight()}
		if g.Assignor == types.ASSIGNOR_UNSPECIFIED {
			g.Assignor = types.ASSIGNOR_RANGE
		}
		if g.SessionTimeoutMs == 0 {
			g.SessionTimeoutMs = types.DefaultSessionTimeoutMs
		}
	case err != nil:
		return nil, err
	}
	m, err := k.Members.Get(ctx, collections.Join(msg.GroupId, msg.Member))
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		params, err := k.Params.Get(ctx)
		if err != nil {
			return nil, err
		}
		n, err := k.countMembers(ctx, msg.GroupId)
		if err != nil {
			return nil, err
		}
		if n >= params.MaxGroupMembers {
			return nil, errorsmod.Wrapf(types.ErrGroupFull, "group %q has %d members, the limit is %d", msg.GroupId, n, params.MaxGroupMembers)
		}
		m = types.Member{GroupId: msg.GroupId, Member: msg.Member, JoinedHeight: sdkCtx.BlockHeight()}
	} else if err != nil {
		return nil, err
	}
	m.Topics = append([]string(nil), msg.Topics...)
	if err := k.setMemberExpiry(ctx, &m, sdkCtx.BlockTime().UnixMilli()+g.SessionTimeoutMs); err != nil {
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

// LeaveGroup removes member from group and rebalances the rest.
func (k Keeper) LeaveGroup(ctx context.Context, member, group string) error {
	if err := k.validAddress(member, "member"); err != nil {
		return err
	}
	if err := types.ValidateGroupID(group); err != nil {
		return err
	}
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return err
	}
	m, err := k.getMember(ctx, group, member)
	if err != nil {
		return err
	}
	if err := k.removeMember(ctx, m); err != nil {
		return err
	}
	return k.rebalance(ctx, &g, "leave")
}

// Heartbeat extends a member's session and returns the current generation and assignment.
func (k Keeper) Heartbeat(ctx context.Context, member, group string) (*types.MsgHeartbeatResponse, error) {
	if err := k.validAddress(member, "member"); err != nil {
		return nil, err
	}
	if err := types.ValidateGroupID(group); err != nil {
		return nil, err
	}
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return nil, err
	}
	m, err := k.getMember(ctx, group, member)
	if err != nil {
		return nil, err
	}
	if err := k.touch(ctx, g, &m); err != nil {
		return nil, err
	}
	return &types.MsgHeartbeatResponse{Generation: g.Generation, Assignment: m.Assignment}, nil
}

func (k Keeper) touch(ctx context.Context, g types.Group, m *types.Member) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	if err := k.setMemberExpiry(ctx, m, now+g.SessionTimeoutMs); err != nil {
		return err
	}
	return k.Members.Set(ctx, collections.Join(m.GroupId, m.Member), *m)
}

func (k Keeper) checkGroupAdmin(g types.Group, signer string) error {
	if signer != g.Admin && signer != k.authority {
		return errorsmod.Wrapf(types.ErrUnauthorized, "%s may not administer group %q (admin %s)", signer, g.GroupId, g.Admin)
	}
	return nil
}

func (k Keeper) requireEmpty(ctx context.Context, g types.Group) error {
	n, err := k.countMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	if n > 0 {
		return errorsmod.Wrapf(types.ErrGroupNotEmpty, "group %q has %d active members; they must leave or expire first", g.GroupId, n)
	}
	return nil
}

// DeleteGroup deletes an empty group and all its committed offsets.
func (k Keeper) DeleteGroup(ctx context.Context, signer, group string) error {
	if err := k.validAddress(signer, "authority"); err != nil {
		return err
	}
	if err := types.ValidateGroupID(group); err != nil {
		return err
	}
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return err
	}
	if err := k.checkGroupAdmin(g, signer); err != nil {
		return err
	}
	if err := k.requireEmpty(ctx, g); err != nil {
		return err
	}
	var topics []string
	err = k.Offsets.Walk(ctx, collections.NewPrefixedPairRange[string, types.TopicPartition](group), func(key collections.Pair[string, types.TopicPartition], _ types.CommittedOffset) (bool, error) {
		if len(topics) == 0 || topics[len(topics)-1] != key.K2().Topic {
			topics = append(topics, key.K2().Topic)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	for _, t := range topics {
		if err := k.GroupTopics.Remove(ctx, collections.Join(t, group)); err != nil {
			return err
		}
	}
	if err := k.Offsets.Clear(ctx, collections.NewPrefixedPairRange[string, types.TopicPartition](group)); err != nil {
		return err
	}
	if err := k.Groups.Remove(ctx, group); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventGroupDeleted{GroupId: group, Authority: signer})
}

// ExpireMembers removes members whose session ended by the block time, at most
// max_expiries_per_block per block, and rebalances each affected group once.
func (k Keeper) ExpireMembers(ctx context.Context) error {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	rng := new(collections.Range[collections.Triple[int64, string, string]]).
		EndExclusive(collections.Join3(now+1, "", ""))
	var due []collections.Triple[int64, string, string]
	err = k.MemberExpiry.Walk(ctx, rng, func(key collections.Triple[int64, string, string], _ bool) (bool, error) {
		due = append(due, key)
		return uint32(len(due)) >= params.MaxExpiriesPerBlock, nil
	})
	if err != nil {
		return err
	}
	var groups []string
	for _, key := range due {
		// Remove the due entry itself first: an entry that no longer matches its member (or a
		// member that is gone) must not stop the EndBlocker, which would halt the chain.
		if err := k.MemberExpiry.Remove(ctx, key); err != nil {
			return err
		}
		m, err := k.Members.Get(ctx, collections.Join(key.K2(), key.K3()))
		if isNotFound(err) {
			continue
		} else if err != nil {
			return err
		}
		if m.ExpiresAtMs != key.K1() {
			continue // stale entry: the member's session was extended
		}
		if err := k.removeMember(ctx, m); err != nil {
			return err
		}
		if len(groups) == 0 || !containsString(groups, m.GroupId) {
			groups = append(groups, m.GroupId)
		}
	}
	sort.Strings(groups)
	for _, id := range groups {
		g, err := k.GetGroup(ctx, id)
		if err != nil {
			return err
		}
		if err := k.rebalance(ctx, &g, "expire"); err != nil {
			return err
		}
	}
	return nil
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
