package keeper

import (
	"bytes"
	"context"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka-protocol groups: Kafka's group protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup)
// with its state in the chain instead of in one broker, so every Kafka gateway serves every
// group — a fleet behind a load balancer — and FindCoordinator may answer any of them. The
// members choose the protocol and the leader assigns, as in Kafka; the chain keeps the
// members, forms generations (in block time) and stores the leader's assignments. Each member
// belongs to the account that first joined it: only that account may act as the member.
//
// A group is either a Kafka group or a native one (MsgJoinGroup: the chain assigns); it shares
// the Group record (admin, join policy, deposit, generation) and its committed offsets.

// kafkaMembers returns a Kafka group's members in join order.
func (k Keeper) kafkaMembers(ctx context.Context, group string) ([]types.KafkaMember, error) {
	return membersOf[types.KafkaMember](ctx, k.KafkaMembers, group)
}

// KafkaGroupState returns a Kafka group with its members in join order; a group no Kafka
// client has joined is an empty one at the group's generation.
func (k Keeper) KafkaGroupState(ctx context.Context, group string) (types.KafkaGroup, []types.KafkaMember, error) {
	kg, err := k.KafkaGroups.Get(ctx, group)
	if isNotFound(err) {
		g, err := k.GetGroup(ctx, group)
		if err != nil {
			return kg, nil, err
		}
		return types.KafkaGroup{GroupId: group, State: types.KAFKA_GROUP_STATE_EMPTY, Generation: int32(min(g.Generation, 1<<31-1))}, nil, nil
	} else if err != nil {
		return kg, nil, err
	}
	members, err := k.kafkaMembers(ctx, group)
	return kg, members, err
}

func (k Keeper) setKafkaMember(ctx context.Context, m types.KafkaMember) error {
	return k.KafkaMembers.Set(ctx, collections.Join(m.GroupId, m.MemberId), m)
}

// ownedKafkaMember returns a member that owner may act as.
func (k Keeper) ownedKafkaMember(ctx context.Context, group, id, owner string) (types.KafkaMember, error) {
	return ownedMemberOf[types.KafkaMember](ctx, k.KafkaMembers, group, id, owner)
}

// KafkaJoinGroup is Kafka's JoinGroup: it adds or updates the member and starts a rebalance
// when the group needs one (a new member, changed protocols, the leader rejoining, or a group
// not stable). A rejoin that changes nothing leaves a formed generation as it is.
func (k Keeper) KafkaJoinGroup(ctx context.Context, msg *types.MsgKafkaJoinGroup) (types.KafkaGroup, error) {
	if err := k.validAddress(msg.Owner, "owner"); err != nil {
		return types.KafkaGroup{}, err
	}
	if err := msg.Validate(); err != nil {
		return types.KafkaGroup{}, err
	}
	sdkCtx := sdk.UnwrapSDKContext(ctx)
	now := sdkCtx.BlockTime().UnixMilli()
	params, err := k.Params.Get(ctx)
	if err != nil {
		return types.KafkaGroup{}, err
	}
	g, err := k.Groups.Get(ctx, msg.GroupId)
	create := isNotFound(err)
	switch {
	case create:
		g = newGroup(msg.GroupId, msg.Owner, types.JOIN_POLICY_UNSPECIFIED, nil, types.ASSIGNOR_UNSPECIFIED, 0, sdkCtx.BlockHeight())
	case err != nil:
		return types.KafkaGroup{}, err
	default:
		if err := mayJoin(g, msg.Owner); err != nil {
			return types.KafkaGroup{}, err
		}
	}
	kindBefore := g.Kind
	if !create {
		if err := k.claimKind(ctx, &g, types.GROUP_KIND_KAFKA); err != nil {
			return types.KafkaGroup{}, err
		}
	}
	g.Kind = types.GROUP_KIND_KAFKA
	kg, err := k.KafkaGroups.Get(ctx, msg.GroupId)
	if isNotFound(err) {
		// Generations continue the group's, so commits fenced before stay fenced.
		kg = types.KafkaGroup{GroupId: msg.GroupId, State: types.KAFKA_GROUP_STATE_EMPTY, Generation: int32(min(g.Generation, 1<<31-1))}
	} else if err != nil {
		return kg, err
	}
	members, err := k.kafkaMembers(ctx, msg.GroupId)
	if err != nil {
		return kg, err
	}
	var (
		m      types.KafkaMember
		found  bool
		others []types.KafkaMember
		order  uint64
	)
	for _, x := range members {
		order = max(order, x.JoinOrder+1)
		if x.MemberId == msg.MemberId {
			m, found = x, true
		} else {
			others = append(others, x)
		}
	}
	if found && m.Owner != msg.Owner {
		return kg, errorsmod.Wrapf(types.ErrGroupAuthorization, "member %q of group %q belongs to %s, not %s", msg.MemberId, msg.GroupId, m.Owner, msg.Owner)
	}
	if !found && uint32(len(members)) >= params.MaxGroupMembers {
		return kg, errorsmod.Wrapf(types.ErrGroupFull, "group %q has %d members, the limit is %d", msg.GroupId, len(members), params.MaxGroupMembers)
	}
	if len(others) > 0 {
		if msg.ProtocolType != kg.ProtocolType {
			return kg, errorsmod.Wrapf(types.ErrInconsistentGroupProtocol, "group %q runs protocol type %q, not %q", msg.GroupId, kg.ProtocolType, msg.ProtocolType)
		}
		if len(commonProtocols(append(others, types.KafkaMember{Protocols: msg.Protocols}))) == 0 {
			return kg, errorsmod.Wrapf(types.ErrInconsistentGroupProtocol, "no protocol of member %q is supported by every member of group %q", msg.MemberId, msg.GroupId)
		}
	}
	if create {
		if err := k.createGroup(ctx, &g, msg.Owner); err != nil {
			return kg, err
		}
	} else if g.Kind != kindBefore {
		// An empty consumer or share group's state goes with its kind.
		if err := k.dropProtocolState(ctx, g.GroupId, types.GROUP_KIND_KAFKA); err != nil {
			return kg, err
		}
		if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
			return kg, err
		}
	}
	changed := !found || !sameProtocols(m.Protocols, msg.Protocols)
	if !found {
		m = types.KafkaMember{GroupId: msg.GroupId, MemberId: msg.MemberId, Owner: msg.Owner, JoinOrder: order}
	}
	m.ClientId, m.Protocols = msg.ClientId, msg.Protocols
	m.SessionTimeoutMs, m.RebalanceTimeoutMs = msg.SessionTimeoutMs, max(msg.RebalanceTimeoutMs, msg.SessionTimeoutMs)
	if err := k.setExpiry(ctx, kafkaMember(&m), now+int64(m.SessionTimeoutMs)); err != nil {
		return kg, err
	}
	kg.ProtocolType = msg.ProtocolType
	formed := kg.State == types.KAFKA_GROUP_STATE_STABLE || kg.State == types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE
	if formed && !changed && m.MemberId != kg.Leader {
		// A follower's retried join: its generation stands.
		if err := k.setKafkaMember(ctx, m); err != nil {
			return kg, err
		}
		return kg, k.KafkaGroups.Set(ctx, kg.GroupId, kg)
	}
	if kg.State != types.KAFKA_GROUP_STATE_PREPARING_REBALANCE {
		if err := k.startKafkaRebalance(ctx, &kg, append(others, m), now, kg.State == types.KAFKA_GROUP_STATE_EMPTY); err != nil {
			return kg, err
		}
	} else if m.RebalanceTimeoutMs > 0 && now+int64(m.RebalanceTimeoutMs) > kg.DeadlineMs && !found {
		// A member joining a forming generation may extend its deadline to its own timeout.
		if err := k.setRebalanceDeadline(ctx, &kg, now+int64(m.RebalanceTimeoutMs)); err != nil {
			return kg, err
		}
	}
	m.Joined = true
	if err := k.setKafkaMember(ctx, m); err != nil {
		return kg, err
	}
	if err := k.maybeCompleteKafkaRebalance(ctx, &kg, now, "join"); err != nil {
		return kg, err
	}
	return kg, k.KafkaGroups.Set(ctx, kg.GroupId, kg)
}

