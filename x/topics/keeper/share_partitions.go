package keeper

import (
	"context"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/types"
)

// A share partition's delivery state (types.SharePartition): records below start_offset are
// done; its ranges tile [start_offset, end_offset), each run of records AVAILABLE (delivered
// before, to be delivered again), ACQUIRED by one member under a lock, ACKNOWLEDGED or
// ARCHIVED; records from end_offset on were never delivered. A fetch acknowledges, then
// acquires; the EndBlocker takes back records whose lock ran out. Every step keeps the ranges
// sorted, disjoint and merged, at most MaxShareRanges of them over at most
// MaxShareInFlightRecords records.

// sharePartition loads a share partition's state, making it when the group first deals the
// partition (or the topic was deleted and made again since): from the high watermark, or the
// log start offset with share.auto.offset.reset=earliest. It moves the start past records
// retention or DeleteRecords removed.
func (k Keeper) sharePartition(ctx context.Context, sg types.ShareGroup, topic types.Topic, partition uint32) (types.SharePartition, error) {
	tp := types.TopicPartition{Topic: topic.Name, Partition: partition}
	sp, err := k.SharePartitions.Get(ctx, collections.Join(sg.GroupId, tp))
	if err != nil && !isNotFound(err) {
		return sp, err
	}
	p, perr := k.Partitions.Get(ctx, tp)
	if perr != nil {
		return sp, perr
	}
	if isNotFound(err) || sp.TopicCreatedHeight != topic.CreatedHeight {
		if err := k.setLockDue(ctx, &sp, 0); err != nil {
			return sp, err
		}
		start := p.HighWatermark
		if sg.AutoOffsetResetEarliest {
			start = p.LogStartOffset
		}
		sp = types.SharePartition{GroupId: sg.GroupId, Topic: topic.Name, Partition: partition, StartOffset: start, EndOffset: start,
			TopicCreatedHeight: topic.CreatedHeight}
		return sp, k.SharePartitions.Set(ctx, collections.Join(sg.GroupId, tp), sp)
	}
	if sp.StartOffset < p.LogStartOffset {
		// Records below the log start offset are gone: whatever their state, they are done.
		var kept []types.ShareRange
		for _, r := range sp.Ranges {
			if r.LastOffset < p.LogStartOffset {
				continue
			}
			r.FirstOffset = max(r.FirstOffset, p.LogStartOffset)
			kept = append(kept, r)
		}
		sp.Ranges, sp.StartOffset, sp.EndOffset = kept, p.LogStartOffset, max(sp.EndOffset, p.LogStartOffset)
	}
	return sp, nil
}

// saveSharePartition stores sp with its lock index entry at its earliest lock deadline.
func (k Keeper) saveSharePartition(ctx context.Context, sp *types.SharePartition) error {
	normalizeShare(sp)
	next := int64(0)
	for _, r := range sp.Ranges {
		if r.State == types.SHARE_RECORD_STATE_ACQUIRED && (next == 0 || r.LockDeadlineMs < next) {
			next = r.LockDeadlineMs
		}
	}
	if err := k.setLockDue(ctx, sp, next); err != nil {
		return err
	}
	return k.SharePartitions.Set(ctx, collections.Join(sp.GroupId, types.TopicPartition{Topic: sp.Topic, Partition: sp.Partition}), *sp)
}

func (k Keeper) setLockDue(ctx context.Context, sp *types.SharePartition, at int64) error {
	if sp.NextLockDeadlineMs == at {
		return nil
	}
	tp := types.TopicPartition{Topic: sp.Topic, Partition: sp.Partition}
	if sp.NextLockDeadlineMs != 0 {
		if err := k.ShareLockDue.Remove(ctx, collections.Join3(sp.NextLockDeadlineMs, sp.GroupId, tp)); err != nil {
			return err
		}
	}
	sp.NextLockDeadlineMs = at
	if at == 0 {
		return nil
	}
	return k.ShareLockDue.Set(ctx, collections.Join3(at, sp.GroupId, tp), true)
}

