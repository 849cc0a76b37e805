package app_test

import (
	"crypto/rand"
	"crypto/sha256"
	"net/http/httptest"
	"testing"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/client/flags"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/app/dataplane"
	"github.com/bftlog/bftlog/app/ordering"
)

var orderingSecret = []byte("ordering-by-digest")

// newOrderingApp is a bftlog app over db and home; byDigest turns on its proposals' references,
// peers are the API servers it fetches named transactions from.
func newOrderingApp(db dbm.DB, home string, byDigest bool, peers ...string) *app.App {
	opts := simtestutil.AppOptionsMap{flags.FlagHome: home, dataplane.FlagByDigest: byDigest, dataplane.FlagPeers: peers}
	return app.New(log.NewNopLogger(), db, nil, true, opts, baseapp.SetChainID("fees"))
}

// A node keeps the transactions blocks named for as many heights as it keeps blocks, so a
// validator that was away catches up by block sync as far back as before.
func TestPoolKeepsAsManyHeightsAsBlocks(t *testing.T) {
	require.EqualValues(t, app.DefaultRetainBlocks, dataplane.DefaultKeepHeights)
}

// orderingLoad is a topic on c and one ~4 KB produce from each of two accounts, signed.
func orderingLoad(t *testing.T, c *feeChain) [][]byte {
	t.Helper()
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "digest", 1))
	var txs [][]byte
	for i := 0; i < 2; i++ {
		msg := produceMsg(c.addr(i), "digest", 20, 200)
		gas := uint64(300_000 + 60*msg.Size())
		txs = append(txs, c.tx(i, c.fee(gas), gas, msg))
	}
	return txs
}

func checkTx(t *testing.T, a *app.App, kind abci.CheckTxType, tx []byte) *abci.ResponseCheckTx {
	t.Helper()
	res, err := a.CheckTx(&abci.RequestCheckTx{Tx: tx, Type: kind})
	require.NoError(t, err)
	return res
}

// A block that names its transactions by SHA-256 leaves the chain exactly where carrying them
// does: same results, same app hash. Afterwards the mempool's recheck drops the named
// transactions and a later proposal does not name them again.
func TestBlockNamingTransactionsMatchesCarryingThem(t *testing.T) {
	named := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true), orderingSecret, 1e15, 1e15)
	carried := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), false), orderingSecret, 1e15, 1e15)
	txs := orderingLoad(t, named)
	require.Equal(t, txs, orderingLoad(t, carried), "one genesis, one set of signed transactions")

	decodes := named.app.CountDecodes()
	for _, tx := range txs {
		require.Zero(t, checkTx(t, named.app, abci.CheckTxType_New, tx).Code)
	}
	require.EqualValues(t, len(txs), decodes.Load())
	// A single validator holds all there is to hold: it names what it admitted at once
	// (push_test.go: when peers must hold it first).
	named.block()
	carried.block()

	namedTxs0, carriedTxs0, namedBytes0, _ := dataplane.Proposed()
	prep, err := named.app.PrepareProposal(&abci.RequestPrepareProposal{Height: named.height, MaxTxBytes: 1 << 30, Txs: txs})
	require.NoError(t, err)
	require.Len(t, prep.Txs, len(txs))
	namedTxs, carriedTxs, namedBytes, _ := dataplane.Proposed()
	require.EqualValues(t, len(txs), namedTxs-namedTxs0, "the proposer's metric counts each named transaction")
	require.Equal(t, carriedTxs0, carriedTxs, "and none carried whole")
	var blockBytes, carriedBytes int
	for i, ref := range prep.Txs {
		hash, ok := app.ParseTxRef(ref)
		require.True(t, ok, "transaction %d carried, not named", i)
		require.Equal(t, sha256.Sum256(txs[i]), hash)
		blockBytes += len(ref)
		carriedBytes += len(txs[i])
	}
	require.EqualValues(t, carriedBytes, namedBytes-namedBytes0, "with their bytes")
	pp, err := named.app.ProcessProposal(&abci.RequestProcessProposal{Height: named.height, Txs: prep.Txs})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, pp.Status)

	a := named.finalize(prep.Txs...)
	require.EqualValues(t, len(txs), decodes.Load(), "proposal, vote and execution decode no named transaction again")
	b := carried.finalize(txs...)
	require.Equal(t, b.AppHash, a.AppHash, "naming changed the state")
	for i := range txs {
		require.Zero(t, a.TxResults[i].Code, a.TxResults[i].Log)
		require.Equal(t, b.TxResults[i].Data, a.TxResults[i].Data)
		require.Equal(t, b.TxResults[i].GasUsed, a.TxResults[i].GasUsed)
	}

	// CometBFT's mempool still holds the named transactions: recheck removes them, and a
	// proposal offered them again (recheck off) leaves them out.
	for _, tx := range txs {
		res := checkTx(t, named.app, abci.CheckTxType_Recheck, tx)
		require.Equal(t, app.ErrTxOrdered.ABCICode(), res.Code, res.Log)
	}
	prep, err = named.app.PrepareProposal(&abci.RequestPrepareProposal{Height: named.height, MaxTxBytes: 1 << 30, Txs: txs})
	require.NoError(t, err)
	require.Empty(t, prep.Txs)
	t.Logf("block of %d produces: %d bytes named, %d carried; app hash %X on both", len(txs), blockBytes, carriedBytes, a.AppHash)
}

