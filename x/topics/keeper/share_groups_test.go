package keeper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func (f *fixture) sjoin(owner, group, member string, epoch int32, topics ...string) (types.ShareMember, error) {
	f.t.Helper()
	res, err := f.msgs.ShareGroupHeartbeat(f.ctx, &types.MsgShareGroupHeartbeat{Owner: owner, GroupId: group, MemberId: member, MemberEpoch: epoch, SubscribedTopicNames: topics})
	if err != nil {
		return types.ShareMember{}, err
	}
	return res.Member, nil
}

func (f *fixture) sfetch(owner, group, member string, acquire []types.ShareAcquire, acks ...types.ShareAcknowledgement) (*types.MsgShareFetchResponse, error) {
	f.t.Helper()
	return f.msgs.ShareFetch(f.ctx, &types.MsgShareFetch{Owner: owner, GroupId: group, MemberId: member, Acquire: acquire, Acknowledgements: acks, Tag: "t"})
}

func (f *fixture) sparts(group string) map[types.TopicPartition]types.SharePartition {
	f.t.Helper()
	res, err := f.query.SharePartitions(f.ctx, &types.QuerySharePartitionsRequest{GroupId: group})
	require.NoError(f.t, err)
	out := map[types.TopicPartition]types.SharePartition{}
	for _, sp := range res.Partitions {
		out[types.TopicPartition{Topic: sp.Topic, Partition: sp.Partition}] = sp
		// The ranges tile [start, end), sorted.
		next := sp.StartOffset
		for _, r := range sp.Ranges {
			require.Equal(f.t, next, r.FirstOffset, "ranges of %s/%d tile the in-flight window", sp.Topic, sp.Partition)
			next = r.LastOffset + 1
		}
		require.Equal(f.t, sp.EndOffset, next)
	}
	return out
}

func (f *fixture) produceN(topic string, partition uint32, n int) {
	f.t.Helper()
	recs := make([]types.BatchRecord, n)
	for i := range recs {
		recs[i] = rec("", fmt.Sprintf("v%d", i))
	}
	_, err := f.produce(f.alice, pb{Topic: topic, Partition: partition, Records: recs})
	require.NoError(f.t, err)
}

