package sim

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	abci "github.com/cometbft/cometbft/abci/types"

	"github.com/cosmos/cosmos-sdk/codec"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"

	"github.com/bftlog/bftlog/app"
	poatypes "github.com/bftlog/bftlog/x/poa/types"
	"github.com/bftlog/bftlog/x/topics/types"
)

// Config is one simulation run.
type Config struct {
	Seed   int64
	Blocks int
	// Accounts sign transactions; the last Hostile of them act adversarially. Account 0
	// holds the voting power and stays honest.
	Accounts, Hostile int
	// Twin runs a second App fed the same blocks: the app hashes must agree at every height.
	Twin bool
	// CrashEvery makes the node crash, on average once every CrashEvery blocks, before Commit
	// or between Precommit and Commit, and replay the block (0: never).
	CrashEvery int
	// Dir holds the nodes' homes (record segment files) and the run's message log.
	Dir  string
	Logf func(format string, args ...any)
	// FaultEvery makes a Byzantine proposer's faulty proposal precede the block, on average
	// once every FaultEvery blocks (faults.go; needs Twin); 0: never.
	FaultEvery int
	// Require, if set, is what the run must have exercised (coverage.go) to pass.
	Require *Coverage
	// Open, if set, is called with each App the run opens ("main", "twin"; "main" again after a
	// crash) before it runs a block: tests break a handler or tamper with one node through it.
	Open func(name string, a *app.App)
}

// Result is what a run did.
type Result struct {
	Blocks, Txs, Msgs int
	// Outcomes counts each message type's results: "ok" or "codespace/code".
	Outcomes map[string]map[string]int
	Crashes  map[string]int
	// Named counts the transactions the main node ran named by digest (app/ordering.go)
	// while its twin ran them carried.
	Named int
	// Reused counts the transactions the main node's decoder reused (app/decode_cache.go)
	// instead of decoding them again; its twin decodes every one.
	Reused uint64
	// Faults counts the faulty proposals the node voted against, by kind (faults.go).
	Faults map[string]int
	// Proposals that passed and were executed by governance.
	ProposalsPassed int
	// Events counts the x/topics and x/poa events of the blocks (what the run reached).
	Events  map[string]int
	Elapsed time.Duration
	// Log is the message log: every block's transactions and their results.
	Log string
}

// Summary is the result in a few lines.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d blocks, %d transactions (%d named by digest, %d decodings reused), %d messages in %s; crashes replayed: %v; proposals passed: %d\n",
		r.Blocks, r.Txs, r.Named, r.Reused, r.Msgs, r.Elapsed.Round(time.Millisecond), r.Crashes, r.ProposalsPassed)
	var events []string
	for _, e := range sortedKeys(r.Events) {
		events = append(events, fmt.Sprintf("%s×%d", e, r.Events[e]))
	}
	fmt.Fprintf(&b, "  events: %s\n", strings.Join(events, " "))
	if len(r.Faults) > 0 {
		var faults []string
		for _, k := range sortedKeys(r.Faults) {
			faults = append(faults, fmt.Sprintf("%s×%d", k, r.Faults[k]))
		}
		fmt.Fprintf(&b, "  faulty proposals voted against: %s\n", strings.Join(faults, "; "))
	}
	names := make([]string, 0, len(r.Outcomes))
	for n := range r.Outcomes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		codes := make([]string, 0, len(r.Outcomes[n]))
		for c, k := range r.Outcomes[n] {
			codes = append(codes, fmt.Sprintf("%s×%d", c, k))
		}
		sort.Strings(codes)
		fmt.Fprintf(&b, "  %-28s %s\n", n, strings.Join(codes, " "))
	}
	return b.String()
}

