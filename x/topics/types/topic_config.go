package types

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ConfigType is a Kafka config's type as Kafka numbers it in DescribeConfigs (v3+): the
// values of franz-go's kmsg.ConfigType, which the module does not link (the gateway checks
// that they agree).
type ConfigType int8

const (
	ConfigTypeLong   ConfigType = 5
	ConfigTypeDouble ConfigType = 6
	ConfigTypeList   ConfigType = 7
)

// Kafka's text of a config is parsed and written by the module's clients (the gateway, the
// CLI), never by the keeper: the ratio's float below is no state machine's.

// TopicConfigField is one topic config, declared once for every client of the module: the
// CLI's create-topic and update-topic-config flag, the Kafka config the gateway's CreateTopics,
// AlterConfigs and IncrementalAlterConfigs set, and the value DescribeConfigs shows. Who may
// produce (producer_policy, allowed_producers) is the chain's own, not a Kafka config, and is
// not here.
type TopicConfigField struct {
	// Name is Kafka's config name.
	Name string
	// Type and Doc are Kafka's type of the config and what DescribeConfigs documents it as.
	Type ConfigType
	Doc  string
	// ReadOnly is a config DescribeConfigs shows and no request sets.
	ReadOnly bool
	// Default is the config of a topic that sets none, as DescribeConfigs shows it: what
	// IncrementalAlterConfigs' DELETE, and AlterConfigs leaving the config out, put back.
	Default string

	// Flag is the CLI flag; FlagType names its value in the help (pflag's type names: "int64"
	// shows as int), FlagDefault is its default as the help shows it.
	Flag, FlagType, FlagDefault, FlagUsage string

	// setFlag parses the flag's text as pflag parses its type, into the field.
	setFlag func(c *TopicConfig, text string) error
	// set parses Kafka's text into the field (nil: the default).
	set func(c *TopicConfig, value *string) error
	// get is the field as Kafka's text, of a config whose defaults are applied.
	get func(c TopicConfig) string
}

// SetFlag sets the field from the CLI flag's text; an error is pflag's for the flag's type.
func (f *TopicConfigField) SetFlag(c *TopicConfig, text string) error { return f.setFlag(c, text) }

// Set sets the field from Kafka's text of the config; nil puts back the default. A value
// bftlog cannot hold is a *ConfigError naming the config.
func (f *TopicConfigField) Set(c *TopicConfig, value *string) error {
	if f.ReadOnly {
		return &ConfigError{Name: f.Name, Value: deref(value), Want: "none: the config is read-only"}
	}
	return f.set(c, value)
}

// Value is the field of c as Kafka's text (DescribeConfigs), defaults applied.
func (f *TopicConfigField) Value(c TopicConfig) string { return f.get(c.WithDefaults()) }

// TopicConfigFields are the topic configs, in the order DescribeConfigs lists them.
var TopicConfigFields = []TopicConfigField{
	{
		Name: "cleanup.policy", Type: ConfigTypeList, Default: CleanupPolicyDelete,
		Doc:  "delete: records go by retention.ms and retention.bytes; compact: at least the latest record of every key is kept; compact,delete: both.",
		Flag: "cleanup-policy", FlagType: "string", FlagDefault: CleanupPolicyDelete,
		FlagUsage: "delete (retention), compact (latest record per key) or compact,delete",
		setFlag:   func(c *TopicConfig, s string) error { c.CleanupPolicy = s; return nil },
		set: func(c *TopicConfig, v *string) error {
			c.CleanupPolicy = CleanupPolicyDelete
			if v == nil {
				return nil
			}
			p := strings.ReplaceAll(*v, " ", "")
			switch p {
			case CleanupPolicyDelete, CleanupPolicyCompact, CleanupPolicyCompactDelete, "delete,compact":
			default:
				return &ConfigError{Name: "cleanup.policy", Value: *v, Want: `"delete", "compact" or "compact,delete"`}
			}
			c.CleanupPolicy = p
			return nil
		},
		get: func(c TopicConfig) string { return c.CleanupPolicy },
	},
	longField("retention.ms", "retention-ms", "-1", "how long records are kept, in ms (-1: forever)",
		"How long a record is kept after it was appended, in ms; -1 or 0 keeps records forever.",
		func(c *TopicConfig) *int64 { return &c.RetentionMs }, nil, nil),
	longField("retention.bytes", "retention-bytes", "-1", "retained bytes per partition (-1: unlimited)",
		"The bytes a partition keeps before its oldest batches are deleted; -1 or 0: no limit.",
		func(c *TopicConfig) *int64 { return &c.RetentionBytes }, nil, nil),
	{
		Name: "max.message.bytes", Type: ConfigTypeLong, Default: "0",
		Doc:  "The largest record accepted, encoded and uncompressed, in bytes; 0 means the chain's max_record_bytes param.",
		Flag: "max-record-bytes", FlagType: "uint64", FlagDefault: "0",
		FlagUsage: "largest record accepted, in bytes (0: the module limit)",
		setFlag: func(c *TopicConfig, s string) (err error) {
			c.MaxRecordBytes, err = strconv.ParseUint(s, 0, 64)
			return err
		},
		set: func(c *TopicConfig, v *string) error {
			n, err := kafkaLong("max.message.bytes", v)
			if err != nil {
				return err
			}
			c.MaxRecordBytes = uint64(max(n, 0))
			return nil
		},
		get: func(c TopicConfig) string { return strconv.FormatUint(c.MaxRecordBytes, 10) },
	},
	// Kafka clients say Long.MAX for "forever": held as MaxCompactionMs.
	longField("delete.retention.ms", "delete-retention-ms", "0", "compacted topics: how long tombstones stay, in ms (0: a day)",
		"How long a compacted topic keeps a tombstone (a record with a null value) after it was appended, in ms.",
		func(c *TopicConfig) *int64 { return &c.DeleteRetentionMs },
		func(v int64) int64 { return min(v, MaxCompactionMs) }, TopicConfig.EffectiveDeleteRetentionMs),
	longField("min.compaction.lag.ms", "min-compaction-lag-ms", "0", "compacted topics: records younger than this are never compacted, in ms",
		"No record younger than this, in ms, is removed by compaction.",
		func(c *TopicConfig) *int64 { return &c.MinCompactionLagMs },
		func(v int64) int64 { return min(v, MaxCompactionMs) }, nil),
	{
		Name: "min.cleanable.dirty.ratio", Type: ConfigTypeDouble, Default: "0.5",
		Doc:  "A compaction pass starts once the bytes appended since the last pass are this share of the partition (held in thousandths).",
		Flag: "min-cleanable-dirty-ratio-permille", FlagType: "uint32", FlagDefault: "0",
		FlagUsage: "compacted topics: share of new bytes, in thousandths, that starts a pass (0: 500)",
		setFlag: func(c *TopicConfig, s string) error {
			v, err := strconv.ParseUint(s, 0, 32)
			c.MinCleanableDirtyRatioPermille = uint32(v)
			return err
		},
		set: func(c *TopicConfig, v *string) error {
			c.MinCleanableDirtyRatioPermille = 0
			if v == nil {
				return nil
			}
			r, err := strconv.ParseFloat(*v, 64)
			if err != nil || r < 0 || r > 1 {
				return &ConfigError{Name: "min.cleanable.dirty.ratio", Value: *v, Want: "a ratio from 0 to 1"}
			}
			// Thousandths, at least one: the chain holds no floats, and 0 means the default.
			c.MinCleanableDirtyRatioPermille = uint32(max(math.Round(r*1000), 1))
			return nil
		},
		get: func(c TopicConfig) string {
			return strconv.FormatFloat(float64(c.EffectiveMinCleanableDirtyRatio())/1000, 'f', -1, 64)
		},
	},
}

