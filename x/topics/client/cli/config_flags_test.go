package cli

import (
	"testing"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Every topic config of the table round-trips through each of its users: the CLI flag given
// to create-topic and update-topic-config sets the field, the field reads as the text the
// gateway's DescribeConfigs answers, and that text, altered back as a Kafka admin client
// sends it (AlterConfigs, IncrementalAlterConfigs' SET), gives the same config. DELETE puts
// back what the table calls the config's default. A config added to the table without a
// sample here fails the test.
func TestTopicConfigRoundTripsFlagToKafkaAndBack(t *testing.T) {
	samples := map[string]struct{ flag, kafka string }{
		"cleanup.policy":            {"compact,delete", "compact,delete"},
		"retention.ms":              {"604800000", "604800000"},
		"retention.bytes":           {"1048576", "1048576"},
		"max.message.bytes":         {"65536", "65536"},
		"delete.retention.ms":       {"3600000", "3600000"},
		"min.compaction.lag.ms":     {"0x3e8", "1000"}, // pflag reads ints in any base
		"min.cleanable.dirty.ratio": {"250", "0.25"},
	}
	require.Len(t, types.TopicConfigFields, len(samples))
	flags := map[string]bool{}
	for _, cmd := range []string{"create-topic", "update-topic-config"} {
		for _, f := range types.TopicConfigFields {
			s, ok := samples[f.Name]
			require.True(t, ok, "no sample for %s", f.Name)
			require.Equal(t, f.Flag, types.TopicConfigFieldNamed(f.Name).Flag)
			flags[f.Flag] = true

			c := newCreateTopicCmd()
			if cmd == "update-topic-config" {
				c = newUpdateTopicConfigCmd()
			}
			fl := c.Flags().Lookup(f.Flag)
			require.NotNil(t, fl, "%s has no --%s", cmd, f.Flag)
			require.Equal(t, f.FlagDefault, fl.DefValue)
			if f.FlagType != "string" {
				require.Error(t, c.Flags().Set(f.Flag, "x"), "--%s checks its value when parsed", f.Flag)
			}
			require.NoError(t, c.Flags().Set(f.Flag, s.flag))
			var fromFlag types.TopicConfig
			require.NoError(t, applyConfigFlags(client.Context{}, c, &fromFlag))
			require.NotEqual(t, types.TopicConfig{}, fromFlag, "--%s sets its field", f.Flag)

			described := f.Value(fromFlag)
			require.Equal(t, s.kafka, described, "%s as DescribeConfigs shows it", f.Name)
			var altered types.TopicConfig
			require.NoError(t, types.SetKafkaConfig(&altered, f.Name, &described))
			require.Equal(t, fromFlag.WithDefaults(), altered.WithDefaults(), "%s altered back", f.Name)

			require.NoError(t, types.SetKafkaConfig(&altered, f.Name, nil))
			require.Equal(t, f.Default, f.Value(altered), "%s deleted is its default", f.Name)
			t.Logf("%s --%s %s: %s=%s, default %s", cmd, f.Flag, s.flag, f.Name, described, f.Default)
		}
	}
	require.Len(t, flags, len(samples), "one flag per config")
	var cfg types.TopicConfig
	require.EqualError(t, types.SetKafkaConfig(&cfg, "segment.bytes", nil), "unsupported topic config segment.bytes")
}
