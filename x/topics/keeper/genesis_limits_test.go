package keeper_test

import (
	"fmt"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	sdkmath "cosmossdk.io/math"

	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"

	"github.com/bftlog/bftlog/x/topics"
	"github.com/bftlog/bftlog/x/topics/types"
)

// lowest is p with every numeric limit at 1 and every price and deposit at its smallest
// non-zero amount: the lowest params governance can set.
func lowest(t *testing.T, p types.Params) types.Params {
	t.Helper()
	v := reflect.ValueOf(&p).Elem()
	lowered := 0
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Uint32, reflect.Uint64:
			f.SetUint(1)
			lowered++
		}
	}
	// The bounds Validate keeps (each is a minimum above 1).
	p.CompactionRecordsPerBlock, p.MaxTxGas = types.MinCompactionRecordsPerBlock, types.MinMaxTxGas
	for _, c := range []*sdkmathCoin{{&p.TopicDeposit.Amount}, {&p.PartitionDeposit.Amount}, {&p.GroupDeposit.Amount}} {
		if !c.amt.IsNil() && c.amt.IsPositive() {
			*c.amt = sdkmath.OneInt()
			lowered++
		}
	}
	if !p.MinGasPrice.Amount.IsNil() && p.MinGasPrice.Amount.IsPositive() {
		p.MinGasPrice.Amount = sdkmath.LegacySmallestDec()
		lowered++
	}
	require.NoError(t, p.Validate())
	t.Logf("lowered %d params to their minimum", lowered)
	return p
}

type sdkmathCoin struct{ amt *sdkmath.Int }

// The attack: governance lowers a limit (max partitions, record size, group members, ...) below
// what existing topics and groups already have. Genesis validation used to check existing
// objects against the new limits, so `bftlogd export` produced a genesis that `genesis
// validate` refused and InitGenesis panicked on: the chain could not be exported and
// restarted. Existing state now stays valid; the limits apply to new actions.
func TestAttackGenesisSurvivesLoweredParams(t *testing.T) {
	f := newFixture(t)
	f.createTopic("wide", 5)
	cfg := anyone()
	cfg.MaxRecordBytes = 4096 // a topic limit above the lowered module limit
	_, err := f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: "configured", Partitions: 2, Config: cfg})
	require.NoError(t, err)
	big := strings.Repeat("v", 2000)
	for i := 0; i < 3; i++ {
		_, err := f.produce(f.bob,
			pb{Topic: "wide", Partition: 0, Records: []types.BatchRecord{rec("k", big, "h1", "a", "h2", "b"), rec("", "x"), rec("k2", "y")}},
			pb{Topic: "configured", Partition: 1, Records: []types.BatchRecord{rec("", big)}})
		require.NoError(t, err)
	}
	f.open(f.alice, "crowd")
	f.join(f.alice, "crowd", "wide")
	f.join(f.bob, "crowd", "wide", "configured")
	f.join(f.carol, "crowd", "wide")

	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: lowest(t, types.DefaultParams())})
	require.NoError(t, err)
	// The lowered limits apply to new actions.
	_, err = f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: "new", Partitions: 2, Config: anyone()})
	require.ErrorIs(t, err, types.ErrTooManyPartitions)

	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	err = exported.Validate(f.k.AddressCodec())
	t.Logf("export after lowering every limit: %d topics (5 partitions against max 1), %d members in one group (max 1), %d batches (records of 2,000 B against max 1 B): validate → %v",
		len(exported.Topics), len(exported.Members), len(exported.Batches), err)
	require.NoError(t, err)

	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)

	// The streamed JSON the module hands to `bftlogd export` is the codec's, byte for byte.
	cdc := moduletestutil.MakeTestEncodingConfig(topics.AppModule{}).Codec
	streamed, err := g.k.ExportGenesisJSON(g.ctx, cdc)
	require.NoError(t, err)
	require.Equal(t, string(cdc.MustMarshalJSON(again)), string(streamed))
	var decoded types.GenesisState
	require.NoError(t, cdc.UnmarshalJSON(streamed, &decoded))
	require.NoError(t, decoded.Validate(g.k.AddressCodec()))

	// Structure is still checked.
	bad := *exported
	bad.Topics = append([]types.Topic(nil), exported.Topics...)
	bad.Topics[0].Partitions = 0
	require.ErrorIs(t, bad.Validate(f.k.AddressCodec()), types.ErrInvalidGenesis)
}

