package types

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"

	errorsmod "cosmossdk.io/errors"
)

// KIP-848 consumer groups: the chain computes each member's target assignment (a server
// assignor) and moves members to it incrementally, revoking before reassigning.
const (
	// ConsumerAssignorUniform spreads the subscribed partitions evenly and keeps each member's
	// previous target where it can (Kafka's default server assignor, "uniform").
	ConsumerAssignorUniform = "uniform"
	// ConsumerAssignorRange gives each topic's subscribers consecutive ranges (Kafka's "range").
	ConsumerAssignorRange = "range"
	// ConsumerHeartbeatIntervalMs is the heartbeat interval gateways tell consumers: a
	// heartbeat is answered from the chain's state without a transaction, so a short interval
	// costs a query, and a rebalance moves at the pace of blocks, not of 5 s heartbeats.
	ConsumerHeartbeatIntervalMs = 1_000
	// MaxSubscribedTopics bounds one member's subscription (names or regex matches).
	MaxSubscribedTopics = 1_000
	// MaxTopicRegexLength bounds a subscription regex.
	MaxTopicRegexLength = 255
	// MaxTopicRegexInsts bounds a subscription regex's compiled program: matching a name costs
	// the name's length times the program's size (RE2 runs in linear time, not constant), and
	// a short regex of counted repeats compiles to tens of thousands of instructions.
	MaxTopicRegexInsts = 300
	// ConsumerLeaveEpoch and ConsumerLeaveStaticEpoch are the member epochs of a leave.
	ConsumerLeaveEpoch       = -1
	ConsumerLeaveStaticEpoch = -2
)

// ConsumerAssignors are the server assignors the chain runs, the default first.
var ConsumerAssignors = []string{ConsumerAssignorUniform, ConsumerAssignorRange}

// Validate checks a heartbeat's fields (not the signer, which the keeper's address codec checks).
func (m *MsgConsumerGroupHeartbeat) Validate() error {
	if err := ValidateGroupID(m.GroupId); err != nil {
		return err
	}
	for _, c := range []struct {
		what, s  string
		required bool
	}{{"member id", m.MemberId, true}, {"instance id", m.InstanceId, false}, {"rack id", m.RackId, false}, {"client id", m.ClientId, false}} {
		if err := checkKafkaID(c.what, c.s, c.required); err != nil {
			return err
		}
	}
	if m.MemberEpoch < ConsumerLeaveStaticEpoch {
		return errorsmod.Wrapf(ErrInvalidRequest, "member epoch %d", m.MemberEpoch)
	}
	if m.MemberEpoch == ConsumerLeaveStaticEpoch && m.InstanceId == "" {
		return errorsmod.Wrap(ErrInvalidRequest, "member epoch -2 leaves a static member: give its instance id")
	}
	if m.MemberEpoch < 0 {
		return nil // a leave carries nothing else the chain reads
	}
	if m.ServerAssignor != "" && !slices.Contains(ConsumerAssignors, m.ServerAssignor) {
		return errorsmod.Wrapf(ErrUnsupportedAssignor, "server assignor %q: the chain runs %v", m.ServerAssignor, ConsumerAssignors)
	}
	if m.RebalanceTimeoutMs < 0 || m.RebalanceTimeoutMs > MaxSessionTimeoutMs {
		return errorsmod.Wrapf(ErrInvalidRequest, "rebalance timeout %d ms is outside [0, %d]", m.RebalanceTimeoutMs, MaxSessionTimeoutMs)
	}
	if len(m.SubscribedTopicNames) > MaxSubscribedTopics {
		return errorsmod.Wrapf(ErrSubscriptionTooLarge, "%d subscribed topics, the limit is %d", len(m.SubscribedTopicNames), MaxSubscribedTopics)
	}
	if err := validateTopicNames(m.SubscribedTopicNames); err != nil {
		return err
	}
	if m.SubscribedTopicRegex != "" {
		if _, _, err := CompileTopicRegex(m.SubscribedTopicRegex); err != nil {
			return err
		}
	}
	if m.MemberEpoch == 0 && len(m.Owned) > 0 {
		return errorsmod.Wrap(ErrInvalidRequest, "a join (member epoch 0) owns no partitions")
	}
	if len(m.Owned) > MaxSubscribedTopics {
		return errorsmod.Wrapf(ErrSubscriptionTooLarge, "%d owned topics, the limit is %d", len(m.Owned), MaxSubscribedTopics)
	}
	return nil
}

