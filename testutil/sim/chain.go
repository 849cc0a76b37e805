// Package sim is the randomized simulation of the bftlog state machine: a seeded generator
// drives the real App, block by block through FinalizeBlock and Commit, with random sequences of
// every x/topics and x/poa message from accounts of which some act adversarially, and checks the
// invariants after every block (invariants.go). The runner is Run; app/sim_test.go runs it in
// `make test` (a short fixed seed) and in `make sim` (long runs).
package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	cmttypes "github.com/cometbft/cometbft/types"
	dbm "github.com/cosmos/cosmos-db"

	"cosmossdk.io/log"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	"github.com/cosmos/cosmos-sdk/testutil/mock"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"
	stakingtypes "github.com/cosmos/cosmos-sdk/x/staking/types"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/app/ordering"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

const chainID = "sim"

// node is one App over its own database and home (record segment files).
type node struct {
	app  *app.App
	db   dbm.DB
	home string
	// checkAllBytes makes the record invariant hash every batch's bytes, not a sample.
	checkAllBytes bool
	// deliveries is each in-flight share record's delivery count at the last check (by group,
	// topic, partition and offset): counts only grow.
	deliveries map[shareRecord]int32
}

func openNode(db dbm.DB, home string) *node {
	a := app.New(log.NewNopLogger(), db, nil, true, simtestutil.NewAppOptionsWithFlagHome(home), baseapp.SetChainID(chainID))
	return &node{app: a, db: db, home: home}
}

// chain is the simulated chain: the node under test, an optional twin fed the same blocks
// (determinism), the accounts and the block clock.
type chain struct {
	main   *node
	twin   *node
	height int64
	time   time.Time
	keys   []*secp256k1.PrivKey
	addrs  []sdk.AccAddress
	nums   []uint64
	// named counts the transactions the main node ran named by digest.
	named int
	// open is Config.Open.
	open func(name string, a *app.App)
	// reused counts the decodings the main node's earlier Apps (before crashes) reused.
	reused uint64
	// fault, if set, makes a faulty proposal of the block (faults.go), which the main node
	// must vote against before it votes on the honest one; faults counts them by kind.
	fault  func(txs, named [][]byte) (kind string, proposal [][]byte)
	faults map[string]int
}

// reopen opens a node over db and home and hands it to c.open as name.
func (c *chain) reopen(name string, db dbm.DB, home string) *node {
	n := openNode(db, home)
	if c.open != nil {
		c.open(name, n.app)
	}
	return n
}

// errHalt marks a block-level step that failed: FinalizeBlock returned an error or Commit
// panicked. A chain whose node does this stops for good.
var errHalt = errors.New("the chain halted")

// newChain starts a chain of one validator and n funded accounts. Account 0 holds the
// validator's delegation, so its votes pass governance proposals.
func newChain(dir string, n int, start time.Time, twin bool, open func(string, *app.App)) (*chain, error) {
	c := &chain{time: start, open: open, faults: map[string]int{}}
	mk := func(name string) (*node, error) {
		home := filepath.Join(dir, name)
		if err := os.MkdirAll(home, 0o755); err != nil {
			return nil, err
		}
		return c.reopen(name, dbm.NewMemDB(), home), nil
	}
	var err error
	if c.main, err = mk("main"); err != nil {
		return nil, err
	}
	if twin {
		if c.twin, err = mk("twin"); err != nil {
			return nil, err
		}
	}
	pk, err := mock.NewPV().GetPubKey()
	if err != nil {
		return nil, err
	}
	valSet := cmttypes.NewValidatorSet([]*cmttypes.Validator{cmttypes.NewValidator(pk, 1)})
	var (
		accs []authtypes.GenesisAccount
		bals []banktypes.Balance
	)
	for i := 0; i < n; i++ {
		priv := secp256k1.GenPrivKey()
		acc := authtypes.NewBaseAccount(priv.PubKey().Address().Bytes(), priv.PubKey(), uint64(i), 0)
		accs = append(accs, acc)
		bals = append(bals, banktypes.Balance{Address: acc.GetAddress().String(), Coins: sdk.NewCoins(sdk.NewCoin(sdk.DefaultBondDenom, sdkmath.NewInt(1e15)))})
		c.keys = append(c.keys, priv)
		c.addrs = append(c.addrs, acc.GetAddress())
	}
	a := c.main.app
	gen, err := simtestutil.GenesisStateWithValSet(a.AppCodec(), a.DefaultGenesis(), valSet, accs, bals...)
	if err == nil {
		err = app.WithoutHistoricalInfo(gen) // as bftlogd init writes it
	}
	if err != nil {
		return nil, err
	}
	if err := tuneGenesis(a, gen); err != nil {
		return nil, err
	}
	state, err := json.Marshal(gen)
	if err != nil {
		return nil, err
	}
	cp := *simtestutil.DefaultConsensusParams
	block := *cp.Block
	block.MaxGas = app.DefaultBlockMaxGas
	block.MaxBytes = 22020096
	cp.Block = &block
	for _, nd := range c.nodes() {
		if _, err := nd.app.InitChain(&abci.RequestInitChain{ChainId: chainID, ConsensusParams: &cp, AppStateBytes: state, Time: start}); err != nil {
			return nil, err
		}
	}
	c.height = 1
	if _, err := c.block(nil, start); err != nil {
		return nil, err
	}
	ctx := c.ctx()
	for _, addr := range c.addrs {
		c.nums = append(c.nums, a.AccountKeeper.GetAccount(ctx, addr).GetAccountNumber())
	}
	return c, nil
}

