package types

import errorsmod "cosmossdk.io/errors"

// Session timeout bounds and default, in milliseconds of block time.
const (
	DefaultSessionTimeoutMs = 30_000
	MinSessionTimeoutMs     = 1_000
	MaxSessionTimeoutMs     = 3_600_000
)

// ValidateGroupID applies the topic-name rule to group ids: 1-249 of [a-zA-Z0-9._-].
func ValidateGroupID(id string) error {
	if err := ValidateTopicName(id); err != nil {
		return errorsmod.Wrapf(ErrInvalidGroupID, "group id %q: allowed are 1-249 characters of [a-zA-Z0-9._-]", truncate(id))
	}
	return nil
}

// RebalanceGasPerUnit is the gas a rebalance costs per (member, subscribed partition).
const RebalanceGasPerUnit = 10

// MaxGroupAllowlist bounds a group's allowed_members (read on every join).
const MaxGroupAllowlist = 256

// ValidateJoinPolicy checks a join policy and its allowlist; addrOK validates one address.
func ValidateJoinPolicy(policy JoinPolicy, allowed []string, addrOK func(string) error) error {
	if _, ok := JoinPolicy_name[int32(policy)]; !ok {
		return errorsmod.Wrapf(ErrInvalidRequest, "unknown join policy %d", policy)
	}
	if policy != JOIN_POLICY_ALLOWLIST && len(allowed) > 0 {
		return errorsmod.Wrap(ErrInvalidRequest, "allowed members apply only to JOIN_POLICY_ALLOWLIST")
	}
	if len(allowed) > MaxGroupAllowlist {
		return errorsmod.Wrapf(ErrInvalidRequest, "%d allowed members, at most %d", len(allowed), MaxGroupAllowlist)
	}
	seen := make(map[string]bool, len(allowed))
	for _, a := range allowed {
		if err := addrOK(a); err != nil {
			return err
		}
		if seen[a] {
			return errorsmod.Wrapf(ErrInvalidRequest, "allowed member %s listed twice", a)
		}
		seen[a] = true
	}
	return nil
}

// MaxDeleteGroupOffsetsPartitions bounds the partitions of one MsgDeleteGroupOffsets, as
// MsgDeleteRecords's (a few reads and one delete per partition). A client with more sends
// several messages.
const MaxDeleteGroupOffsetsPartitions = MaxDeleteRecordsPartitions