// A queue on chain: records are acquired under a lock by one member at a time, acknowledged,
// released for another delivery, taken back when the lock runs out, archived at the delivery
// limit; a member only acquires from the partitions dealt to it, and what it leaves goes to the
// others.
func TestShareGroupDeliversEachRecordToOneMemberAtATime(t *testing.T) {
	f := newFixture(t)
	f.createTopic("jobs", 2)
	f.open(f.alice, "workers")
	a, err := f.sjoin(f.alice, "workers", "w-a", 0, "jobs")
	require.NoError(t, err)
	require.Equal(t, 2, count(a.Assigned), "a lone member reads both partitions")
	b, err := f.sjoin(f.bob, "workers", "w-b", 0, "jobs")
	require.NoError(t, err)
	require.Equal(t, 1, count(b.Assigned), "two members: one partition each")
	f.produceN("jobs", 0, 10)
	tp0 := types.TopicPartition{Topic: "jobs", Partition: 0}
	holder, other := "w-a", "w-b"
	owners := map[string]string{"w-a": f.alice, "w-b": f.bob}
	if b.Assigned[0].Partitions[0] == 0 {
		holder, other = "w-b", "w-a"
	}

	res, err := f.sfetch(owners[other], "workers", other, []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 5}})
	require.NoError(t, err)
	require.Equal(t, types.ErrPartitionNotAssigned.ABCICode(), res.Partitions[0].AcquireCode, "not its partition")

	res, err = f.sfetch(owners[holder], "workers", holder, []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 5}})
	require.NoError(t, err)
	require.Equal(t, []types.ShareRange{{FirstOffset: 0, LastOffset: 4, State: types.SHARE_RECORD_STATE_ACQUIRED, DeliveryCount: 1, MemberId: holder,
		LockDeadlineMs: f.ctx.BlockTime().UnixMilli() + types.DefaultShareRecordLockDurationMs, FetchTag: "t"}}, res.Partitions[0].Acquired)

	// Accept 0-2, release 3, leave 4 unacknowledged; acquire the rest.
	res, err = f.sfetch(owners[holder], "workers", holder, []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 100}},
		types.ShareAcknowledgement{Topic: "jobs", Partition: 0, FirstOffset: 0, LastOffset: 2, Type: types.ShareAckAccept},
		types.ShareAcknowledgement{Topic: "jobs", Partition: 0, FirstOffset: 3, LastOffset: 3, Type: types.ShareAckRelease})
	require.NoError(t, err)
	require.Zero(t, res.Partitions[0].AckCode)
	require.Len(t, res.Partitions[0].Acquired, 2, "the released record again, then the new ones")
	require.Equal(t, int32(2), res.Partitions[0].Acquired[0].DeliveryCount, "record 3's second delivery")
	require.Equal(t, uint64(5), res.Partitions[0].Acquired[1].FirstOffset)
	require.Equal(t, uint64(9), res.Partitions[0].Acquired[1].LastOffset)
	sp := f.sparts("workers")[tp0]
	require.Equal(t, uint64(3), sp.StartOffset, "accepted records are done")

	// Acknowledging what it does not hold is refused for the partition, not the transaction.
	res, err = f.sfetch(owners[other], "workers", other, nil, types.ShareAcknowledgement{Topic: "jobs", Partition: 0, FirstOffset: 4, LastOffset: 4, Type: types.ShareAckAccept})
	require.NoError(t, err)
	require.Equal(t, types.ErrInvalidRecordState.ABCICode(), res.Partitions[0].AckCode)
	res, err = f.sfetch(owners[other], "workers", holder, []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 5}})
	require.NoError(t, err, "refused per partition: the other members' fetches in the same transaction go on")
	require.Equal(t, types.ErrGroupAuthorization.ABCICode(), res.Partitions[0].AcquireCode, "another account's member")
	require.Empty(t, res.Partitions[0].Acquired)

	// The lock runs out: the EndBlocker makes the records available again.
	for i := 0; i < 7; i++ { // the gateways keep both members alive meanwhile
		f.endBlock(5 * time.Second)
		for id, owner := range owners {
			_, err := f.msgs.KafkaHeartbeat(f.ctx, &types.MsgKafkaHeartbeat{Owner: owner, GroupId: "workers", MemberIds: []string{id}})
			require.NoError(t, err)
		}
	}
	sp = f.sparts("workers")[tp0]
	require.Equal(t, types.SHARE_RECORD_STATE_AVAILABLE, sp.Ranges[0].State)
	require.Zero(t, sp.NextLockDeadlineMs)

	// The holder leaves: its partition goes to the other member, which gets the records again.
	_, err = f.sjoin(owners[holder], "workers", holder, types.ConsumerLeaveEpoch)
	require.NoError(t, err)
	res, err = f.sfetch(owners[other], "workers", other, []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 100}})
	require.NoError(t, err)
	got := 0
	for _, r := range res.Partitions[0].Acquired {
		got += int(r.LastOffset - r.FirstOffset + 1)
		require.GreaterOrEqual(t, r.DeliveryCount, int32(2), "every record left was delivered before")
	}
	require.Equal(t, 7, got, "records 3 to 9")
}

// A record released delivery_count_limit times is archived, not delivered again.
func TestShareGroupArchivesAtTheDeliveryLimit(t *testing.T) {
	f := newFixture(t)
	f.createTopic("jobs", 1)
	f.open(f.alice, "workers")
	_, err := f.sjoin(f.alice, "workers", "w", 0, "jobs")
	require.NoError(t, err)
	f.produceN("jobs", 0, 2)
	for i := 1; i <= types.DefaultShareDeliveryCountLimit; i++ {
		res, err := f.sfetch(f.alice, "workers", "w", []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 1}})
		require.NoError(t, err)
		require.Len(t, res.Partitions[0].Acquired, 1)
		require.Equal(t, int32(i), res.Partitions[0].Acquired[0].DeliveryCount)
		require.Equal(t, uint64(0), res.Partitions[0].Acquired[0].FirstOffset)
		_, err = f.sfetch(f.alice, "workers", "w", nil, types.ShareAcknowledgement{Topic: "jobs", Partition: 0, FirstOffset: 0, LastOffset: 0, Type: types.ShareAckRelease})
		require.NoError(t, err)
	}
	res, err := f.sfetch(f.alice, "workers", "w", []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 1}})
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.Partitions[0].Acquired[0].FirstOffset, "record 0 was archived after 5 deliveries")
}

