package keeper

import (
	"context"
	"sort"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Consumer groups come in two kinds (Group.kind, groupKind): native groups (groups_native.go:
// members join with MsgJoinGroup and the chain assigns) and Kafka-protocol groups
// (groups_kafka.go: Kafka clients through a gateway, their leader assigns). This file holds
// what both share and dispatches on the kind: the Group record and its join policy, its
// administration (create, policy, admin, member removal, delete), the member index's expiry
// entries and the EndBlocker's expiry.

// GetGroup returns a group or ErrUnknownGroup.
func (k Keeper) GetGroup(ctx context.Context, id string) (types.Group, error) {
	g, err := k.Groups.Get(ctx, id)
	if errorsmod.IsOf(err, collections.ErrNotFound) {
		return g, errorsmod.Wrapf(types.ErrUnknownGroup, "group %q does not exist", id)
	}
	return g, err
}

// memberRef is a member of either kind as the shared member index sees it: its kind says which
// map holds it (Members or KafkaMembers, both keyed by (group, id)); the expiry index
// MemberExpiry holds one entry (expires at, group, id) for members of both kinds.
type memberRef struct {
	kind      types.GroupKind
	group, id string // id: a native member's address, a Kafka member's member id
	expiresAt *int64 // the member's ExpiresAtMs, kept in step with its index entry
}

func nativeMember(m *types.Member) memberRef {
	return memberRef{types.GROUP_KIND_NATIVE, m.GroupId, m.Member, &m.ExpiresAtMs}
}

func kafkaMember(m *types.KafkaMember) memberRef {
	return memberRef{types.GROUP_KIND_KAFKA, m.GroupId, m.MemberId, &m.ExpiresAtMs}
}

// setExpiry moves a member's expiry index entry to expiresAt (a new member has none to
// remove); the caller stores the member.
func (k Keeper) setExpiry(ctx context.Context, m memberRef, expiresAt int64) error {
	if err := k.MemberExpiry.Remove(ctx, collections.Join3(*m.expiresAt, m.group, m.id)); err != nil {
		return err
	}
	*m.expiresAt = expiresAt
	return k.MemberExpiry.Set(ctx, collections.Join3(expiresAt, m.group, m.id), true)
}

// removeMember removes a member, with its expiry index entry, from its kind's map.
func (k Keeper) removeMember(ctx context.Context, m memberRef) error {
	if err := k.MemberExpiry.Remove(ctx, collections.Join3(*m.expiresAt, m.group, m.id)); err != nil {
		return err
	}
	switch m.kind {
	case types.GROUP_KIND_KAFKA:
		return k.KafkaMembers.Remove(ctx, collections.Join(m.group, m.id))
	case types.GROUP_KIND_CONSUMER:
		return k.ConsumerMembers.Remove(ctx, collections.Join(m.group, m.id))
	case types.GROUP_KIND_SHARE:
		return k.ShareMembers.Remove(ctx, collections.Join(m.group, m.id))
	}
	return k.Members.Remove(ctx, collections.Join(m.group, m.id))
}

// newGroup fills a group's defaults (RANGE, 30 s).
func newGroup(id, admin string, policy types.JoinPolicy, allowed []string, assignor types.Assignor, sessionTimeoutMs, height int64) types.Group {
	g := types.Group{GroupId: id, Admin: admin, Assignor: assignor, SessionTimeoutMs: sessionTimeoutMs, CreatedHeight: height,
		JoinPolicy: policy, AllowedMembers: allowed}
	if g.Assignor == types.ASSIGNOR_UNSPECIFIED {
		g.Assignor = types.ASSIGNOR_RANGE
	}
	if g.SessionTimeoutMs == 0 {
		g.SessionTimeoutMs = types.DefaultSessionTimeoutMs
	}
	return g
}

// createGroup is the one place a group comes into being (MsgCreateGroup or a first join), so a
// creation charge has one home. The caller has checked everything; g gets its deposit, so a
// caller that stores g again (a first join's rebalance) keeps the claim to the refund.
func (k Keeper) createGroup(ctx context.Context, g *types.Group, signer string) error {
	// The creator escrows group_deposit (deposits.go), so groups nobody deletes are paid for.
	params, err := k.Params.Get(ctx)
	if err != nil {
		return err
	}
	if g.Deposit, err = k.escrow(ctx, signer, params.GroupDepositFor()); err != nil {
		return err
	}
	if err := k.Groups.Set(ctx, g.GroupId, *g); err != nil {
		return err
	}
	return k.emitGroupUpdated(ctx, *g, signer, "create")
}

func (k Keeper) emitGroupUpdated(ctx context.Context, g types.Group, signer, reason string) error {
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventGroupUpdated{
		GroupId: g.GroupId, Authority: signer, Reason: reason, Admin: g.Admin, JoinPolicy: g.JoinPolicy, AllowedMembers: g.AllowedMembers,
	})
}

// mayJoin applies the group's join policy; the admin may always join. Unset admits only the admin.
func mayJoin(g types.Group, member string) error {
	if member == g.Admin {
		return nil
	}
	switch g.JoinPolicy {
	case types.JOIN_POLICY_ANYONE:
		return nil
	case types.JOIN_POLICY_ALLOWLIST:
		for _, a := range g.AllowedMembers {
			if a == member {
				return nil
			}
		}
		return errorsmod.Wrapf(types.ErrGroupAuthorization, "%s is not on the allowlist of group %q (admin %s)", member, g.GroupId, g.Admin)
	}
	return errorsmod.Wrapf(types.ErrGroupAuthorization, "group %q admits only its admin %s; the admin may open it or allowlist %s (tx topics update-group-policy)", g.GroupId, g.Admin, member)
}

func (k Keeper) checkGroupAdmin(g types.Group, signer string) error {
	if signer != g.Admin && signer != k.authority {
		return errorsmod.Wrapf(types.ErrGroupAuthorization, "%s may not administer group %q (admin %s)", signer, g.GroupId, g.Admin)
	}
	return nil
}

// requireEmpty refuses to go on while the group has members of either kind: native ones and
// Kafka clients alike (a Kafka consumer that crashed stays a member until its session ends).
func (k Keeper) requireEmpty(ctx context.Context, g types.Group) error {
	native, err := k.countMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	kafka, err := k.countKafkaMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	consumers, err := k.countConsumerMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	shares, err := k.countShareMembers(ctx, g.GroupId)
	if err != nil {
		return err
	}
	kafka += consumers + shares
	if native > 0 {
		return errorsmod.Wrapf(types.ErrGroupNotEmpty, "group %q has %d active members; they must leave or expire first", g.GroupId, native)
	}
	if kafka > 0 {
		return errorsmod.Wrapf(types.ErrGroupNotEmpty, "group %q has %d active Kafka members; they must leave or their sessions expire first (or the admin removes their accounts: tx topics remove-group-member)", g.GroupId, kafka)
	}
	return nil
}

// groupKind is g's kind, which every path that reads or removes members dispatches on: a group's
// members are all of its kind (claimKind keeps them so; the v2 migration made state from before
// kinds so). The first join stores the kind. Until then it is UNSPECIFIED: the group holds no
// member of either kind and no Kafka protocol state, the first member of either kind may claim
// it, and paths that look members up in it use the native maps and find none, as in a native
// group without them. A group a genesis file stored without a kind is known by what it holds,
// native members first, as the migration reads it.
func (k Keeper) groupKind(ctx context.Context, g types.Group) (types.GroupKind, error) {
	if g.Kind != types.GROUP_KIND_UNSPECIFIED {
		return g.Kind, nil
	}
	// Native members first: a release before group kinds could leave an empty Kafka group's
	// state beside a group that has native members since.
	if n, err := k.countMembers(ctx, g.GroupId); err != nil || n > 0 {
		return types.GROUP_KIND_NATIVE, err
	}
	if has, err := k.KafkaGroups.Has(ctx, g.GroupId); err != nil || has {
		return types.GROUP_KIND_KAFKA, err
	}
	if has, err := k.ConsumerGroups.Has(ctx, g.GroupId); err != nil || has {
		return types.GROUP_KIND_CONSUMER, err
	}
	if has, err := k.ShareGroups.Has(ctx, g.GroupId); err != nil || has {
		return types.GROUP_KIND_SHARE, err
	}
	return types.GROUP_KIND_UNSPECIFIED, nil
}

// claimKind makes g a group of kind for a member about to join. A group with members keeps its
// kind (a member of another kind is refused); an empty group may pass between the two Kafka
// kinds (classic and KIP-848 consumer: a client upgrading its group protocol), and an empty
// native group may become either (a Kafka client takes over a group native consumers used),
// but a Kafka group never becomes native: a gateway's simple commits would otherwise join it
// natively and lock its Kafka consumers out for a session. The caller stores g and drops the
// state the former kind left.
func (k Keeper) claimKind(ctx context.Context, g *types.Group, kind types.GroupKind) error {
	cur, err := k.groupKind(ctx, *g)
	if err != nil {
		return err
	}
	switch {
	case cur == kind || cur == types.GROUP_KIND_UNSPECIFIED:
	case kind == types.GROUP_KIND_NATIVE:
		return errorsmod.Wrapf(types.ErrInconsistentGroupProtocol, "group %q is run by Kafka clients' group protocol (through a Kafka gateway)", g.GroupId)
	default:
		if err := k.requireEmpty(ctx, *g); err != nil {
			return errorsmod.Wrapf(types.ErrInconsistentGroupProtocol, "group %q has members of another group protocol (%s); they must leave first", g.GroupId, cur)
		}
	}
	g.Kind = kind
	return nil
}

// dropProtocolState removes what the Kafka kinds of group keep beside the Group record (classic
// protocol state, consumer and share group state, with their members and index entries),
// except keep's: a group that passes from one kind to another leaves nothing of the former.
func (k Keeper) dropProtocolState(ctx context.Context, group string, keep types.GroupKind) error {
	for _, d := range []struct {
		kind types.GroupKind
		drop func(context.Context, string) error
	}{{types.GROUP_KIND_KAFKA, k.dropKafkaGroup}, {types.GROUP_KIND_CONSUMER, k.dropConsumerGroup}, {types.GROUP_KIND_SHARE, k.dropShareGroup}} {
		if d.kind == keep {
			continue
		}
		if err := d.drop(ctx, group); err != nil {
			return err
		}
	}
	return nil
}

// DeleteGroup deletes an empty group (no member of either kind) with everything it holds:
// committed offsets and, for a Kafka group, its protocol state, so nothing is left for the
// EndBlocker to trip over.
func (k Keeper) DeleteGroup(ctx context.Context, signer, group string) error {
	g, err := k.adminGroup(ctx, signer, group)
	if err != nil {
		return err
	}
	if err := k.requireEmpty(ctx, g); err != nil {
		return err
	}
	if err := k.refundTo(ctx, g.Admin, g.Deposit); err != nil {
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
	// An empty Kafka group still has its protocol state (generation, pending join phase).
	if err := k.dropProtocolState(ctx, group, types.GROUP_KIND_UNSPECIFIED); err != nil {
		return err
	}
	if err := k.Groups.Remove(ctx, group); err != nil {
		return err
	}
	return sdk.UnwrapSDKContext(ctx).EventManager().EmitTypedEvent(&types.EventGroupDeleted{GroupId: group, Authority: signer})
}

// ExpireMembers removes members whose session ended by the block time and rebalances each
// affected group once. The work is bounded by cost, not count: each expiry costs 1 and each
// group's rebalance members x subscribed partitions, within max_expiry_work_per_block (and at most
// max_expiries_per_block members); what does not fit waits for the next block. The first due
// member is always taken, so a group costlier than the budget still expires, one per block.
func (k Keeper) ExpireMembers(ctx context.Context) error {
	_, err := k.expireMembers(ctx)
	return err
}

// expireMembers is ExpireMembers returning the work units it spent.
func (k Keeper) expireMembers(ctx context.Context) (uint64, error) {
	params, err := k.Params.Get(ctx)
	if err != nil {
		return 0, err
	}
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	rng := new(collections.Range[collections.Triple[int64, string, string]]).
		EndExclusive(collections.Join3(now+1, "", ""))
	var (
		due    []collections.Triple[int64, string, string]
		groups []string
		work   uint64
	)
	err = k.MemberExpiry.Walk(ctx, rng, func(key collections.Triple[int64, string, string], _ bool) (bool, error) {
		cost := uint64(1)
		if !containsString(groups, key.K2()) {
			c, err := k.rebalanceCost(ctx, key.K2())
			if err != nil {
				return true, err
			}
			cc, err := k.consumerRebalanceCost(ctx, key.K2())
			if err != nil {
				return true, err
			}
			sc, err := k.shareRebalanceCost(ctx, key.K2())
			if err != nil {
				return true, err
			}
			cost += c + cc + sc
		}
		if len(due) > 0 && work+cost > params.MaxExpiryWorkPerBlock {
			return true, nil
		}
		work += cost
		due = append(due, key)
		if !containsString(groups, key.K2()) {
			groups = append(groups, key.K2())
		}
		return uint32(len(due)) >= params.MaxExpiriesPerBlock, nil
	})
	if err != nil {
		return 0, err
	}
	// Each due entry goes first, and its member with it (an entry that no longer matches its
	// member, or whose member or group is gone, is never read again): these writes are the
	// module's own bookkeeping. Then each group's rebalance runs isolated: a group that cannot
	// be rebalanced is skipped (EventBlockWorkSkipped), not the block, and its expired members
	// are gone all the same, so it can still be deleted.
	byGroup := map[string][]collections.Triple[int64, string, string]{}
	for _, key := range due {
		if err := k.MemberExpiry.Remove(ctx, key); err != nil {
			return 0, err
		}
		byGroup[key.K2()] = append(byGroup[key.K2()], key)
	}
	sort.Strings(groups)
	for _, id := range groups {
		kind, expired, err := k.removeExpired(ctx, id, byGroup[id])
		if err != nil {
			return 0, err
		}
		if !expired {
			continue
		}
		if kind != types.GROUP_KIND_NATIVE {
			work++ // the group's rebalance; its members were counted as they expired
		}
		if err := k.isolate(ctx, "expire", id, func(ctx context.Context) error {
			return k.rebalanceExpired(ctx, id, kind)
		}); err != nil {
			return 0, err
		}
	}
	return work, nil
}

// removeExpired removes the members of group whose due expiry entries are keys (entries the
// member's later sessions made stale are ignored), looking them up as the group's kind says, and
// says whether any went. Members whose group is gone (state a release before group kinds left
// behind) are removed with what is left of the group.
func (k Keeper) removeExpired(ctx context.Context, group string, keys []collections.Triple[int64, string, string]) (types.GroupKind, bool, error) {
	g, err := k.Groups.Get(ctx, group)
	if isNotFound(err) {
		return types.GROUP_KIND_UNSPECIFIED, false, k.expireOrphans(ctx, group, keys)
	} else if err != nil {
		return types.GROUP_KIND_UNSPECIFIED, false, err
	}
	kind, err := k.groupKind(ctx, g)
	if err != nil {
		return kind, false, err
	}
	expired, err := k.expireDue(ctx, kind, keys)
	return kind, expired, err
}

// expireDue removes the members of kind whose current expiry entries are keys and says whether
// any went.
func (k Keeper) expireDue(ctx context.Context, kind types.GroupKind, keys []collections.Triple[int64, string, string]) (bool, error) {
	expired := false
	for _, key := range keys {
		m, err := k.lookupMember(ctx, kind, key.K2(), key.K3())
		if isNotFound(err) {
			continue // gone already
		} else if err != nil {
			return false, err
		}
		if *m.expiresAt != key.K1() {
			continue // stale entry: the member's session was extended
		}
		if err := k.removeMember(ctx, m); err != nil {
			return false, err
		}
		expired = true
	}
	return expired, nil
}

// lookupMember reads a member of a group of kind from that kind's map; an UNSPECIFIED group has
// no members, and its lookups miss in the native map as a native group's do.
func (k Keeper) lookupMember(ctx context.Context, kind types.GroupKind, group, id string) (memberRef, error) {
	switch kind {
	case types.GROUP_KIND_KAFKA:
		m, err := k.KafkaMembers.Get(ctx, collections.Join(group, id))
		return kafkaMember(&m), err
	case types.GROUP_KIND_CONSUMER:
		m, err := k.ConsumerMembers.Get(ctx, collections.Join(group, id))
		return consumerMember(&m), err
	case types.GROUP_KIND_SHARE:
		m, err := k.ShareMembers.Get(ctx, collections.Join(group, id))
		return shareMemberRef(&m), err
	}
	m, err := k.Members.Get(ctx, collections.Join(group, id))
	return nativeMember(&m), err
}

// rebalanceExpired rebalances, as its kind does, a group that lost members to expiry.
func (k Keeper) rebalanceExpired(ctx context.Context, group string, kind types.GroupKind) error {
	if kind == types.GROUP_KIND_CONSUMER {
		return k.consumerMembersGone(ctx, group, "expire")
	}
	if kind == types.GROUP_KIND_SHARE {
		return k.shareMembersGone(ctx, group, "expire")
	}
	if kind == types.GROUP_KIND_KAFKA {
		kg, err := k.KafkaGroups.Get(ctx, group)
		if isNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		return k.kafkaMembersGone(ctx, &kg, "expire")
	}
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return err
	}
	return k.rebalance(ctx, &g, "expire")
}

// expireOrphans removes the members the due keys name of a group that no longer exists, and
// its Kafka protocol state once no member is left. The group's kind went with its record; what
// it left says which it was: only a Kafka group leaves Kafka protocol state (a release before
// group kinds deleted Kafka groups with their members, but no group with native members).
func (k Keeper) expireOrphans(ctx context.Context, group string, keys []collections.Triple[int64, string, string]) error {
	kind := types.GROUP_KIND_NATIVE
	if has, err := k.KafkaGroups.Has(ctx, group); err != nil {
		return err
	} else if has {
		kind = types.GROUP_KIND_KAFKA
	}
	if has, err := k.ConsumerGroups.Has(ctx, group); err != nil {
		return err
	} else if has {
		kind = types.GROUP_KIND_CONSUMER
	}
	if has, err := k.ShareGroups.Has(ctx, group); err != nil {
		return err
	} else if has {
		kind = types.GROUP_KIND_SHARE
	}
	if _, err := k.expireDue(ctx, kind, keys); err != nil {
		return err
	}
	if n, err := k.countConsumerMembers(ctx, group); err != nil || n > 0 {
		return err
	}
	if err := k.ConsumerGroups.Remove(ctx, group); err != nil {
		return err
	}
	if n, err := k.countShareMembers(ctx, group); err != nil || n > 0 {
		return err
	}
	if err := k.dropShareGroup(ctx, group); err != nil {
		return err
	}
	if n, err := k.countKafkaMembers(ctx, group); err != nil || n > 0 {
		return err
	}
	return k.dropKafkaGroup(ctx, group)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (k Keeper) validJoinPolicy(policy types.JoinPolicy, allowed []string) error {
	return types.ValidateJoinPolicy(policy, allowed, func(a string) error { return k.validAddress(a, "allowed member") })
}

// CreateGroup creates a group administered by the signer before anyone joins it, with its join
// policy, so no other account can squat the id or slip in first.
func (k Keeper) CreateGroup(ctx context.Context, msg *types.MsgCreateGroup) error {
	if err := k.validAddress(msg.Admin, "admin"); err != nil {
		return err
	}
	if err := types.ValidateGroupID(msg.GroupId); err != nil {
		return err
	}
	if err := k.validJoinPolicy(msg.JoinPolicy, msg.AllowedMembers); err != nil {
		return err
	}
	if _, ok := types.Assignor_name[int32(msg.Assignor)]; !ok {
		return errorsmod.Wrapf(types.ErrInvalidRequest, "unknown assignor %d", msg.Assignor)
	}
	if msg.SessionTimeoutMs != 0 && (msg.SessionTimeoutMs < types.MinSessionTimeoutMs || msg.SessionTimeoutMs > types.MaxSessionTimeoutMs) {
		return errorsmod.Wrapf(types.ErrInvalidSessionTimeout, "%d ms is outside [%d, %d]", msg.SessionTimeoutMs, types.MinSessionTimeoutMs, types.MaxSessionTimeoutMs)
	}
	has, err := k.Groups.Has(ctx, msg.GroupId)
	if err != nil {
		return err
	}
	if has {
		return errorsmod.Wrapf(types.ErrInvalidRequest, "group %q already exists", msg.GroupId)
	}
	g := newGroup(msg.GroupId, msg.Admin, msg.JoinPolicy, msg.AllowedMembers, msg.Assignor, msg.SessionTimeoutMs, sdk.UnwrapSDKContext(ctx).BlockHeight())
	return k.createGroup(ctx, &g, msg.Admin)
}

// adminGroup loads a group for an administrative change by signer (its admin or the authority).
func (k Keeper) adminGroup(ctx context.Context, signer, group string) (types.Group, error) {
	if err := k.validAddress(signer, "authority"); err != nil {
		return types.Group{}, err
	}
	if err := types.ValidateGroupID(group); err != nil {
		return types.Group{}, err
	}
	g, err := k.GetGroup(ctx, group)
	if err != nil {
		return g, err
	}
	return g, k.checkGroupAdmin(g, signer)
}

// UpdateGroupPolicy replaces who may join. Members stay; a member the new policy excludes can
// no longer heartbeat or commit, so it expires unless the admin removes it first.
func (k Keeper) UpdateGroupPolicy(ctx context.Context, msg *types.MsgUpdateGroupPolicy) error {
	g, err := k.adminGroup(ctx, msg.Authority, msg.GroupId)
	if err != nil {
		return err
	}
	if err := k.validJoinPolicy(msg.JoinPolicy, msg.AllowedMembers); err != nil {
		return err
	}
	g.JoinPolicy, g.AllowedMembers = msg.JoinPolicy, msg.AllowedMembers
	if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
		return err
	}
	return k.emitGroupUpdated(ctx, g, msg.Authority, "policy")
}

// RemoveGroupMember removes a member with its assignment and drops it from the allowlist (so it
// cannot rejoin unless the group admits anyone), then rebalances the rest.
func (k Keeper) RemoveGroupMember(ctx context.Context, msg *types.MsgRemoveGroupMember) error {
	g, err := k.adminGroup(ctx, msg.Authority, msg.GroupId)
	if err != nil {
		return err
	}
	if err := k.validAddress(msg.Member, "member"); err != nil {
		return err
	}
	kind, err := k.groupKind(ctx, g)
	if err != nil {
		return err
	}
	if kind == types.GROUP_KIND_KAFKA {
		return k.removeKafkaAccount(ctx, g, msg)
	}
	if kind == types.GROUP_KIND_CONSUMER {
		return k.removeConsumerAccount(ctx, g, msg)
	}
	if kind == types.GROUP_KIND_SHARE {
		return k.removeShareAccount(ctx, g, msg)
	}
	return k.removeNativeMember(ctx, g, msg) // an UNSPECIFIED group has none: ErrUnknownMember
}

// dropAllowed takes a removed member off the group's allowlist; the caller stores g.
func (k Keeper) dropAllowed(ctx context.Context, g *types.Group, msg *types.MsgRemoveGroupMember) error {
	kept := g.AllowedMembers[:0:0]
	for _, a := range g.AllowedMembers {
		if a != msg.Member {
			kept = append(kept, a)
		}
	}
	if len(kept) == len(g.AllowedMembers) {
		return nil
	}
	g.AllowedMembers = kept
	return k.emitGroupUpdated(ctx, *g, msg.Authority, "policy")
}

// TransferGroupAdmin makes new_admin the group's admin.
func (k Keeper) TransferGroupAdmin(ctx context.Context, msg *types.MsgTransferGroupAdmin) error {
	g, err := k.adminGroup(ctx, msg.Authority, msg.GroupId)
	if err != nil {
		return err
	}
	if err := k.validAddress(msg.NewAdmin, "new admin"); err != nil {
		return err
	}
	g.Admin = msg.NewAdmin
	if err := k.Groups.Set(ctx, g.GroupId, g); err != nil {
		return err
	}
	return k.emitGroupUpdated(ctx, g, msg.Authority, "admin")
}
