package kafka

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// deleteRecords is Kafka's DeleteRecords as one MsgDeleteRecords signed by the connection's
// account (the topics' owner, or refused): every partition's log start offset moves, or none
// does, so a refusal answers every partition with its code. Offset -1 is Kafka's "the high
// watermark". The answer waits for the block and carries each partition's low watermark.
func (s *Server) deleteRecords(ctx context.Context, r *kmsg.DeleteRecordsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteRecordsResponse()
	resp.SetVersion(r.Version)
	msg := &types.MsgDeleteRecords{}
	code := int16(0)
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			dp := types.DeleteRecordsPartition{Topic: t.Topic, Partition: uint32(max(p.Partition, 0))}
			switch {
			case p.Partition < 0:
				code = kerr.UnknownTopicOrPartition.Code
			case p.Offset == -1:
				dp.ToHighWatermark = true
			case p.Offset < 0:
				code = kerr.OffsetOutOfRange.Code
			default:
				dp.Offset = uint64(p.Offset)
			}
			msg.Partitions = append(msg.Partitions, dp)
		}
	}
	low := map[partitionKey]int64{}
	id := s.ident(ctx)
	switch {
	case code != 0 || len(msg.Partitions) == 0:
	case id.signer == nil:
		code = kerr.TopicAuthorizationFailed.Code
	default:
		msg.Authority = id.signer.Address()
		res, err := id.signer.SubmitAndWait(msg)
		if err != nil {
			code = kafkaCode(err)
			break
		}
		out, err := txclient.Responses[types.MsgDeleteRecordsResponse](s.cfg.ClientCtx, res)
		if err != nil || len(out) != 1 {
			code = kerr.UnknownServerError.Code
			break
		}
		for _, x := range out[0].Results {
			low[partitionKey{x.Topic, int32(x.Partition)}] = int64(x.LowWatermark)
		}
	}
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteRecordsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteRecordsResponseTopicPartition()
			rp.Partition, rp.LowWatermark, rp.ErrorCode = p.Partition, -1, code
			if w, ok := low[partitionKey{t.Topic, p.Partition}]; ok && code == 0 {
				rp.LowWatermark = w
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
