package metrics_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"
	storetypes "cosmossdk.io/store/types"

	addresscodec "github.com/cosmos/cosmos-sdk/codec/address"
	"github.com/cosmos/cosmos-sdk/runtime"
	"github.com/cosmos/cosmos-sdk/testutil"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/x/topics"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/metrics"
	"github.com/bftlog/bftlog/x/topics/types"
)

// gathered is a registry's output as "name{k=v,...}" -> value (counters, gauges, and for
// histograms name_count/name_sum).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key] = m.Counter.GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.Gauge.GetValue()
			case dto.MetricType_HISTOGRAM:
				out[f.GetName()+"_count{"+strings.Join(labels, ",")+"}"] = float64(m.Histogram.GetSampleCount())
				out[f.GetName()+"_sum{"+strings.Join(labels, ",")+"}"] = m.Histogram.GetSampleSum()
			}
		}
	}
	return out
}

func withPrefix(all map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range all {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func appended(t *testing.T, topic string, count uint32, size uint64) abci.Event {
	t.Helper()
	e, err := sdk.TypedEventToEvent(&types.EventBatchAppended{Topic: topic, Partition: 1, BaseOffset: 7, Count: count, SizeBytes: size, Producer: "p"})
	require.NoError(t, err)
	ev := abci.Event(e)
	ev.Attributes = append(ev.Attributes, abci.EventAttribute{Key: "msg_index", Value: "0"})
	return ev
}

func TestTopicSeriesCapAndBlockCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{MaxTopicSeries: 2})
	require.NoError(t, err)

	enc := moduletestutil.MakeTestEncodingConfig(topics.AppModule{})
	producer := sdk.AccAddress([]byte("producer____________")).String()
	encode := func(msgs ...sdk.Msg) []byte {
		b := enc.TxConfig.NewTxBuilder()
		require.NoError(t, b.SetMsgs(msgs...))
		bz, err := enc.TxConfig.TxEncoder()(b.GetTx())
		require.NoError(t, err)
		return bz
	}
	produceTx := encode(&types.MsgProduce{Producer: producer, Batches: []types.ProduceBatch{{Topic: "a", Partition: 9}}})
	otherTx := encode(&types.MsgCreateTopic{Owner: producer, Name: "z", Partitions: 1})
	listener := m.Bind(metrics.Source{TxDecoder: enc.TxConfig.TxDecoder()})

	req := abci.RequestFinalizeBlock{Height: 5, Txs: [][]byte{nil, nil, produceTx, otherTx, produceTx, nil}}
	res := abci.ResponseFinalizeBlock{
		TxResults: []*abci.ExecTxResult{
			{Events: []abci.Event{appended(t, "a", 3, 30), appended(t, "b", 1, 5)}},
			{Events: []abci.Event{appended(t, "c", 2, 20), appended(t, "a", 1, 1)}},
			// Failed transactions: their events never count; only the ones carrying a
			// MsgProduce count as rejections.
			{Code: types.ErrInvalidPartition.ABCICode(), Codespace: types.ModuleName, Events: []abci.Event{appended(t, "a", 100, 100)}},
			{Code: types.ErrInvalidPartition.ABCICode(), Codespace: types.ModuleName},
			{Code: sdkerrors.ErrOutOfGas.ABCICode(), Codespace: sdkerrors.RootCodespace},
			{Events: []abci.Event{appended(t, "d", 4, 40)}},
		},
		Events: []abci.Event{appended(t, "b", 2, 2)}, // e.g. a governance proposal's MsgProduce
	}
	require.NoError(t, listener.ListenFinalizeBlock(context.Background(), req, res))
	require.NoError(t, listener.ListenFinalizeBlock(context.Background(), abci.RequestFinalizeBlock{Height: 6}, abci.ResponseFinalizeBlock{}))

	got := gathered(t, reg)
	require.Equal(t, map[string]float64{
		"bftlog_topics_records_appended_total{topic=a}":      4,
		"bftlog_topics_records_appended_total{topic=b}":      3,
		"bftlog_topics_records_appended_total{topic=_other}": 6, // c and d, past the 2-topic limit
	}, withPrefix(got, "bftlog_topics_records_appended_total"))
	require.Equal(t, map[string]float64{
		"bftlog_topics_bytes_appended_total{topic=a}":      31,
		"bftlog_topics_bytes_appended_total{topic=b}":      7,
		"bftlog_topics_bytes_appended_total{topic=_other}": 60,
	}, withPrefix(got, "bftlog_topics_bytes_appended_total"))
	require.Equal(t, 2.0, got["bftlog_topics_batches_per_block_count{}"], "one observation per block")
	require.Equal(t, 6.0, got["bftlog_topics_batches_per_block_sum{}"])
	require.Equal(t, map[string]float64{
		"bftlog_topics_produce_rejections_total{code=5,codespace=topics,error=partition out of range}": 1,
		"bftlog_topics_produce_rejections_total{code=11,codespace=sdk,error=out of gas}":               1,
	}, withPrefix(got, "bftlog_topics_produce_rejections_total"))

	// A second app bound in the same process takes over; the first one's listener goes quiet.
	second := m.Bind(metrics.Source{})
	require.NoError(t, listener.ListenFinalizeBlock(context.Background(), req, res))
	require.Equal(t, 2.0, gathered(t, reg)["bftlog_topics_batches_per_block_count{}"])
	require.NoError(t, second.ListenFinalizeBlock(context.Background(), abci.RequestFinalizeBlock{}, abci.ResponseFinalizeBlock{}))
	require.Equal(t, 3.0, gathered(t, reg)["bftlog_topics_batches_per_block_count{}"])

	// Registering the same names again in one registry fails instead of double counting.
	_, err = metrics.New(reg, metrics.DefaultConfig())
	require.Error(t, err)
}

