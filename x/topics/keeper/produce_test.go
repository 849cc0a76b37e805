package keeper_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

// Offsets are gap-free and strictly increasing per partition across many batches, and every
// record reads back with its key, value, headers, timestamps and producer.
func TestProduceOffsetsAcrossBatchesAndPartitions(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 4)
	f.createTopic("b", 2)
	rng := rand.New(rand.NewSource(1))
	type want struct {
		value string
		key   string
	}
	expected := map[string][]want{}
	for i := 0; i < 200; i++ {
		var batches []pb
		for j := 0; j < 1+rng.Intn(3); j++ {
			topic, parts := "a", 4
			if rng.Intn(2) == 0 {
				topic, parts = "b", 2
			}
			p := uint32(rng.Intn(parts))
			b := pb{Topic: topic, Partition: p}
			for n := 0; n < 1+rng.Intn(20); n++ {
				b.Records = append(b.Records, rec(fmt.Sprintf("k%d", n), fmt.Sprintf("v%d-%d-%d", i, j, n), "h", fmt.Sprint(n)))
			}
			batches = append(batches, b)
		}
		// Expected placement: per (topic, partition), records in message order.
		f.ctx = f.ctx.WithBlockHeight(int64(100 + i))
		res, err := f.produce(f.bob, batches...)
		require.NoError(t, err)
		seen := map[string]int{}
		for _, b := range batches {
			id := fmt.Sprintf("%s/%d", b.Topic, b.Partition)
			if _, ok := seen[id]; !ok {
				seen[id] = len(expected[id])
			}
			for _, r := range b.Records {
				expected[id] = append(expected[id], want{value: string(r.Value.Data), key: string(r.Key.Data)})
			}
		}
		// One result per batch, in message order; a partition's batches follow each other.
		require.Len(t, res.Results, len(batches))
		for k, r := range res.Results {
			id := fmt.Sprintf("%s/%d", r.Topic, r.Partition)
			require.Equal(t, batches[k].Topic, r.Topic)
			require.Equal(t, batches[k].Partition, r.Partition)
			require.Equal(t, uint64(seen[id]), r.BaseOffset, id)
			require.Equal(t, len(batches[k].Records), int(r.Count), id)
			seen[id] += int(r.Count)
		}
	}
	for _, topic := range []string{"a", "b"} {
		for _, p := range f.partitions(topic) {
			id := fmt.Sprintf("%s/%d", topic, p.Partition)
			require.Equal(t, uint64(len(expected[id])), p.HighWatermark, id)
			require.Equal(t, uint64(len(expected[id])), p.RecordCount, id)
			var next uint64
			for next < p.HighWatermark {
				res, err := f.fetch(topic, p.Partition, next, 37, 0)
				require.NoError(t, err)
				require.NotEmpty(t, res.Records)
				for _, r := range res.Records {
					require.Equal(t, next, r.Offset, "gap-free offsets in %s", id)
					w := expected[id][r.Offset]
					require.Equal(t, w.value, string(r.Value.Data))
					require.Equal(t, w.key, string(r.Key.Data))
					require.Equal(t, f.bob, r.Producer)
					require.Equal(t, int64(1234), r.CreateTimeMs)
					require.Equal(t, f.ctx.BlockTime().UnixMilli(), r.LogAppendTimeMs)
					require.Len(t, r.Headers, 1)
					next++
				}
				require.Equal(t, next, res.NextOffset)
			}
		}
	}
}

// The chain does not judge where a producer put a keyed record (Kafka's brokers do not
// either): partitioning is the client's, and a record on another partition is stored as sent.
func TestKeyedRecordOnAnyPartition(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 5)
	r := rec("user-1", "v")
	home := types.KeyPartition(r.Key.Data, 5)
	other := (home + 1) % 5
	res, err := f.produce(f.alice, pb{Topic: "t", Partition: other, Records: []types.BatchRecord{r}})
	require.NoError(t, err)
	require.Equal(t, other, res.Results[0].Partition)
	fr, err := f.fetch("t", other, 0, 0, 0)
	require.NoError(t, err)
	require.Len(t, fr.Records, 1)
	require.Equal(t, "user-1", string(fr.Records[0].Key.Data))
}

