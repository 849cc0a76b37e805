package kafka

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"google.golang.org/grpc"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// initProducerID hands out producer IDs for idempotent Kafka producers. The chain keeps each
// id's sequences per account (x/topics/keeper/kafka_producers.go), so gateways of a fleet need
// no coordination: ids are random 62-bit numbers, which two gateways do not hand out twice.
func (s *Server) initProducerID(ctx context.Context, r *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.SetVersion(r.Version)
	if r.TransactionalID != nil {
		s.ident(ctx).txns.initProducerID(r, resp)
		return resp
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp
	}
	resp.ProducerID = int64(binary.BigEndian.Uint64(b[:]) >> 2)
	return resp
}

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
			} else if p.Timestamp == -5 {
				// The latest tiered offset (v9+, KIP-1005): nothing is tiered, and Kafka answers
				// a topic without tiered storage with offset -1 and no error.
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

// fetch reads each requested partition from chain state and, while fewer than MinBytes are
// ready, waits for new blocks up to MaxWaitMillis, as a broker waits for new appends. What the
// answer holds stays counted against the connection's bytes until it is sent.
func (s *Server) fetch(ctx context.Context, r *kmsg.FetchRequest) kmsg.Response {
	deadline := time.Now().Add(time.Duration(r.MaxWaitMillis) * time.Millisecond)
	answer := answerOf(ctx)
	codes, failed := s.fetchTopicsByID(ctx, r)
	for {
		resp, bytes, held := s.fetchOnce(ctx, r, codes, answer.conn())
		if bytes >= int(max(r.MinBytes, 1)) || r.MinBytes <= 0 || failed || !time.Now().Before(deadline) || ctx.Err() != nil {
			answer.keep(held)
			return resp
		}
		answer.conn().give(held)
		select {
		case <-ctx.Done():
			return resp
		case <-time.After(min(100*time.Millisecond, time.Until(deadline))):
		}
	}
}

// fetchOnce reads each partition once (a partition named again is answered once, as by a
// broker), within the request's max bytes and MaxFetchBytes; each partition asks the node for
// no more than cb can hold, and what the answer holds is returned. A topic whose entry in codes
// is not 0 (an unknown topic ID) is answered with that code in every partition.
func (s *Server) fetchOnce(ctx context.Context, r *kmsg.FetchRequest, codes []int16, cb *connBytes) (*kmsg.FetchResponse, int, grant) {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(r.Version)
	total := 0
	budget := int(orDefault(s.cfg.MaxFetchBytes, DefaultMaxFetchBytes))
	if r.MaxBytes > 0 {
		budget = min(budget, int(r.MaxBytes))
	}
	var held grant
	seen := map[partitionKey]bool{}
	for ti, t := range r.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		if ti < len(codes) && codes[ti] != 0 {
			for _, p := range t.Partitions {
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.HighWatermark, rp.RecordBatches = p.Partition, codes[ti], -1, []byte{}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		for _, p := range t.Partitions {
			if seen[partitionKey{t.Topic, p.Partition}] {
				continue
			}
			seen[partitionKey{t.Topic, p.Partition}] = true
			// An empty record set, not a null one: librdkafka rejects null.
			// From the constructor: its -1 defaults keep the v12 tagged fields (diverging epoch,
			// current leader, snapshot) out of the response.
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition, rp.RecordBatches = p.Partition, []byte{}
			g := cb.takeUpTo(int64(max(min(int(p.PartitionMaxBytes), budget-total), 0)))
			if p.Partition < 0 || p.FetchOffset < 0 {
				rp.ErrorCode = kerr.OffsetOutOfRange.Code
			} else if g.n > 0 {
				// Whole stored batches, as produced (compressed as they came): the first may
				// start before the fetch offset, and clients skip those records, as with Kafka.
				res, err := s.query.Fetch(ctx, &types.QueryFetchRequest{Topic: t.Topic, Partition: uint32(p.Partition), Offset: uint64(p.FetchOffset),
					MaxBytes: uint64(g.n), MaxRecords: maxFetchRecords, Format: types.FETCH_FORMAT_BATCHES}, grpc.MaxCallRecvMsgSize(maxFetchAnswer))
				if err != nil {
					rp.ErrorCode = s.fetchCode(ctx, t.Topic, p.Partition, p.FetchOffset, err)
				} else {
					rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = int64(res.HighWatermark), int64(res.HighWatermark), int64(res.LogStartOffset)
					if r.Version < 10 && holdsZstd(res.Batches) {
						// As Kafka: a client fetching below v10 cannot read zstd.
						rp.ErrorCode = kerr.UnsupportedCompressionType.Code
					} else {
						rp.RecordBatches = appendBatches(rp.RecordBatches, res.Batches, total, budget)
						g = holdBatches(cb, g, &rp)
						total += len(rp.RecordBatches)
					}
				}
			}
			held = held.plus(cb.trim(g, int64(len(rp.RecordBatches))))
			rt.Partitions = append(rt.Partitions, rp)
		}
		if len(rt.Partitions) > 0 || len(t.Partitions) == 0 {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return resp, total, held
}

// holdBatches extends g to a first batch larger than it (the node sends one whatever the
// limits, so the client makes progress), or drops the batches when the connection cannot hold
// them now: the client asks again.
func holdBatches(cb *connBytes, g grant, rp *kmsg.FetchResponseTopicPartition) grant {
	extra := int64(len(rp.RecordBatches)) - g.n
	if extra <= 0 {
		return g
	}
	more := cb.takeUpTo(extra)
	if more.n < extra {
		cb.trim(more, 0)
		rp.RecordBatches = []byte{}
		return g
	}
	return g.plus(more)
}

// maxFetchRecords is the most records one partition's fetch asks for (the chain's own cap).
const maxFetchRecords = 10_000

// appendBatches appends the stored batches' bytes to out while the response (total bytes so
// far) stays within budget. The chain returns a partition's first batch whatever its size
// (past it, within the partition's max bytes); it is kept when it fits the budget or when the
// response is still empty, so a batch larger than the client's limits is still delivered, as
// Kafka does for the first batch of a fetch (KIP-74).
func appendBatches(out []byte, batches []types.RecordBatch, total, budget int) []byte {
	for _, b := range batches {
		if total+len(out) > 0 && total+len(out)+len(b.RecordBatch) > budget {
			break
		}
		out = append(out, b.RecordBatch...)
	}
	return out
}

// holdsZstd tells whether any of the stored batches is compressed with zstd.
func holdsZstd(batches []types.RecordBatch) bool {
	for _, b := range batches {
		if types.RecordBatchCompression(b.RecordBatch) == types.CompressionZstd {
			return true
		}
	}
	return false
}

// fetchCode is Kafka's code for a failed fetch. A node serving queries on its RPC endpoint
// answers an offset outside the log with the gRPC code Unknown, so such an error is checked
// against the partition's bounds: outside [log start offset, high watermark] is
// OFFSET_OUT_OF_RANGE, which makes clients reset their position.
func (s *Server) fetchCode(ctx context.Context, topic string, partition int32, offset int64, err error) int16 {
	code := queryCode(err)
	if code != kerr.UnknownServerError.Code {
		return code
	}
	res, perr := s.query.Partitions(ctx, &types.QueryPartitionsRequest{Name: topic})
	if perr != nil || int(partition) >= len(res.Partitions) {
		return code
	}
	if lp := res.Partitions[partition]; uint64(offset) < lp.LogStartOffset || uint64(offset) > lp.HighWatermark {
		return kerr.OffsetOutOfRange.Code
	}
	return code
}

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
	for _, kv := range describedConfigs(t.Config) {
		c := kmsg.NewCreateTopicsResponseTopicConfig()
		c.Name, c.Value, c.Source = kv.name, kmsg.StringPtr(kv.value), int8(kmsg.ConfigSourceDynamicTopicConfig)
		rt.Configs = append(rt.Configs, c)
	}
}

// topicConfig maps the Kafka topic configs bftlog knows; any other, or a value that is not
// one bftlog can hold, is refused naming the config (INVALID_CONFIG).
func topicConfig(configs []kmsg.CreateTopicsRequestTopicConfig) (types.TopicConfig, error) {
	cfg := types.TopicConfig{}
	for _, c := range configs {
		if c.Value == nil {
			continue
		}
		if err := setTopicConfig(&cfg, c.Name, c.Value); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// setTopicConfig sets one Kafka topic config on cfg; a nil value puts back its default.
func setTopicConfig(cfg *types.TopicConfig, name string, value *string) error {
	switch name {
	case "retention.ms", "retention.bytes", "max.message.bytes", "delete.retention.ms", "min.compaction.lag.ms":
		var v int64
		if value != nil {
			var err error
			if v, err = strconv.ParseInt(*value, 10, 64); err != nil {
				return &configError{name: name, value: *value, why: "an integer"}
			}
		}
		switch name {
		case "retention.ms":
			cfg.RetentionMs = v
		case "retention.bytes":
			cfg.RetentionBytes = v
		case "delete.retention.ms":
			cfg.DeleteRetentionMs = min(v, types.MaxCompactionMs) // Kafka clients say Long.MAX for "forever"
		case "min.compaction.lag.ms":
			cfg.MinCompactionLagMs = min(v, types.MaxCompactionMs)
		default:
			cfg.MaxRecordBytes = uint64(max(v, 0))
		}
	case "min.cleanable.dirty.ratio":
		cfg.MinCleanableDirtyRatioPermille = 0
		if value != nil {
			v, err := strconv.ParseFloat(*value, 64)
			if err != nil || v < 0 || v > 1 {
				return &configError{name: name, value: *value, why: "a ratio from 0 to 1"}
			}
			// Thousandths, at least one: the chain holds no floats, and 0 means the default.
			cfg.MinCleanableDirtyRatioPermille = uint32(max(math.Round(v*1000), 1))
		}
	case "cleanup.policy":
		cfg.CleanupPolicy = types.CleanupPolicyDelete
		if value != nil {
			p := strings.ReplaceAll(*value, " ", "")
			switch p {
			case types.CleanupPolicyDelete, types.CleanupPolicyCompact, types.CleanupPolicyCompactDelete, "delete,compact":
			default:
				return &configError{name: name, value: *value, why: `"delete", "compact" or "compact,delete"`}
			}
			cfg.CleanupPolicy = p
		}
	default:
		return &configError{name: name}
	}
	return nil
}

// describedConfigs are a topic's configs as DescribeConfigs shows them, defaults applied.
func describedConfigs(c types.TopicConfig) []describedConfig {
	c = c.WithDefaults()
	return []describedConfig{
		{"cleanup.policy", c.CleanupPolicy, kmsg.ConfigTypeList},
		{"retention.ms", strconv.FormatInt(c.RetentionMs, 10), kmsg.ConfigTypeLong},
		{"retention.bytes", strconv.FormatInt(c.RetentionBytes, 10), kmsg.ConfigTypeLong},
		{"max.message.bytes", strconv.FormatUint(c.MaxRecordBytes, 10), kmsg.ConfigTypeLong},
		{"delete.retention.ms", strconv.FormatInt(c.EffectiveDeleteRetentionMs(), 10), kmsg.ConfigTypeLong},
		{"min.compaction.lag.ms", strconv.FormatInt(c.MinCompactionLagMs, 10), kmsg.ConfigTypeLong},
		{"min.cleanable.dirty.ratio", strconv.FormatFloat(float64(c.EffectiveMinCleanableDirtyRatio())/1000, 'f', -1, 64), kmsg.ConfigTypeDouble},
	}
}

type describedConfig struct {
	name, value string
	typ         kmsg.ConfigType
}

type configError struct{ name, value, why string }

func (e *configError) Error() string {
	if e.why == "" {
		return "unsupported topic config " + e.name
	}
	return fmt.Sprintf("invalid value %q for topic config %s: want %s", e.value, e.name, e.why)
}

// submit sends an admin message signed as the connection's identity and answers with Kafka's error code and
// the chain's message (0 and nil when it was committed).
func (s *Server) submit(ctx context.Context, msg sdk.Msg) (int16, *string) {
	if _, err := s.ident(ctx).signer.SubmitAndWait(msg); err != nil {
		return kafkaCode(err), kmsg.StringPtr(err.Error())
	}
	return 0, nil
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

// configTopic is the topic a config resource names, or the Kafka error for it: only topics
// have configs here.
func (s *Server) configTopic(ctx context.Context, typ kmsg.ConfigResourceType, name string) (types.Topic, int16, *string) {
	if typ != kmsg.ConfigResourceTypeTopic {
		return types.Topic{}, kerr.InvalidRequest.Code, kmsg.StringPtr("only topic configs are described and altered")
	}
	t, err := s.query.Topic(ctx, &types.QueryTopicRequest{Name: name})
	if err != nil {
		return types.Topic{}, queryCode(err), nil
	}
	return t.Topic, 0, nil
}

func (s *Server) describeConfigs(ctx context.Context, r *kmsg.DescribeConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrDescribeConfigsResponse()
	resp.SetVersion(r.Version)
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		t, code, msg := s.configTopic(ctx, res.ResourceType, res.ResourceName)
		if code != 0 {
			rr.ErrorCode, rr.ErrorMessage = code, msg
			resp.Resources = append(resp.Resources, rr)
			continue
		}
		for _, kv := range describedConfigs(t.Config) {
			if len(res.ConfigNames) > 0 && !slices.Contains(res.ConfigNames, kv.name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value = kv.name, kmsg.StringPtr(kv.value)
			rc.Source, rc.ConfigType = kmsg.ConfigSourceDynamicTopicConfig, kv.typ
			rr.Configs = append(rr.Configs, rc)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// incrementalAlterConfigs applies SET, DELETE (back to the default), APPEND and SUBTRACT (of
// cleanup.policy's list) to each topic's current config and submits the whole config as the
// connection's identity (the topic's owner, or the chain refuses it).
func (s *Server) incrementalAlterConfigs(ctx context.Context, r *kmsg.IncrementalAlterConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrIncrementalAlterConfigsResponse()
	resp.SetVersion(r.Version)
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = s.alterTopicConfig(ctx, res.ResourceType, res.ResourceName, r.ValidateOnly, func(cfg *types.TopicConfig) error {
			*cfg = cfg.WithDefaults()
			return alterConfig(cfg, res.Configs)
		})
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// alterConfigs is the legacy AlterConfigs: the configs given replace the topic's Kafka configs,
// and every one not given goes back to its default, as in Kafka. Who may produce (the chain's
// producer policy, which is not a Kafka config) is kept.
func (s *Server) alterConfigs(ctx context.Context, r *kmsg.AlterConfigsRequest) kmsg.Response {
	resp := kmsg.NewPtrAlterConfigsResponse()
	resp.SetVersion(r.Version)
	for _, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = res.ResourceType, res.ResourceName
		rr.ErrorCode, rr.ErrorMessage = s.alterTopicConfig(ctx, res.ResourceType, res.ResourceName, r.ValidateOnly, func(cfg *types.TopicConfig) error {
			for _, kv := range describedConfigs(*cfg) {
				if err := setTopicConfig(cfg, kv.name, nil); err != nil {
					return err
				}
			}
			for _, c := range res.Configs {
				if err := setTopicConfig(cfg, c.Name, c.Value); err != nil {
					return err
				}
			}
			return nil
		})
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

// alterTopicConfig applies edit to a topic's config as the chain holds it and, unless
// validateOnly, submits the result as MsgUpdateTopicConfig signed by the connection's account:
// Kafka's error code and message for the resource.
func (s *Server) alterTopicConfig(ctx context.Context, typ kmsg.ConfigResourceType, name string, validateOnly bool, edit func(*types.TopicConfig) error) (int16, *string) {
	t, code, msg := s.configTopic(ctx, typ, name)
	if code != 0 {
		return code, msg
	}
	cfg := t.Config
	if err := edit(&cfg); err != nil {
		return kerr.InvalidConfig.Code, kmsg.StringPtr(err.Error())
	}
	if validateOnly {
		return 0, nil
	}
	return s.submit(ctx, &types.MsgUpdateTopicConfig{Authority: s.ident(ctx).signer.Address(), Name: name, Config: cfg})
}

func alterConfig(cfg *types.TopicConfig, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			if op.Value == nil {
				return &configError{name: op.Name, why: "a value to set"}
			}
			if err := setTopicConfig(cfg, op.Name, op.Value); err != nil {
				return err
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if err := setTopicConfig(cfg, op.Name, nil); err != nil {
				return err
			}
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if op.Name != "cleanup.policy" || op.Value == nil {
				return &configError{name: op.Name, why: "cleanup.policy, the one list config, with a value"}
			}
			policies := strings.Split(cfg.WithDefaults().CleanupPolicy, ",")
			for _, v := range strings.Split(strings.ReplaceAll(*op.Value, " ", ""), ",") {
				i := slices.Index(policies, v)
				switch {
				case op.Op == kmsg.IncrementalAlterConfigOpAppend && i < 0:
					policies = append(policies, v)
				case op.Op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0:
					policies = slices.Delete(policies, i, i+1)
				}
			}
			joined := strings.Join(policies, ",")
			if joined == "" {
				return &configError{name: op.Name, value: *op.Value, why: "a policy left after subtracting"}
			}
			if err := setTopicConfig(cfg, op.Name, &joined); err != nil {
				return err
			}
		default:
			return &configError{name: op.Name, why: "a known operation (SET, DELETE, APPEND, SUBTRACT)"}
		}
	}
	*cfg = cfg.WithDefaults()
	return nil
}
