package kafka

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/bftlog/bftlog/x/topics/types"
)

// DescribeConfigs answers a topic's configs from the module's table, in its order, each with
// Kafka's type (the table's numbers are kmsg's), read-only flag and source, its value with the
// defaults applied, and its documentation only when asked (v3+ IncludeDocumentation); a
// request naming configs gets only those.
func TestDescribeConfigsFromTheTable(t *testing.T) {
	require.Equal(t, kmsg.ConfigTypeLong, kmsg.ConfigType(types.ConfigTypeLong))
	require.Equal(t, kmsg.ConfigTypeDouble, kmsg.ConfigType(types.ConfigTypeDouble))
	require.Equal(t, kmsg.ConfigTypeList, kmsg.ConfigType(types.ConfigTypeList))

	orders := types.Topic{Name: "orders", Partitions: 1, Config: types.TopicConfig{CleanupPolicy: "compact", RetentionMs: 60_000, MinCleanableDirtyRatioPermille: 125}}
	s := &Server{query: topicsOnly{topics: []types.Topic{orders}}}
	describe := func(docs bool, names ...string) []kmsg.DescribeConfigsResponseResourceConfig {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.SetVersion(4)
		req.IncludeDocumentation = docs
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName, res.ConfigNames = kmsg.ConfigResourceTypeTopic, "orders", names
		req.Resources = append(req.Resources, res)
		resp := s.describeConfigs(context.Background(), req).(*kmsg.DescribeConfigsResponse)
		require.Len(t, resp.Resources, 1)
		require.Zero(t, resp.Resources[0].ErrorCode)
		return resp.Resources[0].Configs
	}

	all := describe(true)
	require.Len(t, all, len(types.TopicConfigFields))
	want := map[string]string{"cleanup.policy": "compact", "retention.ms": "60000", "retention.bytes": "0", "max.message.bytes": "0",
		"delete.retention.ms": "86400000", "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.125"}
	for i, c := range all {
		f := types.TopicConfigFields[i]
		require.Equal(t, f.Name, c.Name)
		require.Equal(t, want[f.Name], *c.Value, f.Name)
		require.Equal(t, kmsg.ConfigType(f.Type), c.ConfigType, f.Name)
		require.Equal(t, f.ReadOnly, c.ReadOnly, f.Name)
		require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, c.Source, f.Name)
		require.NotNil(t, c.Documentation, f.Name)
		require.Equal(t, f.Doc, *c.Documentation)
	}
	some := describe(false, "retention.ms", "min.cleanable.dirty.ratio")
	require.Len(t, some, 2)
	require.Equal(t, "retention.ms", some[0].Name)
	require.Nil(t, some[0].Documentation, "documentation only when asked")
	require.Equal(t, kmsg.ConfigTypeDouble, some[1].ConfigType)
}