// A proposer that names a transaction the validators do not hold (made up, or never gossiped)
// gets its proposal voted down by each of them, at once without peers to ask, within the fetch
// wait (500 ms) with them; the round moves on. Were it accepted, the block could not be
// executed by anyone and the chain would stop.
func TestAttackProposalNamingTransactionsNobodyHolds(t *testing.T) {
	c := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true), orderingSecret, 1e15, 1e15)
	txs := orderingLoad(t, c)
	require.Zero(t, checkTx(t, c.app, abci.CheckTxType_New, txs[0]).Code)
	c.block()

	var unknown [32]byte
	_, _ = rand.Read(unknown[:])
	alice, bob := c.addr(0).String(), c.addr(1).String()
	never := sha256.Sum256(txs[1]) // signed and valid, but never admitted here
	held := sha256.Sum256(txs[0])
	truncated := app.TxRef(unknown, 4000, alice)
	// A validator with a peer to ask asks it, then votes against the proposal all the same.
	srv := httptest.NewServer(c.app.PoolHandler())
	defer srv.Close()
	asking := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true, srv.URL), orderingSecret, 1e15, 1e15)
	for name, block := range map[string][][]byte{
		"made-up digest":        {app.TxRef(unknown, 4000, alice)},
		"valid, never gossiped": {app.TxRef(held, len(txs[0]), alice), app.TxRef(never, len(txs[1]), bob)},
		"truncated reference":   {truncated[:len(truncated)-1]},
		"another signer named":  {app.TxRef(held, len(txs[0]), bob)},
		"another size named":    {app.TxRef(held, len(txs[0])+1, alice)},
	} {
		start := time.Now()
		res, err := c.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Txs: block})
		require.NoError(t, err)
		require.Equal(t, abci.ResponseProcessProposal_REJECT, res.Status, name)
		took := time.Since(start)
		start = time.Now()
		res, err = asking.app.ProcessProposal(&abci.RequestProcessProposal{Height: asking.height, Txs: block})
		require.NoError(t, err)
		require.Equal(t, abci.ResponseProcessProposal_REJECT, res.Status, name)
		t.Logf("%s: rejected in %v, after asking a peer in %v", name, took, time.Since(start))
	}
	// The held one alone is accepted.
	res, err := c.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Txs: [][]byte{app.TxRef(held, len(txs[0]), alice)}})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, res.Status)

	// A reference is a transaction explorers decode, but nobody can get one executed: no
	// handler takes MsgOrderedTx, so CheckTx refuses it and a block fails it before any fee.
	ref := app.TxRef(held, len(txs[0]), alice)
	decoded, err := c.app.TxConfig().TxDecoder()(ref)
	require.NoError(t, err)
	require.Len(t, decoded.GetMsgs(), 1)
	msg, ok := decoded.GetMsgs()[0].(*ordering.MsgOrderedTx)
	require.True(t, ok)
	require.Equal(t, held[:], msg.TxHash)
	js, err := c.app.AppCodec().MarshalInterfaceJSON(msg) // what the REST API and explorers show
	require.NoError(t, err)
	require.Contains(t, string(js), `"@type":"/bftlog.ordering.v1.MsgOrderedTx"`)
	require.Contains(t, string(js), `"signer":"`+alice+`"`)
	require.NotZero(t, checkTx(t, c.app, abci.CheckTxType_New, ref).Code)
	// Executed as it is (what a release without ordering.go would do with it):
	fin, err := c.app.App.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Txs: [][]byte{ref}})
	require.NoError(t, err)
	_, err = c.app.Commit()
	require.NoError(t, err)
	c.height++
	carried := fin.TxResults[0]
	require.Equal(t, sdkerrors.ErrUnknownRequest.ABCICode(), carried.Code, carried.Log)
	t.Logf("a reference is %d bytes; alone it fails with %s", len(ref), carried.Log)
}