// normalizeShare advances the start offset past done records and merges neighbouring ranges
// that are alike.
func normalizeShare(sp *types.SharePartition) {
	for len(sp.Ranges) > 0 {
		r := sp.Ranges[0]
		if r.State != types.SHARE_RECORD_STATE_ACKNOWLEDGED && r.State != types.SHARE_RECORD_STATE_ARCHIVED {
			break
		}
		sp.StartOffset = r.LastOffset + 1
		sp.Ranges = sp.Ranges[1:]
	}
	if len(sp.Ranges) == 0 {
		sp.StartOffset, sp.Ranges = sp.EndOffset, nil
		return
	}
	merged := sp.Ranges[:1:1]
	for _, r := range sp.Ranges[1:] {
		last := &merged[len(merged)-1]
		if last.LastOffset+1 == r.FirstOffset && last.State == r.State && last.DeliveryCount == r.DeliveryCount &&
			last.MemberId == r.MemberId && last.LockDeadlineMs == r.LockDeadlineMs && last.FetchTag == r.FetchTag {
			last.LastOffset = r.LastOffset
			continue
		}
		merged = append(merged, r)
	}
	sp.Ranges = merged
}

// splitShareAt makes offset the first offset of a range (when it falls inside one).
func splitShareAt(sp *types.SharePartition, offset uint64) {
	for i, r := range sp.Ranges {
		if r.FirstOffset < offset && offset <= r.LastOffset {
			left, right := r, r
			left.LastOffset, right.FirstOffset = offset-1, offset
			sp.Ranges = append(sp.Ranges[:i], append([]types.ShareRange{left, right}, sp.Ranges[i+1:]...)...)
			return
		}
	}
}

// acknowledge applies one partition's acknowledgements by member, all or none: each must cover
// records the member holds (ErrInvalidRecordState otherwise: its lock ran out, say, and the
// records went to another member), and together they may not split the partition into more
// than MaxShareRanges runs (ErrInvalidRequest: acknowledge in fewer, longer runs).
func acknowledge(sp *types.SharePartition, member string, acks []types.ShareAcknowledgement, limit int32) error {
	trial := *sp
	trial.Ranges = append([]types.ShareRange(nil), sp.Ranges...)
	if err := applyAcks(&trial, member, acks, limit); err != nil {
		return err
	}
	normalizeShare(&trial)
	if len(trial.Ranges) > types.MaxShareRanges {
		return errorsmod.Wrapf(types.ErrInvalidRequest, "the acknowledgements would split %s/%d into %d runs, the limit is %d", sp.Topic, sp.Partition, len(trial.Ranges), types.MaxShareRanges)
	}
	*sp = trial
	return nil
}

func applyAcks(sp *types.SharePartition, member string, acks []types.ShareAcknowledgement, limit int32) error {
	for _, a := range acks {
		covered := uint64(0)
		for _, r := range sp.Ranges {
			lo, hi := max(r.FirstOffset, a.FirstOffset), min(r.LastOffset, a.LastOffset)
			if lo > hi {
				continue
			}
			if r.State != types.SHARE_RECORD_STATE_ACQUIRED || r.MemberId != member {
				return errorsmod.Wrapf(types.ErrInvalidRecordState, "offsets %d to %d are %s", lo, hi, r.State)
			}
			covered += hi - lo + 1
		}
		if covered != a.LastOffset-a.FirstOffset+1 {
			return errorsmod.Wrapf(types.ErrInvalidRecordState, "offsets %d to %d were not all delivered to %s", a.FirstOffset, a.LastOffset, member)
		}
	}
	for _, a := range acks {
		splitShareAt(sp, a.FirstOffset)
		splitShareAt(sp, a.LastOffset+1)
		for i := range sp.Ranges {
			r := &sp.Ranges[i]
			if r.FirstOffset < a.FirstOffset || r.LastOffset > a.LastOffset {
				continue
			}
			switch a.Type {
			case types.ShareAckGap, types.ShareAckAccept:
				r.State = types.SHARE_RECORD_STATE_ACKNOWLEDGED
			case types.ShareAckRelease:
				r.State = types.SHARE_RECORD_STATE_AVAILABLE
				if r.DeliveryCount >= limit {
					r.State = types.SHARE_RECORD_STATE_ARCHIVED
				}
			case types.ShareAckReject:
				r.State = types.SHARE_RECORD_STATE_ARCHIVED
			}
			r.MemberId, r.LockDeadlineMs, r.FetchTag = "", 0, ""
		}
	}
	return nil
}

