package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// A Kafka config the table does not hold, or a read-only one, is refused naming the config;
// the refusal leaves the config as it was.
func TestSetKafkaConfigRefusals(t *testing.T) {
	cfg := types.TopicConfig{RetentionMs: 5}
	require.EqualError(t, types.SetKafkaConfig(&cfg, "segment.bytes", nil), "unsupported topic config segment.bytes")
	require.EqualError(t, types.SetKafkaConfig(&cfg, "retention.ms", new("soon")), `invalid value "soon" for topic config retention.ms: want an integer`)
	ro := *types.TopicConfigFieldNamed("retention.ms")
	ro.ReadOnly = true
	require.EqualError(t, ro.Set(&cfg, new("7")), `invalid value "7" for topic config retention.ms: want none: the config is read-only`)
	require.Equal(t, types.TopicConfig{RetentionMs: 5}, cfg)
	require.NoError(t, types.SetKafkaConfig(&cfg, "retention.ms", new("7")))
	require.Equal(t, int64(7), cfg.RetentionMs)
}
