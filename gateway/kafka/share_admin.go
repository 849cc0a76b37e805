package kafka

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Share groups' administration: DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91),
// DeleteShareGroupOffsets (92), and the share.* group configs through DescribeConfigs and
// IncrementalAlterConfigs (resource type GROUP), signed by the connection's account (the group's
// admin, or the chain refuses it).

// Kafka's share group config names.
const (
	cfgShareLock      = "share.record.lock.duration.ms"
	cfgShareDelivery  = "share.delivery.count.limit"
	cfgShareAutoReset = "share.auto.offset.reset"
)

// shareConfig reads a group's share.* configs (Kafka's defaults for a group that has none yet).
func (s *Server) shareConfig(ctx context.Context, group string) (types.ShareGroup, error) {
	st, err := s.shareGroupState(ctx, group)
	if err != nil {
		return types.ShareGroup{}, err
	}
	if st == nil {
		return types.ShareGroup{GroupId: group, RecordLockDurationMs: types.DefaultShareRecordLockDurationMs, DeliveryCountLimit: types.DefaultShareDeliveryCountLimit}, nil
	}
	return st.Group, nil
}

func shareConfigValues(sg types.ShareGroup) [][2]string {
	reset := "latest"
	if sg.AutoOffsetResetEarliest {
		reset = "earliest"
	}
	return [][2]string{
		{cfgShareAutoReset, reset},
		{cfgShareDelivery, strconv.Itoa(int(sg.DeliveryCountLimit))},
		{cfgShareLock, strconv.FormatInt(sg.RecordLockDurationMs, 10)},
	}
}

// describeGroupConfig is DescribeConfigs for a GROUP resource: its share.* configs.
func (s *Server) describeGroupConfig(ctx context.Context, res kmsg.DescribeConfigsRequestResource, rr *kmsg.DescribeConfigsResponseResource) {
	sg, err := s.shareConfig(ctx, res.ResourceName)
	if err != nil {
		rr.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return
	}
	for _, kv := range shareConfigValues(sg) {
		if len(res.ConfigNames) > 0 && !slices.Contains(res.ConfigNames, kv[0]) {
			continue
		}
		rc := kmsg.NewDescribeConfigsResponseResourceConfig()
		rc.Name, rc.Value, rc.Source = kv[0], kmsg.StringPtr(kv[1]), kmsg.ConfigSourceGroupConfig
		rc.ConfigType = kmsg.ConfigTypeInt
		if kv[0] == cfgShareAutoReset {
			rc.ConfigType = kmsg.ConfigTypeString
		} else if kv[0] == cfgShareLock {
			rc.ConfigType = kmsg.ConfigTypeLong
		}
		rr.Configs = append(rr.Configs, rc)
	}
}

// alterGroupConfig is IncrementalAlterConfigs for a GROUP resource: SET and DELETE (back to
// Kafka's default) of the share.* configs, submitted as MsgSetShareGroupConfig.
func (s *Server) alterGroupConfig(ctx context.Context, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) (int16, *string) {
	sg, err := s.shareConfig(ctx, res.ResourceName)
	if err != nil {
		return kerr.CoordinatorNotAvailable.Code, nil
	}
	msg := &types.MsgSetShareGroupConfig{GroupId: res.ResourceName, RecordLockDurationMs: sg.RecordLockDurationMs,
		DeliveryCountLimit: sg.DeliveryCountLimit, AutoOffsetResetEarliest: sg.AutoOffsetResetEarliest}
	for _, c := range res.Configs {
		value := ""
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if c.Value == nil {
				return kerr.InvalidConfig.Code, kmsg.StringPtr("no value for " + c.Name)
			}
			value = *c.Value
		case kmsg.IncrementalAlterConfigOpDelete:
		default:
			return kerr.InvalidConfig.Code, kmsg.StringPtr(c.Name + " takes SET and DELETE only")
		}
		bad := func() (int16, *string) {
			return kerr.InvalidConfig.Code, kmsg.StringPtr("invalid value " + strconv.Quote(value) + " for group config " + c.Name)
		}
		switch c.Name {
		case cfgShareLock:
			msg.RecordLockDurationMs = types.DefaultShareRecordLockDurationMs
			if value != "" {
				v, err := strconv.ParseInt(value, 10, 64)
				if err != nil {
					return bad()
				}
				msg.RecordLockDurationMs = v
			}
		case cfgShareDelivery:
			msg.DeliveryCountLimit = types.DefaultShareDeliveryCountLimit
			if value != "" {
				v, err := strconv.ParseInt(value, 10, 32)
				if err != nil {
					return bad()
				}
				msg.DeliveryCountLimit = int32(v)
			}
		case cfgShareAutoReset:
			switch value {
			case "", "latest":
				msg.AutoOffsetResetEarliest = false
			case "earliest":
				msg.AutoOffsetResetEarliest = true
			default:
				return bad()
			}
		default:
			return kerr.InvalidConfig.Code, kmsg.StringPtr("unsupported group config " + c.Name + ": the share.* configs are served")
		}
	}
	if err := msg.Validate(); err != nil {
		return kerr.InvalidConfig.Code, kmsg.StringPtr(err.Error())
	}
	id := s.ident(ctx)
	if id.signer == nil {
		return kerr.GroupAuthorizationFailed.Code, kmsg.StringPtr(errNoSigner.Error())
	}
	if validateOnly {
		return 0, nil
	}
	msg.Authority = id.signer.Address()
	return s.submit(ctx, msg)
}

