package types

import (
	"cosmossdk.io/core/address"
	errorsmod "cosmossdk.io/errors"
)

// DefaultGenesis is the empty log with default params.
func DefaultGenesis() *GenesisState {
	return &GenesisState{Params: DefaultParams()}
}

// Validate checks the whole state for consistency: every topic has exactly its partitions,
// batches are in order without overlaps up to the high watermark, and the counters match the
// stored batches. Batches may start below the log start offset: MsgDeleteRecords moves it
// without deleting them, and the EndBlocker deletes them later (they are exported meanwhile).
func (gs GenesisState) Validate(ac address.Codec) error {
	if err := gs.Params.Validate(); err != nil {
		return err
	}
	topics := make(map[string]Topic, len(gs.Topics))
	for _, t := range gs.Topics {
		if err := ValidateTopicName(t.Name); err != nil {
			return err
		}
		if _, dup := topics[t.Name]; dup {
			return errorsmod.Wrapf(ErrInvalidGenesis, "topic %s appears twice", t.Name)
		}
		if _, err := ac.StringToBytes(t.Owner); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "topic %s owner: %v", t.Name, err)
		}
		// Only structure is checked against existing objects, never the current limits
		// (max_partitions_per_topic, max_record_bytes, max_group_members, ...): governance may
		// lower a limit below what existing topics and groups already have, the limits apply to
		// new actions, and the exported state must still validate and import.
		if t.Partitions == 0 {
			return errorsmod.Wrapf(ErrInvalidGenesis, "topic %s has no partitions", t.Name)
		}
		if err := t.Config.ValidateBasic(ac); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "topic %s: %v", t.Name, err)
		}
		if err := t.Deposit.Validate(); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "topic %s deposit: %v", t.Name, err)
		}
		topics[t.Name] = t
	}

	parts := make(map[TopicPartition]Partition, len(gs.Partitions))
	for _, p := range gs.Partitions {
		t, ok := topics[p.Topic]
		if !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s of unknown topic", p.Label())
		}
		if p.Partition >= t.Partitions {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s beyond the topic's %d partitions", p.Label(), t.Partitions)
		}
		k := TopicPartition{p.Topic, p.Partition}
		if _, dup := parts[k]; dup {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s appears twice", p.Label())
		}
		if p.LogStartOffset > p.HighWatermark {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s: log start offset %d above high watermark %d", p.Label(), p.LogStartOffset, p.HighWatermark)
		}
		parts[k] = p
	}
	for _, t := range gs.Topics {
		for i := uint32(0); i < t.Partitions; i++ {
			if _, ok := parts[TopicPartition{t.Name, i}]; !ok {
				return errorsmod.Wrapf(ErrInvalidGenesis, "topic %s lacks partition %d", t.Name, i)
			}
		}
	}

	// Batches must be listed in store order, so each partition's batches come in offset order.
	type tally struct {
		next, records, bytes uint64
		lastTime             int64
	}
	tallies := make(map[TopicPartition]*tally, len(parts))
	for _, b := range gs.Batches {
		k := TopicPartition{b.Topic, b.Partition}
		p, ok := parts[k]
		if !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "batch at %s/%d for unknown partition", b.Topic, b.Partition)
		}
		tl := tallies[k]
		if tl == nil {
			tl = &tally{} // a first batch may lie below the log start offset (MsgDeleteRecords)
			tallies[k] = tl
		}
		if err := b.Batch.CheckStored(); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "batch at %s offset %d: %v", p.Label(), b.Batch.BaseOffset, err)
		}
		// Compaction removes whole batches, so a batch may start past the one before it ends.
		if b.Batch.BaseOffset < tl.next {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s: batch at offset %d overlaps the one before it (next offset %d)", p.Label(), b.Batch.BaseOffset, tl.next)
		}
		size := b.Batch.StoredSize()
		if size != b.Batch.SizeBytes {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s: batch at offset %d says %d bytes, records hold %d", p.Label(), b.Batch.BaseOffset, b.Batch.SizeBytes, size)
		}
		if _, err := ac.StringToBytes(b.Batch.Producer); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s: batch at offset %d producer: %v", p.Label(), b.Batch.BaseOffset, err)
		}
		// ListOffsets' binary search and time retention rely on LogAppendTime never decreasing.
		if b.Batch.LogAppendTimeMs < tl.lastTime {
			return errorsmod.Wrapf(ErrInvalidGenesis, "partition %s: batch at offset %d appended before the batch in front of it", p.Label(), b.Batch.BaseOffset)
		}
		tl.lastTime = b.Batch.LogAppendTimeMs
		tl.next = b.Batch.LastOffset() + 1
		tl.records += uint64(b.Batch.RecordCount)
		tl.bytes += size
	}
	for _, p := range gs.Partitions {
		tl := tallies[TopicPartition{p.Topic, p.Partition}]
		if tl == nil {
			tl = &tally{next: p.LogStartOffset}
		}
		if tl.next != p.HighWatermark || tl.records != p.RecordCount || tl.bytes != p.ByteCount {
			return errorsmod.Wrapf(ErrInvalidGenesis,
				"partition %s: batches give high watermark %d, %d records, %d bytes; partition says %d, %d, %d",
				p.Label(), tl.next, tl.records, tl.bytes, p.HighWatermark, p.RecordCount, p.ByteCount)
		}
	}

	if err := gs.validateGroups(ac, parts); err != nil {
		return err
	}
	return gs.validateProducers(ac, parts)
}

