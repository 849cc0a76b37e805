package types

import (
	"fmt"

	"cosmossdk.io/core/address"
	errorsmod "cosmossdk.io/errors"
)

// MaxTopicNameLength is Kafka's limit on topic names.
const MaxTopicNameLength = 249

// ValidateTopicName applies Kafka's rule: 1-249 characters of [a-zA-Z0-9._-], and not "." or "..".
func ValidateTopicName(name string) error {
	if len(name) == 0 {
		return errorsmod.Wrap(ErrInvalidTopicName, "topic name is empty")
	}
	if len(name) > MaxTopicNameLength {
		return errorsmod.Wrapf(ErrInvalidTopicName, "topic name has %d characters, the limit is %d", len(name), MaxTopicNameLength)
	}
	if name == "." || name == ".." {
		return errorsmod.Wrapf(ErrInvalidTopicName, "topic name %q is reserved", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return errorsmod.Wrapf(ErrInvalidTopicName, "topic name %q has character %q at position %d; allowed are [a-zA-Z0-9._-]", truncate(name), c, i)
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// Kafka's cleanup.policy values: "delete" (records go by retention time and size), "compact"
// (at least the latest record of every key is kept) and both.
const (
	CleanupPolicyDelete        = "delete"
	CleanupPolicyCompact       = "compact"
	CleanupPolicyCompactDelete = "compact,delete"
)

// Compaction defaults, Kafka's: delete.retention.ms one day, min.cleanable.dirty.ratio 0.5;
// MaxCompactionMs (about 317 years) bounds delete.retention.ms and min.compaction.lag.ms.
const (
	MaxCompactionMs                       = 10_000_000_000_000
	DefaultDeleteRetentionMs              = 86_400_000
	DefaultMinCleanableDirtyRatioPermille = 500
)

// WithDefaults is the config as the keeper stores it: an empty cleanup policy is "delete",
// "delete,compact" is written "compact,delete".
func (c TopicConfig) WithDefaults() TopicConfig {
	switch c.CleanupPolicy {
	case "":
		c.CleanupPolicy = CleanupPolicyDelete
	case "delete,compact":
		c.CleanupPolicy = CleanupPolicyCompactDelete
	}
	return c
}

// Compacts tells whether the topic keeps the latest record per key (cleanup.policy compact).
func (c TopicConfig) Compacts() bool {
	return c.CleanupPolicy == CleanupPolicyCompact || c.CleanupPolicy == CleanupPolicyCompactDelete || c.CleanupPolicy == "delete,compact"
}

// Deletes tells whether retention by time and size applies (cleanup.policy delete).
func (c TopicConfig) Deletes() bool { return c.CleanupPolicy != CleanupPolicyCompact }

// EffectiveDeleteRetentionMs is how long tombstones stay (delete.retention.ms).
func (c TopicConfig) EffectiveDeleteRetentionMs() int64 {
	if c.DeleteRetentionMs == 0 {
		return DefaultDeleteRetentionMs
	}
	return c.DeleteRetentionMs
}

// EffectiveMinCleanableDirtyRatio is min.cleanable.dirty.ratio in thousandths.
func (c TopicConfig) EffectiveMinCleanableDirtyRatio() uint32 {
	if c.MinCleanableDirtyRatioPermille == 0 {
		return DefaultMinCleanableDirtyRatioPermille
	}
	return c.MinCleanableDirtyRatioPermille
}

// ValidateBasic checks a config without chain state; ValidateAgainst adds the params.
func (c TopicConfig) ValidateBasic(ac address.Codec) error {
	switch c.CleanupPolicy {
	case "", CleanupPolicyDelete, CleanupPolicyCompact, CleanupPolicyCompactDelete, "delete,compact":
	default:
		return errorsmod.Wrapf(ErrInvalidConfig, "cleanup_policy %q: want %q, %q or %q", truncate(c.CleanupPolicy), CleanupPolicyDelete, CleanupPolicyCompact, CleanupPolicyCompactDelete)
	}
	// Bounded so that block time plus either never overflows (a deadline that wrapped would
	// be due in every block).
	if c.DeleteRetentionMs < 0 || c.DeleteRetentionMs > MaxCompactionMs {
		return errorsmod.Wrapf(ErrInvalidConfig, "delete_retention_ms %d: want 0 (the default, a day) to %d", c.DeleteRetentionMs, int64(MaxCompactionMs))
	}
	if c.MinCompactionLagMs < 0 || c.MinCompactionLagMs > MaxCompactionMs {
		return errorsmod.Wrapf(ErrInvalidConfig, "min_compaction_lag_ms %d: want 0 to %d", c.MinCompactionLagMs, int64(MaxCompactionMs))
	}
	if c.MinCleanableDirtyRatioPermille > 1000 {
		return errorsmod.Wrapf(ErrInvalidConfig, "min_cleanable_dirty_ratio_permille %d is above 1000 (a ratio of 1)", c.MinCleanableDirtyRatioPermille)
	}
	if c.RetentionMs < -1 {
		return errorsmod.Wrapf(ErrInvalidConfig, "retention_ms %d: use -1 for unlimited", c.RetentionMs)
	}
	if c.RetentionBytes < -1 {
		return errorsmod.Wrapf(ErrInvalidConfig, "retention_bytes %d: use -1 for unlimited", c.RetentionBytes)
	}
	if _, ok := ProducerPolicy_name[int32(c.ProducerPolicy)]; !ok {
		return errorsmod.Wrapf(ErrInvalidConfig, "unknown producer_policy %d", c.ProducerPolicy)
	}
	if c.ProducerPolicy != PRODUCER_POLICY_ALLOWLIST && len(c.AllowedProducers) > 0 {
		return errorsmod.Wrap(ErrInvalidConfig, "allowed_producers needs producer_policy ALLOWLIST")
	}
	seen := make(map[string]struct{}, len(c.AllowedProducers))
	for _, p := range c.AllowedProducers {
		if _, err := ac.StringToBytes(p); err != nil {
			return errorsmod.Wrapf(ErrInvalidConfig, "allowed producer %q: %v", p, err)
		}
		if _, dup := seen[p]; dup {
			return errorsmod.Wrapf(ErrInvalidConfig, "allowed producer %s is listed twice", p)
		}
		seen[p] = struct{}{}
	}
	return nil
}

// ValidateAgainst checks the parts of a config that depend on the module params.
func (c TopicConfig) ValidateAgainst(p Params) error {
	if c.MaxRecordBytes > p.MaxRecordBytes {
		return errorsmod.Wrapf(ErrInvalidConfig, "max_record_bytes %d exceeds the module limit %d", c.MaxRecordBytes, p.MaxRecordBytes)
	}
	return nil
}

// EffectiveMaxRecordBytes is the record size limit that applies to this topic.
func (c TopicConfig) EffectiveMaxRecordBytes(p Params) uint64 {
	if c.MaxRecordBytes == 0 || c.MaxRecordBytes > p.MaxRecordBytes {
		return p.MaxRecordBytes
	}
	return c.MaxRecordBytes
}

// MayProduce tells whether addr may append to the topic.
func (t Topic) MayProduce(addr string) bool {
	if t.Config.ProducerPolicy != PRODUCER_POLICY_ALLOWLIST || addr == t.Owner {
		return true
	}
	for _, a := range t.Config.AllowedProducers {
		if a == addr {
			return true
		}
	}
	return false
}

// ValidatePartitionCount checks a partition count against the params.
func ValidatePartitionCount(n uint32, p Params) error {
	if n == 0 {
		return errorsmod.Wrap(ErrInvalidPartitionCount, "a topic needs at least one partition")
	}
	if n > p.MaxPartitionsPerTopic {
		return errorsmod.Wrapf(ErrTooManyPartitions, "%d partitions requested, the limit is %d", n, p.MaxPartitionsPerTopic)
	}
	return nil
}

// Label renders a partition as topic/partition, as Kafka tools do.
func (p Partition) Label() string { return fmt.Sprintf("%s/%d", p.Topic, p.Partition) }

// MaxDeleteRecordsPartitions bounds the partitions of one MsgDeleteRecords (the work of the
// message itself is a few reads and one write per partition): four topics of the default
// max_partitions_per_topic. A client with more sends several messages.
const MaxDeleteRecordsPartitions = 1024
