package sim

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	abci "github.com/cometbft/cometbft/abci/types"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"
	storetypes "cosmossdk.io/store/types"

	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/app"
	poatypes "github.com/bftlog/bftlog/x/poa/types"
	"github.com/bftlog/bftlog/x/topics/types"
)

// invariants checks what must hold after every block; it returns every violation found.
type invariants struct {
	a    *app.App
	ctx  sdk.Context
	node *node
	bad  []error
}

func (v *invariants) failf(format string, args ...any) {
	if len(v.bad) < 20 {
		v.bad = append(v.bad, fmt.Errorf(format, args...))
	}
}

func (v *invariants) check(err error) {
	if err != nil {
		v.failf("reading state: %v", err)
	}
}

// checkState runs the state invariants on the committed state of a.
func checkState(a *app.App, ctx sdk.Context, node *node) error {
	v := &invariants{a: a, ctx: ctx, node: node}
	v.groups()
	v.log()
	v.records(node)
	v.deposits()
	return errors.Join(v.bad...)
}

// purging says whether topic was deleted and is being purged (its batches and key entries
// may stay until the purge reaches them).
func (v *invariants) purging(topic string) bool {
	ok, err := v.a.TopicsKeeper.TopicPurges.Has(v.ctx, topic)
	v.check(err)
	return ok
}

// groups: no orphan group state. Every member (either kind) has its group, of its kind, and
// exactly one expiry entry at its expiry; every expiry entry its member; every Kafka group
// state its group; every rebalance entry an open join phase of an existing Kafka group; every
// committed offset its group and its group-topic index entry.
func (v *invariants) groups() {
	k := v.a.TopicsKeeper
	ctx := v.ctx
	groups := map[string]types.Group{}
	v.check(k.Groups.Walk(ctx, nil, func(id string, g types.Group) (bool, error) {
		groups[id] = g
		return false, nil
	}))
	// collections' Pair and Triple hold pointers: maps are keyed by plain structs.
	type expiryKey struct {
		at            int64
		group, member string
	}
	type groupTopic struct{ topic, group string }
	expiry := map[expiryKey]bool{}
	v.check(k.MemberExpiry.Walk(ctx, nil, func(key collections.Triple[int64, string, string], _ bool) (bool, error) {
		expiry[expiryKey{key.K1(), key.K2(), key.K3()}] = true
		return false, nil
	}))
	members := 0
	v.check(k.Members.Walk(ctx, nil, func(key collections.Pair[string, string], m types.Member) (bool, error) {
		members++
		g, ok := groups[m.GroupId]
		switch {
		case !ok:
			v.failf("native member %s of group %q, which does not exist", m.Member, m.GroupId)
		case g.Kind != types.GROUP_KIND_NATIVE:
			v.failf("native member %s of group %q, whose kind is %s", m.Member, m.GroupId, g.Kind)
		}
		if !expiry[expiryKey{m.ExpiresAtMs, m.GroupId, m.Member}] {
			v.failf("native member %s of group %q has no expiry entry at %d", m.Member, m.GroupId, m.ExpiresAtMs)
		}
		return false, nil
	}))
	kafkaGroups := map[string]types.KafkaGroup{}
	v.check(k.KafkaGroups.Walk(ctx, nil, func(id string, kg types.KafkaGroup) (bool, error) {
		kafkaGroups[id] = kg
		if g, ok := groups[id]; !ok {
			v.failf("Kafka group state of %q, which does not exist", id)
		} else if g.Kind != types.GROUP_KIND_KAFKA {
			v.failf("Kafka group state of %q, whose kind is %s", id, g.Kind)
		}
		return false, nil
	}))
	v.check(k.KafkaMembers.Walk(ctx, nil, func(key collections.Pair[string, string], m types.KafkaMember) (bool, error) {
		members++
		g, ok := groups[m.GroupId]
		switch {
		case !ok:
			v.failf("Kafka member %q of group %q, which does not exist", m.MemberId, m.GroupId)
		case g.Kind != types.GROUP_KIND_KAFKA:
			v.failf("Kafka member %q of group %q, whose kind is %s", m.MemberId, m.GroupId, g.Kind)
		}
		if _, ok := kafkaGroups[m.GroupId]; !ok {
			v.failf("Kafka member %q of group %q, which has no Kafka group state", m.MemberId, m.GroupId)
		}
		if !expiry[expiryKey{m.ExpiresAtMs, m.GroupId, m.MemberId}] {
			v.failf("Kafka member %q of group %q has no expiry entry at %d", m.MemberId, m.GroupId, m.ExpiresAtMs)
		}
		return false, nil
	}))
	members += v.consumerGroups(groups, func(at int64, group, member string) bool { return expiry[expiryKey{at, group, member}] })
	members += v.shareGroups(v.node, groups, func(at int64, group, member string) bool { return expiry[expiryKey{at, group, member}] })
	if len(expiry) != members {
		v.failf("%d member expiry entries for %d members", len(expiry), members)
	}
	v.check(k.KafkaRebalanceDue.Walk(ctx, nil, func(key collections.Pair[int64, string], _ bool) (bool, error) {
		kg, ok := kafkaGroups[key.K2()]
		switch {
		case !ok:
			v.failf("rebalance entry at %d of group %q, which has no Kafka group state", key.K1(), key.K2())
		case kg.State != types.KAFKA_GROUP_STATE_PREPARING_REBALANCE:
			v.failf("rebalance entry at %d of group %q, which is %s", key.K1(), key.K2(), kg.State)
		case key.K1() != kg.NotBeforeMs && key.K1() != kg.DeadlineMs:
			v.failf("rebalance entry at %d of group %q, whose join phase is due at %d / %d", key.K1(), key.K2(), kg.NotBeforeMs, kg.DeadlineMs)
		}
		return false, nil
	}))
	groupTopics := map[groupTopic]bool{}
	v.check(k.GroupTopics.Walk(ctx, nil, func(key collections.Pair[string, string], _ bool) (bool, error) {
		groupTopics[groupTopic{key.K1(), key.K2()}] = true
		// The purge of a deleted topic removes its entries within its budget and may stop right
		// after a group's last offset, leaving the entry for its next block; a group deleted in
		// between (it finds its topics by its offsets) leaves that entry to the purge.
		if _, ok := groups[key.K2()]; !ok && !v.purging(key.K1()) {
			v.failf("group-topic entry (%s, %s) of a group that does not exist", key.K1(), key.K2())
		}
		return false, nil
	}))
	v.check(k.Offsets.Walk(ctx, nil, func(key collections.Pair[string, types.TopicPartition], o types.CommittedOffset) (bool, error) {
		if _, ok := groups[key.K1()]; !ok {
			v.failf("committed offset of group %q, which does not exist", key.K1())
		}
		if !groupTopics[groupTopic{key.K2().Topic, key.K1()}] {
			v.failf("committed offset of group %q on %s without its group-topic entry", key.K1(), key.K2().Topic)
		}
		p, err := k.Partitions.Get(ctx, key.K2())
		if err == nil && o.Offset > p.HighWatermark {
			v.failf("group %q committed %d on %s/%d, above its high watermark %d", key.K1(), o.Offset, p.Topic, p.Partition, p.HighWatermark)
		} else if err != nil && !v.purging(key.K2().Topic) {
			v.failf("committed offset of group %q on %s/%d, which does not exist", key.K1(), key.K2().Topic, key.K2().Partition)
		}
		return false, nil
	}))
}