// Run runs the simulation. It fails at the first block where a block-level step errs or
// panics (the chain would halt), the node and its twin disagree, a crashed node replays to
// another app hash, an invariant breaks, or the EndBlocker had to skip work; the error names
// the seed, the height and the message log.
func Run(cfg Config) (res Result, err error) {
	start := time.Now()
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	res = Result{Outcomes: map[string]map[string]int{}, Crashes: map[string]int{}, Events: map[string]int{}, Log: filepath.Join(cfg.Dir, fmt.Sprintf("sim-%d.log", cfg.Seed))}
	logFile, err := os.Create(res.Log)
	if err != nil {
		return res, err
	}
	defer logFile.Close()
	log := bufio.NewWriter(logFile)
	defer log.Flush()
	fail := func(height int64, err error) (Result, error) {
		res.Elapsed = time.Since(start)
		fmt.Fprintf(log, "FAILED at height %d: %v\n", height, err)
		log.Flush()
		return res, fmt.Errorf("simulation seed %d failed at height %d after %d blocks: %w\nmessage log: %s\nreproduce: make sim SIM_SEED=%d SIM_BLOCKS=%d",
			cfg.Seed, height, res.Blocks, err, res.Log, cfg.Seed, cfg.Blocks)
	}

	r := rand.New(rand.NewSource(cfg.Seed))
	c, err := newChain(cfg.Dir, cfg.Accounts, time.Unix(1_760_000_000, 0).UTC(), cfg.Twin, cfg.Open)
	if err != nil {
		return fail(1, err)
	}
	g := &gen{r: r, grants: rand.New(rand.NewSource(cfg.Seed + 1)), c: c, hostile: make([]bool, cfg.Accounts), gov: govAuthority(), voted: map[voteKey]bool{}, options: map[uint64]govv1.VoteOption{}}
	for i := cfg.Accounts - cfg.Hostile; i < cfg.Accounts; i++ {
		g.hostile[max(i, 1)] = true
	}
	cdc := c.main.app.AppCodec()
	var sent [][]byte               // earlier transactions, replayed by hostile accounts
	outcomes := map[string]string{} // by transaction bytes: how sent ones ended
	signedBy := map[string]string{} // by transaction bytes: who signed sent ones
	feeGranted := map[string]bool{} // by transaction bytes: sent ones a fee allowance paid
	for b := 0; b < cfg.Blocks; b++ {
		ctx := c.ctx()
		if g.w, err = readWorld(c.main.app, ctx); err != nil {
			return fail(c.height, err)
		}
		g.now = c.time.Add(g.step())
		supplyBefore := c.main.app.BankKeeper.GetSupply(ctx, sdk.DefaultBondDenom).Amount

		var txs [][]byte
		var written [][]sdk.Msg
		var wants []*refusal
		var signers []string // of txs
		accounts := r.Perm(cfg.Accounts)[:1+r.Intn(min(cfg.Accounts, 6))]
		for _, a := range g.voting() { // voters vote in the block after a proposal
			if !slices.Contains(accounts, a) {
				accounts = append(accounts, a)
			}
		}
		for _, a := range accounts {
			msgs, want := g.msgs(a)
			var payer sdk.AccAddress // a transaction written to be refused pays its own fee
			if want == nil {
				payer = g.feePayer(a)
			}
			tx, err := c.sign(a, msgs, payer)
			if err != nil {
				return fail(c.height, err)
			}
			if payer != nil {
				feeGranted[string(tx)] = true
			}
			txs, written, wants, signers = append(txs, tx), append(written, msgs), append(wants, want), append(signers, g.addr(a))
			sent = append(sent, tx)
			signedBy[string(tx)] = g.addr(a)
		}
		if len(sent) > 64 {
			for _, tx := range sent[:len(sent)-64] {
				delete(outcomes, string(tx))
				delete(signedBy, string(tx))
				delete(feeGranted, string(tx))
			}
			sent = sent[len(sent)-64:]
		}
		if r.Intn(8) == 0 && len(sent) > 1 {
			replay := sent[r.Intn(len(sent)-1)]
			txs, written, wants, signers = append(txs, replay), append(written, nil), append(wants, nil), append(signers, signedBy[string(replay)])
		}
		c.fault = nil
		if cfg.FaultEvery > 0 && r.Intn(cfg.FaultEvery) == 0 {
			kind := faultKinds[r.Intn(len(faultKinds))]
			c.fault = func(txs, named [][]byte) (string, [][]byte) {
				return kind, byzantineProposal(r, kind, txs, named, signers)
			}
		}

		fmt.Fprintf(log, "block %d time %s txs %d\n", c.height, g.now.Format(time.RFC3339Nano), len(txs))
		var out *abci.ResponseFinalizeBlock
		height := c.height
		if cfg.CrashEvery > 0 && r.Intn(cfg.CrashEvery) == 0 {
			point := []string{crashBeforeCommit, crashAfterPrecommit}[r.Intn(crashPointsAvailable)]
			fmt.Fprintf(log, "  crash %s, replay\n", point)
			res.Crashes[point]++
			out, err = c.crashBlock(txs, g.now, point)
		} else {
			out, err = c.block(txs, g.now)
		}
		for i, msgs := range written {
			if out == nil || i >= len(out.TxResults) {
				break
			}
			logTx(log, cdc, i, msgs, out.TxResults[i])
			outcome := "ok"
			if tr := out.TxResults[i]; tr.Code != 0 {
				outcome = fmt.Sprintf("%s/%d", tr.Codespace, tr.Code)
			}
			want := wants[i]
			if msgs == nil {
				// A replay must fail: its sequence is spent (32), unless its first run failed before
				// spending it (then it fails as that did); x/poa's and the fee rule's ante checks
				// run before the sequence's and may refuse it first.
				want = &refusal{kind: "replayed transaction", codes: []string{"sdk/32", "topics/33", "topics/34"}}
				if first := outcomes[string(txs[i])]; first != "ok" {
					want.codes = append(want.codes, first)
				}
				if feeGranted[string(txs[i])] {
					// The fee is taken before the sequence is checked: an allowance used up
					// (and so removed), short or expired since refuses the replay first.
					want.codes = append(want.codes, "sdk/38", "feegrant/2", "feegrant/3")
				}
				if strings.HasPrefix(outcome, poatypes.ModuleName+"/") {
					want.codes = append(want.codes, outcome)
				}
			} else {
				outcomes[string(txs[i])] = outcome
			}
			if want != nil {
				res.count("refused: "+want.kind, outcome)
				if !slices.Contains(want.codes, outcome) && err == nil {
					err = fmt.Errorf("transaction %d (%s) ended %s; it must be refused with one of %v", i, want.kind, outcome, want.codes)
				}
			}
			for _, m := range msgs {
				res.count(msgName(m), outcome)
			}
			if feeGranted[string(txs[i])] && msgs != nil {
				res.count(feeGrantedTx, outcome)
			}
			res.Msgs += len(msgs)
		}
		if err != nil {
			return fail(height, err)
		}
		res.Blocks++
		res.Txs += len(txs)

		if skipped := skippedWork(out); len(skipped) > 0 {
			return fail(height, fmt.Errorf("the EndBlocker skipped work it could not do: %s", strings.Join(skipped, "; ")))
		}
		res.ProposalsPassed += countEvents(out.Events, "active_proposal", "proposal_result", "proposal_passed")
		res.countEvents(out)
		ctx = c.ctx()
		if err := res.countProposals(out, func(id uint64) ([]sdk.Msg, error) {
			p, err := c.main.app.GovKeeper.Proposals.Get(ctx, id)
			if err != nil {
				return nil, err
			}
			return p.GetMsgs()
		}); err != nil {
			return fail(height, err)
		}
		delta, err := supplyChange(out)
		if err != nil {
			return fail(height, err)
		}
		if got := c.main.app.BankKeeper.GetSupply(ctx, sdk.DefaultBondDenom).Amount.Sub(supplyBefore); !got.Equal(delta) {
			return fail(height, fmt.Errorf("the supply changed by %s; x/poa's mints and burns and x/gov's deposit burns say %s", got, delta))
		}
		if err := checkState(c.main.app, ctx, c.main); err != nil {
			return fail(height, fmt.Errorf("invariants:\n%w", err))
		}
		if b%50 == 49 {
			cfg.Logf("sim seed %d: %d blocks, %d txs, %d msgs, %s", cfg.Seed, res.Blocks, res.Txs, res.Msgs, time.Since(start).Round(time.Second))
		}
	}
	// The batches MsgDeleteRecords left below log start offsets: the EndBlocker deletes them
	// within its budget, so blocks without transactions, 1 ms apart (retention by time does
	// not do it for them), remove them all. Each block deletes at least one batch (retention's
	// or a purge's) or takes retention's cursor past a partition, so twice the batches and
	// partitions there are bound the blocks it may take.
	limit, err := drainLimit(c.main.app, c.ctx())
	if err != nil {
		return fail(c.height, err)
	}
	for i := 0; ; i++ {
		left, err := belowLogStart(c.main.app, c.ctx())
		if err != nil {
			return fail(c.height, err)
		}
		if len(left) == 0 {
			fmt.Fprintf(log, "%d empty blocks deleted every batch below a log start offset\n", i)
			break
		}
		if i == limit {
			return fail(c.height, fmt.Errorf("after %d blocks without transactions, batches still lie wholly below the log start offset: %s", i, strings.Join(left, "; ")))
		}
		height := c.height
		out, err := c.block(nil, c.time.Add(time.Millisecond))
		if err != nil {
			return fail(height, err)
		}
		if skipped := skippedWork(out); len(skipped) > 0 {
			return fail(height, fmt.Errorf("the EndBlocker skipped work it could not do: %s", strings.Join(skipped, "; ")))
		}
		res.countEvents(out)
		if err := checkState(c.main.app, c.ctx(), c.main); err != nil {
			return fail(height, fmt.Errorf("invariants:\n%w", err))
		}
	}
	c.main.checkAllBytes = true
	if err := checkState(c.main.app, c.ctx(), c.main); err != nil {
		return fail(c.height, fmt.Errorf("invariants at the end:\n%w", err))
	}
	if err := c.roundTrip(cfg.Dir); err != nil {
		return fail(c.height, fmt.Errorf("export round trip: %w", err))
	}
	res.Elapsed = time.Since(start)
	res.Named = c.named
	res.Reused = c.reused + c.main.app.DecodesReused()
	res.Faults = c.faults
	fmt.Fprintf(log, "%s", res.Summary())
	if cfg.Require != nil {
		if missing := res.unexercised(cfg, *cfg.Require); len(missing) > 0 {
			return fail(c.height, fmt.Errorf("the run did not exercise what it must (testutil/sim/coverage.go):\n  %s", strings.Join(missing, "\n  ")))
		}
	}
	return res, nil
}