func TestProduceNullAndEmptyKeyValue(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 1)
	records := []types.BatchRecord{
		{Key: nil, Value: nil},
		{Key: &types.Bytes{}, Value: &types.Bytes{}},
		{Key: &types.Bytes{Data: []byte{0, 255}}, Value: &types.Bytes{Data: bytes.Repeat([]byte{7}, 3)}},
	}
	_, err := f.produce(f.alice, pb{Topic: "t", Partition: 0, Records: records})
	require.NoError(t, err)
	res, err := f.fetch("t", 0, 0, 0, 0)
	require.NoError(t, err)
	require.Nil(t, res.Records[0].Key)
	require.Nil(t, res.Records[0].Value)
	require.NotNil(t, res.Records[1].Key)
	require.NotNil(t, res.Records[1].Value)
	require.Empty(t, res.Records[1].Key.Data)
	require.Equal(t, []byte{0, 255}, res.Records[2].Key.Data)
}

func TestProduceErrorsChangeNothing(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	cfg := anyone()
	// Sizes are Kafka-encoded sizes: rec("", v) takes len(v) + 7 bytes ("fine" 11, ten
	// digits 17); a batch adds its 61-byte header.
	cfg.MaxRecordBytes = 17
	_, err := f.msgs.UpdateTopicConfig(f.ctx, &types.MsgUpdateTopicConfig{Authority: f.alice, Name: "t", Config: cfg})
	require.NoError(t, err)
	_, err = f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: "private", Partitions: 1,
		Config: types.TopicConfig{ProducerPolicy: types.PRODUCER_POLICY_ALLOWLIST, AllowedProducers: []string{f.bob}}})
	require.NoError(t, err)
	p := types.DefaultParams()
	p.MaxRecordsPerBatch = 10
	p.MaxBatchBytes = 200
	p.MaxRecordBytes = 30
	p.MaxHeadersPerRecord = 2
	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)

	ok := pb{Topic: "t", Partition: 0, Records: []types.BatchRecord{rec("", "fine")}}
	tenDigits := make([]types.BatchRecord, 10) // 10 records, 231 bytes
	for i := range tenDigits {
		tenDigits[i] = rec("", "0123456789")
	}
	many := make([]types.BatchRecord, 11)
	for i := range many {
		many[i] = rec("", "")
	}
	cases := []struct {
		name     string
		producer string
		batches  []pb
		err      error
	}{
		{"no batches", f.alice, nil, types.ErrEmptyBatch},
		{"empty batch", f.alice, []pb{ok, {Topic: "t", Partition: 0}}, types.ErrEmptyBatch},
		{"unknown topic", f.alice, []pb{ok, {Topic: "nope", Partition: 0, Records: ok.Records}}, types.ErrUnknownTopic},
		{"bad topic name", f.alice, []pb{{Topic: "no pe", Partition: 0, Records: ok.Records}}, types.ErrInvalidTopicName},
		{"partition beyond count", f.alice, []pb{ok, {Topic: "t", Partition: 2, Records: ok.Records}}, types.ErrInvalidPartition},
		{"MaxUint32 partition", f.alice, []pb{{Topic: "t", Partition: math.MaxUint32, Records: ok.Records}}, types.ErrInvalidPartition},
		{"record over topic limit", f.alice, []pb{ok, {Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "eleven char")}}}, types.ErrRecordTooLarge},
		{"header bytes count", f.alice, []pb{{Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "v", "hkey", "hvalue12")}}}, types.ErrRecordTooLarge},
		{"batch over bytes", f.alice, []pb{{Topic: "t", Partition: 1, Records: tenDigits}}, types.ErrBatchTooLarge},
		{"too many records", f.alice, []pb{{Topic: "t", Partition: 1, Records: many}}, types.ErrTooManyRecords},
		{"too many headers", f.alice, []pb{{Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "", "a", "", "b", "", "c", "")}}}, types.ErrTooManyHeaders},
		{"not on allowlist", f.carol, []pb{ok, {Topic: "private", Partition: 0, Records: ok.Records}}, types.ErrUnauthorizedProducer},
		{"bad producer", "bftlog1bad", []pb{ok}, types.ErrInvalidAddress},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.produce(tc.producer, tc.batches...)
			require.ErrorIs(t, err, tc.err)
			for _, topic := range []string{"t", "private"} {
				for _, p := range f.partitions(topic) {
					require.Zero(t, p.HighWatermark, "%s: rejected produce moved %s", tc.name, p.Label())
				}
			}
		})
	}

	// The allowlisted producer and the owner may produce to the private topic.
	for _, who := range []string{f.bob, f.alice} {
		_, err = f.produce(who, pb{Topic: "private", Partition: 0, Records: ok.Records})
		require.NoError(t, err)
	}
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventBatchAppended")
}

