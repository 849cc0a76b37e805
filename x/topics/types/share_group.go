package types

import (
	"sort"

	errorsmod "cosmossdk.io/errors"
)

// KIP-932 share groups: a queue over a topic's partitions. Members share partitions; the chain
// hands each record to one member at a time with a lock, counts its deliveries, and takes it
// back when the lock runs out or the member releases it.
const (
	// DefaultShareRecordLockDurationMs is share.record.lock.duration.ms's default, Kafka's.
	DefaultShareRecordLockDurationMs = 30_000
	// DefaultShareDeliveryCountLimit is share.delivery.count.limit's default, Kafka's.
	DefaultShareDeliveryCountLimit = 5
	// MaxShareInFlightRecords bounds a share partition's records between its start offset and
	// its end offset (Kafka's group.share.partition.max.record.locks, 2,000).
	MaxShareInFlightRecords = 2_000
	// MaxShareRanges bounds the runs a share partition keeps (each at least one record): it is
	// one store value, rewritten by every fetch.
	MaxShareRanges = 500
	// MaxShareFetchPartitions bounds the partitions one MsgShareFetch names.
	MaxShareFetchPartitions = 1_000
	// ShareHeartbeatIntervalMs is the heartbeat interval gateways tell share consumers.
	ShareHeartbeatIntervalMs = 1_000
)

// Kafka's acknowledgement types.
const (
	ShareAckGap     = 0
	ShareAckAccept  = 1
	ShareAckRelease = 2
	ShareAckReject  = 3
)

// Validate checks a share heartbeat's fields.
func (m *MsgShareGroupHeartbeat) Validate() error {
	if err := ValidateGroupID(m.GroupId); err != nil {
		return err
	}
	for _, c := range []struct {
		what, s  string
		required bool
	}{{"member id", m.MemberId, true}, {"rack id", m.RackId, false}, {"client id", m.ClientId, false}} {
		if err := checkKafkaID(c.what, c.s, c.required); err != nil {
			return err
		}
	}
	if m.MemberEpoch < ConsumerLeaveEpoch {
		return errorsmod.Wrapf(ErrInvalidRequest, "member epoch %d", m.MemberEpoch)
	}
	if len(m.SubscribedTopicNames) > MaxSubscribedTopics {
		return errorsmod.Wrapf(ErrSubscriptionTooLarge, "%d subscribed topics, the limit is %d", len(m.SubscribedTopicNames), MaxSubscribedTopics)
	}
	return validateTopicNames(m.SubscribedTopicNames)
}

// Validate checks a share fetch's fields.
func (m *MsgShareFetch) Validate() error {
	if err := ValidateGroupID(m.GroupId); err != nil {
		return err
	}
	if err := checkKafkaID("member id", m.MemberId, true); err != nil {
		return err
	}
	if err := checkKafkaID("tag", m.Tag, false); err != nil {
		return err
	}
	if len(m.Acknowledgements) > MaxShareFetchPartitions*4 || len(m.Acquire) > MaxShareFetchPartitions {
		return errorsmod.Wrapf(ErrInvalidRequest, "%d acknowledgements and %d partitions to acquire: at most %d and %d", len(m.Acknowledgements), len(m.Acquire), MaxShareFetchPartitions*4, MaxShareFetchPartitions)
	}
	// A partition's acknowledgements come in offset order and never overlap, as Kafka requires:
	// a later one could otherwise undo an earlier one's final state.
	lastAck := map[TopicPartition]uint64{}
	for _, a := range m.Acknowledgements {
		if err := ValidateTopicName(a.Topic); err != nil {
			return err
		}
		tp := TopicPartition{a.Topic, a.Partition}
		if last, ok := lastAck[tp]; ok && a.FirstOffset <= last {
			return errorsmod.Wrapf(ErrInvalidRequest, "acknowledgements of %s/%d out of order or overlapping at offset %d", a.Topic, a.Partition, a.FirstOffset)
		}
		lastAck[tp] = a.LastOffset
		if a.LastOffset < a.FirstOffset || a.LastOffset-a.FirstOffset >= MaxShareInFlightRecords {
			return errorsmod.Wrapf(ErrInvalidRequest, "acknowledgement of offsets %d to %d", a.FirstOffset, a.LastOffset)
		}
		if a.Type > ShareAckReject {
			return errorsmod.Wrapf(ErrInvalidRequest, "acknowledgement type %d", a.Type)
		}
	}
	seen := map[TopicPartition]bool{}
	for _, a := range m.Acquire {
		if err := ValidateTopicName(a.Topic); err != nil {
			return err
		}
		tp := TopicPartition{a.Topic, a.Partition}
		if seen[tp] {
			return errorsmod.Wrapf(ErrInvalidRequest, "%s/%d named twice", a.Topic, a.Partition)
		}
		seen[tp] = true
	}
	return nil
}

