package kafka

import (
	"context"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/cosmos/cosmos-sdk/types/query"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Consumer-group administration (ListGroups, DescribeGroups, DeleteGroups): both kinds of
// groups the chain keeps — native groups (members join with MsgJoinGroup, the chain assigns)
// and Kafka groups (Kafka clients, their leader assigns) — shown as Kafka tools expect them, from
// the chain's state, so every gateway of a fleet shows the same groups.

// maxListedGroups bounds what one ListGroups reads from the chain.
const maxListedGroups = 10_000

// Kafka's group state names.
const (
	stateEmpty               = "Empty"
	statePreparingRebalance  = "PreparingRebalance"
	stateCompletingRebalance = "CompletingRebalance"
	stateStable              = "Stable"
	stateDead                = "Dead"
)

// assignorName is a native group's assignor as Kafka's consumer protocol names it.
func assignorName(a types.Assignor) string {
	if a == types.ASSIGNOR_ROUND_ROBIN {
		return "roundrobin"
	}
	return "range"
}

func kafkaState(s types.KafkaGroupState) string {
	switch s {
	case types.KAFKA_GROUP_STATE_PREPARING_REBALANCE:
		return statePreparingRebalance
	case types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE:
		return stateCompletingRebalance
	case types.KAFKA_GROUP_STATE_STABLE:
		return stateStable
	}
	return stateEmpty
}

// groupView is one group as Kafka's admin APIs show it; groupType is ListGroups' "classic" or,
// for a KIP-848 group, "consumer".
type groupView struct {
	id, state, protocolType, protocol, groupType string
	members                                      []kmsg.DescribeGroupsResponseGroupMember
}

// describeGroup reads a group from the chain; nil for a group the chain does not have.
func (s *Server) describeGroup(ctx context.Context, id string) (*groupView, error) {
	res, err := s.query.Group(ctx, &types.QueryGroupRequest{GroupId: id})
	if err != nil {
		if unknownGroup(err) {
			return nil, nil
		}
		return nil, err
	}
	switch res.Group.Kind {
	case types.GROUP_KIND_KAFKA:
		return s.describeKafkaGroup(ctx, id)
	case types.GROUP_KIND_CONSUMER:
		return s.describeConsumerGroupView(ctx, id)
	case types.GROUP_KIND_SHARE:
		return s.describeShareGroupView(ctx, id)
	}
	v := &groupView{id: id, state: stateEmpty, protocolType: "consumer", groupType: "classic"}
	if len(res.Members) > 0 {
		// The chain assigns when a member joins or leaves: a native group is never mid-rebalance.
		v.state, v.protocol = stateStable, assignorName(res.Group.Assignor)
	}
	for _, m := range res.Members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID = m.Member, "bftlog"
		dm.ProtocolMetadata, dm.MemberAssignment = consumerProtocol(m.Topics, m.Assignment)
		v.members = append(v.members, dm)
	}
	return v, nil
}

// consumerProtocol encodes a subscription and an assignment as Kafka's consumer protocol does,
// so kafka-consumer-groups, kadm and lag dashboards decode them.
func consumerProtocol(topics []string, assigned []types.TopicPartitions) (metadata, assignment []byte) {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = topics
	assign := kmsg.NewConsumerMemberAssignment()
	for _, tp := range assigned {
		at := kmsg.NewConsumerMemberAssignmentTopic()
		at.Topic = tp.Topic
		for _, p := range tp.Partitions {
			at.Partitions = append(at.Partitions, int32(p))
		}
		assign.Topics = append(assign.Topics, at)
	}
	return meta.AppendTo(nil), assign.AppendTo(nil)
}

// describeConsumerGroupView shows a KIP-848 group as Kafka's DescribeGroups does: protocol type
// "consumer", the assignor as the protocol, the consumer group's state, each member's
// subscription and assignment in the consumer protocol's encoding.
func (s *Server) describeConsumerGroupView(ctx context.Context, id string) (*groupView, error) {
	res, err := s.query.ConsumerGroup(ctx, &types.QueryConsumerGroupRequest{GroupId: id})
	if err != nil {
		if unknownGroup(err) {
			return nil, nil
		}
		return nil, err
	}
	v := &groupView{id: id, state: consumerGroupState(res), protocolType: "consumer", groupType: "consumer"}
	if len(res.Members) > 0 {
		v.protocol = res.Group.Assignor
	}
	for _, m := range res.Members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.MemberId, m.ClientId, s.clientHost(id, m.MemberId)
		if m.InstanceId != "" {
			dm.InstanceID = kmsg.StringPtr(m.InstanceId)
		}
		dm.ProtocolMetadata, dm.MemberAssignment = consumerProtocol(subscribedOf(m), m.Assigned)
		v.members = append(v.members, dm)
	}
	return v, nil
}

// describeShareGroupView shows a KIP-932 share group as Kafka's ListGroups and DescribeGroups
// do: group and protocol type "share", Stable with members, Empty without.
func (s *Server) describeShareGroupView(ctx context.Context, id string) (*groupView, error) {
	st, err := s.shareGroupState(ctx, id)
	if err != nil || st == nil {
		return nil, err
	}
	v := &groupView{id: id, state: stateEmpty, protocolType: "share", groupType: "share"}
	if len(st.Members) > 0 {
		v.state = stateStable
	}
	for _, m := range st.Members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.MemberId, m.ClientId, s.clientHost(id, m.MemberId)
		dm.ProtocolMetadata, dm.MemberAssignment = consumerProtocol(m.SubscribedTopicNames, m.Assigned)
		v.members = append(v.members, dm)
	}
	return v, nil
}

