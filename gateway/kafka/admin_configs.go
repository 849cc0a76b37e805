package kafka

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

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

// configTopic is the topic a config resource names, or the Kafka error for it: only topics
// have configs here.
func (s *Server) configTopic(ctx context.Context, typ kmsg.ConfigResourceType, name string) (types.Topic, int16, *string) {
	if typ != kmsg.ConfigResourceTypeTopic {
		return types.Topic{}, kerr.InvalidRequest.Code, kmsg.StringPtr("only topic configs, and groups' share.* configs with IncrementalAlterConfigs, are described and altered")
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
		if res.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			s.describeGroupConfig(ctx, res, &rr)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
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
		if res.ResourceType == kmsg.ConfigResourceTypeGroupConfig {
			rr.ErrorCode, rr.ErrorMessage = s.alterGroupConfig(ctx, res, r.ValidateOnly)
			resp.Resources = append(resp.Resources, rr)
			continue
		}
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