// ShareAssignInput is one member's subscription for AssignShare.
type ShareAssignInput struct {
	Member string
	Topics []string
}

// AssignShare is Kafka's simple share assignor: each topic's partitions are dealt in turn to
// the members subscribing to it, by member id; with more members than partitions, members are
// dealt in turn to the partitions instead, so every member reads and every partition is read.
// Deterministic; one entry per member, in the input order.
func AssignShare(members []ShareAssignInput, partitions map[string]uint32) [][]TopicPartitions {
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return members[order[a]].Member < members[order[b]].Member })
	subscribers := map[string][]int{}
	for _, i := range order {
		for _, t := range members[i].Topics {
			if _, ok := partitions[t]; ok && !containsInt(subscribers[t], i) {
				subscribers[t] = append(subscribers[t], i)
			}
		}
	}
	sets := make([]PartitionSet, len(members))
	for i := range sets {
		sets[i] = PartitionSet{}
	}
	for t, subs := range subscribers {
		n := int(partitions[t])
		if n == 0 {
			continue
		}
		if len(subs) <= n {
			for p := 0; p < n; p++ {
				sets[subs[p%len(subs)]][TopicPartition{t, uint32(p)}] = true
			}
			continue
		}
		for k, i := range subs {
			sets[i][TopicPartition{t, uint32(k % n)}] = true
		}
	}
	out := make([][]TopicPartitions, len(members))
	for i := range out {
		out[i] = sets[i].List()
	}
	return out
}

func containsInt(list []int, x int) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// Bounds of share.* configs, Kafka's (group.share.min/max.record.lock.duration.ms and
// group.share.min/max.delivery.count.limit).
const (
	MinShareRecordLockDurationMs = 1_000
	MaxShareRecordLockDurationMs = 3_600_000
	MinShareDeliveryCountLimit   = 2
	MaxShareDeliveryCountLimit   = 10
	// MaxShareOffsets bounds the partitions one MsgAlterShareGroupOffsets names.
	MaxShareOffsets = 1_024
)

// Validate checks a share config.
func (m *MsgSetShareGroupConfig) Validate() error {
	if err := ValidateGroupID(m.GroupId); err != nil {
		return err
	}
	if m.RecordLockDurationMs < MinShareRecordLockDurationMs || m.RecordLockDurationMs > MaxShareRecordLockDurationMs {
		return errorsmod.Wrapf(ErrInvalidConfig, "share.record.lock.duration.ms %d is outside [%d, %d]", m.RecordLockDurationMs, MinShareRecordLockDurationMs, MaxShareRecordLockDurationMs)
	}
	if m.DeliveryCountLimit < MinShareDeliveryCountLimit || m.DeliveryCountLimit > MaxShareDeliveryCountLimit {
		return errorsmod.Wrapf(ErrInvalidConfig, "share.delivery.count.limit %d is outside [%d, %d]", m.DeliveryCountLimit, MinShareDeliveryCountLimit, MaxShareDeliveryCountLimit)
	}
	return nil
}

// Validate checks a share offsets change.
func (m *MsgAlterShareGroupOffsets) Validate() error {
	if err := ValidateGroupID(m.GroupId); err != nil {
		return err
	}
	if len(m.Offsets) == 0 || len(m.Offsets) > MaxShareOffsets {
		return errorsmod.Wrapf(ErrInvalidRequest, "%d partitions: give 1 to %d", len(m.Offsets), MaxShareOffsets)
	}
	seen := map[TopicPartition]bool{}
	for _, o := range m.Offsets {
		if err := ValidateTopicName(o.Topic); err != nil {
			return err
		}
		tp := TopicPartition{o.Topic, o.Partition}
		if seen[tp] {
			return errorsmod.Wrapf(ErrInvalidRequest, "%s/%d named twice", o.Topic, o.Partition)
		}
		seen[tp] = true
	}
	return nil
}