// startKafkaRebalance opens a join phase: every member must join again before the deadline
// (the longest rebalance timeout) or is removed; a group that was empty waits the initial
// delay so members starting together form one generation.
func (k Keeper) startKafkaRebalance(ctx context.Context, kg *types.KafkaGroup, members []types.KafkaMember, now int64, fresh bool) error {
	kg.State = types.KAFKA_GROUP_STATE_PREPARING_REBALANCE
	kg.NotBeforeMs = now
	if fresh {
		kg.NotBeforeMs = now + types.KafkaInitialRebalanceDelayMs
	}
	longest := int64(0)
	for _, m := range members {
		longest = max(longest, int64(m.RebalanceTimeoutMs))
		if m.Joined {
			m.Joined = false
			if err := k.setKafkaMember(ctx, m); err != nil {
				return err
			}
		}
	}
	if err := k.KafkaRebalanceDue.Set(ctx, collections.Join(kg.NotBeforeMs, kg.GroupId), true); err != nil {
		return err
	}
	return k.setRebalanceDeadline(ctx, kg, max(now+longest, kg.NotBeforeMs))
}

// setRebalanceDeadline moves the join phase's deadline; a group's only due entries are those of
// its current phase (not before, deadline), so a deleted group leaves none behind.
func (k Keeper) setRebalanceDeadline(ctx context.Context, kg *types.KafkaGroup, at int64) error {
	if kg.DeadlineMs != 0 && kg.DeadlineMs != kg.NotBeforeMs && kg.DeadlineMs != at {
		if err := k.KafkaRebalanceDue.Remove(ctx, collections.Join(kg.DeadlineMs, kg.GroupId)); err != nil {
			return err
		}
	}
	kg.DeadlineMs = at
	return k.KafkaRebalanceDue.Set(ctx, collections.Join(at, kg.GroupId), true)
}

