package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// ProducerStates answers what the idempotent-producer check compares against: the last sequence
// accepted from each producer on a partition (a producer that never sent a sequenced batch
// there has none, and starts at sequence 1).
func TestQueryProducerStates(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	for seq := uint64(1); seq <= 3; seq++ {
		_, err := f.produce(f.alice, pb{Topic: "a", Partition: 1, Sequence: seq, Records: []types.BatchRecord{rec("", "x"), rec("", "y")}})
		require.NoError(t, err)
	}
	_, err := f.produce(f.bob, pb{Topic: "a", Partition: 1, Sequence: 1, Records: []types.BatchRecord{rec("", "z")}})
	require.NoError(t, err)
	_, err = f.produce(f.carol, pb{Topic: "a", Partition: 0, Sequence: 1, Records: []types.BatchRecord{rec("", "w")}})
	require.NoError(t, err)

	one, err := f.query.ProducerStates(f.ctx, &types.QueryProducerStatesRequest{Topic: "a", Partition: 1, Producer: f.alice})
	require.NoError(t, err)
	require.Equal(t, []types.ProducerState{{Topic: "a", Partition: 1, Producer: f.alice, LastSequence: 3, BaseOffset: 4, Count: 2}}, one.States)

	none, err := f.query.ProducerStates(f.ctx, &types.QueryProducerStatesRequest{Topic: "a", Partition: 1, Producer: f.carol})
	require.NoError(t, err)
	require.Empty(t, none.States)

	all, err := f.query.ProducerStates(f.ctx, &types.QueryProducerStatesRequest{Topic: "a", Partition: 1})
	require.NoError(t, err)
	require.Len(t, all.States, 2)
	for _, s := range all.States {
		require.Equal(t, uint32(1), s.Partition)
	}

	_, err = f.query.ProducerStates(f.ctx, &types.QueryProducerStatesRequest{Topic: "a", Partition: 2})
	require.ErrorIs(t, err, types.ErrInvalidPartition)
	_, err = f.query.ProducerStates(f.ctx, &types.QueryProducerStatesRequest{Topic: "b", Partition: 0})
	require.ErrorIs(t, err, types.ErrUnknownTopic)
	_, err = f.query.ProducerStates(f.ctx, &types.QueryProducerStatesRequest{Topic: "a", Partition: 0, Producer: "nobody"})
	require.ErrorIs(t, err, types.ErrInvalidAddress)
}