// peakHeap runs fn and returns the highest heap in use while it ran, above the heap before it,
// sampled every few milliseconds, with what fn returned (kept alive until sampling stops). The
// collector runs at GOGC=10 meanwhile, so the figure is close to what fn keeps alive rather
// than garbage the default pacing lets pile up in proportion to the whole heap (the store).
func peakHeap(fn func() any) (uint64, any) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	peak := base
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s runtime.MemStats
		for {
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > peak {
				peak = s.HeapAlloc
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	out := fn()
	runtime.ReadMemStats(&ms)
	close(stop)
	wg.Wait()
	if ms.HeapAlloc > peak {
		peak = ms.HeapAlloc
	}
	runtime.KeepAlive(out)
	return peak - base, out
}

// The attack: a log grown large (anyone can produce) made `bftlogd export` hold every batch's
// records as Go objects, then the codec's whole-state marshalling on top, so export needed
// several times the log's size in memory. The module now streams its batches into the JSON one
// at a time. The figure is the peak heap above the baseline for exporting the x/topics state.
func TestAttackExportMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 200 MB of batches")
	}
	const (
		totalBytes    = 200 << 20
		recordBytes   = 1000
		perMessage    = 3000
		numPartitions = 8
	)
	f := newFixture(t)
	f.createTopic("big", numPartitions)
	value := strings.Repeat("r", recordBytes)
	recs := make([]types.BatchRecord, perMessage)
	for i := range recs {
		recs[i] = rec(fmt.Sprintf("key-%d", i), value)
	}
	for sent := 0; sent < totalBytes; sent += perMessage * recordBytes {
		_, err := f.produce(f.bob, pb{Topic: "big", Partition: 0, Records: recs})
		require.NoError(t, err)
	}
	var stored uint64
	for _, p := range f.partitions("big") {
		stored += p.ByteCount
	}
	cdc := moduletestutil.MakeTestEncodingConfig(topics.AppModule{}).Codec
	batches := 0
	require.NoError(t, f.k.Batches.Walk(f.ctx, nil, func(collections.Pair[types.TopicPartition, uint64], types.RecordBatch) (bool, error) {
		batches++
		return false, nil
	}))

	before, oldOut := peakHeap(func() any {
		gs, err := f.k.ExportGenesis(f.ctx)
		require.NoError(t, err)
		return cdc.MustMarshalJSON(gs)
	})
	oldJSON := oldOut.([]byte)
	oldLen := len(oldJSON)
	oldOut, oldJSON = nil, nil //nolint:ineffassign // drops the references so the GC can free the old export
	after, newOut := peakHeap(func() any {
		bz, err := f.k.ExportGenesisJSON(f.ctx, cdc)
		require.NoError(t, err)
		return []byte(bz)
	})
	newJSON := newOut.([]byte)
	t.Logf("exporting %d MiB stored in %d batches (JSON %d MiB): peak heap above baseline, whole state decoded then marshalled %d MiB; streamed %d MiB",
		stored>>20, batches, len(newJSON)>>20, before>>20, after>>20)
	require.Equal(t, oldLen, len(newJSON))
	// The streamed export needs about its output (the JSON), one batch and the collector's
	// slack (10% of a heap that holds the in-memory store), not the whole log decoded besides.
	require.Less(t, after, uint64(len(newJSON))*17/10)
	require.Less(t, after, before)
}
