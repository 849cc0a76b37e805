package keeper_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/math"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Governance could set params that halt the chain or lock governance out: max_batch_bytes
// above what compaction decompresses (64 MiB) let a batch in that made every validator's
// EndBlocker fail; a compaction budget of one record never compacted; a max_tx_gas below a
// vote's gas refused every transaction, the proposal to raise it included; a min_gas_price or
// deposit past 2^128 overflowed the fee and deposit arithmetic, which panics. Each is refused
// now with code 14 (ErrInvalidParams), and the params stay as they were.
func TestAttackParamsThatCouldHaltTheChainAreRefused(t *testing.T) {
	f := newFixture(t)
	before, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	huge := math.NewIntFromBigInt(new(big.Int).Lsh(big.NewInt(1), 200))
	for _, c := range []struct {
		name string
		edit func(*types.Params)
	}{
		{"max_batch_bytes above compaction's decompression bound", func(p *types.Params) { p.MaxBatchBytes = kbatch.MaxDecodedBatchBytes + 1 }},
		{"max_batch_bytes above the snapshot item bound", func(p *types.Params) { p.MaxBatchBytes = 64_000_000 }},
		{"compaction_records_per_block 1", func(p *types.Params) { p.CompactionRecordsPerBlock = 1 }},
		{"max_tx_gas 1", func(p *types.Params) { p.MaxTxGas = 1 }},
		{"min_gas_price 2^200 per gas", func(p *types.Params) { p.MinGasPrice.Amount = math.LegacyNewDecFromInt(huge) }},
		{"topic_deposit 2^200", func(p *types.Params) { p.TopicDeposit.Amount = huge }},
		{"group_deposit 2^200", func(p *types.Params) { p.GroupDeposit.Amount = huge }},
	} {
		name := c.name
		p := before
		c.edit(&p)
		_, err := f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
		require.ErrorIs(t, err, types.ErrInvalidParams, name)
		require.ErrorIs(t, (&types.MsgUpdateParams{Authority: f.gov, Params: p}).ValidateBasic(), types.ErrInvalidParams, "a proposal carrying them is refused at submission")
		t.Logf("%s: refused, code %d: %s", name, types.ErrInvalidParams.ABCICode(), err)
		after, err := f.k.Params.Get(f.ctx)
		require.NoError(t, err)
		require.Equal(t, before, after)
	}
}