// describeShareGroupOffsets answers each group's share partitions' start offsets, with their lag
// (the high watermark less the start offset); every partition of the group when no topic is named.
func (s *Server) describeShareGroupOffsets(ctx context.Context, r *kmsg.DescribeShareGroupOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeShareGroupOffsetsResponse()
	resp.SetVersion(r.Version)
	for _, g := range r.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		st, err := s.shareGroupState(ctx, g.GroupID)
		var sps *types.QuerySharePartitionsResponse
		if err == nil && st != nil {
			sps, err = s.query.SharePartitions(ctx, &types.QuerySharePartitionsRequest{GroupId: g.GroupID})
		}
		switch {
		case err != nil:
			rg.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case st == nil:
			rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, kmsg.StringPtr("group "+g.GroupID+" is not a share group")
		default:
			start := map[types.TopicPartition]uint64{}
			asked := map[string][]int32{}
			var order []string
			for _, sp := range sps.Partitions {
				start[types.TopicPartition{Topic: sp.Topic, Partition: sp.Partition}] = sp.StartOffset
				if g.Topics == nil {
					if _, ok := asked[sp.Topic]; !ok {
						order = append(order, sp.Topic)
					}
					asked[sp.Topic] = append(asked[sp.Topic], int32(sp.Partition))
				}
			}
			for _, t := range g.Topics {
				order = append(order, t.Topic)
				asked[t.Topic] = t.Partitions
			}
			for _, topic := range order {
				rg.Topics = append(rg.Topics, s.describeShareTopic(ctx, topic, asked[topic], start))
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (s *Server) describeShareTopic(ctx context.Context, topic string, partitions []int32, start map[types.TopicPartition]uint64) kmsg.DescribeShareGroupOffsetsResponseGroupTopic {
	rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	rt.Topic = topic
	t, found, err := s.topic(ctx, topic)
	hw := map[uint32]uint64{}
	if err == nil && found {
		rt.TopicID = s.topicIDs.learn(t)
		if res, err := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic}); err == nil {
			for _, p := range res.Partitions {
				hw[p.Partition] = p.HighWatermark
			}
		}
	}
	for _, p := range partitions {
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
		so, ok := start[types.TopicPartition{Topic: topic, Partition: uint32(max(p, 0))}]
		switch {
		case err != nil:
			rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case !found || p < 0:
			rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
		case ok:
			rp.StartOffset, rp.LeaderEpoch = int64(so), 0
			if h, known := hw[uint32(p)]; known && h >= so {
				rp.Lag = int64(h - so)
			}
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return rt
}

// alterShareGroupOffsets moves an empty share group's start offsets (-1: the high watermark, -2:
// the log start offset), every partition or none.
func (s *Server) alterShareGroupOffsets(ctx context.Context, r *kmsg.AlterShareGroupOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrAlterShareGroupOffsetsResponse()
	resp.SetVersion(r.Version)
	msg := &types.MsgAlterShareGroupOffsets{GroupId: r.GroupID}
	for _, t := range r.Topics {
		res, err := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: t.Topic})
		for _, p := range t.Partitions {
			o := types.ShareOffset{Topic: t.Topic, Partition: uint32(max(p.Partition, 0)), StartOffset: uint64(max(p.StartOffset, 0))}
			if p.StartOffset < 0 && err == nil {
				for _, part := range res.Partitions {
					if part.Partition == o.Partition {
						o.StartOffset = part.HighWatermark
						if p.StartOffset == -2 {
							o.StartOffset = part.LogStartOffset
						}
					}
				}
			}
			msg.Offsets = append(msg.Offsets, o)
		}
	}
	code, errMsg := s.submitShareOffsets(ctx, msg)
	for _, t := range r.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		if tp, found, err := s.topic(ctx, t.Topic); err == nil && found {
			rt.TopicID = s.topicIDs.learn(tp)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, errMsg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// deleteShareGroupOffsets forgets an empty share group's partitions of the topics named: each
// starts afresh when next dealt.
func (s *Server) deleteShareGroupOffsets(ctx context.Context, r *kmsg.DeleteShareGroupOffsetsRequest) kmsg.Response {
	resp := kmsg.NewPtrDeleteShareGroupOffsetsResponse()
	resp.SetVersion(r.Version)
	msg := &types.MsgAlterShareGroupOffsets{GroupId: r.GroupID}
	for _, t := range r.Topics {
		if res, err := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: t.Topic}); err == nil {
			for _, p := range res.Partitions {
				msg.Offsets = append(msg.Offsets, types.ShareOffset{Topic: t.Topic, Partition: p.Partition, Delete: true})
			}
		}
	}
	code, errMsg := int16(0), (*string)(nil)
	if len(msg.Offsets) > 0 {
		code, errMsg = s.submitShareOffsets(ctx, msg)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, errMsg
		if tp, found, err := s.topic(ctx, t.Topic); err == nil && found {
			rt.TopicID = s.topicIDs.learn(tp)
		} else if err == nil {
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// submitShareOffsets sends msg as the connection's account: Kafka's code and message.
func (s *Server) submitShareOffsets(ctx context.Context, msg *types.MsgAlterShareGroupOffsets) (int16, *string) {
	id := s.ident(ctx)
	if id.signer == nil {
		return kerr.GroupAuthorizationFailed.Code, kmsg.StringPtr(errNoSigner.Error())
	}
	msg.Authority = id.signer.Address()
	if err := msg.Validate(); err != nil {
		return kafkaCode(err), kmsg.StringPtr(err.Error())
	}
	return s.submit(ctx, msg)
}