// Members sharing one partition never hold the same record; one member cannot hold more than
// the in-flight bound, however much it asks for.
func TestAttackShareGroupInFlightIsBounded(t *testing.T) {
	f := newFixture(t)
	f.createTopic("jobs", 1)
	f.open(f.alice, "workers")
	for _, w := range []string{"w1", "w2", "w3"} {
		_, err := f.sjoin(f.alice, "workers", w, 0, "jobs")
		require.NoError(t, err)
	}
	for i := 0; i < 6; i++ {
		f.produceN("jobs", 0, 1000)
	}
	held := map[uint64]string{}
	for _, w := range []string{"w1", "w2", "w3"} {
		res, err := f.sfetch(f.alice, "workers", w, []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 1 << 30}})
		require.NoError(t, err)
		require.Zero(t, res.Partitions[0].AcquireCode, "every member reads the one partition")
		for _, r := range res.Partitions[0].Acquired {
			for o := r.FirstOffset; o <= r.LastOffset; o++ {
				prev, dup := held[o]
				require.False(t, dup, "offset %d held by %s and %s", o, prev, w)
				held[o] = w
			}
		}
	}
	require.Len(t, held, types.MaxShareInFlightRecords, "6,000 records produced, %d in flight at most", types.MaxShareInFlightRecords)
	t.Logf("three members asking for 2^30 records each of a 6,000-record partition hold %d between them", len(held))
}

// A share group's admin sets its share.* configs within Kafka's bounds and, with no members,
// moves or forgets its start offsets; nobody else may, and not while members read.
func TestShareGroupAdministration(t *testing.T) {
	f := newFixture(t)
	f.createTopic("jobs", 1)
	f.open(f.alice, "workers")
	f.produceN("jobs", 0, 10)
	set := func(signer string, lock int64, limit int32) error {
		_, err := f.msgs.SetShareGroupConfig(f.ctx, &types.MsgSetShareGroupConfig{Authority: signer, GroupId: "workers", RecordLockDurationMs: lock, DeliveryCountLimit: limit, AutoOffsetResetEarliest: true})
		return err
	}
	require.ErrorIs(t, set(f.alice, 500, 3), types.ErrInvalidConfig, "a lock under 1 s")
	require.ErrorIs(t, set(f.alice, 5_000, 11), types.ErrInvalidConfig, "more than 10 deliveries")
	require.ErrorIs(t, set(f.bob, 5_000, 3), types.ErrGroupAuthorization, "not the admin")
	require.NoError(t, set(f.alice, 5_000, 3))
	_, err := f.sjoin(f.alice, "workers", "w", 0, "jobs")
	require.NoError(t, err)
	res, err := f.sfetch(f.alice, "workers", "w", []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 100}})
	require.NoError(t, err)
	require.Equal(t, uint64(0), res.Partitions[0].Acquired[0].FirstOffset, "share.auto.offset.reset=earliest: from the log start offset")
	require.Equal(t, int64(5_000), res.LockDurationMs)

	alter := func(o types.ShareOffset) error {
		_, err := f.msgs.AlterShareGroupOffsets(f.ctx, &types.MsgAlterShareGroupOffsets{Authority: f.alice, GroupId: "workers", Offsets: []types.ShareOffset{o}})
		return err
	}
	require.ErrorIs(t, alter(types.ShareOffset{Topic: "jobs", StartOffset: 4}), types.ErrGroupNotEmpty)
	_, err = f.sjoin(f.alice, "workers", "w", types.ConsumerLeaveEpoch)
	require.NoError(t, err)
	require.ErrorIs(t, alter(types.ShareOffset{Topic: "jobs", StartOffset: 11}), types.ErrOffsetOutOfRange)
	require.NoError(t, alter(types.ShareOffset{Topic: "jobs", StartOffset: 7}))
	sp := f.sparts("workers")[types.TopicPartition{Topic: "jobs"}]
	require.Equal(t, uint64(7), sp.StartOffset)
	require.Empty(t, sp.Ranges, "what was in flight is forgotten")
	require.NoError(t, alter(types.ShareOffset{Topic: "jobs", Delete: true}))
	require.NotContains(t, f.sparts("workers"), types.TopicPartition{Topic: "jobs"})
}

