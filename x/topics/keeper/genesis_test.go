package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/types"
)

func TestGenesisRoundTrip(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 3)
	f.createTopic("b", 1)
	for i := 0; i < 5; i++ {
		_, err := f.produce(f.bob,
			types.ProduceBatch{Topic: "a", Partition: -1, Records: []types.BatchRecord{rec("k1", "v"), rec("", "x", "h", "1"), rec("k2", "w")}},
			types.ProduceBatch{Topic: "b", Partition: 0, Records: []types.BatchRecord{{}}})
		require.NoError(t, err)
	}
	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate(f.k.AddressCodec()))
	require.Len(t, exported.Topics, 2)
	require.Len(t, exported.Partitions, 4)
	require.NotEmpty(t, exported.SpreadCursors)

	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)

	// Imported state keeps working: offsets continue where they stopped.
	res, err := g.produce(g.bob, types.ProduceBatch{Topic: "b", Partition: 0, Records: []types.BatchRecord{{}}})
	require.NoError(t, err)
	require.Equal(t, uint64(5), res.Results[0].BaseOffset)
}

func TestGenesisValidateRejectsInconsistentState(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	for i := 0; i < 3; i++ {
		_, err := f.produce(f.bob, types.ProduceBatch{Topic: "a", Partition: 0, Records: []types.BatchRecord{rec("", "12345")}})
		require.NoError(t, err)
	}
	good, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	clone := func() *types.GenesisState {
		bz, err := good.Marshal()
		require.NoError(t, err)
		var gs types.GenesisState
		require.NoError(t, gs.Unmarshal(bz))
		return &gs
	}
	cases := map[string]func(gs *types.GenesisState){
		"bad params":           func(gs *types.GenesisState) { gs.Params.MaxBatchBytes = 0 },
		"duplicate topic":      func(gs *types.GenesisState) { gs.Topics = append(gs.Topics, gs.Topics[0]) },
		"bad topic name":       func(gs *types.GenesisState) { gs.Topics[0].Name = "a b" },
		"missing partition":    func(gs *types.GenesisState) { gs.Partitions = gs.Partitions[:1] },
		"orphan partition":     func(gs *types.GenesisState) { gs.Partitions[1].Topic = "zzz" },
		"gap in offsets":       func(gs *types.GenesisState) { gs.Batches = append(gs.Batches[:1], gs.Batches[2:]...) },
		"wrong high watermark": func(gs *types.GenesisState) { gs.Partitions[0].HighWatermark++ },
		"wrong byte count":     func(gs *types.GenesisState) { gs.Partitions[0].ByteCount-- },
		"wrong batch size":     func(gs *types.GenesisState) { gs.Batches[0].Batch.SizeBytes++ },
		"empty batch":          func(gs *types.GenesisState) { gs.Batches[0].Batch.Records = nil },
		"bad owner":            func(gs *types.GenesisState) { gs.Topics[0].Owner = "x" },
		"cursor out of range":  func(gs *types.GenesisState) { gs.SpreadCursors = []types.SpreadCursor{{Topic: "a", NextPartition: 2}} },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			gs := clone()
			mutate(gs)
			require.Error(t, gs.Validate(f.k.AddressCodec()))
			g := newFixture(t)
			require.Error(t, g.k.InitGenesis(g.ctx, gs))
		})
	}
}