// tuneGenesis sets what makes a short run reach every path: a governance voting period of a
// few seconds, a deposit anyone can pay, and x/topics budgets small enough that retention,
// purges, compaction and expiry spread over blocks.
func tuneGenesis(a *app.App, gen map[string]json.RawMessage) error {
	var gov govv1.GenesisState
	if err := a.AppCodec().UnmarshalJSON(gen["gov"], &gov); err != nil {
		return err
	}
	voting, expedited := 6*time.Second, 3*time.Second
	gov.Params.VotingPeriod, gov.Params.ExpeditedVotingPeriod, gov.Params.MaxDepositPeriod = &voting, &expedited, &voting
	gov.Params.MinDeposit = sdk.NewCoins(sdk.NewInt64Coin(sdk.DefaultBondDenom, 1000))
	gov.Params.ExpeditedMinDeposit = sdk.NewCoins(sdk.NewInt64Coin(sdk.DefaultBondDenom, 2000))
	bz, err := a.AppCodec().MarshalJSON(&gov)
	if err != nil {
		return err
	}
	gen["gov"] = bz

	// Unbonding ends within a run, so x/poa burns the stake of validators it removed.
	var staking stakingtypes.GenesisState
	if err := a.AppCodec().UnmarshalJSON(gen["staking"], &staking); err != nil {
		return err
	}
	staking.Params.UnbondingTime = 90 * time.Second
	if bz, err = a.AppCodec().MarshalJSON(&staking); err != nil {
		return err
	}
	gen["staking"] = bz

	var topics topicstypes.GenesisState
	if err := a.AppCodec().UnmarshalJSON(gen[topicstypes.ModuleName], &topics); err != nil {
		return err
	}
	p := &topics.Params
	p.RetentionBatchesPerBlock, p.RetentionPartitionsPerBlock, p.CleanupBytesPerBlock = 6, 8, 64<<10
	p.CompactionRecordsPerBlock, p.CompactionBytesPerBlock = 60, 64<<10
	p.MaxExpiriesPerBlock, p.MaxExpiryWorkPerBlock = 4, 64
	p.MaxGroupMembers = 6
	if bz, err = a.AppCodec().MarshalJSON(&topics); err != nil {
		return err
	}
	gen[topicstypes.ModuleName] = bz
	return nil
}

func (c *chain) nodes() []*node {
	if c.twin == nil {
		return []*node{c.main}
	}
	return []*node{c.main, c.twin}
}

// ctx reads the main node's committed state.
func (c *chain) ctx() sdk.Context {
	return c.main.app.NewUncachedContext(false, cmtproto.Header{ChainID: chainID, Height: c.height, Time: c.time})
}

// finalize runs FinalizeBlock on n, turning a panic into an error: either stops the chain.
func finalize(n *node, req *abci.RequestFinalizeBlock) (res *abci.ResponseFinalizeBlock, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: FinalizeBlock panicked at height %d: %v", errHalt, req.Height, r)
		}
	}()
	res, err = n.app.FinalizeBlock(req)
	if err != nil {
		return nil, fmt.Errorf("%w: FinalizeBlock at height %d: %w", errHalt, req.Height, err)
	}
	return res, nil
}

