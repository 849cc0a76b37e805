package sim

import (
	"fmt"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// KIP-932 share groups: members join, change subscriptions and leave; they fetch, acquiring
// records and acknowledging (accept, release, reject, gap) what they hold, or let it lie until
// its lock runs out. Hostile accounts act as others' members, acknowledge records they do not
// hold and ask for more than any bound. They share the Kafka groups' ids, so kinds meet.

// shareMember is a share member account a owns (a hostile account: any member).
func (g *gen) shareMember(a int) (types.ShareMember, bool) {
	var pool []types.ShareMember
	for _, id := range sortedKeys(g.w.smembers) {
		for _, m := range g.w.smembers[id] {
			if m.Owner == g.addr(a) || g.hostile[a] {
				pool = append(pool, m)
			}
		}
	}
	if len(pool) == 0 {
		return types.ShareMember{}, false
	}
	return pool[g.r.Intn(len(pool))], true
}

func (g *gen) shareHeartbeat(a int) []sdk.Msg {
	m, ok := g.shareMember(a)
	if !ok || g.oneOf(3) {
		return []sdk.Msg{&types.MsgShareGroupHeartbeat{Owner: g.addr(a), GroupId: g.joinable(a, true), MemberId: fmt.Sprintf("s%d-%d", a, g.r.Intn(3)),
			SubscribedTopicNames: g.subscription()}}
	}
	msg := &types.MsgShareGroupHeartbeat{Owner: g.addr(a), GroupId: m.GroupId, MemberId: m.MemberId, MemberEpoch: m.MemberEpoch, SubscribedTopicNames: m.SubscribedTopicNames}
	switch {
	case g.oneOf(3):
		msg.MemberEpoch = types.ConsumerLeaveEpoch
	case g.oneOf(2):
		msg.SubscribedTopicNames = g.subscription()
	}
	if g.hostile[a] && g.oneOf(3) {
		msg.MemberEpoch = m.MemberEpoch + 1 + int32(g.r.Intn(3))
	}
	return []sdk.Msg{msg}
}

func (g *gen) shareFetch(a int) []sdk.Msg {
	m, ok := g.shareMember(a)
	if !ok {
		return nil
	}
	msg := &types.MsgShareFetch{Owner: g.addr(a), GroupId: m.GroupId, MemberId: m.MemberId, Tag: fmt.Sprintf("f%d", g.r.Intn(1000))}
	for _, tps := range m.Assigned {
		for _, p := range tps.Partitions {
			if g.oneOf(3) {
				continue
			}
			n := uint32(1 + g.r.Intn(50))
			if g.hostile[a] && g.oneOf(3) {
				n = 1 << 30
			}
			msg.Acquire = append(msg.Acquire, types.ShareAcquire{Topic: tps.Topic, Partition: p, MaxRecords: n})
		}
	}
	// Acknowledge some of what this member holds (a hostile account: anyone's, or nothing held).
	for _, sp := range g.w.sparts[m.GroupId] {
		for _, r := range sp.Ranges {
			mine := r.State == types.SHARE_RECORD_STATE_ACQUIRED && r.MemberId == m.MemberId
			if !(mine || (g.hostile[a] && g.oneOf(4))) || g.oneOf(3) {
				continue
			}
			last := r.FirstOffset + uint64(g.r.Intn(int(r.LastOffset-r.FirstOffset+1)))
			msg.Acknowledgements = append(msg.Acknowledgements, types.ShareAcknowledgement{Topic: sp.Topic, Partition: sp.Partition,
				FirstOffset: r.FirstOffset, LastOffset: last, Type: uint32(g.r.Intn(4))})
		}
	}
	if len(msg.Acquire) == 0 && len(msg.Acknowledgements) == 0 {
		return nil
	}
	return []sdk.Msg{msg}
}

// shareAdmin sets a share group's configs (in and out of Kafka's bounds) or moves an empty one's
// start offsets, as its admin (a hostile account: as anyone).
func (g *gen) shareAdmin(a int) []sdk.Msg {
	// Mostly groups a share admin can act on: share groups, or groups no member gave a kind.
	grp, ok := g.pickGroup(func(x types.Group) bool {
		return (x.Admin == g.addr(a) || g.hostile[a]) && (x.Kind == types.GROUP_KIND_SHARE || x.Kind == types.GROUP_KIND_UNSPECIFIED)
	})
	if !ok || g.oneOf(5) {
		if grp, ok = g.adminGroup(a); !ok {
			return nil
		}
	}
	if g.oneOf(2) {
		msg := &types.MsgSetShareGroupConfig{Authority: g.addr(a), GroupId: grp.GroupId,
			RecordLockDurationMs: []int64{1_000, 5_000, 30_000}[g.r.Intn(3)], DeliveryCountLimit: int32(2 + g.r.Intn(9)), AutoOffsetResetEarliest: g.oneOf(2)}
		if g.hostile[a] && g.oneOf(3) {
			msg.RecordLockDurationMs = 500 // under Kafka's bound
			g.refused("MsgSetShareGroupConfig", "topics/13")
		}
		return []sdk.Msg{msg}
	}
	t := g.anyTopic()
	if t == nil {
		return nil
	}
	o := types.ShareOffset{Topic: t.Name, Partition: uint32(g.r.Intn(int(t.Partitions))), Delete: g.oneOf(3)}
	if !o.Delete {
		o.StartOffset = g.offsetFor(a, t.Name, o.Partition)
	}
	return []sdk.Msg{&types.MsgAlterShareGroupOffsets{Authority: g.addr(a), GroupId: grp.GroupId, Offsets: []types.ShareOffset{o}}}
}
