package keeper_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
	"cosmossdk.io/store"
	"cosmossdk.io/store/metrics"
	storetypes "cosmossdk.io/store/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"

	addresscodec "github.com/cosmos/cosmos-sdk/codec/address"
	"github.com/cosmos/cosmos-sdk/runtime"
	sdk "github.com/cosmos/cosmos-sdk/types"
	moduletestutil "github.com/cosmos/cosmos-sdk/types/module/testutil"
	"github.com/cosmos/cosmos-sdk/types/query"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"

	"github.com/bftlog/bftlog/x/topics"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	"github.com/bftlog/bftlog/x/topics/keeper"
	"github.com/bftlog/bftlog/x/topics/types"
)

// fixture is a keeper on an in-memory store with a msg server and a query server.
type fixture struct {
	t   testing.TB
	ctx sdk.Context
	k   keeper.Keeper
	// cms is the root multistore ctx writes to; recordDB the record store's database.
	cms      storetypes.CommitMultiStore
	recordDB dbm.DB
	msgs     types.MsgServer
	query    types.QueryServer
	// restart gives a keeper with a new record store over the same database and directory,
	// as a node restarting has.
	restart func() keeper.Keeper
	gov     string
	alice   string
	bob     string
	carol   string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	// The module store in IAVL and the record store (a transient store for the block's
	// writes over a database of its own), as the app mounts them.
	key, pending := storetypes.NewKVStoreKey(types.StoreKey), storetypes.NewTransientStoreKey(types.PendingRecordsStoreKey)
	db := dbm.NewMemDB()
	cms := store.NewCommitMultiStore(db, log.NewNopLogger(), metrics.NewNoOpMetrics())
	cms.MountStoreWithDB(key, storetypes.StoreTypeIAVL, nil)
	cms.MountStoreWithDB(pending, storetypes.StoreTypeTransient, nil)
	require.NoError(t, cms.LoadLatestVersion())
	ctx := sdk.NewContext(cms, cmtproto.Header{}, false, log.NewNopLogger()).
		WithBlockHeight(7).WithBlockTime(time.UnixMilli(1_700_000_000_000).UTC())
	enc := moduletestutil.MakeTestEncodingConfig(topics.AppModule{})
	ac := addresscodec.NewBech32Codec("bftlog")
	str := func(b []byte) string { s, err := ac.BytesToString(b); require.NoError(t, err); return s }
	gov := str(authtypes.NewModuleAddress(govtypes.ModuleName))
	recordDir := t.TempDir()
	restart := func() keeper.Keeper {
		return keeper.NewKeeper(enc.Codec, ac, runtime.NewKVStoreService(key), gov).WithRecordStore(keeper.NewRecordStore(pending, dbm.NewPrefixDB(db, []byte(types.RecordDBPrefix)), recordDir))
	}
	k := restart()
	require.NoError(t, k.InitGenesis(ctx, types.DefaultGenesis()))
	// Group assignment orders members by address: name the accounts so that alice < bob < carol.
	addrs := []string{str([]byte("alice_______________")), str([]byte("bob_________________")), str([]byte("carol_______________"))}
	sort.Strings(addrs)
	return &fixture{
		t: t, ctx: ctx, k: k, cms: cms, recordDB: dbm.NewPrefixDB(db, []byte(types.RecordDBPrefix)), msgs: keeper.NewMsgServerImpl(k), query: keeper.NewQueryServer(k), gov: gov, restart: restart,
		alice: addrs[0], bob: addrs[1], carol: addrs[2],
	}
}

func anyone() types.TopicConfig {
	return types.TopicConfig{RetentionMs: -1, RetentionBytes: -1, ProducerPolicy: types.PRODUCER_POLICY_ANYONE}
}

func (f *fixture) createTopic(name string, partitions uint32) {
	f.t.Helper()
	_, err := f.msgs.CreateTopic(f.ctx, &types.MsgCreateTopic{Owner: f.alice, Name: name, Partitions: partitions, Config: anyone()})
	require.NoError(f.t, err)
}