// acquire hands member up to max records: first those delivered before and released (oldest
// first), then new ones up to the high watermark, within the in-flight and range bounds.
func acquire(sp *types.SharePartition, member, tag string, want uint64, hw uint64, deadline int64) []types.ShareRange {
	var out []types.ShareRange
	take := func(r *types.ShareRange) {
		r.State, r.MemberId, r.LockDeadlineMs, r.FetchTag = types.SHARE_RECORD_STATE_ACQUIRED, member, deadline, tag
		r.DeliveryCount++
		out = append(out, *r)
	}
	for i := 0; i < len(sp.Ranges) && want > 0; i++ {
		r := sp.Ranges[i]
		if r.State != types.SHARE_RECORD_STATE_AVAILABLE {
			continue
		}
		if n := r.LastOffset - r.FirstOffset + 1; n > want {
			if len(sp.Ranges) >= types.MaxShareRanges {
				break
			}
			splitShareAt(sp, r.FirstOffset+want)
		}
		take(&sp.Ranges[i])
		want -= sp.Ranges[i].LastOffset - sp.Ranges[i].FirstOffset + 1
	}
	limit := sp.StartOffset + types.MaxShareInFlightRecords
	if end := min(hw, limit, sp.EndOffset+want); end > sp.EndOffset && len(sp.Ranges) < types.MaxShareRanges {
		r := types.ShareRange{FirstOffset: sp.EndOffset, LastOffset: end - 1}
		take(&r)
		sp.Ranges = append(sp.Ranges, r)
		sp.EndOffset = end
	}
	return out
}