// log: every partition's high watermark, log start offset, record and byte counts agree with
// its batches (in order, not overlapping, each with its metadata); batches, metadata, producer
// and compaction state belong to a live partition or to a topic being purged.
func (v *invariants) log() {
	k := v.a.TopicsKeeper
	ctx := v.ctx
	type tally struct {
		records, bytes, last uint64
		any                  bool
	}
	tallies := map[types.TopicPartition]*tally{}
	v.check(k.BatchMetas.Walk(ctx, nil, func(key collections.Pair[types.TopicPartition, uint64], m types.BatchMeta) (bool, error) {
		tp := key.K1()
		b, err := k.Batches.Get(ctx, key)
		if err != nil {
			v.failf("batch metadata of %s/%d at %d without its batch: %v", tp.Topic, tp.Partition, key.K2(), err)
			return false, nil
		}
		if b.Meta() != m {
			v.failf("batch %s/%d at %d: metadata %v, the batch says %v", tp.Topic, tp.Partition, key.K2(), m, b.Meta())
		}
		if b.LastOffset() != key.K2() {
			v.failf("batch %s/%d keyed %d ends at %d", tp.Topic, tp.Partition, key.K2(), b.LastOffset())
		}
		t := tallies[tp]
		if t == nil {
			t = &tally{}
			tallies[tp] = t
		}
		if t.any && m.BaseOffset <= t.last {
			v.failf("batch %s/%d at %d overlaps the one before (ending at %d)", tp.Topic, tp.Partition, m.BaseOffset, t.last)
		}
		t.any, t.last = true, key.K2()
		t.records += m.Records(key.K2())
		t.bytes += m.SizeBytes
		return false, nil
	}))
	batches := 0
	v.check(k.Batches.Walk(ctx, nil, func(collections.Pair[types.TopicPartition, uint64], types.RecordBatch) (bool, error) {
		batches++
		return false, nil
	}))
	metas := 0
	v.check(k.BatchMetas.Walk(ctx, nil, func(collections.Pair[types.TopicPartition, uint64], types.BatchMeta) (bool, error) {
		metas++
		return false, nil
	}))
	if batches != metas {
		v.failf("%d batches, %d batch metadata entries", batches, metas)
	}
	seen := map[types.TopicPartition]bool{}
	v.check(k.Partitions.Walk(ctx, nil, func(tp types.TopicPartition, p types.Partition) (bool, error) {
		seen[tp] = true
		if p.LogStartOffset > p.HighWatermark {
			v.failf("%s/%d: log start offset %d above the high watermark %d", tp.Topic, tp.Partition, p.LogStartOffset, p.HighWatermark)
		}
		t := tallies[tp]
		if t == nil {
			t = &tally{}
		}
		if t.records != p.RecordCount || t.bytes != p.ByteCount {
			v.failf("%s/%d counts %d records, %d bytes; its batches hold %d, %d", tp.Topic, tp.Partition, p.RecordCount, p.ByteCount, t.records, t.bytes)
		}
		if t.any && t.last >= p.HighWatermark {
			v.failf("%s/%d: a batch ends at %d, the high watermark is %d", tp.Topic, tp.Partition, t.last, p.HighWatermark)
		}
		// Batches may lie below the log start offset: MsgDeleteRecords moves it and the
		// EndBlocker deletes them over the next blocks (checked at the end of a run, Run).
		return false, nil
	}))
	for tp := range tallies {
		if !seen[tp] && !v.purging(tp.Topic) {
			v.failf("batches of %s/%d, which neither exists nor is being purged", tp.Topic, tp.Partition)
		}
	}
	orphan := func(what string, tp types.TopicPartition) {
		if !seen[tp] && !v.purging(tp.Topic) {
			v.failf("%s of %s/%d, which neither exists nor is being purged", what, tp.Topic, tp.Partition)
		}
	}
	v.check(k.ProducerStates.Walk(ctx, nil, func(key collections.Pair[types.TopicPartition, string], _ types.ProducerState) (bool, error) {
		orphan("producer state", key.K1())
		return false, nil
	}))
	v.check(k.KafkaProducers.Walk(ctx, nil, func(key collections.Triple[types.TopicPartition, string, int64], _ types.KafkaProducerState) (bool, error) {
		orphan("Kafka producer state", key.K1())
		return false, nil
	}))
	v.check(k.KeyOffsets.Walk(ctx, nil, func(key collections.Pair[types.TopicPartition, []byte], _ uint64) (bool, error) {
		orphan("a key_offsets entry", key.K1())
		return false, nil
	}))
	v.check(k.Compactions.Walk(ctx, nil, func(tp types.TopicPartition, st types.CompactionState) (bool, error) {
		orphan("compaction state", tp)
		if st.DueMs != 0 {
			if ok, err := k.CompactionDue.Has(ctx, collections.Join(st.DueMs, tp)); err != nil || !ok {
				v.failf("compaction of %s/%d due at %d without its schedule entry", tp.Topic, tp.Partition, st.DueMs)
			}
		}
		return false, nil
	}))
	v.check(k.CompactionDue.Walk(ctx, nil, func(key collections.Pair[int64, types.TopicPartition], _ bool) (bool, error) {
		st, err := k.Compactions.Get(ctx, key.K2())
		if err != nil || st.DueMs != key.K1() {
			v.failf("compaction schedule entry of %s/%d at %d; its state says %d (%v)", key.K2().Topic, key.K2().Partition, key.K1(), st.DueMs, err)
		}
		return false, nil
	}))
}

