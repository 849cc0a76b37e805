package keeper_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"cosmossdk.io/collections"

	"github.com/bftlog/bftlog/x/topics/types"
)

func TestGenesisRoundTrip(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 3)
	f.createTopic("b", 1)
	for i := 0; i < 5; i++ {
		_, err := f.produce(f.bob,
			pb{Topic: "a", Partition: uint32(i % 3), Records: []types.BatchRecord{rec("k1", "v"), rec("", "x", "h", "1"), rec("k2", "w")}},
			pb{Topic: "b", Partition: 0, Records: []types.BatchRecord{{}}})
		require.NoError(t, err)
	}
	_, err := f.produce(f.alice, pb{Topic: "a", Partition: 2, Sequence: 1, Records: []types.BatchRecord{rec("", "s")}})
	require.NoError(t, err)
	f.open(f.alice, "g1")
	gen := f.join(f.alice, "g1", "a").Generation
	f.join(f.bob, "g1", "a", "b")
	gen++
	_, err = f.msgs.CommitOffsets(f.ctx, &types.MsgCommitOffsets{Member: f.alice, GroupId: "g1", Generation: gen,
		Offsets: []types.OffsetCommit{{Topic: "a", Partition: 0, Offset: 1, Metadata: "md"}}})
	require.NoError(t, err)
	p := types.DefaultParams()
	p.RetentionPartitionsPerBlock = 1
	_, err = f.msgs.UpdateParams(f.ctx, &types.MsgUpdateParams{Authority: f.gov, Params: p})
	require.NoError(t, err)
	require.NoError(t, f.k.EndBlocker(f.ctx)) // leaves a retention cursor behind

	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate(f.k.AddressCodec()))
	require.Len(t, exported.Topics, 2)
	require.Len(t, exported.Partitions, 4)
	require.Len(t, exported.Groups, 1)
	require.Len(t, exported.Members, 2)
	require.Len(t, exported.Offsets, 1)
	require.Len(t, exported.ProducerStates, 1)
	require.NotNil(t, exported.RetentionCursor)

	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)

	// Imported state keeps working: offsets continue where they stopped, the producer
	// sequence and the group generation carry over.
	res, err := g.produce(g.bob, pb{Topic: "b", Partition: 0, Records: []types.BatchRecord{{}}})
	require.NoError(t, err)
	require.Equal(t, uint64(5), res.Results[0].BaseOffset)
	res, err = g.produce(g.alice, pb{Topic: "a", Partition: 2, Sequence: 1, Records: []types.BatchRecord{rec("", "s")}})
	require.NoError(t, err)
	require.True(t, res.Results[0].Duplicate)
	_, err = g.msgs.CommitOffsets(g.ctx, &types.MsgCommitOffsets{Member: g.bob, GroupId: "g1", Generation: gen,
		Offsets: []types.OffsetCommit{{Topic: "b", Partition: 0, Offset: 2}}})
	require.NoError(t, err)
}