// validateGroups checks the consumer groups, their members and assignments, and their
// committed offsets.
func (gs GenesisState) validateGroups(ac address.Codec, parts map[TopicPartition]Partition) error {
	groups := make(map[string]Group, len(gs.Groups))
	for _, g := range gs.Groups {
		if err := ValidateGroupID(g.GroupId); err != nil {
			return err
		}
		if _, dup := groups[g.GroupId]; dup {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s appears twice", g.GroupId)
		}
		if err := g.Deposit.Validate(); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s deposit: %v", g.GroupId, err)
		}
		if _, err := ac.StringToBytes(g.Admin); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s admin: %v", g.GroupId, err)
		}
		if g.SessionTimeoutMs < MinSessionTimeoutMs || g.SessionTimeoutMs > MaxSessionTimeoutMs {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s session timeout %d ms out of bounds", g.GroupId, g.SessionTimeoutMs)
		}
		if _, ok := Assignor_name[int32(g.Assignor)]; !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s: unknown assignor %d", g.GroupId, g.Assignor)
		}
		// The join policy is the group's access control: a malformed allowlist in genesis would
		// admit nobody or be unreadable on every join.
		if err := ValidateJoinPolicy(g.JoinPolicy, g.AllowedMembers, func(a string) error {
			_, err := ac.StringToBytes(a)
			return err
		}); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s join policy: %v", g.GroupId, err)
		}
		if _, ok := GroupKind_name[int32(g.Kind)]; !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s: unknown kind %d", g.GroupId, g.Kind)
		}
		groups[g.GroupId] = g
	}
	type memberKey struct{ group, member string }
	// groupPartitionKey is a (group, topic, partition).
	type groupPartitionKey struct {
		group string
		TopicPartition
	}
	members := map[memberKey]bool{}
	owned := map[groupPartitionKey]string{}
	for _, m := range gs.Members {
		if g, ok := groups[m.GroupId]; !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "member %s of unknown group %s", m.Member, m.GroupId)
		} else if g.Kind == GROUP_KIND_KAFKA || g.Kind == GROUP_KIND_CONSUMER || g.Kind == GROUP_KIND_SHARE {
			return errorsmod.Wrapf(ErrInvalidGenesis, "native member %s of Kafka group %s", m.Member, m.GroupId)
		}
		if _, err := ac.StringToBytes(m.Member); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "member of group %s: %v", m.GroupId, err)
		}
		if members[memberKey{m.GroupId, m.Member}] {
			return errorsmod.Wrapf(ErrInvalidGenesis, "member %s of group %s appears twice", m.Member, m.GroupId)
		}
		members[memberKey{m.GroupId, m.Member}] = true
		if m.ExpiresAtMs <= 0 {
			return errorsmod.Wrapf(ErrInvalidGenesis, "member %s of group %s has no session expiry", m.Member, m.GroupId)
		}
		for _, tp := range m.Assignment {
			for _, p := range tp.Partitions {
				k := groupPartitionKey{m.GroupId, TopicPartition{tp.Topic, p}}
				if owner, taken := owned[k]; taken {
					return errorsmod.Wrapf(ErrInvalidGenesis, "group %s assigns %s/%d to both %s and %s", m.GroupId, tp.Topic, p, owner, m.Member)
				}
				owned[k] = m.Member
			}
		}
	}
	seen := map[groupPartitionKey]bool{}
	for _, o := range gs.Offsets {
		if _, ok := groups[o.GroupId]; !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "offset of unknown group %s", o.GroupId)
		}
		p, ok := parts[TopicPartition{o.Topic, o.Partition}]
		if !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s offset for unknown partition %s/%d", o.GroupId, o.Topic, o.Partition)
		}
		if o.Offset > p.HighWatermark {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s offset %d above %s's high watermark %d", o.GroupId, o.Offset, p.Label(), p.HighWatermark)
		}
		k := groupPartitionKey{o.GroupId, TopicPartition{o.Topic, o.Partition}}
		if seen[k] {
			return errorsmod.Wrapf(ErrInvalidGenesis, "group %s offset for %s appears twice", o.GroupId, p.Label())
		}
		seen[k] = true
	}
	return validateShareGenesis(gs, groups)
}

