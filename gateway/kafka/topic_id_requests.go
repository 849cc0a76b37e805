package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka 4.1 and 4.2 name topics by topic ID in Produce v13, OffsetCommit v10, OffsetFetch v10
// and TxnOffsetCommit v6 (topic_ids.go derives the IDs). Each such request is turned into its
// by-name form before its handler runs, and the answer is given the IDs back; a topic ID no
// topic has is answered UNKNOWN_TOPIC_ID, as Kafka does, without reaching the handler.

// topicNames resolves ids (one per request topic, in order): names[i] is "" for an ID no topic
// has.
func (s *Server) topicNames(ctx context.Context, ids [][16]byte) ([]string, error) {
	names := make([]string, len(ids))
	for i, id := range ids {
		t, found, err := s.topicByID(ctx, id)
		if err != nil {
			return nil, err
		}
		if found {
			names[i] = t.Name
		}
	}
	return names, nil
}

// byName maps each resolved name back to its ID, for the answer.
func byName(ids [][16]byte, names []string) map[string][16]byte {
	out := make(map[string][16]byte, len(ids))
	for i, n := range names {
		if n != "" {
			out[n] = ids[i]
		}
	}
	return out
}

// produceByID is Produce v13: the record batches of an unknown topic ID are answered
// UNKNOWN_TOPIC_ID, the rest produced by name.
func (s *Server) produceByID(ctx context.Context, r *kmsg.ProduceRequest) func() kmsg.Response {
	ids := make([][16]byte, len(r.Topics))
	for i, t := range r.Topics {
		ids[i] = t.TopicID
	}
	names, err := s.topicNames(ctx, ids)
	if err != nil {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(r.Version)
		for _, t := range r.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.CoordinatorNotAvailable.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return func() kmsg.Response { return resp }
	}
	var unknown []kmsg.ProduceRequestTopic
	kept := r.Topics[:0]
	for i, t := range r.Topics {
		if names[i] == "" {
			unknown = append(unknown, t)
			continue
		}
		t.Topic = names[i]
		kept = append(kept, t)
	}
	r.Topics = kept
	wait := s.produceByName(ctx, r)
	idOf := byName(ids, names)
	return func() kmsg.Response {
		resp, ok := wait().(*kmsg.ProduceResponse)
		if !ok || resp == nil {
			return nil // acks=0: no answer
		}
		for i := range resp.Topics {
			resp.Topics[i].TopicID = idOf[resp.Topics[i].Topic]
		}
		for _, t := range unknown {
			rt := kmsg.NewProduceResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
}

// offsetCommitByID is OffsetCommit v10.
func (s *Server) offsetCommitByID(ctx context.Context, r *kmsg.OffsetCommitRequest, commit func(*kmsg.OffsetCommitRequest) kmsg.Response) kmsg.Response {
	ids := make([][16]byte, len(r.Topics))
	for i, t := range r.Topics {
		ids[i] = t.TopicID
	}
	names, err := s.topicNames(ctx, ids)
	failed := func(t kmsg.OffsetCommitRequestTopic, code int16) kmsg.OffsetCommitResponseTopic {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	if err != nil {
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.SetVersion(r.Version)
		for _, t := range r.Topics {
			resp.Topics = append(resp.Topics, failed(t, kerr.CoordinatorNotAvailable.Code))
		}
		return resp
	}
	var unknown []kmsg.OffsetCommitRequestTopic
	kept := r.Topics[:0]
	for i, t := range r.Topics {
		if names[i] == "" {
			unknown = append(unknown, t)
			continue
		}
		t.Topic = names[i]
		kept = append(kept, t)
	}
	r.Topics = kept
	resp := commit(r).(*kmsg.OffsetCommitResponse)
	idOf := byName(ids, names)
	for i := range resp.Topics {
		resp.Topics[i].TopicID = idOf[resp.Topics[i].Topic]
	}
	for _, t := range unknown {
		resp.Topics = append(resp.Topics, failed(t, kerr.UnknownTopicID.Code))
	}
	return resp
}

// txnOffsetCommitByID is TxnOffsetCommit v6.
func (s *Server) txnOffsetCommitByID(ctx context.Context, r *kmsg.TxnOffsetCommitRequest, commit func(*kmsg.TxnOffsetCommitRequest) kmsg.Response) kmsg.Response {
	ids := make([][16]byte, len(r.Topics))
	for i, t := range r.Topics {
		ids[i] = t.TopicID
	}
	names, err := s.topicNames(ctx, ids)
	failed := func(t kmsg.TxnOffsetCommitRequestTopic, code int16) kmsg.TxnOffsetCommitResponseTopic {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		return rt
	}
	if err != nil {
		resp := kmsg.NewPtrTxnOffsetCommitResponse()
		resp.SetVersion(r.Version)
		for _, t := range r.Topics {
			resp.Topics = append(resp.Topics, failed(t, kerr.CoordinatorNotAvailable.Code))
		}
		return resp
	}
	var unknown []kmsg.TxnOffsetCommitRequestTopic
	kept := r.Topics[:0]
	for i, t := range r.Topics {
		if names[i] == "" {
			unknown = append(unknown, t)
			continue
		}
		t.Topic = names[i]
		kept = append(kept, t)
	}
	r.Topics = kept
	resp := commit(r).(*kmsg.TxnOffsetCommitResponse)
	idOf := byName(ids, names)
	for i := range resp.Topics {
		resp.Topics[i].TopicID = idOf[resp.Topics[i].Topic]
	}
	for _, t := range unknown {
		resp.Topics = append(resp.Topics, failed(t, kerr.UnknownTopicID.Code))
	}
	return resp
}

// offsetFetchByID is OffsetFetch v10: each group's topics by ID, in the request and the answer.
func (s *Server) offsetFetchByID(ctx context.Context, r *kmsg.OffsetFetchRequest, fetch func(*kmsg.OffsetFetchRequest) kmsg.Response) kmsg.Response {
	var ids [][16]byte
	for _, g := range r.Groups {
		for _, t := range g.Topics {
			ids = append(ids, t.TopicID)
		}
	}
	names, err := s.topicNames(ctx, ids)
	if err != nil {
		resp := kmsg.NewPtrOffsetFetchResponse()
		resp.SetVersion(r.Version)
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.CoordinatorNotAvailable.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	}
	unknown := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	i := 0
	for gi := range r.Groups {
		g := &r.Groups[gi]
		kept := g.Topics[:0]
		for _, t := range g.Topics {
			if names[i] == "" {
				unknown[g.Group] = append(unknown[g.Group], t)
			} else {
				t.Topic = names[i]
				kept = append(kept, t)
			}
			i++
		}
		if g.Topics != nil {
			g.Topics = kept // nil stays nil: every topic the group has offsets on
		}
	}
	resp := fetch(r).(*kmsg.OffsetFetchResponse)
	idOf := map[string][16]byte{}
	for j, n := range names {
		if n != "" {
			idOf[n] = ids[j]
		}
	}
	for gi := range resp.Groups {
		rg := &resp.Groups[gi]
		for ti := range rg.Topics {
			id, ok := idOf[rg.Topics[ti].Topic]
			if !ok {
				// A topic the group has offsets on that the request did not name (all topics):
				// its ID from the chain.
				if t, found, err := s.topic(ctx, rg.Topics[ti].Topic); err == nil && found {
					id = s.topicIDs.learn(t)
				}
			}
			rg.Topics[ti].TopicID = id
		}
		for _, t := range unknown[rg.Group] {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
	}
	return resp
}