// maybeCompleteKafkaRebalance forms the next generation once every member has joined (and a
// new group's initial delay has passed) or the deadline has come: members that did not join
// are removed, the protocol is chosen, the leader kept or the first member made leader.
func (k Keeper) maybeCompleteKafkaRebalance(ctx context.Context, kg *types.KafkaGroup, now int64, reason string) error {
	if kg.State != types.KAFKA_GROUP_STATE_PREPARING_REBALANCE {
		return nil
	}
	members, err := k.kafkaMembers(ctx, kg.GroupId)
	if err != nil {
		return err
	}
	all := true
	for _, m := range members {
		all = all && m.Joined
	}
	if !(all && now >= kg.NotBeforeMs) && now < kg.DeadlineMs {
		return nil
	}
	var joined []types.KafkaMember
	for _, m := range members {
		if !m.Joined {
			if err := k.removeMember(ctx, kafkaMember(&m)); err != nil {
				return err
			}
			continue
		}
		joined = append(joined, m)
	}
	return k.formKafkaGeneration(ctx, kg, joined, reason)
}

// formKafkaGeneration bumps the generation over members (all joined): CompletingRebalance
// awaiting the leader's assignment, or Empty with no members.
func (k Keeper) formKafkaGeneration(ctx context.Context, kg *types.KafkaGroup, members []types.KafkaMember, reason string) error {
	kg.Generation++
	if err := k.removeRebalanceDue(ctx, *kg); err != nil {
		return err
	}
	kg.NotBeforeMs, kg.DeadlineMs = 0, 0
	ids := make([]string, len(members))
	if len(members) == 0 {
		kg.State, kg.Protocol, kg.Leader = types.KAFKA_GROUP_STATE_EMPTY, "", ""
	} else {
		kg.State = types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE
		kg.Protocol = chooseProtocol(members)
		leader := members[0].MemberId
		for i, m := range members {
			ids[i] = m.MemberId
			if m.MemberId == kg.Leader {
				leader = m.MemberId
			}
			if m.Assignment != nil {
				m.Assignment = nil
				if err := k.setKafkaMember(ctx, m); err != nil {
					return err
				}
			}
		}
		kg.Leader = leader
	}
	g, err := k.GetGroup(ctx, kg.GroupId)
	if err != nil {
		return err
	}
	g.Generation = uint64(kg.Generation)
	if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
		return err
	}
	if err := k.KafkaGroups.Set(ctx, kg.GroupId, *kg); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventGroupRebalanced{
		GroupId: kg.GroupId, Generation: g.Generation, Members: ids, Reason: reason,
	})
}

// removeRebalanceDue removes the due entries of kg's join phase, if one is open.
func (k Keeper) removeRebalanceDue(ctx context.Context, kg types.KafkaGroup) error {
	for _, at := range []int64{kg.NotBeforeMs, kg.DeadlineMs} {
		if at == 0 {
			continue
		}
		if err := k.KafkaRebalanceDue.Remove(ctx, collections.Join(at, kg.GroupId)); err != nil {
			return err
		}
	}
	return nil
}