// commit commits n's block (x/topics' Precommit flushes the record store first), turning a
// panic into an error.
func commit(n *node, height int64) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: Commit panicked at height %d: %v", errHalt, height, r)
		}
	}()
	_, err = n.app.Commit()
	if err != nil {
		return fmt.Errorf("%w: Commit at height %d: %w", errHalt, height, err)
	}
	return nil
}

// block runs txs as the next block at time t on every node and commits it; the nodes must
// agree on the app hash.
func (c *chain) block(txs [][]byte, t time.Time) (*abci.ResponseFinalizeBlock, error) {
	req := &abci.RequestFinalizeBlock{Height: c.height, Time: t, Txs: txs}
	var first *abci.ResponseFinalizeBlock
	for i, n := range c.nodes() {
		req := req
		if i == 0 && c.twin != nil {
			named, err := c.propose(txs, t)
			if err != nil {
				return nil, err
			}
			req = &abci.RequestFinalizeBlock{Height: c.height, Time: t, Txs: named}
		}
		res, err := finalize(n, req)
		if err != nil {
			return nil, err
		}
		if err := commit(n, c.height); err != nil {
			return nil, err
		}
		if i == 0 {
			first = res
		} else if err := sameResults(c.height, first, res); err != nil {
			return nil, err
		}
	}
	c.height++
	c.time = t
	return first, nil
}

// propose is the block the main node votes on and runs when it has a twin: the transactions
// its pool admitted at CheckTx named by digest (app/ordering.go), the others carried. The main
// node votes on it first, as a validator does, so it runs the block with the transactions
// ProcessProposal decoded (app/decode_cache.go) and read from its pool; the twin is given the
// transactions themselves and decodes them afresh: equal app hashes show that neither naming
// nor reuse changes anything. A proposal the node votes against (a hostile transaction breaks
// the fee rule) is run with its transactions carried, as the twin runs it.
func (c *chain) propose(txs [][]byte, t time.Time) ([][]byte, error) {
	for _, tx := range txs {
		if _, err := c.main.app.CheckTx(&abci.RequestCheckTx{Tx: tx, Type: abci.CheckTxType_New}); err != nil {
			return nil, fmt.Errorf("%w: CheckTx at height %d: %w", errHalt, c.height, err)
		}
	}
	named := c.main.app.NameHeld(txs)
	if c.fault != nil {
		if kind, bad := c.fault(txs, named); bad != nil {
			res, err := c.main.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Time: t, Txs: bad})
			if err != nil {
				return nil, fmt.Errorf("%w: ProcessProposal of a faulty proposal (%s) at height %d: %w", errHalt, kind, c.height, err)
			}
			if c.faults[kind]++; res.Status == abci.ResponseProcessProposal_ACCEPT {
				return nil, fmt.Errorf("the node voted for a faulty proposal at height %d: it %s", c.height, kind)
			}
		}
	}
	res, err := c.main.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Time: t, Txs: named})
	if err != nil {
		return nil, fmt.Errorf("%w: ProcessProposal at height %d: %w", errHalt, c.height, err)
	}
	if res.Status != abci.ResponseProcessProposal_ACCEPT {
		return txs, nil
	}
	for i := range named {
		if _, ok := app.ParseTxRef(named[i]); ok {
			c.named++
		}
	}
	return named, nil
}

// Crash points of crashBlock.
const (
	crashBeforeCommit    = "before Commit"
	crashAfterPrecommit  = "between Precommit and Commit"
	crashPointsAvailable = 2
)

