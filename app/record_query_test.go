package app_test

import (
	"context"
	"sync"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	"github.com/stretchr/testify/require"

	"github.com/bftlog/bftlog/x/topics/keeper"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// fetchLatest is a Fetch over ABCI at the latest height, as a client or the gateway sends it
// (a gRPC query builds its context the same way, with CreateQueryContext).
func fetchLatest(a interface {
	Query(context.Context, *abci.RequestQuery) (*abci.ResponseQuery, error)
}, topic string) (*topicstypes.QueryFetchResponse, *abci.ResponseQuery, error) {
	req := topicstypes.QueryFetchRequest{Topic: topic, MaxRecords: 10_000}
	bz, err := req.Marshal()
	if err != nil {
		return nil, nil, err
	}
	res, err := a.Query(context.Background(), &abci.RequestQuery{Path: "/bftlog.topics.v1.Query/Fetch", Data: bz})
	if err != nil || res.Code != 0 {
		return nil, res, err
	}
	var out topicstypes.QueryFetchResponse
	return &out, res, out.Unmarshal(res.Value)
}

// Between a block's FinalizeBlock and its Commit the record store's pending store holds the
// block's record writes and deletions while the multistore still answers the previous height.
// A query at the latest height reads that height's records: here the block deletes the topic
// and its purge deletes every batch, and the query still gets them (it got "not found").
func TestAttackQueriesBeforeCommitReadCommittedRecords(t *testing.T) {
	c := newFeeChain(t, 1_000_000_000_000)
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "audit", 1))
	const gas = 20_000_000
	for range 3 {
		c.deliver(0, gas, produceMsg(c.addr(0), "audit", 50, 200))
	}
	want, res, err := fetchLatest(c.app, "audit")
	require.NoError(t, err)
	require.Zero(t, res.Code, res.Log)
	require.Len(t, want.Records, 150)

	del := c.tx(0, c.fee(2_000_000), 2_000_000, &topicstypes.MsgDeleteTopic{Authority: c.addr(0).String(), Name: "audit"})
	fin, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Txs: [][]byte{del}})
	require.NoError(t, err)
	require.Zero(t, fin.TxResults[0].Code, fin.TxResults[0].Log)
	got, res, err := fetchLatest(c.app, "audit")
	require.NoError(t, err)
	require.Zero(t, res.Code, "a query between FinalizeBlock and Commit: %s", res.Log)
	require.Equal(t, want.Records, got.Records, "the committed height's records")
	_, err = c.app.Commit()
	require.NoError(t, err)
	c.height++
	_, res, err = fetchLatest(c.app, "audit")
	require.NoError(t, err)
	require.NotZero(t, res.Code, "deleted once the block committed")
	t.Logf("before Commit: %d records of the committed height; after: %s", len(got.Records), res.Log)
}

// Queries run beside blocks: a gRPC query's handler runs on its own goroutine while the next
// block is finalized and committed. Fetch handlers running while blocks write records and
// commit must not touch the transient store Commit resets (run with -race: it flagged the race
// before queries stopped reading it). The query contexts are made under a lock, as CometBFT's
// local client serialises ABCI calls: baseapp's CreateQueryContext itself reads the block
// state FinalizeBlock sets without one (an SDK race, not the record store's).
func TestQueriesBesideCommitsDoNotRace(t *testing.T) {
	if !raceDetector {
		t.Skip("a race only -race sees: make test-race")
	}
	c := newFeeChain(t, 1_000_000_000_000)
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "audit", 1))
	const gas = 20_000_000
	c.deliver(0, gas, produceMsg(c.addr(0), "audit", 10, 100))
	var (
		abciCalls sync.Mutex
		wg        sync.WaitGroup
		queries   int
		failed    []error
	)
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		q := keeper.NewQueryServer(c.app.TopicsKeeper)
		for {
			select {
			case <-done:
				return
			default:
			}
			abciCalls.Lock()
			ctx, err := c.app.CreateQueryContext(0, false)
			abciCalls.Unlock()
			if err != nil {
				continue
			}
			if _, err := q.Fetch(ctx, &topicstypes.QueryFetchRequest{Topic: "audit", MaxRecords: 10_000}); err != nil {
				failed = append(failed, err) // e.g. the next block's bytes, not matching this height's SHA-256
			} else {
				queries++
			}
		}
	}()
	for range 20 {
		tx := c.tx(0, c.fee(gas), gas, produceMsg(c.addr(0), "audit", 10, 100))
		abciCalls.Lock()
		res, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Txs: [][]byte{tx}})
		abciCalls.Unlock()
		require.NoError(t, err)
		require.Zero(t, res.TxResults[0].Code, res.TxResults[0].Log)
		abciCalls.Lock()
		_, err = c.app.Commit()
		abciCalls.Unlock()
		require.NoError(t, err)
		c.height++
		c.seqs[0]++
	}
	close(done)
	wg.Wait()
	t.Logf("%d queries answered beside 20 blocks, %d failed", queries, len(failed))
	require.NotZero(t, queries)
	require.Empty(t, failed, "every query reads its height's committed bytes")
}
