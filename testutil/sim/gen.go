package sim

import (
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"math/rand"
	"slices"
	"time"

	sdkmath "cosmossdk.io/math"

	sdked25519 "github.com/cosmos/cosmos-sdk/crypto/keys/ed25519"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	poatypes "github.com/bftlog/bftlog/x/poa/types"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// gen writes the messages of one block from the world before it. Honest accounts mostly write
// what the state admits; hostile ones act as other accounts' members and groups, with wrong
// generations, oversize and malformed inputs, replayed transactions.
type gen struct {
	r       *rand.Rand
	c       *chain
	w       *world
	hostile []bool
	now     time.Time
	gov     string
	voted   map[voteKey]bool
	options map[uint64]govv1.VoteOption
	// refuse is set by a writer whose message the chain must refuse: the run fails if it does
	// not, or refuses it with another code.
	refuse *refusal
	// sent holds the kinds of refusal sent in a transaction so far: an admitted operator's
	// messages carry a malformed data-plane endpoint and key until one of each was, so a run
	// reaches both (coverage.go) whatever its seed.
	sent map[string]bool
}

// refusal is what a transaction written to be refused must end with: one of codes
// ("codespace/code"), never success.
type refusal struct {
	kind  string
	codes []string
}

// refused marks the message being written as one the chain must refuse with one of codes.
func (g *gen) refused(kind string, codes ...string) { g.refuse = &refusal{kind: kind, codes: codes} }

const (
	topicPool = 6
	groupPool = 6
	keyPool   = 12
)

var (
	protocolNames = []string{"range", "roundrobin", "sticky"}
	compressions  = []kbatch.Compression{kbatch.CompressionNone, kbatch.CompressionGzip, kbatch.CompressionSnappy, kbatch.CompressionLZ4, kbatch.CompressionZstd}
)

// action is one kind of message: its weight for honest and hostile accounts and its writer
// (nil when the state offers nothing to write it about).
type action struct {
	name            string
	honest, hostile int
	write           func(g *gen, a int) []sdk.Msg
}

var actions = []action{
	{"create_topic", 4, 2, (*gen).createTopic},
	{"update_topic_config", 3, 3, (*gen).updateTopicConfig},
	{"add_partitions", 2, 1, (*gen).addPartitions},
	{"delete_topic", 1, 2, (*gen).deleteTopic},
	{"delete_records", 3, 3, (*gen).deleteRecords},
	{"produce", 30, 10, (*gen).produce},
	{"produce_hostile", 0, 8, (*gen).produceHostile},
	{"transaction", 4, 2, (*gen).transaction},
	{"create_group", 3, 2, (*gen).createGroup},
	{"join_group", 6, 3, (*gen).joinGroup},
	{"heartbeat", 6, 2, (*gen).heartbeat},
	{"leave_group", 5, 2, (*gen).leaveGroup},
	{"commit_offsets", 8, 5, (*gen).commit},
	{"reset_offsets", 2, 2, (*gen).reset},
	{"delete_group", 2, 3, (*gen).deleteGroup},
	{"delete_group_offsets", 2, 3, (*gen).deleteGroupOffsets},
	{"update_group_policy", 2, 2, (*gen).updatePolicy},
	{"remove_group_member", 3, 2, (*gen).removeMember},
	{"transfer_group_admin", 1, 2, (*gen).transferAdmin},
	{"kafka_join_group", 6, 4, (*gen).kafkaJoin},
	{"kafka_sync_group", 5, 2, (*gen).kafkaSync},
	{"kafka_heartbeat", 5, 2, (*gen).kafkaHeartbeat},
	{"kafka_leave_group", 4, 2, (*gen).kafkaLeave},
	{"kafka_commit", 6, 3, (*gen).kafkaCommit},
	{"consumer_heartbeat", 5, 4, (*gen).consumerHeartbeat},
	{"consumer_commit", 2, 1, (*gen).consumerCommit},
	{"share_heartbeat", 3, 2, (*gen).shareHeartbeat},
	{"share_fetch", 5, 3, (*gen).shareFetch},
	{"share_admin", 1, 1, (*gen).shareAdmin},
	{"proposal_params", 1, 1, (*gen).proposeParams},
	{"proposal_topic", 1, 1, (*gen).proposeTopic},
	{"proposal_poa", 2, 0, (*gen).proposePoa},
	{"poa_hostile", 0, 2, (*gen).poaHostile},
	{"create_validator", 2, 0, (*gen).createValidator},
	{"set_data_plane_endpoint", 6, 1, (*gen).setEndpoint},
}

// msgs writes one transaction's messages for account a, and what it must be refused with if
// it was written to be refused (such a message goes alone in its transaction, so that the
// transaction's code is its own).
func (g *gen) msgs(a int) ([]sdk.Msg, *refusal) {
	if g.voter(a) { // its votes alone, so no other message's refusal takes them down
		if v := g.votes(a); len(v) > 0 {
			return v, nil
		}
	}
	if m := g.createValidator(a); m != nil && !g.oneOf(3) { // an admitted operator soon creates its validator
		return m, nil
	}
	n := 1
	if g.r.Intn(8) == 0 {
		n += 1 + g.r.Intn(2)
	}
	var out []sdk.Msg
	for len(out) < n {
		g.refuse = nil
		m := g.pick(a)(g, a)
		switch {
		case m == nil:
		case g.refuse != nil && len(out) == 0:
			if g.sent == nil {
				g.sent = map[string]bool{}
			}
			g.sent[g.refuse.kind] = true
			return m, g.refuse
		case g.refuse == nil:
			out = append(out, m...)
		}
	}
	return out, nil
}

func (g *gen) pick(a int) func(*gen, int) []sdk.Msg {
	total := 0
	for _, x := range actions {
		total += x.weight(g.hostile[a])
	}
	n := g.r.Intn(total)
	for _, x := range actions {
		if n -= x.weight(g.hostile[a]); n < 0 {
			return x.write
		}
	}
	panic("unreachable")
}

func (x action) weight(hostile bool) int {
	if hostile {
		return x.hostile
	}
	return x.honest
}

func (g *gen) addr(a int) string { return g.c.addrs[a].String() }

// someone is a random account; for a hostile signer, likely not itself.
func (g *gen) someone() int { return g.r.Intn(len(g.c.addrs)) }

func (g *gen) oneOf(n int) bool { return g.r.Intn(n) == 0 }

func (g *gen) topicName() string { return fmt.Sprintf("t%d", g.r.Intn(topicPool)) }

// groupID is a native group's id; kafkaGroupID a Kafka group's. The two kinds draw from
// pools of their own, so that neither takes every id of the other (a join of one kind to the
// other is refused with code 40); hostile and a few honest joins cross over.
func (g *gen) groupID() string { return fmt.Sprintf("g%d", g.r.Intn(groupPool)) }

func (g *gen) kafkaGroupID() string { return fmt.Sprintf("k%d", g.r.Intn(groupPool)) }

// freeGroupID is mostly a native group id no group holds yet, so that creations succeed.
func (g *gen) freeGroupID() string {
	for _, i := range g.r.Perm(groupPool) {
		if id := fmt.Sprintf("g%d", i); !g.oneOf(8) {
			if _, ok := g.w.group(id); !ok {
				return id
			}
		}
	}
	return g.groupID()
}

// joinable is a group id account a may join — one it administers, one open to it, or a free
// id (a first join creates it) — of the kind it joins (Kafka or native) mostly; otherwise any
// id of either kind (and a hostile account, any).
func (g *gen) joinable(a int, kafka bool) string {
	pick := g.groupID
	if kafka {
		pick = g.kafkaGroupID
	}
	if g.oneOf(10) {
		kafka = !kafka
		pick = map[bool]func() string{true: g.kafkaGroupID, false: g.groupID}[kafka]
	}
	if g.hostile[a] || g.oneOf(5) {
		return pick()
	}
	prefix := map[bool]string{true: "k", false: "g"}[kafka]
	var pool []string
	for i := 0; i < groupPool; i++ {
		id := fmt.Sprintf("%s%d", prefix, i)
		grp, ok := g.w.group(id)
		if !ok || grp.Admin == g.addr(a) || grp.JoinPolicy == types.JOIN_POLICY_ANYONE || slices.Contains(grp.AllowedMembers, g.addr(a)) {
			pool = append(pool, id)
		}
	}
	if len(pool) == 0 {
		return pick()
	}
	return pool[g.r.Intn(len(pool))]
}

// anyTopic is an existing topic, or nil.
func (g *gen) anyTopic() *types.Topic {
	if len(g.w.topics) == 0 {
		return nil
	}
	t := g.w.topics[g.r.Intn(len(g.w.topics))]
	return &t
}

// topicNamed is the topic called name, nil if there is none.
func (g *gen) topicNamed(name string) *types.Topic {
	for _, t := range g.w.topics {
		if t.Name == name {
			return &t
		}
	}
	return nil
}

// ownedTopic is a topic account a owns; a hostile account picks any (and is refused).
func (g *gen) ownedTopic(a int) *types.Topic {
	var pool []types.Topic
	for _, t := range g.w.topics {
		if t.Owner == g.addr(a) || g.hostile[a] {
			pool = append(pool, t)
		}
	}
	if len(pool) == 0 {
		return nil
	}
	t := pool[g.r.Intn(len(pool))]
	return &t
}

func (g *gen) config() types.TopicConfig {
	cfg := types.TopicConfig{
		CleanupPolicy:                  []string{"", "delete", "compact", "compact,delete"}[g.r.Intn(4)],
		RetentionMs:                    []int64{-1, -1, 4_000, 30_000, 300_000}[g.r.Intn(5)],
		RetentionBytes:                 []int64{-1, -1, 4_000, 40_000}[g.r.Intn(4)],
		MinCompactionLagMs:             []int64{0, 0, 1_000, 10_000}[g.r.Intn(4)],
		DeleteRetentionMs:              []int64{0, 2_000, 60_000}[g.r.Intn(3)],
		MinCleanableDirtyRatioPermille: []uint32{0, 100, 500, 900}[g.r.Intn(4)],
		ProducerPolicy:                 types.PRODUCER_POLICY_ANYONE,
	}
	switch g.r.Intn(6) {
	case 0:
		cfg.ProducerPolicy = types.PRODUCER_POLICY_UNSPECIFIED
	case 1:
		cfg.ProducerPolicy = types.PRODUCER_POLICY_ALLOWLIST
		for i := range g.c.addrs {
			if g.oneOf(2) {
				cfg.AllowedProducers = append(cfg.AllowedProducers, g.addr(i))
			}
		}
	}
	if g.oneOf(25) {
		cfg.CleanupPolicy, cfg.RetentionMs = "shred", -7 // refused
	}
	return cfg
}

func (g *gen) createTopic(a int) []sdk.Msg {
	parts := uint32(1 + g.r.Intn(4))
	if g.hostile[a] && g.oneOf(3) {
		parts = []uint32{0, 100_000}[g.r.Intn(2)]
	}
	return []sdk.Msg{&types.MsgCreateTopic{Owner: g.addr(a), Name: g.topicName(), Partitions: parts, Config: g.config()}}
}

func (g *gen) updateTopicConfig(a int) []sdk.Msg {
	t := g.ownedTopic(a)
	if t == nil {
		return nil
	}
	cfg := t.Config
	switch g.r.Intn(3) {
	case 0: // a cleanup.policy switch alone
		cfg.CleanupPolicy = []string{"delete", "compact", "compact,delete"}[g.r.Intn(3)]
	default:
		cfg = g.config()
	}
	return []sdk.Msg{&types.MsgUpdateTopicConfig{Authority: g.addr(a), Name: t.Name, Config: cfg}}
}

func (g *gen) addPartitions(a int) []sdk.Msg {
	t := g.ownedTopic(a)
	if t == nil {
		return nil
	}
	n := t.Partitions + 1 + uint32(g.r.Intn(2))
	if g.hostile[a] && g.oneOf(2) {
		n = []uint32{t.Partitions - 1, 1 << 20}[g.r.Intn(2)]
	}
	return []sdk.Msg{&types.MsgAddPartitions{Authority: g.addr(a), Name: t.Name, Partitions: n}}
}

func (g *gen) deleteTopic(a int) []sdk.Msg {
	t := g.ownedTopic(a)
	if t == nil {
		return nil
	}
	return []sdk.Msg{&types.MsgDeleteTopic{Authority: g.addr(a), Name: t.Name}}
}

// deleteRecords moves log start offsets of a topic account a owns: to an offset inside the
// log (often inside a batch), to the high watermark, or below the current start (a no-op). A
// hostile account picks any topic (refused unless it owns it), goes past the high watermark,
// names a partition twice or out of range, sets an offset with to_high_watermark, or sends
// more partitions than a message may hold.
func (g *gen) deleteRecords(a int) []sdk.Msg {
	t := g.ownedTopic(a)
	if t == nil {
		return nil
	}
	msg := &types.MsgDeleteRecords{Authority: g.addr(a)}
	for _, p := range g.w.partitions[t.Name] {
		if !g.oneOf(2) && len(msg.Partitions) > 0 {
			continue
		}
		dp := types.DeleteRecordsPartition{Topic: t.Name, Partition: p.Partition}
		switch n := g.r.Intn(10); {
		case n < 6: // inside the log
			dp.Offset = p.LogStartOffset + uint64(g.r.Int63n(int64(p.HighWatermark-p.LogStartOffset)+1))
		case n < 8:
			dp.ToHighWatermark = true
		default: // at or below the start: nothing moves
			dp.Offset = uint64(g.r.Int63n(int64(p.LogStartOffset) + 1))
		}
		msg.Partitions = append(msg.Partitions, dp)
	}
	if len(msg.Partitions) == 0 {
		return nil
	}
	if g.hostile[a] && g.oneOf(2) {
		dp := &msg.Partitions[0]
		switch g.r.Intn(5) {
		case 0:
			dp.Offset, dp.ToHighWatermark = dp.Offset+1_000_000, false // past the high watermark
		case 1:
			msg.Partitions = append(msg.Partitions, *dp)
		case 2:
			dp.Partition = t.Partitions + uint32(g.r.Intn(3))
		case 3:
			dp.Offset, dp.ToHighWatermark = 1+dp.Offset, true
		case 4:
			for len(msg.Partitions) <= types.MaxDeleteRecordsPartitions {
				msg.Partitions = append(msg.Partitions, types.DeleteRecordsPartition{Topic: t.Name, Partition: uint32(len(msg.Partitions))})
			}
		}
	}
	return []sdk.Msg{msg}
}

// records writes n records for t: keyed from a small set on a compacted topic (with
// tombstones), otherwise keyed or not.
func (g *gen) records(t *types.Topic, n int) []types.BatchRecord {
	out := make([]types.BatchRecord, n)
	for i := range out {
		r := types.BatchRecord{}
		if t != nil && t.Config.Compacts() || g.oneOf(2) {
			r.Key = types.NewBytes(fmt.Appendf(nil, "k%d", g.r.Intn(keyPool)))
		}
		if t == nil || !t.Config.Compacts() || !g.oneOf(6) {
			v := make([]byte, g.r.Intn(300))
			for j := range v {
				v[j] = byte('a' + g.r.Intn(4)) // compressible
			}
			r.Value = types.NewBytes(v)
		}
		if g.oneOf(5) {
			r.Headers = []types.Header{{Key: "h", Value: []byte("v")}}
		}
		out[i] = r
	}
	return out
}

// batch encodes records for partition p of t.
func (g *gen) batch(t *types.Topic, p uint32, n int) types.ProduceBatch {
	b, err := types.NewProduceBatch(t.Name, p, g.records(t, n), compressions[g.r.Intn(len(compressions))])
	if err != nil {
		panic(err)
	}
	return b
}

func (g *gen) produce(a int) []sdk.Msg {
	t := g.anyTopic()
	if t == nil {
		return nil
	}
	msg := &types.MsgProduce{Producer: g.addr(a)}
	used := map[uint32]bool{}
	for i, n := 0, 1+g.r.Intn(2); i < n; i++ {
		p := uint32(g.r.Intn(int(t.Partitions)))
		if used[p] {
			continue
		}
		used[p] = true
		b := g.batch(t, p, 1+g.r.Intn(12))
		switch g.r.Intn(5) {
		case 0: // idempotent (native sequences): next, a retry of the last, or a gap
			last := g.w.sequences[seqKey(g.addr(a), t.Name, p)]
			b.Sequence = last + []uint64{1, 1, 1, 0, 3}[g.r.Intn(5)]
			if b.Sequence == 0 {
				b.Sequence = 1
			}
		case 1: // a Kafka idempotent producer: next base sequence, a retry or a gap
			pid := int64(1000 + a)
			seq := g.w.kafkaSeqs[kafkaSeqKey(g.addr(a), t.Name, p, pid)]
			seq += []int32{0, 0, 0, -int32(b.RecordCount), 5}[g.r.Intn(5)]
			epoch := int16(0)
			if g.oneOf(8) { // a new epoch (InitProducerId fenced the old one) starts at 0
				epoch, seq = 1, 0
			}
			b.RecordBatch = kbatch.WithProducer(b.RecordBatch, pid, epoch, max(seq, 0))
		}
		msg.Batches = append(msg.Batches, b)
	}
	return []sdk.Msg{msg}
}

// produceHostile sends what the chain must refuse or bound: corrupt bytes, a lying record
// count, keyless records to a compacted topic, a partition out of range, a record over the
// limit, a topic that does not exist, a decompression bomb.
func (g *gen) produceHostile(a int) []sdk.Msg {
	t := g.anyTopic()
	if t == nil {
		t = &types.Topic{Name: g.topicName(), Partitions: 1}
	}
	b := g.batch(t, 0, 1+g.r.Intn(4))
	// Whatever the batch, a topic deleted in this block (4) or closed to this producer (10), or
	// a limit governance lowered (records 7, batch bytes 8, records per batch 15, headers 18),
	// may refuse it first.
	state := []string{"topics/4", "topics/10", "topics/7", "topics/8", "topics/15", "topics/18"}
	switch g.r.Intn(7) {
	case 0:
		b.RecordBatch[len(b.RecordBatch)-1-g.r.Intn(8)] ^= 0x5a
		g.refused("corrupt batch", append(state, "topics/38")...)
	case 1:
		b.RecordCount++
		g.refused("lying record count", append(state, "topics/38")...)
	case 2: // refused only if the topic is compacted when it runs, which this block may change
		recs := g.records(nil, 2)
		recs[0].Key, recs[1].Key = nil, nil
		var err error
		if b, err = types.NewProduceBatch(t.Name, 0, recs, kbatch.CompressionNone); err != nil {
			panic(err)
		}
	case 3: // past any partition count this block can reach (an addition adds at most 2)
		b.Partition = t.Partitions + 2 + uint32(g.r.Intn(3))
		g.refused("partition out of range", append(state, "topics/5")...)
	case 4:
		big := make([]byte, g.w.params.MaxRecordBytes+1)
		var err error
		if b, err = types.NewProduceBatch(t.Name, 0, []types.BatchRecord{{Key: types.NewBytes([]byte("k0")), Value: types.NewBytes(big)}}, kbatch.CompressionZstd); err != nil {
			panic(err)
		}
		// 8: the record alone is over max_batch_bytes; 11: out of the gas it paid for, when
		// governance raised the limit to megabytes.
		g.refused("record over max_record_bytes", append(state, "sdk/11")...)
	case 5:
		b.Topic = "nope"
		g.refused("unknown topic", "topics/4")
	case 6: // refused or bounded (paid for in gas) by the limits in force
		zeros := make([]byte, 4<<20)
		var err error
		if b, err = types.NewProduceBatch(t.Name, 0, []types.BatchRecord{{Key: types.NewBytes([]byte("k0")), Value: types.NewBytes(zeros)}}, kbatch.CompressionZstd); err != nil {
			panic(err)
		}
	}
	return []sdk.Msg{&types.MsgProduce{Producer: g.addr(a), Batches: []types.ProduceBatch{b}}}
}

// transaction is what a Kafka gateway commits at EndTxn: the transaction's batches and their
// commit markers, with the consumed offsets of a group, in one transaction (all or nothing).
func (g *gen) transaction(a int) []sdk.Msg {
	t := g.anyTopic()
	if t == nil {
		return nil
	}
	pid := int64(2000 + a)
	p := uint32(g.r.Intn(int(t.Partitions)))
	b := g.batch(t, p, 1+g.r.Intn(5))
	seq := g.w.kafkaSeqs[kafkaSeqKey(g.addr(a), t.Name, p, pid)]
	b.RecordBatch = kbatch.WithProducer(b.RecordBatch, pid, 0, seq)
	marker := types.ProduceBatch{Topic: t.Name, Partition: p, RecordBatch: kbatch.EncodeCommitMarker(pid, 0, g.now.UnixMilli()), RecordCount: 1}
	msgs := []sdk.Msg{&types.MsgProduce{Producer: g.addr(a), Batches: []types.ProduceBatch{b}}, &types.MsgProduce{Producer: g.addr(a), Batches: []types.ProduceBatch{marker}}}
	if c := g.commit(a); c != nil {
		msgs = append(msgs, c...)
	} else if c := g.kafkaCommit(a); c != nil {
		msgs = append(msgs, c...)
	}
	return msgs
}

func (g *gen) createGroup(a int) []sdk.Msg {
	msg := &types.MsgCreateGroup{Admin: g.addr(a), GroupId: g.freeGroupID(), SessionTimeoutMs: []int64{0, 5_000, 20_000}[g.r.Intn(3)],
		Assignor: types.Assignor(g.r.Intn(3))}
	switch g.r.Intn(5) {
	case 0:
		msg.JoinPolicy = types.JOIN_POLICY_UNSPECIFIED
	case 1:
		msg.JoinPolicy = types.JOIN_POLICY_ALLOWLIST
		msg.AllowedMembers = g.someAccounts()
	default:
		msg.JoinPolicy = types.JOIN_POLICY_ANYONE
	}
	return []sdk.Msg{msg}
}

func (g *gen) someAccounts() []string {
	var out []string
	for i := range g.c.addrs {
		if g.oneOf(2) {
			out = append(out, g.addr(i))
		}
	}
	return out
}

func (g *gen) joinGroup(a int) []sdk.Msg {
	t := g.anyTopic()
	if t == nil {
		return nil
	}
	topics := []string{t.Name}
	if u := g.anyTopic(); u.Name != t.Name && g.oneOf(3) {
		topics = append(topics, u.Name)
	}
	if g.hostile[a] && g.oneOf(4) {
		topics = append(topics, topics[0]) // listed twice
	}
	return []sdk.Msg{&types.MsgJoinGroup{Member: g.addr(a), GroupId: g.joinable(a, false), Topics: topics, SessionTimeoutMs: []int64{0, 4_000, 15_000}[g.r.Intn(3)]}}
}

// membership is a native group account a is a member of (or, for a hostile account, any
// group with members, to act as another account's member).
func (g *gen) membership(a int) (types.Member, bool) {
	var mine, all []types.Member
	for _, id := range sortedKeys(g.w.members) {
		for _, m := range g.w.members[id] {
			all = append(all, m)
			if m.Member == g.addr(a) {
				mine = append(mine, m)
			}
		}
	}
	pool := mine
	if g.hostile[a] && g.oneOf(2) || len(mine) == 0 && g.oneOf(3) {
		pool = all
	}
	if len(pool) == 0 {
		return types.Member{}, false
	}
	return pool[g.r.Intn(len(pool))], true
}

func (g *gen) heartbeat(a int) []sdk.Msg {
	m, ok := g.membership(a)
	if !ok {
		return nil
	}
	return []sdk.Msg{&types.MsgHeartbeat{Member: g.addr(a), GroupId: m.GroupId}}
}

func (g *gen) leaveGroup(a int) []sdk.Msg {
	m, ok := g.membership(a)
	if !ok {
		return nil
	}
	return []sdk.Msg{&types.MsgLeaveGroup{Member: g.addr(a), GroupId: m.GroupId}}
}

// offsetFor is a committable offset of a partition (a hostile account may go past the end).
func (g *gen) offsetFor(a int, topic string, partition uint32) uint64 {
	for _, p := range g.w.partitions[topic] {
		if p.Partition == partition {
			off := p.LogStartOffset + uint64(g.r.Int63n(int64(p.HighWatermark-p.LogStartOffset)+1))
			if g.hostile[a] && g.oneOf(4) {
				off = p.HighWatermark + 1 + uint64(g.r.Intn(100))
			}
			return off
		}
	}
	return uint64(g.r.Intn(10))
}

func (g *gen) commit(a int) []sdk.Msg {
	m, ok := g.membership(a)
	if !ok {
		return nil
	}
	grp, _ := g.w.group(m.GroupId)
	gen := grp.Generation
	if g.hostile[a] && g.oneOf(3) {
		gen = gen - 1
	}
	msg := &types.MsgCommitOffsets{Member: g.addr(a), GroupId: m.GroupId, Generation: gen}
	for _, tp := range m.Assignment {
		for _, p := range tp.Partitions {
			if g.oneOf(2) {
				msg.Offsets = append(msg.Offsets, types.OffsetCommit{Topic: tp.Topic, Partition: p, Offset: g.offsetFor(a, tp.Topic, p), Metadata: "sim"})
			}
		}
	}
	if len(msg.Offsets) == 0 || g.hostile[a] && g.oneOf(3) {
		if t := g.anyTopic(); t != nil { // a partition that may not be assigned to it
			msg.Offsets = append(msg.Offsets, types.OffsetCommit{Topic: t.Name, Partition: uint32(g.r.Intn(int(t.Partitions))), Offset: 0})
		}
	}
	return []sdk.Msg{msg}
}

// adminGroup is a group a administers (a hostile account picks any).
func (g *gen) adminGroup(a int) (types.Group, bool) {
	return g.pickGroup(func(grp types.Group) bool { return grp.Admin == g.addr(a) || g.hostile[a] })
}

// pickGroup is one of the groups keep holds for.
func (g *gen) pickGroup(keep func(types.Group) bool) (types.Group, bool) {
	var pool []types.Group
	for _, grp := range g.w.groups {
		if keep(grp) {
			pool = append(pool, grp)
		}
	}
	if len(pool) == 0 {
		return types.Group{}, false
	}
	return pool[g.r.Intn(len(pool))], true
}

func (g *gen) reset(a int) []sdk.Msg {
	grp, ok := g.adminGroup(a)
	t := g.anyTopic()
	if !ok || t == nil {
		return nil
	}
	msg := &types.MsgResetOffsets{Authority: g.addr(a), GroupId: grp.GroupId, Topic: t.Name, To: types.OffsetSpec(1 + g.r.Intn(4))}
	switch msg.To {
	case types.OFFSET_SPEC_OFFSET:
		msg.Offset = uint64(g.r.Intn(50))
	case types.OFFSET_SPEC_TIMESTAMP:
		msg.TimestampMs = g.now.UnixMilli() - int64(g.r.Intn(60_000))
	}
	if g.oneOf(2) {
		msg.Partitions = []uint32{uint32(g.r.Intn(int(t.Partitions) + 1))}
	}
	return []sdk.Msg{msg}
}

func (g *gen) deleteGroup(a int) []sdk.Msg {
	grp, ok := g.adminGroup(a)
	if !ok {
		return nil
	}
	return []sdk.Msg{&types.MsgDeleteGroup{Authority: g.addr(a), GroupId: grp.GroupId}}
}

// deleteGroupOffsets deletes committed offsets of a group account a administers (sometimes
// through governance). Most often an honest account picks a group with offsets and one of their
// topics no live member consumes, so the deletion can succeed (a Kafka group's members count as
// consuming every topic it has offsets on); else any topic, none of whose consumers a few tries
// avoid: some of its partitions, with or without offsets. A hostile account picks any group
// (refused unless it administers it), names a topic a member consumes, a partition twice or out
// of range, a topic or group that may not exist, or more partitions than a message may hold.
func (g *gen) deleteGroupOffsets(a int) []sdk.Msg {
	grp, ok := g.adminGroup(a)
	if !ok {
		return nil
	}
	withOffsets := func(grp types.Group) bool { return grp.Admin == g.addr(a) && len(g.w.offsets[grp.GroupId]) > 0 }
	if with, ok := g.pickGroup(withOffsets); ok && !g.hostile[a] && !g.oneOf(3) {
		grp = with
	}
	members := g.w.members[grp.GroupId]
	consumed := func(topic string) bool {
		if len(g.w.kmembers[grp.GroupId]) > 0 {
			return true
		}
		for _, m := range members {
			if slices.Contains(m.Topics, topic) {
				return true
			}
		}
		return false
	}
	var t *types.Topic
	for _, i := range g.r.Perm(len(g.w.offsets[grp.GroupId])) {
		if tp := g.w.offsets[grp.GroupId][i]; !consumed(tp.Topic) {
			if t = g.topicNamed(tp.Topic); t != nil {
				break
			}
		}
	}
	if t == nil || g.oneOf(4) {
		t = g.anyTopic()
		for i := 0; i < 3 && t != nil && consumed(t.Name); i++ {
			t = g.anyTopic()
		}
	}
	if t == nil {
		return nil
	}
	msg := &types.MsgDeleteGroupOffsets{Authority: g.addr(a), GroupId: grp.GroupId}
	for p := uint32(0); p < t.Partitions; p++ {
		if len(msg.Partitions) == 0 || g.oneOf(2) {
			msg.Partitions = append(msg.Partitions, types.DeleteGroupOffsetsPartition{Topic: t.Name, Partition: p})
		}
	}
	if g.hostile[a] && g.oneOf(2) {
		dp := &msg.Partitions[0]
		switch g.r.Intn(6) {
		case 0:
			msg.Partitions = append(msg.Partitions, *dp)
		case 1:
			dp.Partition = t.Partitions + uint32(g.r.Intn(3))
		case 2:
			dp.Topic = g.topicName()
		case 3:
			msg.GroupId = g.groupID()
		case 4: // a topic a member consumes
			if len(members) > 0 && len(members[0].Topics) > 0 {
				dp.Topic, dp.Partition = members[0].Topics[0], 0
			}
		case 5:
			for len(msg.Partitions) <= types.MaxDeleteGroupOffsetsPartitions {
				msg.Partitions = append(msg.Partitions, types.DeleteGroupOffsetsPartition{Topic: t.Name, Partition: uint32(len(msg.Partitions))})
			}
		}
		return []sdk.Msg{msg}
	}
	if g.oneOf(6) {
		msg.Authority = g.gov
		return g.propose(a, msg)
	}
	return []sdk.Msg{msg}
}

func (g *gen) updatePolicy(a int) []sdk.Msg {
	grp, ok := g.adminGroup(a)
	if !ok {
		return nil
	}
	msg := &types.MsgUpdateGroupPolicy{Authority: g.addr(a), GroupId: grp.GroupId, JoinPolicy: types.JoinPolicy(g.r.Intn(3))}
	if msg.JoinPolicy == types.JOIN_POLICY_ALLOWLIST {
		msg.AllowedMembers = g.someAccounts()
	}
	return []sdk.Msg{msg}
}

func (g *gen) removeMember(a int) []sdk.Msg {
	grp, ok := g.adminGroup(a)
	if !ok {
		return nil
	}
	withMembers := func(x types.Group) bool {
		return (x.Admin == g.addr(a) || g.hostile[a]) && len(g.w.members[x.GroupId])+len(g.w.kmembers[x.GroupId]) > 0
	}
	if x, ok := g.pickGroup(withMembers); ok && !g.oneOf(4) {
		grp = x
	}
	member := g.addr(g.someone())
	if ms := g.w.members[grp.GroupId]; len(ms) > 0 {
		member = ms[g.r.Intn(len(ms))].Member
	} else if ks := g.w.kmembers[grp.GroupId]; len(ks) > 0 {
		member = ks[g.r.Intn(len(ks))].Owner
	}
	return []sdk.Msg{&types.MsgRemoveGroupMember{Authority: g.addr(a), GroupId: grp.GroupId, Member: member}}
}

func (g *gen) transferAdmin(a int) []sdk.Msg {
	grp, ok := g.adminGroup(a)
	if !ok {
		return nil
	}
	return []sdk.Msg{&types.MsgTransferGroupAdmin{Authority: g.addr(a), GroupId: grp.GroupId, NewAdmin: g.addr(g.someone())}}
}

// kafkaMemberID is one of account a's few Kafka member ids, so members rejoin; a hostile
// account may take another account's.
func (g *gen) kafkaMemberID(a int, group string) string {
	if g.hostile[a] && g.oneOf(3) {
		if ks := g.w.kmembers[group]; len(ks) > 0 {
			return ks[g.r.Intn(len(ks))].MemberId
		}
	}
	return fmt.Sprintf("m%d-%d", a, g.r.Intn(3))
}

func (g *gen) kafkaJoin(a int) []sdk.Msg {
	if m, ok := g.kafkaRejoin(a); ok { // as a client does when its group rebalances
		return []sdk.Msg{&types.MsgKafkaJoinGroup{Owner: m.Owner, GroupId: m.GroupId, MemberId: m.MemberId, ClientId: m.ClientId, ProtocolType: "consumer",
			Protocols: m.Protocols, SessionTimeoutMs: m.SessionTimeoutMs, RebalanceTimeoutMs: m.RebalanceTimeoutMs}}
	}
	group := g.joinable(a, true)
	msg := &types.MsgKafkaJoinGroup{Owner: g.addr(a), GroupId: group, MemberId: g.kafkaMemberID(a, group), ClientId: "sim", ProtocolType: "consumer",
		SessionTimeoutMs: []int32{6_000, 10_000, 30_000}[g.r.Intn(3)], RebalanceTimeoutMs: []int32{0, 5_000, 20_000}[g.r.Intn(3)]}
	first := g.r.Intn(len(protocolNames))
	for i := range protocolNames {
		if i == first || g.oneOf(2) {
			msg.Protocols = append(msg.Protocols, types.KafkaProtocol{Name: protocolNames[i], Metadata: fmt.Appendf(nil, "sub:%d", g.r.Intn(3))})
		}
	}
	if g.hostile[a] && g.oneOf(6) {
		msg.Protocols[0].Metadata = make([]byte, types.MaxKafkaProtocolMetadata+1) // refused
	}
	return []sdk.Msg{msg}
}

// kafkaMember is a Kafka member account a owns (a hostile account: any member).
func (g *gen) kafkaMember(a int) (types.KafkaMember, bool) {
	var pool []types.KafkaMember
	for _, id := range sortedKeys(g.w.kmembers) {
		for _, m := range g.w.kmembers[id] {
			if m.Owner == g.addr(a) || g.hostile[a] {
				pool = append(pool, m)
			}
		}
	}
	if len(pool) == 0 {
		return types.KafkaMember{}, false
	}
	return pool[g.r.Intn(len(pool))], true
}

// kafkaRejoin is a member account a owns (honest accounts only) that has yet to rejoin its
// group's join phase.
func (g *gen) kafkaRejoin(a int) (types.KafkaMember, bool) {
	if g.hostile[a] || g.oneOf(4) {
		return types.KafkaMember{}, false
	}
	for _, id := range sortedKeys(g.w.kafka) {
		if g.w.kafka[id].State != types.KAFKA_GROUP_STATE_PREPARING_REBALANCE {
			continue
		}
		for _, m := range g.w.kmembers[id] {
			if !m.Joined && m.Owner == g.addr(a) {
				return m, true
			}
		}
	}
	return types.KafkaMember{}, false
}

// kafkaLeader is the leader of a group awaiting its assignment that account a owns (an honest
// leader syncs as soon as its generation forms, as Kafka clients do).
func (g *gen) kafkaLeader(a int) (types.KafkaMember, bool) {
	if g.hostile[a] {
		return types.KafkaMember{}, false
	}
	for _, id := range sortedKeys(g.w.kafka) {
		kg := g.w.kafka[id]
		if kg.State != types.KAFKA_GROUP_STATE_COMPLETING_REBALANCE {
			continue
		}
		for _, m := range g.w.kmembers[id] {
			if m.MemberId == kg.Leader && m.Owner == g.addr(a) {
				return m, true
			}
		}
	}
	return types.KafkaMember{}, false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (g *gen) kafkaSync(a int) []sdk.Msg {
	m, ok := g.kafkaLeader(a)
	if !ok {
		if m, ok = g.kafkaMember(a); !ok {
			return nil
		}
	}
	kg := g.w.kafka[m.GroupId]
	gen := kg.Generation
	if g.hostile[a] && g.oneOf(3) {
		gen++
	}
	msg := &types.MsgKafkaSyncGroup{Owner: g.addr(a), GroupId: m.GroupId, MemberId: m.MemberId, Generation: gen}
	if m.MemberId == kg.Leader {
		for _, x := range g.w.kmembers[m.GroupId] {
			msg.Assignments = append(msg.Assignments, types.KafkaAssignment{MemberId: x.MemberId, Assignment: fmt.Appendf(nil, "assign:%s", x.MemberId)})
		}
	}
	return []sdk.Msg{msg}
}

func (g *gen) kafkaHeartbeat(a int) []sdk.Msg {
	m, ok := g.kafkaMember(a)
	if !ok {
		return nil
	}
	return []sdk.Msg{&types.MsgKafkaHeartbeat{Owner: g.addr(a), GroupId: m.GroupId, MemberIds: []string{m.MemberId}}}
}

func (g *gen) kafkaLeave(a int) []sdk.Msg {
	m, ok := g.kafkaMember(a)
	if !ok {
		return nil
	}
	return []sdk.Msg{&types.MsgKafkaLeaveGroup{Owner: g.addr(a), GroupId: m.GroupId, MemberIds: []string{m.MemberId}}}
}

func (g *gen) kafkaCommit(a int) []sdk.Msg {
	m, ok := g.kafkaMember(a)
	t := g.anyTopic()
	if !ok || t == nil {
		return nil
	}
	gen := uint64(g.w.kafka[m.GroupId].Generation)
	if g.hostile[a] && g.oneOf(3) {
		gen += 1
	}
	p := uint32(g.r.Intn(int(t.Partitions)))
	return []sdk.Msg{&types.MsgCommitOffsets{Member: g.addr(a), GroupId: m.GroupId, Generation: gen, KafkaMemberId: m.MemberId,
		Offsets: []types.OffsetCommit{{Topic: t.Name, Partition: p, Offset: g.offsetFor(a, t.Name, p)}}}}
}

// propose wraps msgs (signed by governance) in a proposal from account a.
func (g *gen) propose(a int, msgs ...sdk.Msg) []sdk.Msg {
	p, err := govv1.NewMsgSubmitProposal(msgs, sdk.NewCoins(sdk.NewInt64Coin(sdk.DefaultBondDenom, 1000)), g.addr(a), "", "sim", "sim", false)
	if err != nil {
		panic(err)
	}
	return []sdk.Msg{p}
}

// proposeParams proposes x/topics params with a few fields moved, limits lowered as often as
// raised; the fee and gas rules stay as they are, so transactions keep landing.
func (g *gen) proposeParams(a int) []sdk.Msg {
	p := g.w.params
	scale32 := func(v uint32) uint32 { return max(1, uint32(float64(v)*[]float64{0.01, 0.3, 0.5, 2, 4}[g.r.Intn(5)])) }
	scale64 := func(v uint64) uint64 { return max(1, uint64(float64(v)*[]float64{0.01, 0.3, 0.5, 2, 4}[g.r.Intn(5)])) }
	for i, n := 0, 1+g.r.Intn(3); i < n; i++ {
		switch g.r.Intn(14) {
		case 0:
			p.MaxPartitionsPerTopic = scale32(p.MaxPartitionsPerTopic)
		case 1:
			p.MaxRecordBytes = scale64(p.MaxRecordBytes)
		case 2:
			p.MaxRecordsPerBatch = scale32(p.MaxRecordsPerBatch)
		case 3:
			p.MaxBatchBytes = scale64(p.MaxBatchBytes)
		case 4:
			p.MaxHeadersPerRecord = scale32(p.MaxHeadersPerRecord)
		case 5:
			p.MaxGroupMembers = scale32(p.MaxGroupMembers)
		case 6:
			p.MaxExpiriesPerBlock = scale32(p.MaxExpiriesPerBlock)
		case 7:
			p.RetentionBatchesPerBlock = scale32(p.RetentionBatchesPerBlock)
		case 8:
			p.RetentionPartitionsPerBlock = scale32(p.RetentionPartitionsPerBlock)
		case 9:
			p.MaxGroupSubscribedPartitions = scale32(p.MaxGroupSubscribedPartitions)
		case 10:
			p.MaxExpiryWorkPerBlock = scale64(p.MaxExpiryWorkPerBlock)
		case 11:
			p.CleanupBytesPerBlock = scale64(p.CleanupBytesPerBlock)
		case 12:
			p.CompactionBytesPerBlock = scale64(p.CompactionBytesPerBlock)
		case 13:
			p.CompactionRecordsPerBlock = scale32(p.CompactionRecordsPerBlock)
		}
	}
	return g.propose(a, &types.MsgUpdateParams{Authority: g.gov, Params: p})
}

// proposeTopic has governance change, grow, empty or delete someone's topic.
func (g *gen) proposeTopic(a int) []sdk.Msg {
	t := g.anyTopic()
	if t == nil {
		return nil
	}
	switch g.r.Intn(4) {
	case 0:
		return g.propose(a, &types.MsgUpdateTopicConfig{Authority: g.gov, Name: t.Name, Config: g.config()})
	case 1:
		return g.propose(a, &types.MsgAddPartitions{Authority: g.gov, Name: t.Name, Partitions: t.Partitions + 1})
	case 2: // everything there is on partition 0, when the proposal passes
		return g.propose(a, &types.MsgDeleteRecords{Authority: g.gov, Partitions: []types.DeleteRecordsPartition{{Topic: t.Name, ToHighWatermark: true}}})
	}
	return g.propose(a, &types.MsgDeleteTopic{Authority: g.gov, Name: t.Name})
}

// operator is the validator operator address of account i (accounts 1 to 3 may become
// validators).
func (g *gen) operator(i int) string { return sdk.ValAddress(g.c.addrs[i]).String() }

// proposePoa admits an account's operator, moves an admitted one's power or removes it.
func (g *gen) proposePoa(a int) []sdk.Msg {
	op := g.operator(1 + g.r.Intn(min(3, len(g.c.addrs)-1)))
	n := g.r.Intn(3)
	var admitted []string // by governance, of accounts 1 to 3 (not the genesis validator, whose stake no account votes)
	for _, ad := range g.w.admitted {
		for i := 1; i <= min(3, len(g.c.addrs)-1); i++ {
			if ad.Operator == g.operator(i) {
				admitted = append(admitted, ad.Operator)
			}
		}
	}
	if n > 0 && len(admitted) > 0 && !g.oneOf(4) {
		op = admitted[g.r.Intn(len(admitted))]
	}
	switch n {
	case 0:
		return g.propose(a, &poatypes.MsgAdmitValidator{Authority: g.gov, Operator: op, Power: int64(1 + g.r.Intn(5))})
	case 1:
		return g.propose(a, &poatypes.MsgSetValidatorPower{Authority: g.gov, Operator: op, Power: int64(1 + g.r.Intn(5))})
	}
	return g.propose(a, &poatypes.MsgRemoveValidator{Authority: g.gov, Operator: op})
}

// poaHostile tries to move voting power around governance.
func (g *gen) poaHostile(a int) []sdk.Msg {
	switch g.r.Intn(2) {
	case 0:
		g.refused("validator admitted by an account", "poa/2")
		return []sdk.Msg{&poatypes.MsgAdmitValidator{Authority: g.addr(a), Operator: sdk.ValAddress(g.c.addrs[a]).String(), Power: 100}}
	}
	if len(g.w.admitted) == 0 {
		return nil
	}
	g.refused("delegation under proof of authority", "poa/5")
	return []sdk.Msg{stakingtypes.NewMsgDelegate(g.addr(a), g.w.admitted[0].Operator, sdk.NewInt64Coin(sdk.DefaultBondDenom, 1_000_000))}
}

// createValidator is an admitted operator's create-validator with the stake it was granted.
func (g *gen) createValidator(a int) []sdk.Msg {
	op := sdk.ValAddress(g.c.addrs[a]).String()
	for _, ad := range g.w.admitted {
		if ad.Operator != op || g.w.validators[op] {
			continue
		}
		stake := sdk.NewCoin(sdk.DefaultBondDenom, sdk.DefaultPowerReduction.MulRaw(ad.Power))
		msg, err := stakingtypes.NewMsgCreateValidator(op, sdked25519.GenPrivKey().PubKey(), stake, stakingtypes.Description{Moniker: fmt.Sprintf("v%d", a)},
			stakingtypes.NewCommissionRates(sdkmath.LegacyZeroDec(), sdkmath.LegacyZeroDec(), sdkmath.LegacyZeroDec()), sdkmath.OneInt())
		if err != nil {
			panic(err)
		}
		return []sdk.Msg{msg}
	}
	return nil
}

// voter says whether account a votes: account 0 (the genesis validator's delegator) and
// every account that operates a validator, so that governance keeps its quorum as x/poa admits
// validators and moves power.
func (g *gen) voter(a int) bool { return a == 0 || g.w.validators[g.operator(a)] }

// voting lists the accounts that have proposals to vote on.
func (g *gen) voting() []int {
	var out []int
	for a := range g.c.addrs {
		if !g.voter(a) {
			continue
		}
		for _, id := range g.w.proposals {
			if !g.voted[voteKey{a, id}] {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

type voteKey struct {
	account int
	id      uint64
}

// votes is voter a's votes on every open proposal it has not voted on: mostly yes, the same
// option from every voter.
func (g *gen) votes(a int) []sdk.Msg {
	var out []sdk.Msg
	for _, id := range g.w.proposals {
		if g.voted[voteKey{a, id}] {
			continue
		}
		g.voted[voteKey{a, id}] = true
		opt, ok := g.options[id]
		if !ok {
			opt = govv1.OptionYes
			if g.oneOf(5) {
				opt = govv1.OptionNo
			}
			g.options[id] = opt
		}
		out = append(out, govv1.NewMsgVote(g.c.addrs[a], id, opt, ""))
	}
	return out
}

// govAuthority is the address governance signs with.
func govAuthority() string { return authtypes.NewModuleAddress(govtypes.ModuleName).String() }

// setEndpoint is an operator's data-plane endpoint (x/poa): its own, cleared, or malformed; a
// hostile account, no operator, tries to set one. The endpoints are closed ports on 127.0.0.1:
// the node under test then pushes to and fetches from peers that refuse at once.
func (g *gen) setEndpoint(a int) []sdk.Msg {
	admitted := false
	for _, ad := range g.w.admitted {
		admitted = admitted || ad.Operator == g.operator(a)
	}
	msg := &poatypes.MsgSetDataPlaneEndpoint{Operator: g.addr(a), Endpoint: fmt.Sprintf("http://127.0.0.1:%d", 1+a)}
	switch {
	case !admitted && (g.hostile[a] || g.oneOf(4)):
		g.refused("data-plane endpoint by an account no operator", "poa/4")
	case !admitted:
		return nil
	case !g.sent["malformed data-plane endpoint"] || g.oneOf(3):
		msg.Endpoint = []string{"127.0.0.1:1", "http://h:1/x", "ftp://h:1", "http://u:p@h:1"}[g.r.Intn(4)]
		g.refused("malformed data-plane endpoint", "poa/11")
	case g.oneOf(4):
		msg.Endpoint = ""
	case !g.sent["malformed data-plane key"] || !g.oneOf(3):
		// Its own data-plane key (one per operator, so never another's) with its proof, or one
		// of the wrong size, or a proof that fails: x/poa takes only 32 bytes, proven. (A key another operator registered is refused too:
		// x/poa/keeper's test; here a later message without a key clears it, so whether one is
		// registered depends on what executed.)
		seed := sha256.Sum256([]byte(g.operator(a)))
		priv := ed25519.NewKeyFromSeed(seed[:])
		_, op, _ := bech32.DecodeAndConvert(g.operator(a))
		msg.DataPlaneKey = priv.Public().(ed25519.PublicKey)
		msg.DataPlaneKeyProof = ed25519.Sign(priv, poatypes.DataPlaneKeyProofBytes(op))
		// Malformed often enough that a 500-block run sends one (coverage.go requires it).
		switch {
		case !g.sent["malformed data-plane key"] || g.oneOf(3):
			msg.DataPlaneKey = msg.DataPlaneKey[:31]
			g.refused("malformed data-plane key", "poa/12")
		case g.oneOf(3):
			msg.DataPlaneKeyProof[0] ^= 1
			g.refused("malformed data-plane key", "poa/12")
		}
	}
	return []sdk.Msg{msg}
}