func TestIdempotentProducer(t *testing.T) {
	f := newFixture(t)
	f.createTopic("t", 2)
	send := func(partition uint32, seq uint64, n int) (*types.MsgProduceResponse, error) {
		rs := make([]types.BatchRecord, n)
		for i := range rs {
			rs[i] = rec("", "v")
		}
		return f.produce(f.alice, pb{Topic: "t", Partition: partition, Sequence: seq, Records: rs})
	}
	res, err := send(0, 1, 3)
	require.NoError(t, err)
	require.Equal(t, types.ProduceResult{Topic: "t", Partition: 0, BaseOffset: 0, Count: 3}, res.Results[0])
	res, err = send(0, 2, 2)
	require.NoError(t, err)
	require.Equal(t, uint64(3), res.Results[0].BaseOffset)

	// A retry of the last accepted sequence returns the original offsets and appends nothing.
	res, err = send(0, 2, 2)
	require.NoError(t, err)
	require.Equal(t, types.ProduceResult{Topic: "t", Partition: 0, BaseOffset: 3, Count: 2, Duplicate: true}, res.Results[0])
	require.Equal(t, uint64(5), f.partitions("t")[0].HighWatermark)

	_, err = send(0, 4, 1) // gap
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence)
	_, err = send(0, 1, 3) // reordered: older than the last accepted
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence)
	_, err = send(0, 2, 5) // "retry" that is not the same batch
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence)
	_, err = send(1, 2, 1) // sequences are per partition: partition 1 starts at 1
	require.ErrorIs(t, err, types.ErrOutOfOrderSequence)
	// Two idempotent batches for one partition in one message: the second could not be
	// ordered against the first's retry, so the message is refused.
	_, err = f.produce(f.alice, pb{Topic: "t", Partition: 1, Sequence: 1, Records: []types.BatchRecord{rec("", "a")}},
		pb{Topic: "t", Partition: 1, Sequence: 2, Records: []types.BatchRecord{rec("", "b")}})
	require.ErrorIs(t, err, types.ErrInvalidRequest)
	require.Equal(t, uint64(5), f.partitions("t")[0].HighWatermark)
	require.Zero(t, f.partitions("t")[1].HighWatermark)

	// Sequenced and unsequenced batches mix in one message; the state records the
	// sequenced batch's own offsets.
	res, err = f.produce(f.alice,
		pb{Topic: "t", Partition: 1, Records: []types.BatchRecord{rec("", "plain")}},
		pb{Topic: "t", Partition: 1, Sequence: 1, Records: []types.BatchRecord{rec("", "s1"), rec("", "s2")}})
	require.NoError(t, err)
	require.Equal(t, []types.ProduceResult{{Topic: "t", Partition: 1, BaseOffset: 0, Count: 1}, {Topic: "t", Partition: 1, BaseOffset: 1, Count: 2}}, res.Results)
	res, err = f.produce(f.alice, pb{Topic: "t", Partition: 1, Sequence: 1, Records: []types.BatchRecord{rec("", "s1"), rec("", "s2")}})
	require.NoError(t, err)
	require.Equal(t, types.ProduceResult{Topic: "t", Partition: 1, BaseOffset: 1, Count: 2, Duplicate: true}, res.Results[0])

	// Other producers have their own sequences.
	_, err = f.produce(f.bob, pb{Topic: "t", Partition: 0, Sequence: 1, Records: []types.BatchRecord{rec("", "b")}})
	require.NoError(t, err)
	_, err = f.produce(f.bob,
		pb{Topic: "t", Partition: 0, Sequence: 2, Records: []types.BatchRecord{rec("", "b")}},
		pb{Topic: "t", Partition: 0, Sequence: 3, Records: []types.BatchRecord{rec("", "b")}})
	require.ErrorIs(t, err, types.ErrInvalidRequest, "one sequenced batch per partition per message")
}