// ShareFetch acknowledges, then acquires, for a share group member. What depends on timing (the
// member expired, a lock ran out, a partition dealt elsewhere) is answered per partition, so a
// gateway's transaction of several members' fetches is not lost to one of them.
func (k Keeper) ShareFetch(ctx context.Context, msg *types.MsgShareFetch) (*types.MsgShareFetchResponse, error) {
	if err := k.validAddress(msg.Owner, "owner"); err != nil {
		return nil, err
	}
	if err := msg.Validate(); err != nil {
		return nil, err
	}
	g, gerr := k.GetGroup(ctx, msg.GroupId)
	if gerr != nil && !errorsmod.IsOf(gerr, types.ErrUnknownGroup) {
		return nil, gerr
	}
	resp := &types.MsgShareFetchResponse{}
	byPartition := map[types.TopicPartition]*types.SharePartitionResult{}
	var order []types.TopicPartition
	result := func(topic string, partition uint32) *types.SharePartitionResult {
		tp := types.TopicPartition{Topic: topic, Partition: partition}
		if r, ok := byPartition[tp]; ok {
			return r
		}
		byPartition[tp] = &types.SharePartitionResult{Topic: topic, Partition: partition}
		order = append(order, tp)
		return byPartition[tp]
	}
	acks := map[types.TopicPartition][]types.ShareAcknowledgement{}
	for _, a := range msg.Acknowledgements {
		result(a.Topic, a.Partition)
		tp := types.TopicPartition{Topic: a.Topic, Partition: a.Partition}
		acks[tp] = append(acks[tp], a)
	}
	for _, a := range msg.Acquire {
		result(a.Topic, a.Partition)
	}
	// Whatever concerns the member — the group gone, the member expired or its id taken by
	// another account since, the policy changed — is answered per partition: a gateway's batch
	// of its members' fetches is not lost to one of them.
	m, merr := k.ownedShareMember(ctx, msg.GroupId, msg.MemberId, msg.Owner)
	if gerr != nil {
		merr = gerr
	} else if merr == nil && g.Kind == types.GROUP_KIND_SHARE {
		merr = mayJoin(g, msg.Owner)
	} else if merr == nil {
		merr = errorsmod.Wrapf(types.ErrUnknownMember, "group %q is not a share group", msg.GroupId)
	}
	if merr != nil && !isNotFound(merr) && !errorsmod.IsOf(merr, types.ErrUnknownMember, types.ErrGroupAuthorization) {
		return nil, merr
	}
	sg, err := k.shareGroup(ctx, g)
	if err != nil {
		return nil, err
	}
	resp.LockDurationMs = sg.RecordLockDurationMs
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	assigned := types.NewPartitionSet(m.Assigned)
	want := map[types.TopicPartition]uint64{}
	for _, a := range msg.Acquire {
		want[types.TopicPartition{Topic: a.Topic, Partition: a.Partition}] = uint64(a.MaxRecords)
	}
	for _, tp := range order {
		r := byPartition[tp]
		if merr != nil {
			r.AckCode, r.AcquireCode = errCode(merr), errCode(merr)
			continue
		}
		topic, err := k.Topics.Get(ctx, tp.Topic)
		if isNotFound(err) || (err == nil && tp.Partition >= topic.Partitions) {
			r.AckCode, r.AcquireCode = types.ErrUnknownTopic.ABCICode(), types.ErrUnknownTopic.ABCICode()
			continue
		} else if err != nil {
			return nil, err
		}
		sp, err := k.sharePartition(ctx, sg, topic, tp.Partition)
		if err != nil {
			return nil, err
		}
		if list := acks[tp]; len(list) > 0 {
			if err := acknowledge(&sp, m.MemberId, list, sg.DeliveryCountLimit); err != nil {
				r.AckCode = errCode(err)
			}
		}
		if n, ok := want[tp]; ok {
			switch {
			case !assigned[tp]:
				r.AcquireCode = types.ErrPartitionNotAssigned.ABCICode()
			default:
				p, err := k.Partitions.Get(ctx, tp)
				if err != nil {
					return nil, err
				}
				r.Acquired = acquire(&sp, m.MemberId, msg.Tag, min(max(n, 1), types.MaxShareInFlightRecords), p.HighWatermark, now+sg.RecordLockDurationMs)
			}
		}
		if err := k.saveSharePartition(ctx, &sp); err != nil {
			return nil, err
		}
	}
	for _, tp := range order {
		resp.Partitions = append(resp.Partitions, *byPartition[tp])
	}
	return resp, nil
}

// errCode is an x/topics error's code.
func errCode(err error) uint32 {
	for _, e := range []*errorsmod.Error{types.ErrUnknownMember, types.ErrGroupAuthorization, types.ErrInvalidRecordState, types.ErrUnknownGroup, types.ErrInvalidRequest} {
		if errorsmod.IsOf(err, e) {
			return e.ABCICode()
		}
	}
	return types.ErrInvalidRequest.ABCICode()
}

// releaseMemberRecords releases what a leaving member holds on the partitions dealt to it, for
// the others now rather than when the locks run out.
func (k Keeper) releaseMemberRecords(ctx context.Context, sg types.ShareGroup, m types.ShareMember) error {
	for _, tps := range m.Assigned {
		for _, p := range tps.Partitions {
			tp := types.TopicPartition{Topic: tps.Topic, Partition: p}
			sp, err := k.SharePartitions.Get(ctx, collections.Join(sg.GroupId, tp))
			if isNotFound(err) {
				continue
			} else if err != nil {
				return err
			}
			releaseShare(&sp, func(r types.ShareRange) bool { return r.MemberId == m.MemberId }, sg.DeliveryCountLimit)
			if err := k.saveSharePartition(ctx, &sp); err != nil {
				return err
			}
		}
	}
	return nil
}

