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
