package kafka

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// topicConfig maps the Kafka topic configs bftlog knows (types.TopicConfigFields); any
// other, or a value that is not one bftlog can hold, is refused naming the config
// (INVALID_CONFIG).
func topicConfig(configs []kmsg.CreateTopicsRequestTopicConfig) (types.TopicConfig, error) {
	cfg := types.TopicConfig{}
	for _, c := range configs {
		if c.Value == nil {
			continue
		}
		if err := types.SetKafkaConfig(&cfg, c.Name, c.Value); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// describedConfigSource is where every described value comes from: the topic's own config on
// chain (defaults applied), whether or not its owner set it.
const describedConfigSource = kmsg.ConfigSourceDynamicTopicConfig

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
		for i := range types.TopicConfigFields {
			f := &types.TopicConfigFields[i]
			if len(res.ConfigNames) > 0 && !slices.Contains(res.ConfigNames, f.Name) {
				continue
			}
			rc := kmsg.NewDescribeConfigsResponseResourceConfig()
			rc.Name, rc.Value, rc.ReadOnly = f.Name, kmsg.StringPtr(f.Value(t.Config)), f.ReadOnly
			rc.Source, rc.ConfigType = describedConfigSource, kmsg.ConfigType(f.Type)
			if r.IncludeDocumentation {
				rc.Documentation = kmsg.StringPtr(f.Doc)
			}
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
			for i := range types.TopicConfigFields {
				if f := &types.TopicConfigFields[i]; !f.ReadOnly {
					if err := f.Set(cfg, nil); err != nil {
						return err
					}
				}
			}
			for _, c := range res.Configs {
				if err := types.SetKafkaConfig(cfg, c.Name, c.Value); err != nil {
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
				return &types.ConfigError{Name: op.Name, Want: "a value to set"}
			}
			if err := types.SetKafkaConfig(cfg, op.Name, op.Value); err != nil {
				return err
			}
		case kmsg.IncrementalAlterConfigOpDelete:
			if err := types.SetKafkaConfig(cfg, op.Name, nil); err != nil {
				return err
			}
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			f := types.TopicConfigFieldNamed(op.Name)
			if f == nil || f.Type != types.ConfigTypeList || op.Value == nil {
				return &types.ConfigError{Name: op.Name, Want: "cleanup.policy, the one list config, with a value"}
			}
			policies := strings.Split(f.Value(*cfg), ",")
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
				return &types.ConfigError{Name: op.Name, Value: *op.Value, Want: "a policy left after subtracting"}
			}
			if err := types.SetKafkaConfig(cfg, op.Name, &joined); err != nil {
				return err
			}
		default:
			return &types.ConfigError{Name: op.Name, Want: "a known operation (SET, DELETE, APPEND, SUBTRACT)"}
		}
	}
	*cfg = cfg.WithDefaults()
	return nil
}
