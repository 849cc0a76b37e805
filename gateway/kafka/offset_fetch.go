package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// OffsetFetch answers committed offsets: v0-v7 of one group, v8+ of several groups at once
// (KIP-709), each with its own error. v9's member id and epoch belong to KIP-848 consumer groups,
// which the gateway does not serve: as Kafka for a classic group, they are not looked at.

// fetchedTopic is one topic of an OffsetFetch answer: a partition without a committed offset
// has offset -1.
type fetchedTopic struct {
	topic      string
	partitions []fetchedOffset
}

type fetchedOffset struct {
	partition int32
	offset    int64
	metadata  string
}

func (c *coordinator) offsetFetch(ctx context.Context, r *kmsg.OffsetFetchRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.SetVersion(r.Version)
	if r.Version < 8 {
		var asked []fetchedTopic
		for _, t := range r.Topics {
			asked = append(asked, fetchedTopic{topic: t.Topic, partitions: askedPartitions(t.Partitions)})
		}
		topics, code := c.groupOffsets(ctx, r.Group, asked, r.Topics == nil)
		resp.ErrorCode = code
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.topic
			for _, p := range t.partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition() // LeaderEpoch -1
				rp.Partition, rp.Offset, rp.Metadata = p.partition, p.offset, kmsg.StringPtr(p.metadata)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, g := range r.Groups {
		var asked []fetchedTopic
		for _, t := range g.Topics {
			asked = append(asked, fetchedTopic{topic: t.Topic, partitions: askedPartitions(t.Partitions)})
		}
		topics, code := c.groupOffsets(ctx, g.Group, asked, g.Topics == nil)
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group, rg.ErrorCode = g.Group, code
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t.topic
			for _, p := range t.partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition() // LeaderEpoch -1
				rp.Partition, rp.Offset, rp.Metadata = p.partition, p.offset, kmsg.StringPtr(p.metadata)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func askedPartitions(ps []int32) []fetchedOffset {
	out := make([]fetchedOffset, len(ps))
	for i, p := range ps {
		out[i] = fetchedOffset{partition: p, offset: -1}
	}
	return out
}

// groupOffsets answers one group: the committed offsets of the partitions asked, or with all
// of every partition the group committed, with this gateway's admitted commits over the chain's
// (commits.go). As Kafka, an unknown group has no offsets (-1), not an error; the code is the
// group's error.
func (c *coordinator) groupOffsets(ctx context.Context, group string, asked []fetchedTopic, all bool) ([]fetchedTopic, int16) {
	committed := map[partitionKey]types.CommittedOffset{}
	res, err := c.chain.offsets(ctx, group)
	if err == nil {
		for _, o := range res.Offsets {
			committed[partitionKey{o.Committed.Topic, int32(o.Committed.Partition)}] = o.Committed
		}
	} else if !unknownGroup(err) {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	c.pending.overlay(group, committed)
	if all {
		asked = nil
		byTopic := map[string]int{}
		for k := range committed {
			i, ok := byTopic[k.topic]
			if !ok {
				i = len(asked)
				byTopic[k.topic] = i
				asked = append(asked, fetchedTopic{topic: k.topic})
			}
			asked[i].partitions = append(asked[i].partitions, fetchedOffset{partition: k.partition, offset: -1})
		}
	}
	for _, t := range asked {
		for i := range t.partitions {
			if o, ok := committed[partitionKey{t.topic, t.partitions[i].partition}]; ok {
				t.partitions[i].offset, t.partitions[i].metadata = int64(o.Offset), o.Metadata
			}
		}
	}
	return asked, 0
}

// offsetFetch answers OffsetFetch: v10 names topics by ID (topic_id_requests.go).
func (s *Server) offsetFetch(ctx context.Context, r *kmsg.OffsetFetchRequest) kmsg.Response {
	co := s.ident(ctx).groups
	if r.Version >= 10 {
		return s.offsetFetchByID(ctx, r, func(r *kmsg.OffsetFetchRequest) kmsg.Response { return co.offsetFetch(ctx, r) })
	}
	return co.offsetFetch(ctx, r)
}