// crashBlock runs txs as the next block on the main node, which then stops at point without
// committing; a new App over its database and home replays the block (as CometBFT does after a
// restart) and must reach the same app hash, then commits. The twin runs the block once.
func (c *chain) crashBlock(txs [][]byte, t time.Time, point string) (*abci.ResponseFinalizeBlock, error) {
	mainTxs := txs
	if c.twin != nil {
		var err error
		if mainTxs, err = c.propose(txs, t); err != nil {
			return nil, err
		}
	}
	req := &abci.RequestFinalizeBlock{Height: c.height, Time: t, Txs: mainTxs}
	first, err := finalize(c.main, req)
	if err != nil {
		return nil, err
	}
	if point == crashAfterPrecommit {
		// What Commit does first: x/topics' Precommit moves the block's record bytes into the
		// record store; then the process dies before the multistore commits.
		ctx := c.main.app.NewUncachedContext(false, cmtproto.Header{ChainID: chainID, Height: c.height, Time: t})
		if err := precommit(c.main, ctx); err != nil {
			return nil, err
		}
	}
	c.reused += c.main.app.DecodesReused()
	c.main = c.reopen("main", c.main.db, c.main.home)
	if got := c.main.app.LastBlockHeight(); got != c.height-1 {
		return nil, fmt.Errorf("after a crash %s at height %d the node restarted at height %d", point, c.height, got)
	}
	again, err := finalize(c.main, req)
	if err != nil {
		return nil, fmt.Errorf("replaying height %d after a crash %s: %w", c.height, point, err)
	}
	if !bytes.Equal(again.AppHash, first.AppHash) {
		return nil, fmt.Errorf("replaying height %d after a crash %s gave app hash %X, the first attempt %X", c.height, point, again.AppHash, first.AppHash)
	}
	if err := commit(c.main, c.height); err != nil {
		return nil, err
	}
	if c.twin != nil {
		res, err := finalize(c.twin, &abci.RequestFinalizeBlock{Height: c.height, Time: t, Txs: txs})
		if err != nil {
			return nil, err
		}
		if err := commit(c.twin, c.height); err != nil {
			return nil, err
		}
		if err := sameResults(c.height, again, res); err != nil {
			return nil, fmt.Errorf("replayed after a crash %s: %w", point, err)
		}
	}
	c.height++
	c.time = t
	return again, nil
}

func precommit(n *node, ctx sdk.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: Precommit panicked: %v", errHalt, r)
		}
	}()
	return n.app.TopicsKeeper.Precommit(ctx)
}

// sameResults compares the node's block results with its twin's: the app hash, the results
// hash CometBFT puts in the next header (each transaction's code, data, gas wanted and gas
// used), and every transaction's and the block's events. The node reuses signature checks and
// decodings its twin does anew (app/verified.go, app/decode_cache.go); any of these may differ
// where the app hash does not yet.
func sameResults(height int64, node, twin *abci.ResponseFinalizeBlock) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("nondeterminism at height %d: %s", height, fmt.Sprintf(format, args...))
	}
	if len(node.TxResults) != len(twin.TxResults) {
		return fail("the twin has %d transaction results, the node %d", len(twin.TxResults), len(node.TxResults))
	}
	for i, n := range node.TxResults {
		t := twin.TxResults[i]
		switch {
		case n.Code != t.Code || n.Codespace != t.Codespace:
			return fail("transaction %d ended %s/%d on the twin, %s/%d on the node", i, t.Codespace, t.Code, n.Codespace, n.Code)
		case n.GasUsed != t.GasUsed || n.GasWanted != t.GasWanted:
			return fail("transaction %d used %d of %d gas on the twin, %d of %d on the node", i, t.GasUsed, t.GasWanted, n.GasUsed, n.GasWanted)
		case !bytes.Equal(n.Data, t.Data):
			return fail("transaction %d answered %X on the twin, %X on the node", i, t.Data, n.Data)
		}
		// A transaction named by digest gets an event naming its hash (app/ordering.go): the
		// node's alone, and outside the results hash.
		events := n.Events
		if k := len(events); k > 0 && events[k-1].Type == ordering.EventOrdered {
			events = events[:k-1]
		}
		if err := sameEvents(events, t.Events); err != nil {
			return fail("transaction %d: %v", i, err)
		}
	}
	if err := sameEvents(node.Events, twin.Events); err != nil {
		return fail("block events: %v", err)
	}
	if a, b := cmttypes.NewResults(node.TxResults).Hash(), cmttypes.NewResults(twin.TxResults).Hash(); !bytes.Equal(a, b) {
		return fail("the twin's results hash is %X, the node's %X", b, a)
	}
	if !bytes.Equal(node.AppHash, twin.AppHash) {
		return fail("the twin's app hash is %X, the node's %X", twin.AppHash, node.AppHash)
	}
	return nil
}

func sameEvents(node, twin []abci.Event) error {
	if len(node) != len(twin) {
		return fmt.Errorf("%d events on the twin, %d on the node", len(twin), len(node))
	}
	for i := range node {
		if a, b := node[i].String(), twin[i].String(); a != b {
			return fmt.Errorf("event %d is %s on the twin, %s on the node", i, b, a)
		}
	}
	return nil
}