func TestZeroTopicSeriesPutsAllUnderOther(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{})
	require.NoError(t, err)
	l := m.Bind(metrics.Source{})
	require.NoError(t, l.ListenFinalizeBlock(context.Background(), abci.RequestFinalizeBlock{},
		abci.ResponseFinalizeBlock{TxResults: []*abci.ExecTxResult{{Events: []abci.Event{appended(t, "a", 2, 9)}}}}))
	require.Equal(t, map[string]float64{"bftlog_topics_records_appended_total{topic=_other}": 2},
		withPrefix(gathered(t, reg), "bftlog_topics_records_appended_total"))
}

// With label-topics only the listed topics are named, even when they append last, so spam
// topics cannot take the slots.
func TestLabelTopicsAreTheOnlyNamedTopics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{MaxTopicSeries: 100, LabelTopics: []string{"orders"}})
	require.NoError(t, err)
	l := m.Bind(metrics.Source{})
	require.NoError(t, l.ListenFinalizeBlock(context.Background(), abci.RequestFinalizeBlock{},
		abci.ResponseFinalizeBlock{TxResults: []*abci.ExecTxResult{{Events: []abci.Event{
			appended(t, "spam-1", 1, 1), appended(t, "spam-2", 2, 2), appended(t, "orders", 4, 40),
		}}}}))
	require.Equal(t, map[string]float64{
		"bftlog_topics_records_appended_total{topic=_other}": 3,
		"bftlog_topics_records_appended_total{topic=orders}": 4,
	}, withPrefix(gathered(t, reg), "bftlog_topics_records_appended_total"))
}

func TestConfigValidate(t *testing.T) {
	require.NoError(t, metrics.DefaultConfig().Validate())
	require.Error(t, metrics.Config{MaxTopicSeries: -1}.Validate())
	require.Error(t, metrics.Config{MaxLagSeries: -1}.Validate())
	require.Error(t, metrics.Config{LagGroups: []string{"bad group"}}.Validate())
	require.Error(t, metrics.Config{LabelTopics: []string{"bad topic"}}.Validate())
	_, err := metrics.New(prometheus.NewRegistry(), metrics.Config{LagGroups: []string{"a/b"}})
	require.Error(t, err)
}