func (r *Result) count(msg, outcome string) {
	if r.Outcomes[msg] == nil {
		r.Outcomes[msg] = map[string]int{}
	}
	r.Outcomes[msg][outcome]++
}

// countEvents counts a block's typed events of bftlog's modules, and member expiries and
// rebalances by reason.
func (r *Result) countEvents(out *abci.ResponseFinalizeBlock) {
	events := append([]abci.Event(nil), out.Events...)
	for _, tr := range out.TxResults {
		events = append(events, tr.Events...)
	}
	for _, e := range events {
		if !strings.HasPrefix(e.Type, "bftlog.") {
			continue
		}
		name := e.Type[strings.LastIndexByte(e.Type, '.')+1:]
		if name == "EventGroupRebalanced" {
			for _, a := range e.Attributes {
				if a.Key == "reason" {
					name += "(" + strings.Trim(a.Value, `"`) + ")"
				}
			}
		}
		r.Events[name]++
	}
}

func msgName(m sdk.Msg) string {
	n := sdk.MsgTypeURL(m)
	return n[strings.LastIndexByte(n, '.')+1:]
}

// step is how far the block clock moves: mostly a block time, sometimes long enough for
// sessions to expire, rarely for retention, compaction lags and governance periods.
func (g *gen) step() time.Duration {
	switch n := g.r.Intn(100); {
	case n < 70:
		return time.Duration(200+g.r.Intn(800)) * time.Millisecond
	case n < 90:
		return time.Duration(2+g.r.Intn(6)) * time.Second
	case n < 98:
		return time.Duration(15+g.r.Intn(25)) * time.Second
	case n < 99 || g.r.Intn(5) > 0:
		return time.Duration(5+g.r.Intn(25)) * time.Minute
	}
	return time.Duration(1+g.r.Intn(30)) * 24 * time.Hour // past unbonding, tombstone and retention horizons
}