// Every block-level step runs with the params at their limits: a compacted topic's batches
// decompressing to max_batch_bytes (60 MiB) at a compaction budget of 2 records and 1 byte,
// retention and a purge at one key and one byte a block, expiry at one unit of work.
func TestAttackEndBlockerRunsWithParamsAtTheirLimits(t *testing.T) {
	f := newFixture(t)
	f.setParams(func(p *types.Params) {
		p.MaxBatchBytes, p.MaxRecordBytes = types.MaxBatchBytesLimit, types.MaxBatchBytesLimit
		p.CompactionRecordsPerBlock, p.CompactionBytesPerBlock = types.MinCompactionRecordsPerBlock, 1
		p.RetentionBatchesPerBlock, p.RetentionPartitionsPerBlock, p.CleanupBytesPerBlock = 1, 1, 1
		p.MaxExpiriesPerBlock, p.MaxExpiryWorkPerBlock = 1, 1
		p.MaxTxGas = types.MinMaxTxGas
		p.MinGasPrice = sdk.NewDecCoinFromDec(sdk.DefaultBondDenom, math.LegacyNewDecFromInt(types.MaxFeeAmount))
		p.TopicDeposit.Amount, p.PartitionDeposit.Amount, p.GroupDeposit.Amount = types.MaxFeeAmount, types.MaxFeeAmount, types.MaxFeeAmount
	})
	f.createCompacted("table", 1, nil)
	// 60 keyed records of about 1 MiB of zeros: 60 MiB decompressed, a few KiB stored; then
	// a second batch writing half the keys again, so compaction reads the first whole.
	recs := make([]types.BatchRecord, 60)
	for i := range recs {
		recs[i] = kv(string(rune('A'+i)), str(string(make([]byte, types.MaxBatchBytesLimit/60-64))))
	}
	for _, batch := range [][]types.BatchRecord{recs, recs[:30]} {
		b, err := types.NewProduceBatch("table", 0, batch, kbatch.CompressionZstd)
		require.NoError(t, err)
		_, err = f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{b}})
		require.NoError(t, err)
	}
	f.createTopic("old", 1)
	setRetention(t, f, "old", 1000, -1)
	f.createTopic("gone", 2)
	for i := 0; i < 3; i++ {
		_, err := f.produce(f.alice, pb{Topic: "old", Partition: 0, Records: []types.BatchRecord{rec("", "x")}},
			pb{Topic: "gone", Partition: 1, Records: []types.BatchRecord{rec("", "y")}})
		require.NoError(t, err)
	}
	_, err := f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "gone"})
	require.NoError(t, err)
	f.open(f.alice, "g")
	f.join(f.bob, "g", "old")
	f.join(f.carol, "g", "old")
	f.advance(time.Minute)

	var worst time.Duration
	blocks := 0
	for ; blocks < 40; blocks++ {
		start := time.Now()
		require.NoError(t, f.k.EndBlocker(f.ctx), "block %d", blocks)
		worst = max(worst, time.Since(start))
		f.advance(time.Second)
		st, err := f.k.Compactions.Get(f.ctx, types.TopicPartition{Topic: "table"})
		require.NoError(t, err)
		purging, err := f.k.TopicPurges.Has(f.ctx, "gone")
		require.NoError(t, err)
		members, err := f.k.GroupMembers(f.ctx, "g")
		require.NoError(t, err)
		if st.Passes > 0 && !st.InPass && !purging && len(members) == 0 && f.partitions("old")[0].LogStartOffset == 3 {
			break
		}
	}
	require.Less(t, blocks, 40, "compaction, retention, the purge and expiry each make progress at their smallest budgets")
	t.Logf("at the limits (max_batch_bytes %d, compaction 2 records and 1 byte, cleanup 1 key and 1 byte, expiry 1 unit): all done in %d blocks, slowest EndBlocker %v",
		types.MaxBatchBytesLimit, blocks+1, worst.Round(time.Millisecond))
}

// A chain that accepted max_batch_bytes above 64 MiB before this release may hold a batch
// compaction cannot decompress. It failed the EndBlocker (halting every validator) and, once
// each step ran isolated, every pass over its partition, which never compacted again.
// Compaction leaves it as it is now (readers cannot decode it either) and goes on.
func TestAttackCompactionLeavesABatchItCannotDecode(t *testing.T) {
	f := newFixture(t)
	p, err := f.k.Params.Get(f.ctx)
	require.NoError(t, err)
	p.MaxBatchBytes, p.MaxRecordBytes = kbatch.MaxDecodedBatchBytes+1<<20, kbatch.MaxDecodedBatchBytes+1<<20
	require.NoError(t, f.k.Params.Set(f.ctx, p)) // as an earlier release let governance set it
	f.createCompacted("table", 1, nil)
	big := kv("k", str(string(make([]byte, kbatch.MaxDecodedBatchBytes))))
	b, err := types.NewProduceBatch("table", 0, []types.BatchRecord{big}, kbatch.CompressionLZ4)
	require.NoError(t, err)
	_, err = f.msgs.Produce(f.ctx, &types.MsgProduce{Producer: f.alice, Batches: []types.ProduceBatch{b}})
	require.NoError(t, err, "accepted under the old bound")
	for _, v := range []string{"a", "b"} {
		_, err = f.produce(f.alice, pb{Topic: "table", Partition: 0, Records: []types.BatchRecord{kv("k", str(v))}})
		require.NoError(t, err)
	}
	f.advance(time.Second)
	for i := 0; i < 3; i++ {
		require.NoError(t, f.k.EndBlocker(f.ctx), "block %d", i)
		f.advance(time.Second)
	}
	st, err := f.k.Compactions.Get(f.ctx, types.TopicPartition{Topic: "table"})
	require.NoError(t, err)
	require.Positive(t, st.Passes)
	require.False(t, st.InPass, "the pass went past the batch")
	t.Logf("an lz4 batch of %d stored bytes decompressing to %d MiB + %d B: left as it is; %d passes ended", len(b.RecordBatch), kbatch.MaxDecodedBatchBytes>>20, big.RecordSize()-kbatch.MaxDecodedBatchBytes, st.Passes)
}