// longField is a config held in an int64 field: Kafka's Long on the wire, the CLI's int64
// flag. fromKafka bounds what Kafka sets (nil: as given); describe is the value shown (nil:
// the field).
func longField(name, flag, flagDefault, usage, doc string, field func(*TopicConfig) *int64, fromKafka func(int64) int64, describe func(TopicConfig) int64) TopicConfigField {
	if fromKafka == nil {
		fromKafka = func(v int64) int64 { return v }
	}
	if describe == nil {
		describe = func(c TopicConfig) int64 { return *field(&c) }
	}
	return TopicConfigField{
		Name: name, Type: ConfigTypeLong, Doc: doc, Default: strconv.FormatInt(describe(TopicConfig{}), 10),
		Flag: flag, FlagType: "int64", FlagDefault: flagDefault, FlagUsage: usage,
		setFlag: func(c *TopicConfig, s string) (err error) {
			*field(c), err = strconv.ParseInt(s, 0, 64)
			return err
		},
		set: func(c *TopicConfig, v *string) error {
			n, err := kafkaLong(name, v)
			if err != nil {
				return err
			}
			*field(c) = fromKafka(n)
			return nil
		},
		get: func(c TopicConfig) string { return strconv.FormatInt(describe(c), 10) },
	}
}

// kafkaLong parses a Long config's text (nil: 0, the default of every Long config here).
func kafkaLong(name string, v *string) (int64, error) {
	if v == nil {
		return 0, nil
	}
	n, err := strconv.ParseInt(*v, 10, 64)
	if err != nil {
		return 0, &ConfigError{Name: name, Value: *v, Want: "an integer"}
	}
	return n, nil
}

// TopicConfigFieldNamed is the field of the Kafka config name, or nil.
func TopicConfigFieldNamed(name string) *TopicConfigField {
	for i := range TopicConfigFields {
		if TopicConfigFields[i].Name == name {
			return &TopicConfigFields[i]
		}
	}
	return nil
}

// SetKafkaConfig sets the Kafka config name on c from its text (nil: the default); a config
// bftlog does not hold, or a value it cannot, is a *ConfigError naming it.
func SetKafkaConfig(c *TopicConfig, name string, value *string) error {
	f := TopicConfigFieldNamed(name)
	if f == nil {
		return &ConfigError{Name: name}
	}
	return f.Set(c, value)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ConfigError is a Kafka config refused: one bftlog does not hold (Want empty), or a value
// that is not one it can (Kafka's INVALID_CONFIG, with this message).
type ConfigError struct{ Name, Value, Want string }

func (e *ConfigError) Error() string {
	if e.Want == "" {
		return "unsupported topic config " + e.Name
	}
	return fmt.Sprintf("invalid value %q for topic config %s: want %s", e.Value, e.Name, e.Want)
}
