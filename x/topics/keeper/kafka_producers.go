package keeper

import (
	"context"
	"math"
	"slices"

	"cosmossdk.io/collections"
	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Kafka idempotent producers, as a Kafka broker deduplicates them: a record batch whose header
// carries a producer id (>= 0) is checked against that producer's last five batches on the
// partition. A batch equal in sequences to one of them is a retry and is answered with that
// batch's offsets; the next sequence is appended; anything else is refused
// (OUT_OF_ORDER_SEQUENCE), as is an older epoch (INVALID_PRODUCER_EPOCH). The state is chain
// state, so a retry through another gateway or after a gateway restart is still a duplicate;
// it is keyed by the sending account as well, so one account cannot fence or confuse
// another's producer ids.

// kafkaProducerWindow is how many of a producer's last batches per partition are remembered
// (Kafka's, matching max.in.flight.requests.per.connection=5 with idempotence).
const kafkaProducerWindow = 5

// kafkaProducerKey is a state's key as a comparable value (collections.Triple holds
// pointers, so two equal keys are different map keys).
type kafkaProducerKey struct {
	tp       types.TopicPartition
	producer string
	id       int64
}

func (k kafkaProducerKey) store() collections.Triple[types.TopicPartition, string, int64] {
	return collections.Join3(k.tp, k.producer, k.id)
}

// kafkaProducers is the Kafka idempotence of one message in the making: states read once,
// advanced by each accepted batch, written with the batches.
type kafkaProducers struct {
	k      Keeper
	states map[kafkaProducerKey]*types.KafkaProducerState
	order  []kafkaProducerKey // changed states, in deterministic write order
}

func (k Keeper) newKafkaProducers() *kafkaProducers {
	return &kafkaProducers{k: k, states: map[kafkaProducerKey]*types.KafkaProducerState{}}
}

func (p *kafkaProducers) state(ctx context.Context, key kafkaProducerKey) (*types.KafkaProducerState, error) {
	if st, ok := p.states[key]; ok {
		return st, nil
	}
	st, err := p.k.KafkaProducers.Get(ctx, key.store())
	if isNotFound(err) {
		st = types.KafkaProducerState{Topic: key.tp.Topic, Partition: key.tp.Partition, Producer: key.producer, ProducerId: key.id, Epoch: -1}
	} else if err != nil {
		return nil, err
	}
	p.states[key] = &st
	return &st, nil
}

// check decides a batch of a Kafka idempotent producer: a duplicate (with the original's
// offsets), or to be appended (then accept records it once its offset is known).
func (p *kafkaProducers) check(ctx context.Context, producer string, b *types.ProduceBatch, info kbatch.BatchInfo) (*types.ProduceResult, error) {
	tp := types.TopicPartition{Topic: b.Topic, Partition: b.Partition}
	key := kafkaProducerKey{tp, producer, info.ProducerID}
	st, err := p.state(ctx, key)
	if err != nil {
		return nil, err
	}
	epoch := int32(info.ProducerEpoch)
	first := info.BaseSequence
	last := first + int32(info.Records) - 1
	if int64(first)+int64(info.Records)-1 > math.MaxInt32 {
		last = int32(int64(first) + int64(info.Records) - 1 - math.MaxInt32 - 1) // sequences wrap, as Kafka's
	}
	switch {
	case epoch < st.Epoch:
		return nil, errorsmod.Wrapf(types.ErrInvalidProducerEpoch, "producer id %d on %s/%d is at epoch %d, the batch has %d", info.ProducerID, b.Topic, b.Partition, st.Epoch, epoch)
	case epoch > st.Epoch || len(st.Batches) == 0:
		if first != 0 {
			return nil, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "producer id %d epoch %d on %s/%d starts at sequence 0, got %d", info.ProducerID, epoch, b.Topic, b.Partition, first)
		}
	default:
		for _, x := range st.Batches {
			if x.FirstSequence == first && x.LastSequence == last {
				if x.BaseOffset == math.MaxUint64 {
					return nil, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "producer id %d sends sequence %d to %s/%d twice in one message", info.ProducerID, first, b.Topic, b.Partition)
				}
				return &types.ProduceResult{Topic: b.Topic, Partition: b.Partition, BaseOffset: x.BaseOffset, Count: x.Count, Duplicate: true}, nil
			}
		}
		next := st.Batches[len(st.Batches)-1].LastSequence + 1
		if st.Batches[len(st.Batches)-1].LastSequence == math.MaxInt32 {
			next = 0
		}
		// An aborted Kafka transaction never reaches the chain (the gateway drops it), so a
		// transactional producer's sequences may jump forward past it.
		if first != next && !(info.Transactional && first > next) {
			return nil, errorsmod.Wrapf(types.ErrOutOfOrderSequence, "producer id %d on %s/%d expects sequence %d, got %d", info.ProducerID, b.Topic, b.Partition, next, first)
		}
	}
	if epoch > st.Epoch {
		st.Epoch, st.Batches = epoch, nil
	}
	if !slices.Contains(p.order, key) {
		p.order = append(p.order, key)
	}
	// The offset is set when the batch is written; until then a second copy in the same
	// message is refused, not taken for a duplicate of offsets not yet known.
	st.Batches = append(st.Batches, types.KafkaProducerBatch{FirstSequence: first, LastSequence: last, BaseOffset: math.MaxUint64, Count: info.Records})
	if len(st.Batches) > kafkaProducerWindow {
		st.Batches = st.Batches[len(st.Batches)-kafkaProducerWindow:]
	}
	return nil, nil
}

// appended records where a checked batch landed.
func (p *kafkaProducers) appended(producer string, b *types.ProduceBatch, producerID int64, baseSequence int32, baseOffset uint64) {
	st := p.states[kafkaProducerKey{types.TopicPartition{Topic: b.Topic, Partition: b.Partition}, producer, producerID}]
	for i := range st.Batches {
		if st.Batches[i].FirstSequence == baseSequence && st.Batches[i].BaseOffset == math.MaxUint64 {
			st.Batches[i].BaseOffset = baseOffset
		}
	}
}

// write stores every state the message changed.
func (p *kafkaProducers) write(ctx context.Context) error {
	for _, key := range p.order {
		if err := p.k.KafkaProducers.Set(ctx, key.store(), *p.states[key]); err != nil {
			return err
		}
	}
	return nil
}