// validateProducers checks the idempotent-producer states: one per (topic, partition,
// producer), on a known partition, and within its high watermark.
func (gs GenesisState) validateProducers(ac address.Codec, parts map[TopicPartition]Partition) error {
	type producerKey struct {
		TopicPartition
		producer string
	}
	producers := map[producerKey]bool{}
	for _, ps := range gs.ProducerStates {
		pk := producerKey{TopicPartition{ps.Topic, ps.Partition}, ps.Producer}
		if producers[pk] {
			return errorsmod.Wrapf(ErrInvalidGenesis, "producer state of %s/%d for %s appears twice", ps.Topic, ps.Partition, ps.Producer)
		}
		producers[pk] = true
		p, ok := parts[TopicPartition{ps.Topic, ps.Partition}]
		if !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "producer state for unknown partition %s/%d", ps.Topic, ps.Partition)
		}
		if _, err := ac.StringToBytes(ps.Producer); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "producer state of %s: %v", p.Label(), err)
		}
		if ps.LastSequence == 0 || ps.BaseOffset+uint64(ps.Count) > p.HighWatermark {
			return errorsmod.Wrapf(ErrInvalidGenesis, "producer state of %s for %s is inconsistent", p.Label(), ps.Producer)
		}
	}
	type kafkaKey struct {
		producerKey
		id int64
	}
	kafka := map[kafkaKey]bool{}
	for _, ks := range gs.KafkaProducerStates {
		kk := kafkaKey{producerKey{TopicPartition{ks.Topic, ks.Partition}, ks.Producer}, ks.ProducerId}
		if kafka[kk] {
			return errorsmod.Wrapf(ErrInvalidGenesis, "Kafka producer %d of %s on %s/%d appears twice", ks.ProducerId, ks.Producer, ks.Topic, ks.Partition)
		}
		kafka[kk] = true
		p, ok := parts[TopicPartition{ks.Topic, ks.Partition}]
		if !ok {
			return errorsmod.Wrapf(ErrInvalidGenesis, "Kafka producer state for unknown partition %s/%d", ks.Topic, ks.Partition)
		}
		if _, err := ac.StringToBytes(ks.Producer); err != nil {
			return errorsmod.Wrapf(ErrInvalidGenesis, "Kafka producer state of %s: %v", p.Label(), err)
		}
		if ks.ProducerId < 0 || len(ks.Batches) == 0 || len(ks.Batches) > 5 {
			return errorsmod.Wrapf(ErrInvalidGenesis, "Kafka producer state of %s for %s is inconsistent", p.Label(), ks.Producer)
		}
		for _, b := range ks.Batches {
			if b.BaseOffset+uint64(b.Count) > p.HighWatermark {
				return errorsmod.Wrapf(ErrInvalidGenesis, "Kafka producer state of %s for %s is past the high watermark", p.Label(), ks.Producer)
			}
		}
	}
	return nil
}

// validateShareGenesis checks share groups' state: of share groups, once each, each partition's
// runs tiling its in-flight window within the bounds.
func validateShareGenesis(gs GenesisState, groups map[string]Group) error {
	share := map[string]bool{}
	for _, sg := range gs.ShareGroups {
		if g, ok := groups[sg.GroupId]; !ok || g.Kind != GROUP_KIND_SHARE || share[sg.GroupId] {
			return errorsmod.Wrapf(ErrInvalidGenesis, "share group state of %s, not one share group", sg.GroupId)
		}
		share[sg.GroupId] = true
	}
	type key struct {
		group string
		tp    TopicPartition
	}
	seen := map[key]bool{}
	for _, sp := range gs.SharePartitions {
		k := key{sp.GroupId, TopicPartition{sp.Topic, sp.Partition}}
		if g, ok := groups[sp.GroupId]; !ok || g.Kind != GROUP_KIND_SHARE || seen[k] {
			return errorsmod.Wrapf(ErrInvalidGenesis, "share partition %s/%d of %s, not once of a share group", sp.Topic, sp.Partition, sp.GroupId)
		}
		seen[k] = true
		if sp.EndOffset < sp.StartOffset || sp.EndOffset-sp.StartOffset > MaxShareInFlightRecords || len(sp.Ranges) > MaxShareRanges {
			return errorsmod.Wrapf(ErrInvalidGenesis, "share partition %s/%d of %s past its bounds", sp.Topic, sp.Partition, sp.GroupId)
		}
		next := sp.StartOffset
		for _, r := range sp.Ranges {
			if r.FirstOffset != next || r.LastOffset < r.FirstOffset {
				return errorsmod.Wrapf(ErrInvalidGenesis, "share partition %s/%d of %s: runs do not tile [%d, %d)", sp.Topic, sp.Partition, sp.GroupId, sp.StartOffset, sp.EndOffset)
			}
			next = r.LastOffset + 1
		}
		if next != sp.EndOffset {
			return errorsmod.Wrapf(ErrInvalidGenesis, "share partition %s/%d of %s: runs do not tile [%d, %d)", sp.Topic, sp.Partition, sp.GroupId, sp.StartOffset, sp.EndOffset)
		}
	}
	return nil
}