// dropKafkaGroup removes a Kafka group's protocol state: its members with their expiry
// entries (callers have made sure there are none, or are removing them on purpose), its join
// phase's due entries and the group state itself. Nothing is left that names the group.
func (k Keeper) dropKafkaGroup(ctx context.Context, group string) error {
	kg, err := k.KafkaGroups.Get(ctx, group)
	if isNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	members, err := k.kafkaMembers(ctx, group)
	if err != nil {
		return err
	}
	for _, m := range members {
		if err := k.removeMember(ctx, kafkaMember(&m)); err != nil {
			return err
		}
	}
	if err := k.removeRebalanceDue(ctx, kg); err != nil {
		return err
	}
	return k.KafkaGroups.Remove(ctx, group)
}

// commonProtocols lists the protocols every member supports, in the first member's order.
func commonProtocols(members []types.KafkaMember) []string {
	if len(members) == 0 {
		return nil
	}
	var out []string
	for _, p := range members[0].Protocols {
		all := true
		for _, m := range members[1:] {
			all = all && slices.ContainsFunc(m.Protocols, func(q types.KafkaProtocol) bool { return q.Name == p.Name })
		}
		if all {
			out = append(out, p.Name)
		}
	}
	return out
}

// chooseProtocol is Kafka's vote: each member votes for its most preferred protocol among those
// every member supports; most votes wins, ties going to the first member's preference.
func chooseProtocol(members []types.KafkaMember) string {
	candidates := commonProtocols(members)
	votes := make([]int, len(candidates))
	for _, m := range members {
		for _, p := range m.Protocols {
			if i := slices.Index(candidates, p.Name); i >= 0 {
				votes[i]++
				break
			}
		}
	}
	best := 0
	for i := range candidates {
		if votes[i] > votes[best] {
			best = i
		}
	}
	if len(candidates) == 0 {
		return ""
	}
	return candidates[best]
}

func sameProtocols(a, b []types.KafkaProtocol) bool {
	return slices.EqualFunc(a, b, func(x, y types.KafkaProtocol) bool {
		return x.Name == y.Name && bytes.Equal(x.Metadata, y.Metadata)
	})
}

// KafkaSyncGroup stores the leader's assignments for its generation and makes the group
// stable. A follower's SyncGroup needs no transaction: its gateway reads the assignment.
func (k Keeper) KafkaSyncGroup(ctx context.Context, msg *types.MsgKafkaSyncGroup) (types.KafkaGroup, error) {
	if err := k.validAddress(msg.Owner, "owner"); err != nil {
		return types.KafkaGroup{}, err
	}
	if err := msg.Validate(); err != nil {
		return types.KafkaGroup{}, err
	}
	kg, members, err := k.KafkaGroupState(ctx, msg.GroupId)
	if err != nil {
		return kg, err
	}
	if _, err := k.ownedKafkaMember(ctx, msg.GroupId, msg.MemberId, msg.Owner); err != nil {
		return kg, err
	}
	if msg.Generation != kg.Generation {
		return kg, errorsmod.Wrapf(types.ErrIllegalGeneration, "group %q is at generation %d, the sync carries %d", kg.GroupId, kg.Generation, msg.Generation)
	}
	if kg.State == types.KAFKA_GROUP_STATE_PREPARING_REBALANCE {
		return kg, errorsmod.Wrapf(types.ErrRebalanceInProgress, "group %q is forming generation %d; join again", kg.GroupId, kg.Generation+1)
	}
	if kg.State != types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE || msg.MemberId != kg.Leader {
		return kg, nil
	}
	given := map[string][]byte{}
	for _, a := range msg.Assignments {
		given[a.MemberId] = a.Assignment
	}
	for _, m := range members {
		// Members the leader left out get an empty assignment, ids it named that are not members
		// are ignored, as Kafka's coordinator does.
		m.Assignment = given[m.MemberId]
		if m.Assignment == nil {
			m.Assignment = []byte{}
		}
		if err := k.setKafkaMember(ctx, m); err != nil {
			return kg, err
		}
	}
	kg.State = types.KAFKA_GROUP_STATE_STABLE
	return kg, k.KafkaGroups.Set(ctx, kg.GroupId, kg)
}