// signGas is every simulated transaction's gas limit.
const signGas = 40_000_000

// sign signs msgs from account a with its sequence in the committed state, paying for a
// generous gas limit at the chain's price, from granter's fee allowance when not nil.
func (c *chain) sign(a int, msgs []sdk.Msg, granter sdk.AccAddress) ([]byte, error) {
	const gas = signGas
	ctx := c.ctx()
	acc := c.main.app.AccountKeeper.GetAccount(ctx, c.addrs[a])
	p, err := c.main.app.TopicsKeeper.Params.Get(ctx)
	if err != nil {
		return nil, err
	}
	fee := sdk.NewCoins(sdk.NewCoin(p.MinGasPrice.Denom, p.MinGasPrice.Amount.MulInt64(gas).Ceil().TruncateInt()))
	if granter != nil {
		return c.signGranted(a, msgs, fee, acc.GetSequence(), granter)
	}
	tx, err := simtestutil.GenSignedMockTx(rand.New(rand.NewSource(int64(acc.GetSequence()))), c.main.app.TxConfig(), msgs, fee, gas, chainID,
		[]uint64{c.nums[a]}, []uint64{acc.GetSequence()}, c.keys[a])
	if err != nil {
		return nil, err
	}
	return c.main.app.TxConfig().TxEncoder()(tx)
}