func TestGenesisValidateRejectsInconsistentState(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 2)
	for i := 0; i < 3; i++ {
		_, err := f.produce(f.bob, pb{Topic: "a", Partition: 0, Records: []types.BatchRecord{rec("", "12345")}})
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
		"empty batch":          func(gs *types.GenesisState) { gs.Batches[0].Batch.RecordBatch = nil },
		"bad owner":            func(gs *types.GenesisState) { gs.Topics[0].Owner = "x" },
		"member without group": func(gs *types.GenesisState) {
			gs.Members = []types.Member{{GroupId: "nope", Member: f.alice, ExpiresAtMs: 1}}
		},
		"member without expiry": func(gs *types.GenesisState) {
			gs.Groups = []types.Group{{GroupId: "g", Admin: f.alice, SessionTimeoutMs: 10_000}}
			gs.Members = []types.Member{{GroupId: "g", Member: f.alice}}
		},
		"partition assigned twice": func(gs *types.GenesisState) {
			gs.Groups = []types.Group{{GroupId: "g", Admin: f.alice, SessionTimeoutMs: 10_000}}
			a := []types.TopicPartitions{{Topic: "a", Partitions: []uint32{0}}}
			gs.Members = []types.Member{{GroupId: "g", Member: f.alice, ExpiresAtMs: 1, Assignment: a}, {GroupId: "g", Member: f.bob, ExpiresAtMs: 1, Assignment: a}}
		},
		"append time goes back": func(gs *types.GenesisState) {
			gs.Batches[1].Batch.LogAppendTimeMs = gs.Batches[0].Batch.LogAppendTimeMs - 1
		},
		"duplicate producer state": func(gs *types.GenesisState) {
			ps := types.ProducerState{Topic: "a", Partition: 0, Producer: f.alice, LastSequence: 1, BaseOffset: 0, Count: 1}
			gs.ProducerStates = []types.ProducerState{ps, ps}
		},
		"offset above watermark": func(gs *types.GenesisState) {
			gs.Groups = []types.Group{{GroupId: "g", Admin: f.alice, SessionTimeoutMs: 10_000}}
			gs.Offsets = []types.CommittedOffset{{GroupId: "g", Topic: "a", Partition: 0, Offset: 99}}
		},
		"bad session timeout": func(gs *types.GenesisState) { gs.Groups = []types.Group{{GroupId: "g", Admin: f.alice}} },
		"allowlist without its policy": func(gs *types.GenesisState) {
			gs.Groups = []types.Group{{GroupId: "g", Admin: f.alice, SessionTimeoutMs: 10_000, AllowedMembers: []string{f.bob}}}
		},
		"bad allowed member": func(gs *types.GenesisState) {
			gs.Groups = []types.Group{{GroupId: "g", Admin: f.alice, SessionTimeoutMs: 10_000, JoinPolicy: types.JOIN_POLICY_ALLOWLIST, AllowedMembers: []string{"x"}}}
		},
		"unknown join policy": func(gs *types.GenesisState) {
			gs.Groups = []types.Group{{GroupId: "g", Admin: f.alice, SessionTimeoutMs: 10_000, JoinPolicy: 99}}
		},
		"producer state beyond watermark": func(gs *types.GenesisState) {
			gs.ProducerStates = []types.ProducerState{{Topic: "a", Partition: 0, Producer: f.alice, LastSequence: 1, BaseOffset: 3, Count: 1}}
		},
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

// Batch metadata is derived state: InitGenesis rebuilds it from the batches, and a topic still
// being purged is exported as if the purge had ended (its leftovers are unreadable), so an
// export taken mid-purge validates, imports, and exports again unchanged.
func TestGenesisRebuildsBatchMetaAndSkipsPurgingTopics(t *testing.T) {
	f := newFixture(t)
	f.createTopic("a", 1)
	f.createTopic("gone", 2)
	for i := 0; i < 4; i++ {
		_, err := f.produce(f.bob,
			pb{Topic: "a", Partition: 0, Records: []types.BatchRecord{rec("k", "v", "h", "")}},
			pb{Topic: "gone", Partition: 1, Sequence: uint64(i + 1), Records: []types.BatchRecord{rec("", "x")}})
		require.NoError(t, err)
	}
	_, err := f.msgs.DeleteTopic(f.ctx, &types.MsgDeleteTopic{Authority: f.alice, Name: "gone"})
	require.NoError(t, err)
	batches, _, producers := topicKeys(t, f, "gone", 2)
	require.Equal(t, []int{4, 1}, []int{batches, producers}, "not purged yet")

	exported, err := f.k.ExportGenesis(f.ctx)
	require.NoError(t, err)
	require.NoError(t, exported.Validate(f.k.AddressCodec()))
	require.Len(t, exported.Batches, 4, "only topic a's batches")
	require.Empty(t, exported.ProducerStates)

	g := newFixture(t)
	require.NoError(t, g.k.InitGenesis(g.ctx, exported))
	again, err := g.k.ExportGenesis(g.ctx)
	require.NoError(t, err)
	require.Equal(t, exported, again)
	for _, b := range exported.Batches {
		m, err := g.k.BatchMetas.Get(g.ctx, collections.Join(types.TopicPartition{Topic: b.Topic, Partition: b.Partition}, b.Batch.LastOffset()))
		require.NoError(t, err)
		require.Equal(t, b.Batch.Meta(), m)
	}
	// Imported metadata drives retention: by bytes, keep at least two batches.
	setRetention(t, g, "a", -1, int64(exported.Batches[3].Batch.SizeBytes*2))
	require.NoError(t, g.k.EndBlocker(g.ctx))
	require.Equal(t, uint64(2), g.partitions("a")[0].LogStartOffset)
	g.createTopic("gone", 1) // the name is free in the imported chain
}