// A validator that does not hold what a proposal names fetches it from a peer before it votes;
// one that gets the block without the proposal (block sync) fetches at FinalizeBlock; both
// reach the holder's app hash. One that voted for a block and crashed before executing it
// finds the transactions in its own files after the restart, with no peer to ask.
func TestNamedTransactionsFetchedFromPeersAndReplayedAfterACrash(t *testing.T) {
	dbA, homeA := dbm.NewMemDB(), t.TempDir()
	holder := newChainFrom(t, newOrderingApp(dbA, homeA, true), orderingSecret, 1e15, 1e15)
	srv := httptest.NewServer(holder.app.PoolHandler())
	defer srv.Close()
	lacking := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true, srv.URL), orderingSecret, 1e15, 1e15)
	syncing := newChainFrom(t, newOrderingApp(dbm.NewMemDB(), t.TempDir(), true, srv.URL), orderingSecret, 1e15, 1e15)
	txs := orderingLoad(t, holder)
	orderingLoad(t, lacking)
	orderingLoad(t, syncing)
	for _, tx := range txs {
		require.Zero(t, checkTx(t, holder.app, abci.CheckTxType_New, tx).Code)
	}
	holder.block()
	lacking.block()
	syncing.block()
	prep, err := holder.app.PrepareProposal(&abci.RequestPrepareProposal{Height: holder.height, MaxTxBytes: 1 << 30, Txs: txs})
	require.NoError(t, err)
	pp, err := holder.app.ProcessProposal(&abci.RequestProcessProposal{Height: holder.height, Txs: prep.Txs})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, pp.Status, "holder votes for it")
	// A validator gossip had not reached fetches what the proposal names before it votes.
	start := time.Now()
	pp, err = lacking.app.ProcessProposal(&abci.RequestProcessProposal{Height: lacking.height, Txs: prep.Txs})
	require.NoError(t, err)
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, pp.Status, "fetched from the holder")
	voteTime := time.Since(start)
	got := lacking.finalize(prep.Txs...)
	// One that never saw the proposal (block sync) fetches at FinalizeBlock.
	start = time.Now()
	synced := syncing.finalize(prep.Txs...)
	fetchTime := time.Since(start)
	require.Equal(t, got.AppHash, synced.AppHash)

	// The holder crashes after voting, before executing: a new process over the same
	// database and home, without peers, executes the block from data/pool.
	again := newOrderingApp(dbA, homeA, true)
	_, err = again.Info(&abci.RequestInfo{})
	require.NoError(t, err)
	holder.app = again
	want := holder.finalize(prep.Txs...)
	require.Equal(t, want.AppHash, got.AppHash)
	for i := range txs {
		require.Zero(t, got.TxResults[i].Code, got.TxResults[i].Log)
		require.Zero(t, want.TxResults[i].Code, want.TxResults[i].Log)
	}
	t.Logf("%d named transactions: fetched before the vote in %v, at FinalizeBlock and executed in %v; replayed from disk after a restart; app hash %X",
		len(txs), voteTime, fetchTime, got.AppHash)
}