// Acknowledgements that would split a partition into more runs than the bound are refused for the
// partition, and a partition's acknowledgements must come in order without overlap (a later one
// would otherwise undo an earlier one's final state).
func TestAttackShareAcksFragmentOrOverlap(t *testing.T) {
	f := newFixture(t)
	f.createTopic("jobs", 1)
	f.open(f.alice, "workers")
	_, err := f.sjoin(f.alice, "workers", "w", 0, "jobs")
	require.NoError(t, err)
	for i := 0; i < 2; i++ {
		f.produceN("jobs", 0, 1000)
	}
	_, err = f.sfetch(f.alice, "workers", "w", []types.ShareAcquire{{Topic: "jobs", Partition: 0, MaxRecords: 2000}})
	require.NoError(t, err)
	var acks []types.ShareAcknowledgement
	for o := uint64(1); o < 2000; o++ { // 0 left held: nothing advances the start
		acks = append(acks, types.ShareAcknowledgement{Topic: "jobs", Partition: 0, FirstOffset: o, LastOffset: o, Type: uint32(types.ShareAckRelease - o%2)})
	}
	res, err := f.sfetch(f.alice, "workers", "w", nil, acks...)
	require.NoError(t, err)
	require.Equal(t, types.ErrInvalidRequest.ABCICode(), res.Partitions[0].AckCode)
	sp := f.sparts("workers")[types.TopicPartition{Topic: "jobs"}]
	require.LessOrEqual(t, len(sp.Ranges), types.MaxShareRanges)
	t.Logf("1,999 alternating acknowledgements refused: the partition keeps %d runs", len(sp.Ranges))

	_, err = f.sfetch(f.alice, "workers", "w", nil,
		types.ShareAcknowledgement{Topic: "jobs", Partition: 0, FirstOffset: 0, LastOffset: 5, Type: types.ShareAckReject},
		types.ShareAcknowledgement{Topic: "jobs", Partition: 0, FirstOffset: 3, LastOffset: 8, Type: types.ShareAckRelease})
	require.ErrorIs(t, err, types.ErrInvalidRequest, "overlapping acknowledgements")
}

// A share group's subscription is bounded as the other kinds' are, and partitions a subscribed
// topic gains reach the members at their next heartbeat through the chain.
func TestShareGroupSubscriptionBoundAndGrowth(t *testing.T) {
	f := newFixture(t)
	f.createTopic("jobs", 2)
	f.open(f.alice, "workers")
	f.setParams(func(p *types.Params) { p.MaxGroupSubscribedPartitions = 3 })
	_, err := f.sjoin(f.alice, "workers", "w", 0, "jobs")
	require.NoError(t, err)
	f.createTopic("more", 2)
	_, err = f.sjoin(f.alice, "workers", "w", 1, "jobs", "more")
	require.ErrorIs(t, err, types.ErrSubscriptionTooLarge)
	_, err = f.msgs.AddPartitions(f.ctx, &types.MsgAddPartitions{Authority: f.alice, Name: "jobs", Partitions: 3})
	require.NoError(t, err)
	m, err := f.sjoin(f.alice, "workers", "w", 1, "jobs")
	require.NoError(t, err)
	require.Equal(t, 3, count(m.Assigned), "the added partition dealt at the next heartbeat")
}
