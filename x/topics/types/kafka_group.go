package types

import errorsmod "cosmossdk.io/errors"

// Bounds of Kafka-protocol group messages: every field a member stores is bounded, so a join
// costs bounded gas and a group bounded state (members are bounded by max_group_members).
const (
	// KafkaInitialRebalanceDelayMs lets the members of a new group that start together form one
	// generation (Kafka's group.initial.rebalance.delay.ms, shortened from 3 s).
	KafkaInitialRebalanceDelayMs = 1_000
	MaxKafkaIDLength             = 255
	MaxKafkaProtocols            = 16
	MaxKafkaProtocolMetadata     = 64 << 10
	// MaxKafkaAssignmentBytes bounds one SyncGroup's assignments together.
	MaxKafkaAssignmentBytes = 1 << 20
)

func checkKafkaID(what, s string, required bool) error {
	if required && s == "" {
		return errorsmod.Wrapf(ErrInvalidRequest, "%s is required", what)
	}
	if len(s) > MaxKafkaIDLength {
		return errorsmod.Wrapf(ErrInvalidRequest, "%s of %d bytes, the limit is %d", what, len(s), MaxKafkaIDLength)
	}
	return nil
}

// Validate checks a join's fields (not the signer, which the keeper's address codec checks).
func (m *MsgKafkaJoinGroup) Validate() error {
	if err := ValidateGroupID(m.GroupId); err != nil {
		return err
	}
	for _, c := range []struct {
		what, s  string
		required bool
	}{{"member id", m.MemberId, true}, {"client id", m.ClientId, false}, {"protocol type", m.ProtocolType, true}} {
		if err := checkKafkaID(c.what, c.s, c.required); err != nil {
			return err
		}
	}
	if len(m.Protocols) == 0 || len(m.Protocols) > MaxKafkaProtocols {
		return errorsmod.Wrapf(ErrInvalidRequest, "%d protocols: give 1 to %d", len(m.Protocols), MaxKafkaProtocols)
	}
	seen := map[string]bool{}
	for _, p := range m.Protocols {
		if err := checkKafkaID("protocol name", p.Name, true); err != nil {
			return err
		}
		if seen[p.Name] {
			return errorsmod.Wrapf(ErrInvalidRequest, "protocol %q listed twice", p.Name)
		}
		seen[p.Name] = true
		if len(p.Metadata) > MaxKafkaProtocolMetadata {
			return errorsmod.Wrapf(ErrInvalidRequest, "protocol %q metadata of %d bytes, the limit is %d", p.Name, len(p.Metadata), MaxKafkaProtocolMetadata)
		}
	}
	if m.SessionTimeoutMs < MinSessionTimeoutMs || m.SessionTimeoutMs > MaxSessionTimeoutMs {
		return errorsmod.Wrapf(ErrInvalidSessionTimeout, "%d ms is outside [%d, %d]", m.SessionTimeoutMs, MinSessionTimeoutMs, MaxSessionTimeoutMs)
	}
	if m.RebalanceTimeoutMs < 0 || m.RebalanceTimeoutMs > MaxSessionTimeoutMs {
		return errorsmod.Wrapf(ErrInvalidRequest, "rebalance timeout %d ms is outside [0, %d]", m.RebalanceTimeoutMs, MaxSessionTimeoutMs)
	}
	return nil
}

// Validate checks a SyncGroup's fields.
func (m *MsgKafkaSyncGroup) Validate() error {
	if err := ValidateGroupID(m.GroupId); err != nil {
		return err
	}
	if err := checkKafkaID("member id", m.MemberId, true); err != nil {
		return err
	}
	total := 0
	seen := map[string]bool{}
	for _, a := range m.Assignments {
		if err := checkKafkaID("member id", a.MemberId, true); err != nil {
			return err
		}
		if seen[a.MemberId] {
			return errorsmod.Wrapf(ErrInvalidRequest, "member %q assigned twice", a.MemberId)
		}
		seen[a.MemberId] = true
		total += len(a.Assignment)
	}
	if total > MaxKafkaAssignmentBytes {
		return errorsmod.Wrapf(ErrInvalidRequest, "assignments of %d bytes, the limit is %d", total, MaxKafkaAssignmentBytes)
	}
	return nil
}

// ValidateKafkaMembers checks a heartbeat's or leave's group and member ids.
func ValidateKafkaMembers(group string, ids []string) error {
	if err := ValidateGroupID(group); err != nil {
		return err
	}
	if len(ids) == 0 || len(ids) > 1024 {
		return errorsmod.Wrapf(ErrInvalidRequest, "%d member ids: give 1 to 1024", len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if err := checkKafkaID("member id", id, true); err != nil {
			return err
		}
		if seen[id] {
			return errorsmod.Wrapf(ErrInvalidRequest, "member %q listed twice", id)
		}
		seen[id] = true
	}
	return nil
}
