package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

func (s *Server) listOffsets(ctx context.Context, r *kmsg.ListOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrListOffsetsResponse()
	resp.SetVersion(r.Version)
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			req := &types.QueryListOffsetsRequest{Topic: t.Topic, Partition: uint32(p.Partition)}
			switch p.Timestamp {
			case -2, -4: // earliest; -4, the earliest local offset (v8+), is it without tiered storage
				req.Spec = types.OFFSET_SPEC_EARLIEST
			case -1, -3: // latest; max timestamp is answered with the latest offset
				req.Spec = types.OFFSET_SPEC_LATEST
			default:
				req.Spec, req.TimestampMs = types.OFFSET_SPEC_TIMESTAMP, p.Timestamp
			}
			if p.Partition < 0 {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else if p.Timestamp == -5 || p.Timestamp == -6 {
				// The latest tiered offset (v9+, KIP-1005) and the earliest offset pending upload
				// (v11+, KIP-1023): nothing is tiered, and Kafka answers a topic without tiered
				// storage with offset -1 and no error.
				rp.Offset = -1
			} else if res, err := s.query.ListOffsets(ctx, req); err != nil {
				rp.ErrorCode = queryCode(err)
			} else {
				rp.Offset = res.Offset
				if req.Spec == types.OFFSET_SPEC_TIMESTAMP && res.Offset >= 0 {
					rp.Timestamp = res.TimestampMs
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
