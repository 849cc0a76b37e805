package sim

import (
	"fmt"
	"sort"

	"cosmossdk.io/collections"

	sdk "github.com/cosmos/cosmos-sdk/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"

	"github.com/bftlog/bftlog/app"
	poatypes "github.com/bftlog/bftlog/x/poa/types"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// world is what the generator knows of the committed state before a block: enough to write
// messages that mostly make sense, so that runs reach deep paths, not only refusals.
type world struct {
	params     topicstypes.Params
	topics     []topicstypes.Topic
	partitions map[string][]topicstypes.Partition
	groups     []topicstypes.Group
	members    map[string][]topicstypes.Member         // native, by group
	kafka      map[string]topicstypes.KafkaGroup       // by group
	kmembers   map[string][]topicstypes.KafkaMember    // by group, in join order
	consumer   map[string]topicstypes.ConsumerGroup    // KIP-848 groups, by group
	cmembers   map[string][]topicstypes.ConsumerMember // by group, in join order
	smembers   map[string][]topicstypes.ShareMember    // KIP-932 members, by group, in join order
	sparts     map[string][]topicstypes.SharePartition // KIP-932 partitions, by group
	offsets    map[string][]topicstypes.TopicPartition // committed, by group
	sequences  map[string]uint64                       // last native idempotent sequence by producer/topic/partition
	kafkaSeqs  map[string]int32                        // next Kafka base sequence by producer/topic/partition/pid
	proposals  []uint64                                // in their voting period
	admitted   []poatypes.Admission
	validators map[string]bool     // staking validators by operator address
	grants     []produceGrant      // x/authz ProduceAuthorizations
	allowances map[string][]string // x/feegrant granters by grantee
}

func readWorld(a *app.App, ctx sdk.Context) (*world, error) {
	k := a.TopicsKeeper
	w := &world{partitions: map[string][]topicstypes.Partition{}, members: map[string][]topicstypes.Member{},
		kafka: map[string]topicstypes.KafkaGroup{}, kmembers: map[string][]topicstypes.KafkaMember{},
		consumer: map[string]topicstypes.ConsumerGroup{}, cmembers: map[string][]topicstypes.ConsumerMember{},
		smembers: map[string][]topicstypes.ShareMember{}, sparts: map[string][]topicstypes.SharePartition{}, offsets: map[string][]topicstypes.TopicPartition{},
		sequences: map[string]uint64{}, kafkaSeqs: map[string]int32{}, validators: map[string]bool{}}
	var err error
	if w.params, err = k.Params.Get(ctx); err != nil {
		return nil, err
	}
	walks := []error{
		k.Topics.Walk(ctx, nil, func(_ string, t topicstypes.Topic) (bool, error) {
			w.topics = append(w.topics, t)
			return false, nil
		}),
		k.Partitions.Walk(ctx, nil, func(_ topicstypes.TopicPartition, p topicstypes.Partition) (bool, error) {
			w.partitions[p.Topic] = append(w.partitions[p.Topic], p)
			return false, nil
		}),
		k.Groups.Walk(ctx, nil, func(_ string, g topicstypes.Group) (bool, error) {
			w.groups = append(w.groups, g)
			return false, nil
		}),
		k.Members.Walk(ctx, nil, func(_ collections.Pair[string, string], m topicstypes.Member) (bool, error) {
			w.members[m.GroupId] = append(w.members[m.GroupId], m)
			return false, nil
		}),
		k.KafkaGroups.Walk(ctx, nil, func(id string, g topicstypes.KafkaGroup) (bool, error) {
			w.kafka[id] = g
			return false, nil
		}),
		k.KafkaMembers.Walk(ctx, nil, func(_ collections.Pair[string, string], m topicstypes.KafkaMember) (bool, error) {
			w.kmembers[m.GroupId] = append(w.kmembers[m.GroupId], m)
			return false, nil
		}),
		k.ConsumerGroups.Walk(ctx, nil, func(id string, g topicstypes.ConsumerGroup) (bool, error) {
			w.consumer[id] = g
			return false, nil
		}),
		k.ConsumerMembers.Walk(ctx, nil, func(_ collections.Pair[string, string], m topicstypes.ConsumerMember) (bool, error) {
			w.cmembers[m.GroupId] = append(w.cmembers[m.GroupId], m)
			return false, nil
		}),
		k.ShareMembers.Walk(ctx, nil, func(_ collections.Pair[string, string], m topicstypes.ShareMember) (bool, error) {
			w.smembers[m.GroupId] = append(w.smembers[m.GroupId], m)
			return false, nil
		}),
		k.SharePartitions.Walk(ctx, nil, func(_ collections.Pair[string, topicstypes.TopicPartition], sp topicstypes.SharePartition) (bool, error) {
			w.sparts[sp.GroupId] = append(w.sparts[sp.GroupId], sp)
			return false, nil
		}),
		k.Offsets.Walk(ctx, nil, func(key collections.Pair[string, topicstypes.TopicPartition], _ topicstypes.CommittedOffset) (bool, error) {
			w.offsets[key.K1()] = append(w.offsets[key.K1()], key.K2())
			return false, nil
		}),
		k.ProducerStates.Walk(ctx, nil, func(_ collections.Pair[topicstypes.TopicPartition, string], s topicstypes.ProducerState) (bool, error) {
			w.sequences[seqKey(s.Producer, s.Topic, s.Partition)] = s.LastSequence
			return false, nil
		}),
		k.KafkaProducers.Walk(ctx, nil, func(_ collections.Triple[topicstypes.TopicPartition, string, int64], s topicstypes.KafkaProducerState) (bool, error) {
			if n := len(s.Batches); n > 0 {
				w.kafkaSeqs[kafkaSeqKey(s.Producer, s.Topic, s.Partition, s.ProducerId)] = s.Batches[n-1].LastSequence + 1
			}
			return false, nil
		}),
		a.PoaKeeper.Admissions.Walk(ctx, nil, func(_ []byte, ad poatypes.Admission) (bool, error) {
			w.admitted = append(w.admitted, ad)
			return false, nil
		}),
		a.GovKeeper.Proposals.Walk(ctx, nil, func(id uint64, p govv1.Proposal) (bool, error) {
			if p.Status == govv1.StatusVotingPeriod {
				w.proposals = append(w.proposals, id)
			}
			return false, nil
		}),
	}
	for _, err := range walks {
		if err != nil {
			return nil, err
		}
	}
	for id := range w.kmembers {
		ms := w.kmembers[id]
		sort.Slice(ms, func(i, j int) bool { return ms[i].JoinOrder < ms[j].JoinOrder })
	}
	for id := range w.cmembers {
		ms := w.cmembers[id]
		sort.Slice(ms, func(i, j int) bool { return ms[i].JoinOrder < ms[j].JoinOrder })
	}
	if err := readGrants(a, ctx, w); err != nil {
		return nil, err
	}
	vals, err := a.StakingKeeper.GetAllValidators(ctx)
	if err != nil {
		return nil, err
	}
	for _, v := range vals {
		w.validators[v.OperatorAddress] = true
	}
	return w, nil
}

func seqKey(producer, topic string, partition uint32) string {
	return fmt.Sprintf("%s/%s/%d", producer, topic, partition)
}

func kafkaSeqKey(producer, topic string, partition uint32, pid int64) string {
	return fmt.Sprintf("%s/%s/%d/%d", producer, topic, partition, pid)
}

func (w *world) group(id string) (topicstypes.Group, bool) {
	for _, g := range w.groups {
		if g.GroupId == id {
			return g, true
		}
	}
	return topicstypes.Group{}, false
}
