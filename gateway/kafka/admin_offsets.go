package kafka

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// offsetDelete is Kafka's OffsetDelete as one MsgDeleteGroupOffsets signed by the connection's
// account (the group's admin): the group's committed offsets on the partitions go, all or none,
// and the chain refuses a topic the group's live members consume (GROUP_SUBSCRIBED_TO_TOPIC).
// Group-wide refusals (unknown group, not the admin) are the answer's error code; the others
// are each partition's.
func (s *Server) offsetDelete(ctx context.Context, r *kmsg.OffsetDeleteRequest) kmsg.Response {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.SetVersion(r.Version)
	id := s.ident(ctx)
	msg := &types.MsgDeleteGroupOffsets{GroupId: r.Group}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			msg.Partitions = append(msg.Partitions, types.DeleteGroupOffsetsPartition{Topic: t.Topic, Partition: uint32(max(p.Partition, 0))})
		}
	}
	code := int16(0)
	switch {
	case id.signer == nil:
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	case len(msg.Partitions) == 0:
	default:
		msg.Authority = id.signer.Address()
		_, err := id.signer.SubmitAndWait(msg)
		switch {
		case err == nil:
			for _, x := range s.ids {
				x.groups.pending.forgetPartitions(r.Group, msg.Partitions)
			}
		case errors.Is(err, types.ErrUnknownGroup):
			resp.ErrorCode = kerr.GroupIDNotFound.Code
		case errors.Is(err, types.ErrGroupAuthorization), errors.Is(err, types.ErrInvalidGroupID):
			resp.ErrorCode = kafkaCode(err)
		default:
			code = kafkaCode(err)
		}
	}
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