// logTx writes a transaction and its result to the message log, each message as JSON (long
// ones cut).
func logTx(w *bufio.Writer, cdc codec.Codec, i int, msgs []sdk.Msg, r *abci.ExecTxResult) {
	fmt.Fprintf(w, "  tx %d: code %d %s", i, r.Code, r.Codespace)
	if r.Code != 0 {
		fmt.Fprintf(w, " (%s)", cut(r.Log, 300))
	}
	fmt.Fprintln(w)
	if msgs == nil {
		fmt.Fprintln(w, "    (a replayed earlier transaction)")
	}
	for _, m := range msgs {
		bz, err := cdc.MarshalInterfaceJSON(m)
		if err != nil {
			bz = []byte(err.Error())
		}
		fmt.Fprintf(w, "    %s\n", cut(string(bz), 600))
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// skippedWork lists the EventBlockWorkSkipped of a block: work the EndBlocker could not do.
func skippedWork(res *abci.ResponseFinalizeBlock) []string {
	var out []string
	for _, e := range res.Events {
		if e.Type != "bftlog.topics.v1.EventBlockWorkSkipped" && e.Type != "bftlog.poa.v1.EventBlockWorkSkipped" {
			continue
		}
		msg, err := sdk.ParseTypedEvent(e)
		if err != nil {
			out = append(out, err.Error())
			continue
		}
		switch ev := msg.(type) {
		case *types.EventBlockWorkSkipped:
			out = append(out, fmt.Sprintf("x/topics %s %s: %s", ev.Step, ev.Subject, ev.Reason))
		case *poatypes.EventBlockWorkSkipped:
			out = append(out, fmt.Sprintf("x/poa burn of %s from %s: %s", ev.Amount, ev.Account, ev.Reason))
		}
	}
	return out
}

// countEvents counts the events of type typ with an attribute key whose value is value.
func countEvents(events []abci.Event, typ, key, value string) int {
	n := 0
	for _, e := range events {
		if e.Type != typ {
			continue
		}
		for _, a := range e.Attributes {
			if a.Key == key && a.Value == value {
				n++
			}
		}
	}
	return n
}

var errRoundTrip = errors.New("the state changed across export and import")