// validateTopicNames checks a subscription's names: valid, sorted and each once, so a chain
// compares and merges subscriptions in linear time (gateways sort what clients send).
func validateTopicNames(names []string) error {
	for i, t := range names {
		if err := ValidateTopicName(t); err != nil {
			return err
		}
		if i > 0 && names[i-1] >= t {
			return errorsmod.Wrapf(ErrInvalidRequest, "subscribed topic names must be sorted and distinct: %q after %q", t, names[i-1])
		}
	}
	return nil
}

// CompileTopicRegex compiles a subscription regex as Kafka matches it: RE2 against the whole
// topic name. Go's regexp is RE2, linear in the name, and the same on every validator. It
// returns the program's size, what matching one byte of a name costs.
func CompileTopicRegex(re string) (*regexp.Regexp, int, error) {
	if len(re) > MaxTopicRegexLength {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRegularExpression, "regex of %d bytes, the limit is %d", len(re), MaxTopicRegexLength)
	}
	full := "^(?:" + re + ")$"
	parsed, err := syntax.Parse(full, syntax.Perl)
	if err != nil {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRegularExpression, "%q: %v", re, err)
	}
	// Counted repeats expand when simplified: bound the expansion before paying for it.
	if n := regexSize(parsed, MaxTopicRegexInsts); n > MaxTopicRegexInsts {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRegularExpression, "%q expands past %d instructions", re, MaxTopicRegexInsts)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRegularExpression, "%q: %v", re, err)
	}
	if len(prog.Inst) > MaxTopicRegexInsts {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRegularExpression, "%q compiles to %d instructions, the limit is %d", re, len(prog.Inst), MaxTopicRegexInsts)
	}
	c, err := regexp.Compile(full)
	if err != nil {
		return nil, 0, errorsmod.Wrapf(ErrInvalidRegularExpression, "%q: %v", re, err)
	}
	return c, len(prog.Inst), nil
}

// PartitionSet is a set of topic-partitions.
type PartitionSet map[TopicPartition]bool

// NewPartitionSet collects tps.
func NewPartitionSet(tps ...[]TopicPartitions) PartitionSet {
	s := PartitionSet{}
	for _, list := range tps {
		for _, tp := range list {
			for _, p := range tp.Partitions {
				s[TopicPartition{tp.Topic, p}] = true
			}
		}
	}
	return s
}

// Contains tells whether every partition of tps is in the set.
func (s PartitionSet) Contains(tps []TopicPartitions) bool {
	for _, tp := range tps {
		for _, p := range tp.Partitions {
			if !s[TopicPartition{tp.Topic, p}] {
				return false
			}
		}
	}
	return true
}

// Overlaps tells whether any partition of tps is in the set.
func (s PartitionSet) Overlaps(tps []TopicPartitions) bool {
	for _, tp := range tps {
		for _, p := range tp.Partitions {
			if s[TopicPartition{tp.Topic, p}] {
				return true
			}
		}
	}
	return false
}

// List returns the set sorted by topic, then partition.
func (s PartitionSet) List() []TopicPartitions {
	keys := make([]TopicPartition, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Topic != keys[j].Topic {
			return keys[i].Topic < keys[j].Topic
		}
		return keys[i].Partition < keys[j].Partition
	})
	var out []TopicPartitions
	for _, k := range keys {
		if n := len(out); n > 0 && out[n-1].Topic == k.Topic {
			out[n-1].Partitions = append(out[n-1].Partitions, k.Partition)
			continue
		}
		out = append(out, TopicPartitions{Topic: k.Topic, Partitions: []uint32{k.Partition}})
	}
	return out
}

// ConsumerAssignInput is one member's subscription and previous target for AssignConsumers.
type ConsumerAssignInput struct {
	Member   string
	Topics   []string
	Previous []TopicPartitions
}

