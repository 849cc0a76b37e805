package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

func (s *Server) createTopics(ctx context.Context, r *kmsg.CreateTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreateTopicsResponse()
	resp.SetVersion(r.Version)
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t.Topic, t.NumPartitions, 1
		cfg, err := topicConfig(t.Configs)
		switch {
		case err != nil:
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidConfig.Code, kmsg.StringPtr(err.Error())
		case t.NumPartitions == -1:
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidPartitions.Code, kmsg.StringPtr("set the number of partitions; bftlog has no broker default")
		case t.ReplicationFactor > 1:
			// Every validator stores every partition; a replication factor means nothing here.
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidReplicationFactor.Code, kmsg.StringPtr("replication is by consensus: use -1 or 1")
		case r.ValidateOnly:
		default:
			msg := &types.MsgCreateTopic{Owner: s.ident(ctx).signer.Address(), Name: t.Topic, Partitions: uint32(max(t.NumPartitions, 0)), Config: cfg}
			if rt.ErrorCode, rt.ErrorMessage = s.submit(ctx, msg); rt.ErrorCode == 0 && r.Version >= 5 {
				s.describeCreated(ctx, &rt)
			}
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// describeCreated fills what CreateTopics v5+ answers of a created topic, as the chain holds it:
// its configs (defaults applied) and, v7+, its topic ID.
func (s *Server) describeCreated(ctx context.Context, rt *kmsg.CreateTopicsResponseTopic) {
	t, found, err := s.topic(ctx, rt.Topic)
	if err != nil || !found {
		return // created, but not readable yet: the answer stays without them
	}
	rt.TopicID, rt.NumPartitions = s.topicIDs.learn(t), int32(t.Partitions)
	for i := range types.TopicConfigFields {
		f := &types.TopicConfigFields[i]
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.ReadOnly, c.Source = f.Name, kmsg.StringPtr(f.Value(t.Config)), f.ReadOnly, int8(describedConfigSource)
		rt.Configs = append(rt.Configs, c)
	}
}

// deleteTopics deletes topics named by name (v0-v5's names, v6's entries with a name) or, v6+,
// by topic ID, checked as Kafka's controller checks them: an entry with both or neither, or a
// name or ID given twice, is INVALID_REQUEST, and an ID no topic has is UNKNOWN_TOPIC_ID.
func (s *Server) deleteTopics(ctx context.Context, r *kmsg.DeleteTopicsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteTopicsResponse()
	resp.SetVersion(r.Version)
	topics := r.Topics
	for _, name := range r.TopicNames { // v0-v5
		topics = append(topics, kmsg.DeleteTopicsRequestTopic{Topic: kmsg.StringPtr(name)})
	}
	names, ids := map[string]int{}, map[[16]byte]int{}
	for _, t := range topics {
		if t.Topic != nil {
			names[*t.Topic]++
		} else {
			ids[t.TopicID]++
		}
	}
	for _, t := range topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		byID := t.Topic == nil
		switch {
		case byID && t.TopicID == [16]byte{}:
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("neither a topic name nor a topic ID")
		case !byID && t.TopicID != [16]byte{}:
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("a topic name and a topic ID: give one")
		case !byID && names[*t.Topic] > 1, byID && ids[t.TopicID] > 1:
			rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("topic given twice")
		case byID:
			topic, found, err := s.topicByID(ctx, t.TopicID)
			switch {
			case err != nil:
				rt.ErrorCode = queryCode(err)
			case !found:
				rt.ErrorCode = kerr.UnknownTopicID.Code
			default:
				rt.Topic = kmsg.StringPtr(topic.Name)
				rt.ErrorCode, rt.ErrorMessage = s.submit(ctx, &types.MsgDeleteTopic{Authority: s.ident(ctx).signer.Address(), Name: topic.Name})
			}
		default:
			if r.Version >= 6 { // the answer names the deleted topic's ID too
				if topic, found, err := s.topic(ctx, *t.Topic); err == nil && found {
					rt.TopicID = topicID(topic)
				}
			}
			rt.ErrorCode, rt.ErrorMessage = s.submit(ctx, &types.MsgDeleteTopic{Authority: s.ident(ctx).signer.Address(), Name: *t.Topic})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (s *Server) createPartitions(ctx context.Context, r *kmsg.CreatePartitionsRequest) kmsg.Response {
	resp := kmsg.NewPtrCreatePartitionsResponse()
	resp.SetVersion(r.Version)
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic = t.Topic
		if !r.ValidateOnly {
			rt.ErrorCode, rt.ErrorMessage = s.submit(ctx, &types.MsgAddPartitions{Authority: s.ident(ctx).signer.Address(), Name: t.Topic, Partitions: uint32(max(t.Count, 0))})
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
