package kafka

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Metadata and FindCoordinator tell a client where things are: every topic's partitions are led
// by this gateway, and every group and transactional id is coordinated by it.

// The gateway is the only broker: node 0, leader of every partition, of cluster "bftlog".
const (
	brokerID  = 0
	clusterID = "bftlog"
)

func (s *Server) metadata(ctx context.Context, r *kmsg.MetadataRequest) kmsg.Response {
	resp := kmsg.NewPtrMetadataResponse()
	resp.SetVersion(r.Version)
	broker := kmsg.NewMetadataResponseBroker()
	broker.NodeID, broker.Host, broker.Port = brokerID, s.host, s.port
	resp.Brokers = []kmsg.MetadataResponseBroker{broker}
	resp.ClusterID = kmsg.StringPtr(clusterID)
	resp.ControllerID = brokerID
	if r.Topics == nil { // every topic
		topics, err := s.allTopics(ctx)
		if err == nil {
			for _, t := range topics {
				resp.Topics = append(resp.Topics, s.metadataTopic(t))
			}
		}
		return resp
	}
	for _, rt := range r.Topics {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = rt.Topic
		var t types.Topic
		var found bool
		var err error
		switch {
		case r.Version < 12 && (rt.Topic == nil || rt.TopicID != [16]byte{}):
			// As Kafka: topic IDs are asked for from v12 (v10 and v11 have the field only).
			mt.ErrorCode = kerr.InvalidRequest.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		case rt.TopicID != [16]byte{}: // by ID (the name, if any, is not looked at, as by Kafka)
			mt.Topic, mt.TopicID = nil, rt.TopicID
			if t, found, err = s.topicByID(ctx, rt.TopicID); err == nil && !found {
				mt.ErrorCode = kerr.UnknownTopicID.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		case rt.Topic == nil:
			mt.ErrorCode = kerr.InvalidRequest.Code // neither a name nor an ID
			resp.Topics = append(resp.Topics, mt)
			continue
		default:
			if t, found, err = s.topic(ctx, *rt.Topic); err == nil && !found {
				mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
				resp.Topics = append(resp.Topics, mt)
				continue
			}
		}
		if err != nil {
			mt.ErrorCode = queryCode(err)
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		resp.Topics = append(resp.Topics, s.metadataTopic(t))
	}
	return resp
}

// metadataTopic is an existing topic as Metadata shows it: its ID, and this gateway leading
// every partition.
func (s *Server) metadataTopic(t types.Topic) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	mt.Topic, mt.TopicID = kmsg.StringPtr(t.Name), s.topicIDs.learn(t)
	for p := uint32(0); p < t.Partitions; p++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition, mp.Leader, mp.Replicas, mp.ISR = int32(p), brokerID, []int32{brokerID}, []int32{brokerID}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

// Coordinator key types (FindCoordinator's KeyType); 2, share groups, is not served.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// findCoordinator answers this gateway for every group and transactional id: v4+ batches keys
// (KIP-699), each answered in its own entry. Share groups (KIP-932) are not served: as a Kafka
// broker without a share coordinator, their keys are answered INVALID_REQUEST.
func (s *Server) findCoordinator(r *kmsg.FindCoordinatorRequest) kmsg.Response {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.SetVersion(r.Version)
	code, msg := int16(0), (*string)(nil)
	if r.CoordinatorType != coordinatorGroup && r.CoordinatorType != coordinatorTransaction {
		code, msg = kerr.InvalidRequest.Code, kmsg.StringPtr("the gateway coordinates consumer groups and transactions only")
	}
	if r.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = brokerID, s.host, s.port
		if code != 0 { // Kafka's "no node"
			resp.NodeID, resp.Host, resp.Port = -1, "", -1
		}
		return resp
	}
	for _, key := range r.CoordinatorKeys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.ErrorCode, c.ErrorMessage = key, code, msg
		c.NodeID, c.Host, c.Port = brokerID, s.host, s.port
		if code != 0 {
			c.NodeID, c.Host, c.Port = -1, "", -1
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	return resp
}

// maxDescribedPartitions is Kafka's max.request.partition.size.limit: the most partitions one
// DescribeTopicPartitions answer holds, whatever the client asks for.
const maxDescribedPartitions = 2000

// describeTopicPartitions (KIP-966; Kafka 3.8+ admin clients try it before Metadata) answers what
// Metadata does, in pages: the topics sorted by name (every topic when none is named), at most
// response_partition_limit partitions (2,000 at most, Kafka's default), and the cursor where the
// next page starts. An unknown topic is UNKNOWN_TOPIC_OR_PARTITION. A cursor on a topic the
// request does not name answers every named topic INVALID_REQUEST, as Kafka does (the response
// has no error of its own).
func (s *Server) describeTopicPartitions(ctx context.Context, r *kmsg.DescribeTopicPartitionsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeTopicPartitionsResponse()
	resp.SetVersion(r.Version)
	limit := int(r.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribedPartitions {
		limit = maxDescribedPartitions
	}
	known := map[string]types.Topic{}
	var names []string
	if len(r.Topics) == 0 {
		topics, err := s.allTopics(ctx)
		if err != nil {
			return resp // as Metadata: no topics rather than an answer that lies
		}
		for _, t := range topics {
			known[t.Name] = t
			names = append(names, t.Name)
		}
	} else {
		for _, rt := range r.Topics {
			names = append(names, rt.Topic)
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	first, from := 0, int32(0)
	if c := r.Cursor; c != nil {
		i, found := slices.BinarySearch(names, c.Topic)
		if (!found && len(r.Topics) > 0) || c.Partition < 0 {
			for _, name := range names {
				t := kmsg.NewDescribeTopicPartitionsResponseTopic()
				t.Topic, t.ErrorCode = kmsg.StringPtr(name), kerr.InvalidRequest.Code
				resp.Topics = append(resp.Topics, t)
			}
			return resp
		}
		first = i
		if found {
			from = c.Partition
		}
	}
	for i := first; i < len(names); i++ {
		name := names[i]
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		rt.Topic = kmsg.StringPtr(name)
		t, found := known[name]
		if !found && len(r.Topics) > 0 {
			var err error
			if t, found, err = s.topic(ctx, name); err != nil {
				rt.ErrorCode = queryCode(err)
			}
		}
		if !found {
			if rt.ErrorCode == 0 {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, rt)
			from = 0
			continue
		}
		rt.TopicID = s.topicIDs.learn(t)
		p := from
		for ; p < int32(t.Partitions) && limit > 0; p++ {
			dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			dp.Partition, dp.LeaderID, dp.LeaderEpoch = p, brokerID, 0
			dp.Replicas, dp.ISR, dp.OfflineReplicas = []int32{brokerID}, []int32{brokerID}, []int32{}
			rt.Partitions = append(rt.Partitions, dp)
			limit--
		}
		resp.Topics = append(resp.Topics, rt)
		from = 0
		if limit == 0 {
			switch {
			case p < int32(t.Partitions):
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p}
			case i+1 < len(names):
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: names[i+1], Partition: 0}
			}
			break
		}
	}
	return resp
}
