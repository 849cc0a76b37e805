package keeper

import (
	"context"
	"sort"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/types"
)

// The three Kafka kinds of group (classic, KIP-848 consumer, KIP-932 share) keep their members
// in maps keyed by (group, member id), each member with its owner account and its join order;
// these read them alike.

// kafkaKindMember is a member of a Kafka kind of group, by pointer (the getters gogoproto makes).
type kafkaKindMember[T any] interface {
	*T
	GetJoinOrder() uint64
	GetOwner() string
}

// membersOf returns a group's members in join order.
func membersOf[T any, P kafkaKindMember[T]](ctx context.Context, m collections.Map[collections.Pair[string, string], T], group string) ([]T, error) {
	var out []T
	err := m.Walk(ctx, collections.NewPrefixedPairRange[string, string](group), func(_ collections.Pair[string, string], v T) (bool, error) {
		out = append(out, v)
		return false, nil
	})
	sort.Slice(out, func(i, j int) bool { return P(&out[i]).GetJoinOrder() < P(&out[j]).GetJoinOrder() })
	return out, err
}

// countMembersOf counts a group's members.
func countMembersOf[T any](ctx context.Context, m collections.Map[collections.Pair[string, string], T], group string) (uint64, error) {
	var n uint64
	err := m.Walk(ctx, collections.NewPrefixedPairRange[string, string](group), func(collections.Pair[string, string], T) (bool, error) {
		n++
		return false, nil
	})
	return n, err
}

// ownedMemberOf returns a member that owner may act as: ErrUnknownMember, or ErrGroupAuthorization
// for another account's.
func ownedMemberOf[T any, P kafkaKindMember[T]](ctx context.Context, m collections.Map[collections.Pair[string, string], T], group, id, owner string) (T, error) {
	v, err := m.Get(ctx, collections.Join(group, id))
	if isNotFound(err) {
		return v, errorsmod.Wrapf(types.ErrUnknownMember, "%q is not a member of group %q", id, group)
	} else if err != nil {
		return v, err
	}
	if o := P(&v).GetOwner(); o != owner {
		return v, errorsmod.Wrapf(types.ErrGroupAuthorization, "member %q of group %q belongs to %s, not %s", id, group, o, owner)
	}
	return v, nil
}