// lagState is a keeper on an in-memory store with topic t (3 partitions, 10 records each)
// and groups g1, g2, g3 that committed offsets 1, 2, 3 on every partition.
func lagState(t *testing.T) (keeper.Keeper, sdk.Context) {
	t.Helper()
	key := storetypes.NewKVStoreKey(types.StoreKey)
	tctx := testutil.DefaultContextWithDB(t, key, storetypes.NewTransientStoreKey("transient_test"))
	ctx := tctx.Ctx.WithBlockHeight(7).WithBlockTime(time.UnixMilli(1_700_000_000_000).UTC())
	enc := moduletestutil.MakeTestEncodingConfig(topics.AppModule{})
	ac := addresscodec.NewBech32Codec("bftlog")
	str := func(b []byte) string { s, err := ac.BytesToString(b); require.NoError(t, err); return s }
	k := keeper.NewKeeper(enc.Codec, ac, runtime.NewKVStoreService(key), str(authtypes.NewModuleAddress(govtypes.ModuleName)))
	require.NoError(t, k.InitGenesis(ctx, types.DefaultGenesis()))
	owner := str([]byte("owner_______________"))
	msgs := keeper.NewMsgServerImpl(k)
	_, err := msgs.CreateTopic(ctx, &types.MsgCreateTopic{Owner: owner, Name: "t", Partitions: 3,
		Config: types.TopicConfig{RetentionMs: -1, RetentionBytes: -1}})
	require.NoError(t, err)
	var batches []types.ProduceBatch
	for p := uint32(0); p < 3; p++ {
		var recs []types.BatchRecord
		for i := 0; i < 10; i++ {
			recs = append(recs, types.BatchRecord{Value: &types.Bytes{Data: []byte("v")}})
		}
		b, err := types.NewProduceBatch("t", p, recs, kbatch.CompressionNone)
		require.NoError(t, err)
		batches = append(batches, b)
	}
	_, err = msgs.Produce(ctx, &types.MsgProduce{Producer: owner, Batches: batches})
	require.NoError(t, err)
	for i, g := range []string{"g1", "g2", "g3"} {
		require.NoError(t, k.Groups.Set(ctx, g, types.Group{GroupId: g, Admin: owner, Generation: 1}))
		for p := uint32(0); p < 3; p++ {
			require.NoError(t, k.Offsets.Set(ctx, collections.Join(g, types.TopicPartition{Topic: "t", Partition: p}),
				types.CommittedOffset{GroupId: g, Topic: "t", Partition: p, Offset: uint64(i + 1)}))
		}
	}
	return k, ctx
}