// KafkaHeartbeat extends the sessions of the owner's members.
func (k Keeper) KafkaHeartbeat(ctx context.Context, msg *types.MsgKafkaHeartbeat) (types.KafkaGroup, error) {
	if err := k.validAddress(msg.Owner, "owner"); err != nil {
		return types.KafkaGroup{}, err
	}
	if err := types.ValidateKafkaMembers(msg.GroupId, msg.MemberIds); err != nil {
		return types.KafkaGroup{}, err
	}
	g, err := k.GetGroup(ctx, msg.GroupId)
	if err != nil {
		return types.KafkaGroup{}, err
	}
	// A member the policy no longer admits cannot keep the group busy.
	if err := mayJoin(g, msg.Owner); err != nil {
		return types.KafkaGroup{}, err
	}
	if g.Kind == types.GROUP_KIND_CONSUMER {
		return types.KafkaGroup{GroupId: g.GroupId}, k.renewConsumerMembers(ctx, g, msg)
	}
	if g.Kind == types.GROUP_KIND_SHARE {
		return types.KafkaGroup{GroupId: g.GroupId}, k.renewShareMembers(ctx, g, msg)
	}
	kg, err := k.KafkaGroups.Get(ctx, msg.GroupId)
	if err != nil {
		return kg, errorsmod.Wrapf(types.ErrUnknownGroup, "no Kafka group %q", msg.GroupId)
	}
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	for _, id := range msg.MemberIds {
		m, err := k.ownedKafkaMember(ctx, msg.GroupId, id, msg.Owner)
		if err != nil {
			return kg, err
		}
		if err := k.setExpiry(ctx, kafkaMember(&m), now+int64(m.SessionTimeoutMs)); err != nil {
			return kg, err
		}
		if err := k.setKafkaMember(ctx, m); err != nil {
			return kg, err
		}
	}
	return kg, nil
}

// KafkaLeaveGroup removes the owner's members and rebalances the rest.
func (k Keeper) KafkaLeaveGroup(ctx context.Context, msg *types.MsgKafkaLeaveGroup) error {
	if err := k.validAddress(msg.Owner, "owner"); err != nil {
		return err
	}
	if err := types.ValidateKafkaMembers(msg.GroupId, msg.MemberIds); err != nil {
		return err
	}
	kg, err := k.KafkaGroups.Get(ctx, msg.GroupId)
	if err != nil {
		return errorsmod.Wrapf(types.ErrUnknownGroup, "no Kafka group %q", msg.GroupId)
	}
	for _, id := range msg.MemberIds {
		m, err := k.ownedKafkaMember(ctx, msg.GroupId, id, msg.Owner)
		if err != nil {
			return err
		}
		if err := k.removeMember(ctx, kafkaMember(&m)); err != nil {
			return err
		}
	}
	return k.kafkaMembersGone(ctx, &kg, "leave")
}

// kafkaMembersGone rebalances a group some of whose members left or expired.
func (k Keeper) kafkaMembersGone(ctx context.Context, kg *types.KafkaGroup, reason string) error {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	members, err := k.kafkaMembers(ctx, kg.GroupId)
	if err != nil {
		return err
	}
	switch {
	case len(members) == 0 && kg.State != types.KAFKA_GROUP_STATE_EMPTY:
		return k.formKafkaGeneration(ctx, kg, nil, reason)
	case kg.State == types.KAFKA_GROUP_STATE_PREPARING_REBALANCE:
		// The member that left may have been the last one the phase waited for.
		if err := k.maybeCompleteKafkaRebalance(ctx, kg, now, reason); err != nil {
			return err
		}
	case len(members) > 0:
		if err := k.startKafkaRebalance(ctx, kg, members, now, false); err != nil {
			return err
		}
	}
	return k.KafkaGroups.Set(ctx, kg.GroupId, *kg)
}

// removeKafkaAccount is RemoveGroupMember for a Kafka group: a Kafka member is known by the
// account that joined it, so every member msg.Member's account joined goes (a consumer that
// crashed, say, so the admin need not wait for its session to end to delete the group).
func (k Keeper) removeKafkaAccount(ctx context.Context, g types.Group, msg *types.MsgRemoveGroupMember) error {
	kg, err := k.KafkaGroups.Get(ctx, g.GroupId)
	if err != nil && !isNotFound(err) {
		return err
	}
	members, err := k.kafkaMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	removed := 0
	for _, m := range members {
		if m.Owner != msg.Member {
			continue
		}
		if err := k.removeMember(ctx, kafkaMember(&m)); err != nil {
			return err
		}
		removed++
	}
	if removed == 0 {
		return errorsmod.Wrapf(types.ErrUnknownMember, "%s has no Kafka member in group %q", msg.Member, g.GroupId)
	}
	if err := k.dropAllowed(ctx, &g, msg); err != nil {
		return err
	}
	if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
		return err
	}
	return k.kafkaMembersGone(ctx, &kg, "remove")
}