func rec(key, value string, headers ...string) types.BatchRecord {
	r := types.BatchRecord{CreateTimeMs: 1234}
	if key != "" {
		r.Key = &types.Bytes{Data: []byte(key)}
	}
	r.Value = &types.Bytes{Data: []byte(value)}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, types.Header{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return r
}

// pb is a produce batch as a test writes it: records, which the fixture encodes into one Kafka
// record batch as a producer does.
type pb struct {
	Topic     string
	Partition uint32
	Sequence  uint64
	Records   []types.BatchRecord
}

// wire encodes b (uncompressed); no records gives a batch without a record batch.
func (b pb) wire(t testing.TB) types.ProduceBatch {
	t.Helper()
	if len(b.Records) == 0 {
		return types.ProduceBatch{Topic: b.Topic, Partition: b.Partition, Sequence: b.Sequence}
	}
	out, err := types.NewProduceBatch(b.Topic, b.Partition, b.Records, kbatch.CompressionNone)
	require.NoError(t, err)
	out.Sequence = b.Sequence
	return out
}

func (f *fixture) produce(producer string, batches ...pb) (*types.MsgProduceResponse, error) {
	msg := &types.MsgProduce{Producer: producer}
	for _, b := range batches {
		msg.Batches = append(msg.Batches, b.wire(f.t))
	}
	return f.msgs.Produce(f.ctx, msg)
}

func (f *fixture) partitions(name string) []types.Partition {
	f.t.Helper()
	res, err := f.query.Partitions(f.ctx, &types.QueryPartitionsRequest{Name: name})
	require.NoError(f.t, err)
	return res.Partitions
}

func (f *fixture) fetch(topic string, partition uint32, offset uint64, maxRecords uint32, maxBytes uint64) (*types.QueryFetchResponse, error) {
	return f.query.Fetch(f.ctx, &types.QueryFetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxRecords: maxRecords, MaxBytes: maxBytes})
}

func TestUpdateParams(t *testing.T) {
	f := newFixture(t)
	p := types.DefaultParams()
	p.MaxRecordsPerBatch = 5
	_, err := f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.alice, Params: p})
	require.ErrorIs(t, err, types.ErrUnauthorized)
	bad := p
	bad.MaxBatchBytes = 0
	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: bad})
	require.ErrorIs(t, err, types.ErrInvalidParams)
	bad = p
	bad.MaxBatchBytes = bad.MaxRecordBytes - 1
	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: bad})
	require.ErrorIs(t, err, types.ErrInvalidParams)

	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)
	res, err := f.query.Params(f.ctx, &types.QueryParamsRequest{})
	require.NoError(t, err)
	require.Equal(t, p, res.Params)
	requireEvent(t, f.ctx, "bftlog.topics.v1.EventParamsUpdated")
}

func TestTopicsQueryPaginates(t *testing.T) {
	f := newFixture(t)
	for i := 0; i < 5; i++ {
		f.createTopic(fmt.Sprintf("t%d", i), 1)
	}
	var names []string
	var next []byte
	for {
		res, err := f.query.Topics(f.ctx, &types.QueryTopicsRequest{Pagination: &query.PageRequest{Key: next, Limit: 2}})
		require.NoError(t, err)
		require.LessOrEqual(t, len(res.Topics), 2)
		for _, tp := range res.Topics {
			names = append(names, tp.Name)
		}
		next = res.Pagination.NextKey
		if next == nil {
			break
		}
	}
	require.Equal(t, []string{"t0", "t1", "t2", "t3", "t4"}, names)
	_, err := f.query.Topic(f.ctx, &types.QueryTopicRequest{Name: "nope"})
	require.ErrorIs(t, err, types.ErrUnknownTopic)
	_, err = f.query.Topic(f.ctx, &types.QueryTopicRequest{Name: "bad name"})
	require.ErrorIs(t, err, types.ErrInvalidTopicName)
	_, err = f.query.Partitions(f.ctx, &types.QueryPartitionsRequest{Name: "nope"})
	require.ErrorIs(t, err, types.ErrUnknownTopic)
}

func requireEvent(t *testing.T, ctx sdk.Context, typ string) {
	t.Helper()
	for _, e := range ctx.EventManager().Events() {
		if e.Type == typ {
			return
		}
	}
	t.Fatalf("no %s event emitted", typ)
}
