package sim

import (
	"fmt"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// KIP-848 consumer groups: members join, heartbeat the partitions they own (releasing what they
// must revoke, as a client does after its commit), change subscriptions, leave (static members
// for a session), and commit at their epochs; hostile accounts act as others' members, send
// epochs the chain never gave, bad regexes and assignors. They share the Kafka groups' ids, so
// kinds meet.

// consumerMember is a consumer member account a owns (a hostile account: any member).
func (g *gen) consumerMember(a int) (types.ConsumerMember, bool) {
	var pool []types.ConsumerMember
	for _, id := range sortedKeys(g.w.cmembers) {
		for _, m := range g.w.cmembers[id] {
			if m.Owner == g.addr(a) || g.hostile[a] {
				pool = append(pool, m)
			}
		}
	}
	if len(pool) == 0 {
		return types.ConsumerMember{}, false
	}
	return pool[g.r.Intn(len(pool))], true
}

func (g *gen) subscription() []string {
	var out []string
	for _, t := range g.w.topics {
		if g.oneOf(2) {
			out = append(out, t.Name)
		}
	}
	if len(out) == 0 {
		out = []string{fmt.Sprintf("t%d", g.r.Intn(topicPool))}
	}
	return out
}

func (g *gen) consumerHeartbeat(a int) []sdk.Msg {
	m, ok := g.consumerMember(a)
	if !ok || g.oneOf(4) {
		group := g.joinable(a, true)
		msg := &types.MsgConsumerGroupHeartbeat{Owner: g.addr(a), GroupId: group, MemberId: fmt.Sprintf("c%d-%d", a, g.r.Intn(3)),
			RebalanceTimeoutMs: []int32{0, 5_000, 20_000}[g.r.Intn(3)], ServerAssignor: []string{"", "uniform", "range"}[g.r.Intn(3)]}
		if g.oneOf(4) {
			msg.SubscribedTopicRegex = []string{"t[0-2]", "t.*", "x.*"}[g.r.Intn(3)]
		} else {
			msg.SubscribedTopicNames = g.subscription()
		}
		if g.oneOf(5) {
			msg.InstanceId = fmt.Sprintf("i%d", a)
		}
		if g.hostile[a] {
			switch g.r.Intn(6) {
			case 0:
				msg.SubscribedTopicRegex = "t[("
				g.refused("MsgConsumerGroupHeartbeat", "topics/50")
			case 1:
				msg.ServerAssignor = "sticky"
				g.refused("MsgConsumerGroupHeartbeat", "topics/49")
			case 2:
				msg.Owned = []types.TopicPartitions{{Topic: "t0", Partitions: []uint32{0}}}
				g.refused("MsgConsumerGroupHeartbeat", "topics/21")
			}
		}
		return []sdk.Msg{msg}
	}
	msg := &types.MsgConsumerGroupHeartbeat{Owner: g.addr(a), GroupId: m.GroupId, MemberId: m.MemberId, MemberEpoch: m.MemberEpoch,
		InstanceId: m.InstanceId, SubscribedTopicNames: m.SubscribedTopicNames, SubscribedTopicRegex: m.SubscribedTopicRegex,
		ServerAssignor: m.ServerAssignor, RebalanceTimeoutMs: m.RebalanceTimeoutMs, OwnedKnown: true, Owned: m.Assigned}
	switch n := g.r.Intn(10); {
	case n < 5: // owns what it holds: releases what it had to revoke
	case n < 6:
		msg.SubscribedTopicNames, msg.SubscribedTopicRegex = g.subscription(), ""
	case n < 7:
		msg.OwnedKnown, msg.Owned = false, nil
	case n < 9:
		msg.MemberEpoch = types.ConsumerLeaveEpoch
		if m.InstanceId != "" && g.oneOf(2) {
			msg.MemberEpoch = types.ConsumerLeaveStaticEpoch
		}
	default:
		msg.MemberEpoch = 0 // rejoins in place, as a client that lost an answer
		msg.OwnedKnown, msg.Owned = false, nil
	}
	if g.hostile[a] && m.Owner != g.addr(a) {
		return []sdk.Msg{msg} // another account's member: refused (or unknown by then)
	}
	if g.hostile[a] && g.oneOf(3) {
		msg.MemberEpoch = m.MemberEpoch + 1 + int32(g.r.Intn(5))
	}
	return []sdk.Msg{msg}
}

func (g *gen) consumerCommit(a int) []sdk.Msg {
	m, ok := g.consumerMember(a)
	if !ok || len(m.Assigned) == 0 {
		return nil
	}
	tp := m.Assigned[g.r.Intn(len(m.Assigned))]
	p := tp.Partitions[g.r.Intn(len(tp.Partitions))]
	epoch := m.MemberEpoch
	if g.hostile[a] && g.oneOf(3) {
		epoch -= 2
	}
	return []sdk.Msg{&types.MsgCommitOffsets{Member: g.addr(a), GroupId: m.GroupId, Generation: uint64(max(epoch, 0)), KafkaMemberId: m.MemberId,
		Offsets: []types.OffsetCommit{{Topic: tp.Topic, Partition: p, Offset: g.offsetFor(a, tp.Topic, p)}}}}
}