// CompleteKafkaRebalances forms the generations whose join phase is due (its initial delay or
// its deadline has passed) in the EndBlocker, within work units: each group costs its member
// count; the first due group is always taken.
func (k Keeper) CompleteKafkaRebalances(ctx context.Context, budget uint64) (uint64, error) {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	rng := new(collections.Range[collections.Pair[int64, string]]).EndExclusive(collections.Join(now+1, ""))
	var (
		due  []collections.Pair[int64, string]
		work uint64
	)
	err := k.KafkaRebalanceDue.Walk(ctx, rng, func(key collections.Pair[int64, string], _ bool) (bool, error) {
		n, err := k.countKafkaMembers(ctx, key.K2())
		if err != nil {
			return true, err
		}
		cost := 1 + n
		if len(due) > 0 && work+cost > budget {
			return true, nil
		}
		work += cost
		due = append(due, key)
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	for _, key := range due {
		// The entry goes whatever becomes of its group, and each group forms its generation
		// isolated: one that cannot is skipped (EventBlockWorkSkipped), not the block.
		if err := k.KafkaRebalanceDue.Remove(ctx, key); err != nil {
			return 0, err
		}
		done, err := k.attempt(ctx, "kafka_rebalance", key.K2(), func(ctx context.Context) error {
			kg, err := k.KafkaGroups.Get(ctx, key.K2())
			if isNotFound(err) {
				return nil // the group was deleted
			} else if err != nil {
				return err
			}
			if err := k.maybeCompleteKafkaRebalance(ctx, &kg, now, "join"); err != nil {
				return err
			}
			return k.KafkaGroups.Set(ctx, kg.GroupId, kg)
		})
		if err != nil {
			return 0, err
		}
		if !done {
			if err := k.retryRebalance(ctx, key.K2(), now); err != nil {
				return 0, err
			}
		}
	}
	return work, nil
}

// KafkaRebalanceRetryMs is how long a join phase the EndBlocker had to skip waits before it is
// tried again: the group keeps a due entry (it would otherwise stay forming for ever) without
// costing every block.
const KafkaRebalanceRetryMs = 60_000

// retryRebalance moves a skipped join phase's deadline to a retry.
func (k Keeper) retryRebalance(ctx context.Context, group string, now int64) error {
	kg, err := k.KafkaGroups.Get(ctx, group)
	if isNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if kg.State != types.KAFKA_GROUP_STATE_PREPARING_REBALANCE {
		return nil
	}
	if err := k.setRebalanceDeadline(ctx, &kg, now+KafkaRebalanceRetryMs); err != nil {
		return err
	}
	return k.KafkaGroups.Set(ctx, group, kg)
}

func (k Keeper) countKafkaMembers(ctx context.Context, group string) (uint64, error) {
	return countMembersOf(ctx, k.KafkaMembers, group)
}

// commitAsKafkaMember checks a commit by a Kafka member: owned by the signer, at the group's
// Kafka generation. The leader's assignment is opaque to the chain, so, as in Kafka, any
// member of the generation may commit any partition.
func (k Keeper) commitAsKafkaMember(ctx context.Context, msg *types.MsgCommitOffsets) error {
	kg, err := k.KafkaGroups.Get(ctx, msg.GroupId)
	if isNotFound(err) {
		return errorsmod.Wrapf(types.ErrUnknownGroup, "no Kafka group %q", msg.GroupId)
	} else if err != nil {
		return err
	}
	m, err := k.ownedKafkaMember(ctx, msg.GroupId, msg.KafkaMemberId, msg.Member)
	if err != nil {
		return err
	}
	// As in Kafka, a commit at the current generation is taken while the next one forms, so a
	// member can commit what it read before it rejoins.
	if msg.Generation != uint64(kg.Generation) {
		return errorsmod.Wrapf(types.ErrIllegalGeneration, "group %q is at generation %d, the commit carries %d", kg.GroupId, kg.Generation, msg.Generation)
	}
	// A commit is a liveness signal, as a heartbeat.
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	if err := k.setExpiry(ctx, kafkaMember(&m), now+int64(m.SessionTimeoutMs)); err != nil {
		return err
	}
	return k.setKafkaMember(ctx, m)
}