// AssignConsumers computes a target assignment with a server assignor: one entry per member, in
// the input order. partitions gives each subscribed topic's partition count (a topic missing
// from it does not exist and is not assigned).
func AssignConsumers(assignor string, members []ConsumerAssignInput, partitions map[string]uint32) [][]TopicPartitions {
	if assignor == ConsumerAssignorRange {
		in := make([]AssignInput, len(members))
		for i, m := range members {
			for _, t := range m.Topics {
				if _, ok := partitions[t]; ok {
					in[i].Topics = append(in[i].Topics, t)
				}
			}
			in[i].Member = m.Member
		}
		return Assign(ASSIGNOR_RANGE, in, partitions)
	}
	return assignUniform(members, partitions)
}

// assignUniform spreads the subscribed partitions evenly and keeps a partition with its previous
// owner while that owner is within its share: a rebalance moves as few partitions as it can.
// When every member subscribes to the same topics the counts differ by at most one; otherwise
// each partition goes to the least loaded member that may take it. Deterministic (members by
// id, partitions by topic and number) and linear in members x partitions.
func assignUniform(members []ConsumerAssignInput, partitions map[string]uint32) [][]TopicPartitions {
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return members[order[a]].Member < members[order[b]].Member })
	subs := make([]map[string]bool, len(members))
	takers := map[string][]int{} // topic -> members that may take it, by id
	for _, i := range order {
		subs[i] = map[string]bool{}
		for _, t := range members[i].Topics {
			if _, ok := partitions[t]; ok && !subs[i][t] {
				subs[i][t] = true
				takers[t] = append(takers[t], i)
			}
		}
	}
	topics := make([]string, 0, len(takers))
	for t := range takers {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	var all []TopicPartition
	for _, t := range topics {
		for p := uint32(0); p < partitions[t]; p++ {
			all = append(all, TopicPartition{t, p})
		}
	}
	same := true
	for _, t := range topics {
		same = same && len(takers[t]) == len(members)
	}
	// quota: each member's most partitions. Equal subscriptions: all/members, and one more for
	// the first (all % members) members that kept more than that (then the rest by id).
	quota := make([]int, len(members))
	if same && len(members) > 0 {
		base, extra := len(all)/len(members), len(all)%len(members)
		for i := range quota {
			quota[i] = base
		}
		for _, i := range order {
			if extra > 0 && len(NewPartitionSet(members[i].Previous)) > base {
				quota[i]++
				extra--
			}
		}
		for _, i := range order {
			if extra > 0 && quota[i] == base {
				quota[i]++
				extra--
			}
		}
	} else {
		for i := range members {
			for t := range subs[i] {
				k := len(takers[t])
				quota[i] += (int(partitions[t]) + k - 1) / k
			}
		}
	}
	owner := map[TopicPartition]int{}
	count := make([]int, len(members))
	for _, i := range order {
		for _, tp := range NewPartitionSet(members[i].Previous).List() {
			for _, p := range tp.Partitions {
				k := TopicPartition{tp.Topic, p}
				if _, taken := owner[k]; taken || !subs[i][tp.Topic] || p >= partitions[tp.Topic] || count[i] >= quota[i] {
					continue
				}
				owner[k] = i
				count[i]++
			}
		}
	}
	for _, tp := range all {
		if _, taken := owner[tp]; taken {
			continue
		}
		best := -1
		for _, i := range takers[tp.Topic] {
			if same && count[i] >= quota[i] {
				continue
			}
			if best < 0 || count[i] < count[best] {
				best = i
			}
		}
		owner[tp] = best
		count[best]++
	}
	sets := make([]PartitionSet, len(members))
	for i := range sets {
		sets[i] = PartitionSet{}
	}
	for _, tp := range all {
		sets[owner[tp]][tp] = true
	}
	out := make([][]TopicPartitions, len(members))
	for i := range out {
		out[i] = sets[i].List()
	}
	return out
}

// regexSize estimates the instructions a parsed regex compiles to, counted repeats expanded,
// stopping once past limit (so the estimate itself is cheap).
func regexSize(re *syntax.Regexp, limit int) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpRepeat:
		n := max(re.Min, re.Max)
		if re.Max < 0 {
			n = re.Min + 1
		}
		sub := regexSize(re.Sub[0], limit)
		if n > 0 && sub > limit/n {
			return limit + 1
		}
		return sub*n + 1
	}
	size := 1
	for _, sub := range re.Sub {
		if size += regexSize(sub, limit); size > limit {
			return limit + 1
		}
	}
	return size
}
