package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/cometbft/cometbft/crypto/merkle"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
	"cosmossdk.io/store/rootmulti"

	"github.com/cosmos/cosmos-sdk/baseapp"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// Record bytes live outside the multistore (x/topics/keeper/record_store.go), so the app hash
// CometBFT gets from FinalizeBlock is the one the app commits, proves reads against and reports
// after a restart; a store mounted in the multistore outside IAVL broke all three (the
// handshake of a restarted validator panicked, every verified read failed).
func TestRecordStoreKeepsAppHashAndSurvivesRestart(t *testing.T) {
	db, home := dbm.NewMemDB(), t.TempDir()
	c := newFeeChainOn(t, db, home, 1_000_000_000_000)
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "audit", 1))
	const gas = 20_000_000
	res := c.finalize(c.tx(0, c.fee(gas), gas, produceMsg(c.addr(0), "audit", 100, 100)))
	require.Equal(t, uint32(0), res.TxResults[0].Code, res.TxResults[0].Log)
	height := c.height - 1

	require.Equal(t, res.AppHash, c.app.LastCommitID().Hash, "committed app hash = FinalizeBlock's")
	key := topicstypes.PartitionStoreKey("audit", 0)
	q, err := c.app.Query(context.Background(), &abci.RequestQuery{Path: "/store/" + topicstypes.StoreKey + "/key", Data: key, Height: height, Prove: true})
	require.NoError(t, err)
	require.Zero(t, q.Code, q.Log)
	kp := merkle.KeyPath{}.AppendKey([]byte(topicstypes.StoreKey), merkle.KeyEncodingURL).AppendKey(key, merkle.KeyEncodingURL).String()
	require.NoError(t, rootmulti.DefaultProofRuntime().VerifyValue(q.ProofOps, res.AppHash, kp, q.Value), "a proof checks against the block's app hash")

	// The same database and home opened again, as a restarted validator does: CometBFT's
	// handshake compares this app hash with its own, and the records come from the segment
	// files under <home>/data/records.
	segs, err := os.ReadDir(filepath.Join(home, "data", "records", "audit-0"))
	require.NoError(t, err)
	require.Len(t, segs, 1, "one segment file")
	again := app.New(log.NewNopLogger(), db, nil, true, simtestutil.NewAppOptionsWithFlagHome(home), baseapp.SetChainID("fees"))
	info, err := again.Info(&abci.RequestInfo{})
	require.NoError(t, err)
	require.Equal(t, height, info.LastBlockHeight)
	require.Equal(t, res.AppHash, info.LastBlockAppHash)
	ctx := again.NewUncachedContext(false, cmtproto.Header{ChainID: "fees", Height: height})
	fetched, err := keeper.NewQueryServer(again.TopicsKeeper).Fetch(ctx, &topicstypes.QueryFetchRequest{Topic: "audit", Partition: 0})
	require.NoError(t, err)
	require.Len(t, fetched.Records, 100)
	require.Len(t, fetched.Records[99].Value.Data, 100)
}