// releaseShare makes the acquired ranges that match available again (archived past the
// delivery limit).
func releaseShare(sp *types.SharePartition, match func(types.ShareRange) bool, limit int32) {
	for i := range sp.Ranges {
		r := &sp.Ranges[i]
		if r.State != types.SHARE_RECORD_STATE_ACQUIRED || !match(*r) {
			continue
		}
		r.State = types.SHARE_RECORD_STATE_AVAILABLE
		if r.DeliveryCount >= limit {
			r.State = types.SHARE_RECORD_STATE_ARCHIVED
		}
		r.MemberId, r.LockDeadlineMs, r.FetchTag = "", 0, ""
	}
}

// ExpireShareLocks takes back, in the EndBlocker, the records whose acquisition lock ran out by
// the block time, for redelivery (or archives them past the delivery limit). The work is
// bounded by cost: each share partition costs its ranges; the first due one is always taken.
// Each partition runs isolated: one that cannot be read is skipped, not the block.
func (k Keeper) ExpireShareLocks(ctx context.Context, budget uint64) (uint64, error) {
	now := sdk.UnwrapSDKContext(ctx).BlockTime().UnixMilli()
	rng := new(collections.Range[collections.Triple[int64, string, types.TopicPartition]]).
		EndExclusive(collections.Join3(now+1, "", types.TopicPartition{}))
	var (
		due  []collections.Triple[int64, string, types.TopicPartition]
		work uint64
	)
	err := k.ShareLockDue.Walk(ctx, rng, func(key collections.Triple[int64, string, types.TopicPartition], _ bool) (bool, error) {
		sp, err := k.SharePartitions.Get(ctx, collections.Join(key.K2(), key.K3()))
		cost := uint64(1)
		if err == nil {
			cost += uint64(len(sp.Ranges))
		}
		if len(due) > 0 && work+cost > budget {
			return true, nil
		}
		work += cost
		due = append(due, key)
		return false, nil
	})
	if err != nil {
		return 0, err
	}
	for _, key := range due {
		done, err := k.attempt(ctx, "share_locks", key.K2(), func(ctx context.Context) error {
			// The entry goes with the work (saving the partition sets its next one).
			if err := k.ShareLockDue.Remove(ctx, key); err != nil {
				return err
			}
			sp, err := k.SharePartitions.Get(ctx, collections.Join(key.K2(), key.K3()))
			if isNotFound(err) {
				return nil
			} else if err != nil {
				return err
			}
			limit := int32(types.DefaultShareDeliveryCountLimit)
			if sg, err := k.ShareGroups.Get(ctx, key.K2()); err == nil {
				limit = sg.DeliveryCountLimit
			}
			sp.NextLockDeadlineMs = 0 // its entry is gone
			releaseShare(&sp, func(r types.ShareRange) bool { return r.LockDeadlineMs <= now }, limit)
			return k.saveSharePartition(ctx, &sp)
		})
		if err != nil {
			return 0, err
		}
		if !done {
			// Skipped (EventBlockWorkSkipped): try again after a while rather than every block,
			// and never lose the entry (the records would stay acquired for good).
			if err := k.retryShareLocks(ctx, key, now); err != nil {
				return 0, err
			}
		}
	}
	return work, nil
}

// ShareLockRetryMs is how long a share partition whose lock expiry was skipped waits to be
// tried again.
const ShareLockRetryMs = 60_000

func (k Keeper) retryShareLocks(ctx context.Context, key collections.Triple[int64, string, types.TopicPartition], now int64) error {
	sp, err := k.SharePartitions.Get(ctx, collections.Join(key.K2(), key.K3()))
	if err == nil && sp.NextLockDeadlineMs == key.K1() {
		// Moved with its partition's record of it, which the index mirrors.
		if err := k.setLockDue(ctx, &sp, now+ShareLockRetryMs); err != nil {
			return err
		}
		return k.SharePartitions.Set(ctx, collections.Join(key.K2(), key.K3()), sp)
	}
	if err := k.ShareLockDue.Remove(ctx, key); err != nil {
		return err
	}
	return k.ShareLockDue.Set(ctx, collections.Join3(now+ShareLockRetryMs, key.K2(), key.K3()), true)
}