// belowLogStart lists the partitions holding a batch wholly below their log start offset:
// records MsgDeleteRecords deleted whose batches the EndBlocker has yet to remove.
func belowLogStart(a *app.App, ctx sdk.Context) ([]string, error) {
	k := a.TopicsKeeper
	var out []string
	err := k.Partitions.Walk(ctx, nil, func(tp types.TopicPartition, p types.Partition) (bool, error) {
		iter, err := k.BatchMetas.Iterate(ctx, collections.NewPrefixedPairRange[types.TopicPartition, uint64](tp))
		if err != nil {
			return true, err
		}
		defer iter.Close()
		if !iter.Valid() {
			return false, nil
		}
		key, err := iter.Key()
		if err != nil {
			return true, err
		}
		if key.K2() < p.LogStartOffset {
			out = append(out, fmt.Sprintf("%s/%d (batch ending at %d, log start offset %d)", tp.Topic, tp.Partition, key.K2(), p.LogStartOffset))
		}
		return false, nil
	})
	return out, err
}

// drainLimit is twice the batches and partitions in the state, plus a few blocks.
func drainLimit(a *app.App, ctx sdk.Context) (int, error) {
	k := a.TopicsKeeper
	n := 10
	err := k.BatchMetas.Walk(ctx, nil, func(collections.Pair[types.TopicPartition, uint64], types.BatchMeta) (bool, error) {
		n += 2
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	err = k.Partitions.Walk(ctx, nil, func(types.TopicPartition, types.Partition) (bool, error) {
		n += 2
		return false, nil
	})
	return n, err
}

// records: the record store holds a pointer for exactly the batches in the state, and the
// bytes behind them hash to the SHA-256 the state commits (a sample each block; every batch
// at the end of a run).
func (v *invariants) records(n *node) {
	if n == nil {
		return
	}
	k := v.a.TopicsKeeper
	prefix := append([]byte(types.RecordDBPrefix), types.RecordBytesPrefix.Bytes()...)
	it, err := n.db.Iterator(prefix, storetypes.PrefixEndBytes(prefix))
	if err != nil {
		v.check(err)
		return
	}
	pointers := map[string]bool{}
	for ; it.Valid(); it.Next() {
		pointers[string(it.Key()[len(prefix):])] = true
	}
	v.check(it.Close())
	count := 0
	v.check(k.Batches.Walk(v.ctx, nil, func(key collections.Pair[types.TopicPartition, uint64], b types.RecordBatch) (bool, error) {
		count++
		raw, err := collections.EncodeKeyWithPrefix(nil, types.BatchKeyCodec, key)
		if err != nil {
			return true, err
		}
		if !pointers[string(raw)] {
			v.failf("batch %s/%d at %d has no record pointer", key.K1().Topic, key.K1().Partition, key.K2())
			return false, nil
		}
		delete(pointers, string(raw))
		if n.checkAllBytes || count%7 == 0 {
			bz, err := k.RecordBytes.Get(v.ctx, key)
			if sum := sha256.Sum256(bz); err != nil || !bytes.Equal(sum[:], b.RecordBatchSha256) {
				v.failf("record bytes of %s/%d at %d do not match the state's SHA-256 (%v)", key.K1().Topic, key.K1().Partition, key.K2(), err)
			}
		}
		return false, nil
	}))
	for key := range pointers {
		v.failf("record pointer %x without its batch", key)
	}
}

// deposits: the x/topics module account holds exactly the deposits of the topics and groups.
func (v *invariants) deposits() {
	want, err := v.a.TopicsKeeper.EscrowedDeposits(v.ctx)
	v.check(err)
	have := v.a.BankKeeper.GetAllBalances(v.ctx, authtypes.NewModuleAddress(types.ModuleName))
	if !have.Equal(want) {
		v.failf("the x/topics module account holds %s; topics and groups escrow %s", have, want)
	}
}

// supplyChange is what a block's events say it minted and burned, and who did: only x/poa
// mints (an admitted validator's stake) and burns (stake returned from unbonding), and x/gov
// burns the deposits of proposals it rejects. Fees move coins; they never change the supply.
func supplyChange(res *abci.ResponseFinalizeBlock) (sdkmath.Int, error) {
	poa := authtypes.NewModuleAddress(poatypes.ModuleName).String()
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	delta := sdkmath.ZeroInt()
	events := append([]abci.Event(nil), res.Events...)
	for _, r := range res.TxResults {
		events = append(events, r.Events...)
	}
	for _, e := range events {
		var who, amount string
		for _, a := range e.Attributes {
			switch a.Key {
			case "minter", "burner":
				who = a.Value
			case "amount":
				amount = a.Value
			}
		}
		coins, err := sdk.ParseCoinsNormalized(amount)
		if err != nil {
			continue
		}
		switch {
		case e.Type == "coinbase" && who == poa:
			delta = delta.Add(coins.AmountOf(sdk.DefaultBondDenom))
		case e.Type == "burn" && (who == poa || who == gov):
			delta = delta.Sub(coins.AmountOf(sdk.DefaultBondDenom))
		case e.Type == "coinbase" || e.Type == "burn":
			return delta, fmt.Errorf("%s of %s by %s, which may not change the supply", e.Type, amount, who)
		}
	}
	return delta, nil
}

// consumerGroups: every KIP-848 group state has its group, of its kind; every member its
// group, state and one expiry entry; member epochs never pass the assignment epoch, nor it the
// group epoch; a member waits on revocation exactly when it has partitions pending; and no
// partition is held (assigned or pending revocation) by two members of a group. It returns the
// members counted.
func (v *invariants) consumerGroups(groups map[string]types.Group, hasExpiry func(at int64, group, member string) bool) int {
	k := v.a.TopicsKeeper
	cgs := map[string]types.ConsumerGroup{}
	v.check(k.ConsumerGroups.Walk(v.ctx, nil, func(id string, cg types.ConsumerGroup) (bool, error) {
		cgs[id] = cg
		if g, ok := groups[id]; !ok {
			v.failf("consumer group state of %q, which does not exist", id)
		} else if g.Kind != types.GROUP_KIND_CONSUMER {
			v.failf("consumer group state of %q, whose kind is %s", id, g.Kind)
		}
		if cg.AssignmentEpoch > cg.GroupEpoch {
			v.failf("consumer group %q: assignment epoch %d past group epoch %d", id, cg.AssignmentEpoch, cg.GroupEpoch)
		}
		return false, nil
	}))
	type held struct {
		group string
		tp    types.TopicPartition
	}
	owner := map[held]string{}
	n := 0
	v.check(k.ConsumerMembers.Walk(v.ctx, nil, func(_ collections.Pair[string, string], m types.ConsumerMember) (bool, error) {
		n++
		g, ok := groups[m.GroupId]
		cg, hasState := cgs[m.GroupId]
		switch {
		case !ok:
			v.failf("consumer member %q of group %q, which does not exist", m.MemberId, m.GroupId)
		case g.Kind != types.GROUP_KIND_CONSUMER:
			v.failf("consumer member %q of group %q, whose kind is %s", m.MemberId, m.GroupId, g.Kind)
		case !hasState:
			v.failf("consumer member %q of group %q, which has no consumer group state", m.MemberId, m.GroupId)
		case m.MemberEpoch > cg.AssignmentEpoch:
			v.failf("consumer member %q of group %q at epoch %d, past the assignment epoch %d", m.MemberId, m.GroupId, m.MemberEpoch, cg.AssignmentEpoch)
		}
		if !hasExpiry(m.ExpiresAtMs, m.GroupId, m.MemberId) {
			v.failf("consumer member %q of group %q has no expiry entry at %d", m.MemberId, m.GroupId, m.ExpiresAtMs)
		}
		if (m.State == types.CONSUMER_MEMBER_STATE_UNREVOKED_PARTITIONS) != (len(m.PendingRevocation) > 0) && m.State != types.CONSUMER_MEMBER_STATE_LEFT_STATIC {
			v.failf("consumer member %q of group %q is %s with %d topics pending revocation", m.MemberId, m.GroupId, m.State, len(m.PendingRevocation))
		}
		for tp := range types.NewPartitionSet(m.Assigned, m.PendingRevocation) {
			key := held{m.GroupId, tp}
			if other, dup := owner[key]; dup {
				v.failf("group %q: %s/%d held by both %q and %q", m.GroupId, tp.Topic, tp.Partition, other, m.MemberId)
			}
			owner[key] = m.MemberId
		}
		return false, nil
	}))
	return n
}

// shareRecord is one record of a share partition.
type shareRecord struct {
	group, topic string
	partition    uint32
	offset       uint64
}

// shareGroups: every share group state and member has its group, of its kind, and members their
// expiry entry; every share partition's runs tile [start, end) within the in-flight and run
// bounds, acquired runs hold a member and a lock no earlier than the partition's lock entry,
// which exists exactly when something is acquired; and a record's delivery count never goes
// down. It returns the members counted.
func (v *invariants) shareGroups(node *node, groups map[string]types.Group, hasExpiry func(at int64, group, member string) bool) int {
	k := v.a.TopicsKeeper
	v.check(k.ShareGroups.Walk(v.ctx, nil, func(id string, _ types.ShareGroup) (bool, error) {
		if g, ok := groups[id]; !ok || g.Kind != types.GROUP_KIND_SHARE {
			v.failf("share group state of %q, which is not a share group", id)
		}
		return false, nil
	}))
	n := 0
	v.check(k.ShareMembers.Walk(v.ctx, nil, func(_ collections.Pair[string, string], m types.ShareMember) (bool, error) {
		n++
		if g, ok := groups[m.GroupId]; !ok || g.Kind != types.GROUP_KIND_SHARE {
			v.failf("share member %q of group %q, which is not a share group", m.MemberId, m.GroupId)
		}
		if !hasExpiry(m.ExpiresAtMs, m.GroupId, m.MemberId) {
			v.failf("share member %q of group %q has no expiry entry at %d", m.MemberId, m.GroupId, m.ExpiresAtMs)
		}
		return false, nil
	}))
	seen := map[shareRecord]int32{}
	v.check(k.SharePartitions.Walk(v.ctx, nil, func(key collections.Pair[string, types.TopicPartition], sp types.SharePartition) (bool, error) {
		name := fmt.Sprintf("share partition %s/%d of %q", sp.Topic, sp.Partition, sp.GroupId)
		if g, ok := groups[sp.GroupId]; !ok || g.Kind != types.GROUP_KIND_SHARE {
			v.failf("%s, which is not a share group", name)
		}
		if sp.EndOffset < sp.StartOffset || sp.EndOffset-sp.StartOffset > types.MaxShareInFlightRecords || len(sp.Ranges) > types.MaxShareRanges {
			v.failf("%s: in flight [%d, %d) in %d runs, past the bounds", name, sp.StartOffset, sp.EndOffset, len(sp.Ranges))
		}
		next, earliest := sp.StartOffset, int64(0)
		for _, r := range sp.Ranges {
			if r.FirstOffset != next || r.LastOffset < r.FirstOffset {
				v.failf("%s: run [%d, %d] where %d was next", name, r.FirstOffset, r.LastOffset, next)
				return false, nil
			}
			next = r.LastOffset + 1
			acquired := r.State == types.SHARE_RECORD_STATE_ACQUIRED
			if acquired != (r.MemberId != "" && r.LockDeadlineMs != 0) {
				v.failf("%s: run [%d, %d] is %s held by %q until %d", name, r.FirstOffset, r.LastOffset, r.State, r.MemberId, r.LockDeadlineMs)
			}
			if acquired && (earliest == 0 || r.LockDeadlineMs < earliest) {
				earliest = r.LockDeadlineMs
			}
			for o := r.FirstOffset; o <= r.LastOffset; o++ {
				rec := shareRecord{sp.GroupId, sp.Topic, sp.Partition, o}
				if prev := node.deliveries[rec]; r.DeliveryCount < prev {
					v.failf("%s: offset %d delivered %d times, %d before", name, o, r.DeliveryCount, prev)
				}
				seen[rec] = r.DeliveryCount
			}
		}
		if next != sp.EndOffset {
			v.failf("%s: runs end at %d, the end offset is %d", name, next, sp.EndOffset)
		}
		if earliest != sp.NextLockDeadlineMs {
			v.failf("%s: earliest lock %d, indexed at %d", name, earliest, sp.NextLockDeadlineMs)
		} else if earliest != 0 {
			has, err := k.ShareLockDue.Has(v.ctx, collections.Join3(earliest, sp.GroupId, key.K2()))
			v.check(err)
			if !has {
				v.failf("%s: no lock entry at %d", name, earliest)
			}
		}
		return false, nil
	}))
	entries := 0
	v.check(k.ShareLockDue.Walk(v.ctx, nil, func(collections.Triple[int64, string, types.TopicPartition], bool) (bool, error) {
		entries++
		return false, nil
	}))
	locked := 0
	v.check(k.SharePartitions.Walk(v.ctx, nil, func(_ collections.Pair[string, types.TopicPartition], sp types.SharePartition) (bool, error) {
		if sp.NextLockDeadlineMs != 0 {
			locked++
		}
		return false, nil
	}))
	if entries != locked {
		v.failf("%d share lock entries for %d share partitions with acquired records", entries, locked)
	}
	node.deliveries = seen
	return n
}