// subscribedOf is a consumer member's topics: its names and what its regex matched on chain.
func subscribedOf(m types.ConsumerMember) []string {
	out := slices.Clone(m.SubscribedTopicNames)
	for _, t := range m.RegexTopics {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

func (s *Server) describeKafkaGroup(ctx context.Context, id string) (*groupView, error) {
	res, err := s.query.KafkaGroup(ctx, &types.QueryKafkaGroupRequest{GroupId: id})
	if err != nil {
		if unknownGroup(err) {
			return nil, nil
		}
		return nil, err
	}
	v := &groupView{id: id, state: kafkaState(res.Group.State), protocolType: res.Group.ProtocolType, groupType: "classic"}
	if v.state != stateEmpty && v.state != statePreparingRebalance {
		v.protocol = res.Group.Protocol // chosen for the generation being formed or formed
	}
	for _, m := range res.Members {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.ClientID, dm.ClientHost = m.MemberId, m.ClientId, s.clientHost(id, m.MemberId)
		for _, p := range m.Protocols {
			if p.Name == v.protocol {
				dm.ProtocolMetadata = p.Metadata
			}
		}
		if v.state == stateStable {
			dm.MemberAssignment = m.Assignment
		}
		v.members = append(v.members, dm)
	}
	return v, nil
}

// clientHost is the host of the connection a member joined through, when it joined through this
// gateway ("" otherwise: the chain does not keep hosts).
func (s *Server) clientHost(group, member string) string {
	for _, id := range s.ids {
		if h := id.groups.host(group, member); h != "" {
			return h
		}
	}
	return ""
}

func (s *Server) listGroups(ctx context.Context, r *kmsg.ListGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.SetVersion(r.Version)
	var next []byte
	listed := 0
	for {
		res, err := s.query.Groups(ctx, &types.QueryGroupsRequest{Pagination: &query.PageRequest{Key: next, Limit: 1_000}})
		if err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		for _, g := range res.Groups {
			lg := kmsg.NewListGroupsResponseGroup()
			lg.Group, lg.ProtocolType, lg.GroupType = g.GroupId, "consumer", "classic"
			switch {
			case r.Version >= 4 || len(r.StatesFilter) > 0: // only then is the state needed
				v, err := s.describeGroup(ctx, g.GroupId)
				if err != nil || v == nil {
					continue // deleted meanwhile, or unreadable: not listed
				}
				lg.GroupState, lg.ProtocolType, lg.GroupType = v.state, v.protocolType, v.groupType
			case g.Kind == types.GROUP_KIND_CONSUMER:
				lg.GroupType = "consumer"
			case g.Kind == types.GROUP_KIND_SHARE:
				lg.GroupType, lg.ProtocolType = "share", "share"
			case g.Kind == types.GROUP_KIND_KAFKA:
				if v, err := s.describeKafkaGroup(ctx, g.GroupId); err == nil && v != nil {
					lg.ProtocolType = v.protocolType
				}
			}
			if len(r.StatesFilter) > 0 && !slices.Contains(r.StatesFilter, lg.GroupState) {
				continue
			}
			if len(r.TypesFilter) > 0 && !slices.Contains(r.TypesFilter, lg.GroupType) {
				continue
			}
			resp.Groups = append(resp.Groups, lg)
		}
		listed += len(res.Groups)
		if res.Pagination == nil || len(res.Pagination.NextKey) == 0 || listed >= maxListedGroups {
			return resp
		}
		next = res.Pagination.NextKey
	}
}

func (s *Server) describeGroups(ctx context.Context, r *kmsg.DescribeGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.SetVersion(r.Version)
	for _, id := range r.Groups {
		g := kmsg.NewDescribeGroupsResponseGroup()
		g.Group = id
		v, err := s.describeGroup(ctx, id)
		switch {
		case err != nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case v == nil:
			// As Kafka answers a group it does not know: Dead, no members (v6 adds an error).
			g.State = stateDead
			if r.Version >= 6 {
				g.ErrorCode = kerr.GroupIDNotFound.Code
			}
		default:
			g.State, g.ProtocolType, g.Protocol, g.Members = v.state, v.protocolType, v.protocol, v.members
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// deleteGroups deletes groups as the connection's account: the group's admin (or gov) may,
// and the chain refuses a group that still has members (NON_EMPTY_GROUP, as Kafka does).
func (s *Server) deleteGroups(ctx context.Context, r *kmsg.DeleteGroupsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.SetVersion(r.Version)
	id := s.ident(ctx)
	for _, group := range r.Groups {
		g := kmsg.NewDeleteGroupsResponseGroup()
		g.Group = group
		switch v, err := s.describeGroup(ctx, group); {
		case err != nil:
			g.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case v == nil:
			g.ErrorCode = kerr.GroupIDNotFound.Code
		case len(v.members) > 0:
			g.ErrorCode = kerr.NonEmptyGroup.Code
		case id.signer == nil:
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
		default:
			if g.ErrorCode, _ = s.submit(ctx, &types.MsgDeleteGroup{Authority: id.signer.Address(), GroupId: group}); g.ErrorCode == 0 {
				for _, x := range s.ids {
					x.groups.pending.forget(group)
				}
			}
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

// remoteHost is a connection's client host as Kafka shows it: "/" and the IP.
func remoteHost(c net.Conn) string {
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return ""
	}
	return "/" + host
}

type hostKey struct{}

// connHost is the client host of the connection a request came on.
func connHost(ctx context.Context) string {
	h, _ := ctx.Value(hostKey{}).(string)
	return h
}