func TestGroupLagSeriesLimitAndFilter(t *testing.T) {
	k, ctx := lagState(t)
	state := func() (context.Context, error) { return ctx, nil }
	lagKey := func(g string, p int) string {
		return fmt.Sprintf("bftlog_topics_group_lag{group=%s,partition=%d,topic=t}", g, p)
	}

	// The first 4 of 9 series in (group, topic, partition) order; truncated.
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.Config{MaxTopicSeries: 10, MaxLagSeries: 4})
	require.NoError(t, err)
	m.Bind(metrics.Source{Keeper: k, State: state})
	for range 2 { // the same state gives the same series
		require.Equal(t, map[string]float64{
			lagKey("g1", 0): 9, lagKey("g1", 1): 9, lagKey("g1", 2): 9,
			lagKey("g2", 0):                       8,
			"bftlog_topics_group_lag_truncated{}": 1,
		}, withPrefix(gathered(t, reg), "bftlog_topics_group_lag"))
	}

	// Only the configured groups (duplicates and unknown ones are harmless).
	reg = prometheus.NewRegistry()
	m, err = metrics.New(reg, metrics.Config{MaxLagSeries: 500, LagGroups: []string{"g3", "nope", "g2", "g3"}})
	require.NoError(t, err)
	m.Bind(metrics.Source{Keeper: k, State: state})
	require.Equal(t, map[string]float64{
		lagKey("g2", 0): 8, lagKey("g2", 1): 8, lagKey("g2", 2): 8,
		lagKey("g3", 0): 7, lagKey("g3", 1): 7, lagKey("g3", 2): 7,
		"bftlog_topics_group_lag_truncated{}": 0,
	}, withPrefix(gathered(t, reg), "bftlog_topics_group_lag"))

	// A group whose whole lag is over the Lag query's cap is asked topic by topic.
	params, err := k.Params.Get(ctx)
	require.NoError(t, err)
	params.MaxGroupSubscribedPartitions = 2
	require.NoError(t, k.Params.Set(ctx, params))
	reg = prometheus.NewRegistry()
	m, err = metrics.New(reg, metrics.Config{MaxLagSeries: 500, LagGroups: []string{"g2"}})
	require.NoError(t, err)
	m.Bind(metrics.Source{Keeper: k, State: state})
	require.Equal(t, map[string]float64{
		lagKey("g2", 0): 8, lagKey("g2", 1): 8, lagKey("g2", 2): 8,
		"bftlog_topics_group_lag_truncated{}": 0,
	}, withPrefix(gathered(t, reg), "bftlog_topics_group_lag"))

	// Unreadable state (no block committed yet) gives no series and does not fail the scrape.
	reg = prometheus.NewRegistry()
	m, err = metrics.New(reg, metrics.DefaultConfig())
	require.NoError(t, err)
	m.Bind(metrics.Source{Keeper: k, State: func() (context.Context, error) { return nil, fmt.Errorf("not ready") }})
	require.Empty(t, withPrefix(gathered(t, reg), "bftlog_topics_group_lag"))

	// 0 disables the gauge.
	reg = prometheus.NewRegistry()
	m, err = metrics.New(reg, metrics.Config{MaxLagSeries: 0})
	require.NoError(t, err)
	m.Bind(metrics.Source{Keeper: k, State: state})
	require.Empty(t, withPrefix(gathered(t, reg), "bftlog_topics_group_lag"))
}

// The keeper's query server reports reads to the bound metrics.
func TestFetchObserver(t *testing.T) {
	k, ctx := lagState(t)
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.DefaultConfig())
	require.NoError(t, err)
	m.Bind(metrics.Source{Keeper: k})
	q := keeper.NewQueryServer(k) // built before or after Bind, it shares the observer
	_, err = q.Fetch(ctx, &types.QueryFetchRequest{Topic: "t", Partition: 1, Offset: 2, MaxRecords: 5})
	require.NoError(t, err)
	_, err = q.Fetch(ctx, &types.QueryFetchRequest{Topic: "t", Partition: 1, Offset: 10})
	require.NoError(t, err)
	_, err = q.Fetch(ctx, &types.QueryFetchRequest{Topic: "t", Partition: 1, Offset: 11})
	require.Error(t, err, "a failed fetch is not counted")
	_, err = q.Record(ctx, &types.QueryRecordRequest{Topic: "t", Partition: 0, Offset: 0})
	require.NoError(t, err)
	got := gathered(t, reg)
	require.Equal(t, map[string]float64{
		"bftlog_topics_fetch_requests_total{query=fetch}":  2,
		"bftlog_topics_fetch_requests_total{query=record}": 1,
	}, withPrefix(got, "bftlog_topics_fetch_requests_total"))
	require.Equal(t, map[string]float64{
		"bftlog_topics_fetch_records_total{query=fetch}":  5,
		"bftlog_topics_fetch_records_total{query=record}": 1,
	}, withPrefix(got, "bftlog_topics_fetch_records_total"))

	k.SetFetchObserver(nil)
	_, err = q.Record(ctx, &types.QueryRecordRequest{Topic: "t", Partition: 0, Offset: 0})
	require.NoError(t, err)
	require.Equal(t, 1.0, gathered(t, reg)["bftlog_topics_fetch_requests_total{query=record}"])
}
