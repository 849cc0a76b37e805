package kafka

import (
	"context"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// KIP-848's consumer rebalance protocol (ConsumerGroupHeartbeat, key 68; ConsumerGroupDescribe,
// key 69) with the chain as the group coordinator (x/topics/keeper/groups_consumer.go). A
// heartbeat becomes a transaction only when it changes something the chain decides on: a join,
// a leave, a new subscription, or the partitions the member had to revoke now released. Every
// other heartbeat is answered from the chain's state, and the gateway keeps its members alive
// with its batched MsgKafkaHeartbeat, as for classic members.

// consumerGroupHeartbeat answers a KIP-848 heartbeat.
func (s *Server) consumerGroupHeartbeat(ctx context.Context, r *kmsg.ConsumerGroupHeartbeatRequest) kmsg.Response {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.SetVersion(r.Version)
	fail := func(code int16, msg string) kmsg.Response {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return resp
	}
	switch {
	case r.Group == "":
		return fail(kerr.InvalidRequest.Code, "GroupId can't be empty")
	case r.MemberID == "":
		return fail(kerr.InvalidRequest.Code, "MemberId can't be empty")
	case r.MemberEpoch < types.ConsumerLeaveStaticEpoch:
		return fail(kerr.InvalidRequest.Code, "MemberEpoch is invalid")
	case r.MemberEpoch == 0 && r.SubscribedTopicNames == nil && r.SubscribedTopicRegex == nil:
		return fail(kerr.InvalidRequest.Code, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request")
	case r.MemberEpoch == 0 && len(r.Topics) > 0:
		return fail(kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining")
	}
	co := s.ident(ctx).groups
	st, err := co.chain.consumerGroup(ctx, r.Group)
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable.Code, err.Error())
	}
	var m *types.ConsumerMember
	if st != nil {
		m = findConsumer(st, r.MemberID)
	}
	if m != nil && m.Owner != co.chain.owner() {
		// Another account's member: this identity cannot speak for it, and its client takes a
		// new member id on UNKNOWN_MEMBER_ID.
		return fail(kerr.UnknownMemberID.Code, "not a member of this principal")
	}
	owned, known, err := s.ownedPartitions(ctx, r.Topics)
	if err != nil {
		return fail(kerr.CoordinatorNotAvailable.Code, err.Error())
	}
	msg := &types.MsgConsumerGroupHeartbeat{Owner: co.chain.owner(), GroupId: r.Group, MemberId: r.MemberID, MemberEpoch: r.MemberEpoch,
		ClientId: clientID(ctx), OwnedKnown: r.Topics != nil && known, Owned: owned}
	if r.MemberEpoch < 0 {
		co.forget(r.Group, r.MemberID)
		if m == nil {
			return fail(kerr.UnknownMemberID.Code, "not a member")
		}
		msg.InstanceId = m.InstanceId
		if r.InstanceID != nil {
			msg.InstanceId = *r.InstanceID
		}
		if err := co.chain.submit(ctx, msg); err != nil {
			return fail(kafkaCode(err), err.Error())
		}
		resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(r.MemberID), r.MemberEpoch
		return resp
	}
	if r.MemberEpoch > 0 {
		switch {
		case m == nil:
			co.forget(r.Group, r.MemberID)
			return fail(kerr.UnknownMemberID.Code, "not a member")
		case m.State == types.CONSUMER_MEMBER_STATE_LEFT_STATIC || r.MemberEpoch > m.MemberEpoch:
			return fail(kerr.FencedMemberEpoch.Code, "the member epoch is not the chain's")
		case r.MemberEpoch < m.MemberEpoch && msg.OwnedKnown && !types.NewPartitionSet(m.Assigned, m.PendingRevocation).Contains(owned):
			return fail(kerr.FencedMemberEpoch.Code, "the member no longer owns its partitions of that epoch")
		}
	}
	fillSubscription(msg, r, m)
	if r.MemberEpoch == 0 || changesSomething(msg, m) || s.consumerTopicsMoved(ctx, co, st, m) {
		if err := co.chain.submit(ctx, msg); err != nil {
			return fail(kafkaCode(err), err.Error())
		}
		if st, err = co.chain.consumerGroup(ctx, r.Group); err != nil || st == nil {
			return fail(kerr.CoordinatorNotAvailable.Code, "the group's state could not be read")
		}
		if m = findConsumer(st, r.MemberID); m == nil {
			return fail(kerr.UnknownMemberID.Code, "not a member")
		}
	}
	co.touch(r.Group, r.MemberID, defaultSession)
	co.checked(r.Group, r.MemberID, m.MemberEpoch)
	resp.MemberID, resp.MemberEpoch = kmsg.StringPtr(m.MemberId), m.MemberEpoch
	resp.HeartbeatIntervalMillis = types.ConsumerHeartbeatIntervalMs
	// The whole assignment every time: a client that lost an answer gets it again, and franz-go
	// keeps what it has when nothing changed.
	a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	if a.Topics, err = s.assignedTopics(ctx, m.Assigned); err != nil {
		// Never an assignment with a topic missing for a failed read: the client would revoke it.
		return fail(kerr.CoordinatorNotAvailable.Code, err.Error())
	}
	resp.Assignment = &a
	return resp
}

// fillSubscription completes msg with what the request leaves out (null: unchanged since the
// last heartbeat), from the member as the chain has it.
func fillSubscription(msg *types.MsgConsumerGroupHeartbeat, r *kmsg.ConsumerGroupHeartbeatRequest, m *types.ConsumerMember) {
	if m != nil {
		msg.SubscribedTopicNames, msg.SubscribedTopicRegex, msg.ServerAssignor = m.SubscribedTopicNames, m.SubscribedTopicRegex, m.ServerAssignor
		msg.InstanceId, msg.RackId, msg.RebalanceTimeoutMs = m.InstanceId, m.RackId, m.RebalanceTimeoutMs
	}
	if r.SubscribedTopicNames != nil {
		msg.SubscribedTopicNames = slices.Clone(r.SubscribedTopicNames)
		slices.Sort(msg.SubscribedTopicNames)
		msg.SubscribedTopicNames = slices.Compact(msg.SubscribedTopicNames)
		if r.SubscribedTopicRegex == nil {
			msg.SubscribedTopicRegex = ""
		}
	}
	if r.SubscribedTopicRegex != nil {
		msg.SubscribedTopicRegex = *r.SubscribedTopicRegex
		if r.SubscribedTopicNames == nil {
			msg.SubscribedTopicNames = nil
		}
	}
	if r.ServerAssignor != nil {
		msg.ServerAssignor = *r.ServerAssignor
	}
	if r.InstanceID != nil {
		msg.InstanceId = *r.InstanceID
	}
	if r.RackID != nil {
		msg.RackId = *r.RackID
	}
	if r.RebalanceTimeoutMillis >= 0 {
		msg.RebalanceTimeoutMs = r.RebalanceTimeoutMillis
	}
}

// changesSomething tells whether a heartbeat of a known member needs the chain: a new
// subscription, or the partitions it had to revoke released.
func changesSomething(msg *types.MsgConsumerGroupHeartbeat, m *types.ConsumerMember) bool {
	if m == nil {
		return true
	}
	if !slices.Equal(msg.SubscribedTopicNames, m.SubscribedTopicNames) || msg.SubscribedTopicRegex != m.SubscribedTopicRegex ||
		msg.ServerAssignor != m.ServerAssignor || msg.RackId != m.RackId || msg.RebalanceTimeoutMs != m.RebalanceTimeoutMs {
		return true
	}
	return msg.OwnedKnown && m.State == types.CONSUMER_MEMBER_STATE_UNREVOKED_PARTITIONS &&
		!types.NewPartitionSet(msg.Owned).Overlaps(m.PendingRevocation)
}

// consumerTopicCheckEvery is how often, per group, the gateway compares the partitions its target
// was computed on with the topics as they are: partitions added, a subscribed topic created or
// deleted, or a topic a regex now matches, each of which moves the group epoch once a heartbeat
// brings it to the chain.
const consumerTopicCheckEvery = 5 * time.Second

// consumerTopicsMoved tells whether the subscribed topics changed since the group's target was
// computed (at most once per group and consumerTopicCheckEvery). A regex is compared only for the
// member heartbeating (me): the chain resolves a member's regex in that member's heartbeat.
func (s *Server) consumerTopicsMoved(ctx context.Context, co *coordinator, st *types.QueryConsumerGroupResponse, me *types.ConsumerMember) bool {
	if st == nil || me == nil || !co.topicCheckDue(st.Group.GroupId) {
		return false
	}
	counts := map[string]uint32{}
	for _, c := range st.Group.PartitionCounts {
		counts[c.Topic] = c.Partitions
	}
	seen := map[string]bool{}
	for _, m := range st.Members {
		for _, name := range m.SubscribedTopicNames {
			if seen[name] {
				continue
			}
			seen[name] = true
			t, found, err := s.topic(ctx, name)
			if err != nil {
				return false
			}
			if n, known := counts[name]; found != known || (found && t.Partitions != n) {
				return true
			}
		}
	}
	if me.SubscribedTopicRegex == "" {
		return false
	}
	re, _, err := types.CompileTopicRegex(me.SubscribedTopicRegex)
	if err != nil {
		return false
	}
	topics, err := s.allTopics(ctx)
	if err != nil {
		return false
	}
	var matched []string
	for _, t := range topics {
		if re.MatchString(t.Name) {
			matched = append(matched, t.Name)
		}
	}
	return !slices.Equal(matched, me.RegexTopics)
}

func findConsumer(st *types.QueryConsumerGroupResponse, id string) *types.ConsumerMember {
	for i := range st.Members {
		if st.Members[i].MemberId == id {
			return &st.Members[i]
		}
	}
	return nil
}

// ownedPartitions names the partitions a heartbeat says the client owns (by topic ID). known is
// false when an ID names no topic this gateway can find: the list is then not the whole truth,
// and must not release anything (the chain would hand partitions the client still reads to
// another member).
func (s *Server) ownedPartitions(ctx context.Context, topics []kmsg.ConsumerGroupHeartbeatRequestTopic) ([]types.TopicPartitions, bool, error) {
	var out []types.TopicPartitions
	known := true
	for _, t := range topics {
		topic, found, err := s.topicByID(ctx, t.TopicID)
		if err != nil {
			return nil, false, err
		}
		if !found {
			known = false
			continue
		}
		tp := types.TopicPartitions{Topic: topic.Name}
		for _, p := range t.Partitions {
			if p >= 0 {
				tp.Partitions = append(tp.Partitions, uint32(p))
			}
		}
		out = append(out, tp)
	}
	return types.NewPartitionSet(out).List(), known, nil
}

// assignedTopics gives an assignment by topic ID; a topic deleted since is left out.
func (s *Server) assignedTopics(ctx context.Context, tps []types.TopicPartitions) ([]kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic, error) {
	out := []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, tp := range tps {
		t, found, err := s.topic(ctx, tp.Topic)
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = s.topicIDs.learn(t)
		for _, p := range tp.Partitions {
			at.Partitions = append(at.Partitions, int32(p))
		}
		out = append(out, at)
	}
	return out, nil
}

// consumerGroupDescribe answers ConsumerGroupDescribe from the chain's state.
func (s *Server) consumerGroupDescribe(ctx context.Context, r *kmsg.ConsumerGroupDescribeRequest) kmsg.Response {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.SetVersion(r.Version)
	co := s.ident(ctx).groups
	for _, id := range r.Groups {
		g := kmsg.NewConsumerGroupDescribeResponseGroup()
		g.Group = id
		st, err := co.chain.consumerGroup(ctx, id)
		switch {
		case err != nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case st == nil:
			g.ErrorCode, g.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("group "+id+" not found")
		default:
			s.describeConsumerGroup(ctx, &g, st)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func (s *Server) describeConsumerGroup(ctx context.Context, g *kmsg.ConsumerGroupDescribeResponseGroup, st *types.QueryConsumerGroupResponse) {
	g.State = consumerGroupState(st)
	g.Epoch, g.AssignmentEpoch = st.Group.GroupEpoch, st.Group.AssignmentEpoch
	g.AssignorName = st.Group.Assignor
	for _, m := range st.Members {
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.MemberEpoch = m.MemberId, m.MemberEpoch
		if m.InstanceId != "" {
			dm.InstanceID = kmsg.StringPtr(m.InstanceId)
		}
		if m.RackId != "" {
			dm.RackID = kmsg.StringPtr(m.RackId)
		}
		dm.ClientID, dm.ClientHost = m.ClientId, "/"+m.Owner
		dm.SubscribedTopics = m.SubscribedTopicNames
		if m.SubscribedTopicRegex != "" {
			dm.SubscribedTopicRegex = kmsg.StringPtr(m.SubscribedTopicRegex)
		}
		dm.Assignment.TopicPartitions = s.describedTopics(ctx, m.Assigned)
		dm.TargetAssignment.TopicPartitions = s.describedTopics(ctx, m.Target)
		dm.MemberType = 1 // a member of the consumer protocol (KIP-1099)
		g.Members = append(g.Members, dm)
	}
}

// consumerGroupState names a consumer group's state as Kafka's coordinator does.
func consumerGroupState(st *types.QueryConsumerGroupResponse) string {
	switch {
	case len(st.Members) == 0:
		return "Empty"
	case st.Group.AssignmentEpoch < st.Group.GroupEpoch:
		return "Assigning"
	}
	for _, m := range st.Members {
		if m.MemberEpoch != st.Group.AssignmentEpoch || m.State != types.CONSUMER_MEMBER_STATE_STABLE {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (s *Server) describedTopics(ctx context.Context, tps []types.TopicPartitions) []kmsg.AssignmentTopicPartition {
	var out []kmsg.AssignmentTopicPartition
	for _, tp := range tps {
		t, found, err := s.topic(ctx, tp.Topic)
		if err != nil || !found {
			continue
		}
		a := kmsg.NewAssignmentTopicPartition()
		a.TopicID, a.Topic = s.topicIDs.learn(t), tp.Topic
		for _, p := range tp.Partitions {
			a.Partitions = append(a.Partitions, int32(p))
		}
		out = append(out, a)
	}
	return out
}
