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

// CleanupPolicyDelete is Kafka's cleanup.policy "delete": records go by retention time and size.
const CleanupPolicyDelete = "delete"

// WithDefaults is the config as the keeper stores it: an empty cleanup policy is "delete".
func (c TopicConfig) WithDefaults() TopicConfig {
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = CleanupPolicyDelete
	}
	return c
}

// ValidateBasic checks a config without chain state; ValidateAgainst adds the params.
func (c TopicConfig) ValidateBasic(ac address.Codec) error {
	if c.CleanupPolicy != "" && c.CleanupPolicy != CleanupPolicyDelete {
		return errorsmod.Wrapf(ErrInvalidConfig, "cleanup_policy %q: only %q (retention by time and size) is supported", truncate(c.CleanupPolicy), CleanupPolicyDelete)
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
