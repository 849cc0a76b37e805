package app_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	cmtcrypto "github.com/cometbft/cometbft/crypto"
	cmted25519 "github.com/cometbft/cometbft/crypto/ed25519"
	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	cmttypes "github.com/cometbft/cometbft/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
	sdkmath "cosmossdk.io/math"

	"github.com/cosmos/cosmos-sdk/baseapp"
	"github.com/cosmos/cosmos-sdk/crypto/keys/secp256k1"
	"github.com/cosmos/cosmos-sdk/testutil/mock"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
	authtypes "github.com/cosmos/cosmos-sdk/x/auth/types"
	banktypes "github.com/cosmos/cosmos-sdk/x/bank/types"
	govtypes "github.com/cosmos/cosmos-sdk/x/gov/types"
	govv1 "github.com/cosmos/cosmos-sdk/x/gov/types/v1"

	"github.com/bftlog/bftlog/app"
	"github.com/bftlog/bftlog/x/topics/kbatch"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// feeChain is a bftlog app over a real (in-memory) store with bftlog's consensus params and
// default x/topics params, one validator and funded accounts. The app has no local minimum gas
// price (baseapp's default, like a validator running minimum-gas-prices = 0stake), and blocks are
// fed to FinalizeBlock directly: whatever a proposer puts in a block gets executed.
type feeChain struct {
	t      *testing.T
	app    *app.App
	height int64
	keys   []*secp256k1.PrivKey
	seqs   []uint64
	nums   []uint64
}

func newFeeChain(t *testing.T, balances ...int64) *feeChain {
	t.Helper()
	return newFeeChainOn(t, dbm.NewMemDB(), t.TempDir(), balances...)
}

// newFeeChainOn is newFeeChain over db, for tests that reopen the app on the same database.
func newFeeChainOn(t *testing.T, db dbm.DB, home string, balances ...int64) *feeChain {
	t.Helper()
	return newChain(t, app.New(log.NewNopLogger(), db, nil, true, simtestutil.NewAppOptionsWithFlagHome(home), baseapp.SetChainID("fees")), balances...)
}

// newChain is newFeeChain on the app a, for tests that build the app with their own options.
func newChain(t *testing.T, a *app.App, balances ...int64) *feeChain {
	t.Helper()
	return newChainFrom(t, a, nil, balances...)
}

// newChainFrom is newChain with its validator and accounts derived from secret (random when
// nil): chains from one secret start from the same genesis, so their app hashes compare.
func newChainFrom(t *testing.T, a *app.App, secret []byte, balances ...int64) *feeChain {
	t.Helper()
	var pk cmtcrypto.PubKey
	var err error
	if secret == nil {
		pk, err = mock.NewPV().GetPubKey()
		require.NoError(t, err)
	} else {
		pk = cmted25519.GenPrivKeyFromSecret(secret).PubKey()
	}
	return newChainOf(t, a, secret, []cmtcrypto.PubKey{pk}, balances...)
}

// validatorKey is the consensus key of a test chain's validator made from secret.
func validatorKey(secret string) cmtcrypto.PrivKey {
	return cmted25519.GenPrivKeyFromSecret([]byte(secret))
}

// newChainOf is newChainFrom with these validators (power 1 each) in its genesis.
func newChainOf(t *testing.T, a *app.App, secret []byte, vals []cmtcrypto.PubKey, balances ...int64) *feeChain {
	t.Helper()
	var set []*cmttypes.Validator
	for _, pk := range vals {
		set = append(set, cmttypes.NewValidator(pk, 1))
	}
	valSet := cmttypes.NewValidatorSet(set)
	c := &feeChain{t: t, app: a}
	var accs []authtypes.GenesisAccount
	var bals []banktypes.Balance
	for i, amt := range balances {
		priv := secp256k1.GenPrivKey()
		if secret != nil {
			priv = secp256k1.GenPrivKeyFromSecret(append(bytes.Clone(secret), byte(i)))
		}
		acc := authtypes.NewBaseAccount(priv.PubKey().Address().Bytes(), priv.PubKey(), uint64(i), 0)
		accs = append(accs, acc)
		bals = append(bals, banktypes.Balance{Address: acc.GetAddress().String(), Coins: sdk.NewCoins(sdk.NewInt64Coin(sdk.DefaultBondDenom, amt))})
		c.keys = append(c.keys, priv)
		c.seqs = append(c.seqs, 0)
	}
	gen, err := simtestutil.GenesisStateWithValSet(a.AppCodec(), a.DefaultGenesis(), valSet, accs, bals...)
	require.NoError(t, err)
	require.NoError(t, app.WithoutHistoricalInfo(gen)) // as bftlogd init writes it; the helper puts the SDK's staking params back
	if len(vals) > 1 {
		// The SDK's helper funds the bonded pool with one validator's bond whatever their
		// number, while its supply counts each: the pool gets them all.
		var bank banktypes.GenesisState
		a.AppCodec().MustUnmarshalJSON(gen[banktypes.ModuleName], &bank)
		pool := authtypes.NewModuleAddress("bonded_tokens_pool").String()
		for i, b := range bank.Balances {
			if b.Address == pool {
				bank.Balances[i].Coins = sdk.NewCoins(sdk.NewCoin(sdk.DefaultBondDenom, sdk.DefaultPowerReduction.MulRaw(int64(len(vals)))))
			}
		}
		gen[banktypes.ModuleName] = a.AppCodec().MustMarshalJSON(&bank)
	}
	state, err := json.Marshal(gen)
	require.NoError(t, err)
	cp := *simtestutil.DefaultConsensusParams
	block := *cp.Block
	block.MaxGas = app.DefaultBlockMaxGas
	block.MaxBytes = 22020096
	cp.Block = &block
	_, err = a.InitChain(&abci.RequestInitChain{ChainId: "fees", ConsensusParams: &cp, AppStateBytes: state})
	require.NoError(t, err)
	c.height = 1
	c.finalize()
	// Account numbers as genesis assigned them (module accounts come first).
	ctx := c.ctx()
	for _, k := range c.keys {
		c.nums = append(c.nums, a.AccountKeeper.GetAccount(ctx, sdk.AccAddress(k.PubKey().Address())).GetAccountNumber())
	}
	return c
}

func (c *feeChain) addr(i int) sdk.AccAddress { return sdk.AccAddress(c.keys[i].PubKey().Address()) }

func (c *feeChain) ctx() sdk.Context {
	return c.app.NewUncachedContext(false, cmtproto.Header{ChainID: "fees", Height: c.height})
}

func (c *feeChain) params() topicstypes.Params {
	p, err := c.app.TopicsKeeper.Params.Get(c.ctx())
	require.NoError(c.t, err)
	return p
}

// tx signs msgs from account i with the given fee and gas limit.
func (c *feeChain) tx(i int, fee sdk.Coins, gas uint64, msgs ...sdk.Msg) []byte {
	c.t.Helper()
	tx, err := simtestutil.GenSignedMockTx(rand.New(rand.NewSource(1)), c.app.TxConfig(), msgs, fee, gas, "fees",
		[]uint64{c.nums[i]}, []uint64{c.seqs[i]}, c.keys[i])
	require.NoError(c.t, err)
	bz, err := c.app.TxConfig().TxEncoder()(tx)
	require.NoError(c.t, err)
	return bz
}

// fee is gas x the chain's min_gas_price, rounded up: what clients pay.
func (c *feeChain) fee(gas uint64) sdk.Coins {
	p := c.params().MinGasPrice
	amt := sdkmath.LegacyNewDecFromInt(sdkmath.NewIntFromUint64(gas)).Mul(p.Amount).Ceil().TruncateInt()
	return sdk.NewCoins(sdk.NewCoin(p.Denom, amt))
}

// block runs txs as one block, as a proposer would have them executed, and commits it.
func (c *feeChain) block(txs ...[]byte) []*abci.ExecTxResult {
	c.t.Helper()
	res := c.finalize(txs...)
	return res.TxResults
}

func (c *feeChain) finalize(txs ...[]byte) *abci.ResponseFinalizeBlock {
	c.t.Helper()
	res, err := c.app.FinalizeBlock(&abci.RequestFinalizeBlock{Height: c.height, Txs: txs})
	require.NoError(c.t, err)
	_, err = c.app.Commit()
	require.NoError(c.t, err)
	c.height++
	return res
}

// deliver runs one paid tx from account i in its own block and requires it to succeed.
func (c *feeChain) deliver(i int, gas uint64, msgs ...sdk.Msg) *abci.ExecTxResult {
	c.t.Helper()
	r := c.block(c.tx(i, c.fee(gas), gas, msgs...))[0]
	require.Equal(c.t, uint32(0), r.Code, r.Log)
	c.seqs[i]++
	return r
}

func (c *feeChain) balance(addr sdk.AccAddress) sdkmath.Int {
	return c.app.BankKeeper.GetBalance(c.ctx(), addr, sdk.DefaultBondDenom).Amount
}

func (c *feeChain) escrow() sdk.Coins {
	return c.app.BankKeeper.GetAllBalances(c.ctx(), authtypes.NewModuleAddress(topicstypes.ModuleName))
}

func produceMsg(producer sdk.AccAddress, topic string, records, size int) *topicstypes.MsgProduce {
	recs := make([]topicstypes.BatchRecord, records)
	for i := range recs {
		recs[i] = topicstypes.BatchRecord{Value: &topicstypes.Bytes{Data: bytes.Repeat([]byte{byte('a' + i%26)}, size)}}
	}
	batch, err := topicstypes.NewProduceBatch(topic, 0, recs, kbatch.CompressionNone)
	if err != nil {
		panic(err)
	}
	return &topicstypes.MsgProduce{Producer: producer.String(), Batches: []topicstypes.ProduceBatch{batch}}
}

func createMsg(owner sdk.AccAddress, name string, partitions uint32) *topicstypes.MsgCreateTopic {
	return &topicstypes.MsgCreateTopic{Owner: owner.String(), Name: name, Partitions: partitions}
}

// A proposer running minimum-gas-prices = 0 puts a zero-fee produce (and one paying a unit
// less than gas x min_gas_price) into its block: both are refused by the consensus fee rule with
// x/topics code 33, append nothing and take nothing; the same produce paying the price lands.
func TestAttackZeroFeeProduceRefusedInBlock(t *testing.T) {
	c := newFeeChain(t, 1e15)
	alice := c.addr(0)
	c.deliver(0, 1_000_000, createMsg(alice, "free", 1))

	const gas = 6_000_000
	msg := produceMsg(alice, "free", 100, 1000)
	before := c.balance(alice)
	zero := c.tx(0, nil, gas, msg)
	short := c.tx(0, c.fee(gas).Sub(sdk.NewInt64Coin(sdk.DefaultBondDenom, 1)), gas, msg)

	// CheckTx on a node with no local minimum refuses it too (the rule is not node-local).
	chk, err := c.app.CheckTx(&abci.RequestCheckTx{Tx: zero, Type: abci.CheckTxType_New})
	require.NoError(t, err)
	require.Equal(t, topicstypes.ErrInsufficientFee.ABCICode(), chk.Code, chk.Log)

	res := c.block(zero, short)
	for _, r := range res {
		require.Equal(t, topicstypes.ModuleName, r.Codespace, r.Log)
		require.Equal(t, topicstypes.ErrInsufficientFee.ABCICode(), r.Code, r.Log)
	}
	p, err := c.app.TopicsKeeper.GetPartition(c.ctx(), "free", 0)
	require.NoError(t, err)
	require.Zero(t, p.HighWatermark, "a refused produce appends nothing")
	require.Equal(t, before, c.balance(alice), "a refused transaction pays nothing")
	t.Logf("zero-fee produce of 100 x 1000 B in a block: code %d (%s), gas used %d; fee %s short by 1: code %d",
		res[0].Code, res[0].Codespace, res[0].GasUsed, c.fee(gas).Sub(sdk.NewInt64Coin(sdk.DefaultBondDenom, 1)), res[1].Code)

	r := c.deliver(0, gas, msg)
	p, err = c.app.TopicsKeeper.GetPartition(c.ctx(), "free", 0)
	require.NoError(t, err)
	require.Equal(t, uint64(100), p.HighWatermark)
	paid := before.Sub(c.balance(alice))
	require.Equal(t, c.fee(gas).AmountOf(sdk.DefaultBondDenom), paid)
	t.Logf("the same produce paying %sstake (gas limit %d x %s): code 0, gas used %d", paid, uint64(gas), c.params().MinGasPrice, r.GasUsed)
}

// Gas limits above x/topics max_tx_gas (code 34) or the block's max_gas (SDK code 41) are
// refused in a block, whatever the fee; the largest produce the params allow fits under both.
func TestAttackGasCapRefused(t *testing.T) {
	c := newFeeChain(t, 1e15)
	alice := c.addr(0)
	c.deliver(0, 1_000_000, createMsg(alice, "capped", 1))
	params := c.params()
	overTx := params.MaxTxGas + 1
	overBlock := uint64(app.DefaultBlockMaxGas) + 1
	msg := produceMsg(alice, "capped", 1, 10)
	res := c.block(c.tx(0, c.fee(overTx), overTx, msg))
	require.Equal(t, topicstypes.ErrTxGasTooHigh.ABCICode(), res[0].Code, res[0].Log)
	require.Equal(t, topicstypes.ModuleName, res[0].Codespace)
	t.Logf("gas limit %d (max_tx_gas %d): code %d %s", overTx, params.MaxTxGas, res[0].Code, res[0].Log)

	// Without the module cap, the block's max_gas still refuses a larger transaction.
	params.MaxTxGas = 0
	require.NoError(t, c.app.TopicsKeeper.SetParams(c.ctx(), params))
	res = c.block(c.tx(0, c.fee(overBlock), overBlock, msg))
	require.Equal(t, sdkerrors.ErrInvalidGasLimit.ABCICode(), res[0].Code, res[0].Log)
	require.Equal(t, sdkerrors.RootCodespace, res[0].Codespace)
	t.Logf("gas limit %d (block max_gas %d): code %d %s", overBlock, app.DefaultBlockMaxGas, res[0].Code, res[0].Log)
	p, err := c.app.TopicsKeeper.GetPartition(c.ctx(), "capped", 0)
	require.NoError(t, err)
	require.Zero(t, p.HighWatermark)
}

// The largest produce the default params allow (max_batch_bytes as 4 records of 1 MiB, and as
// max_records_per_batch small records) fits max_tx_gas even with the clients' 1.3 adjustment,
// and a block holds several of them: the figures that size max_tx_gas and block max_gas.
func TestLargestProduceGas(t *testing.T) {
	c := newFeeChain(t, 1e15)
	alice := c.addr(0)
	c.deliver(0, 1_000_000, createMsg(alice, "big", 1))
	params := c.params()
	// Limits count Kafka-encoded sizes: the batch's 61-byte header, and around each value its
	// record's framing (at most 12 bytes at these sizes).
	room := int(params.MaxBatchBytes) - kbatch.RecordBatchHeaderSize
	for _, shape := range []struct{ records, size int }{
		{4, min(int(params.MaxRecordBytes), room/4) - 12},
		{int(params.MaxRecordsPerBatch), room/int(params.MaxRecordsPerBatch) - 12},
	} {
		msg := produceMsg(alice, "big", shape.records, shape.size)
		r := c.deliver(0, params.MaxTxGas, msg)
		stored := shape.records * shape.size
		require.LessOrEqual(t, uint64(r.GasUsed)*13/10, params.MaxTxGas, "simulated gas x 1.3 must fit max_tx_gas")
		t.Logf("produce %d x %d B = %d record bytes (tx %d B): gas used %d (%.1f per record byte), x1.3 = %d; max_tx_gas %d; block max_gas %d holds %d at max_tx_gas; fee %s",
			shape.records, shape.size, stored, msg.Size(), r.GasUsed, float64(r.GasUsed)/float64(stored), r.GasUsed*13/10,
			params.MaxTxGas, app.DefaultBlockMaxGas, uint64(app.DefaultBlockMaxGas)/params.MaxTxGas, c.fee(uint64(r.GasUsed)*13/10))
	}
	require.GreaterOrEqual(t, uint64(app.DefaultBlockMaxGas)/params.MaxTxGas, uint64(5), "a block holds several largest batches")
}

// Creating N topics escrows N deposits (topic + partitions) in the x/topics module account;
// adding partitions escrows more; deleting refunds each owner exactly; an account that cannot
// pay the deposit creates nothing. Genesis export carries the deposits, equal to the escrow.
func TestAttackTopicDeposits(t *testing.T) {
	c := newFeeChain(t, 1e15, 5_000_000)
	alice, poor := c.addr(0), c.addr(1)
	params := c.params()
	const n, parts = 8, 4
	per := params.TopicDepositFor(parts)
	before := c.balance(alice)
	var fees sdkmath.Int = sdkmath.ZeroInt()
	for i := 0; i < n; i++ {
		c.deliver(0, 500_000, createMsg(alice, "t"+string(rune('a'+i)), parts))
		fees = fees.Add(c.fee(500_000).AmountOf(sdk.DefaultBondDenom))
	}
	want := sdk.NewCoins()
	for i := 0; i < n; i++ {
		want = want.Add(per...)
	}
	require.Equal(t, want, c.escrow(), "N topics escrow N deposits")
	require.Equal(t, before.Sub(fees).Sub(want.AmountOf(sdk.DefaultBondDenom)), c.balance(alice))
	t.Logf("%d topics x %d partitions: escrow %s (%s each = topic_deposit %s + %d x partition_deposit %s), fees %sstake",
		n, parts, c.escrow(), per, params.TopicDeposit, parts, params.PartitionDeposit, fees)

	// 256-partition topic for one short transaction: now 266M stake locked, not free.
	big := params.TopicDepositFor(params.MaxPartitionsPerTopic)
	t.Logf("a %d-partition topic escrows %s", params.MaxPartitionsPerTopic, big)

	// An account that cannot pay the deposit creates nothing (the deposit is the first write).
	res := c.block(c.tx(1, c.fee(500_000), 500_000, createMsg(poor, "poor", 1)))
	require.Equal(t, sdkerrors.ErrInsufficientFunds.ABCICode(), res[0].Code, res[0].Log)
	c.seqs[1]++
	_, err := c.app.TopicsKeeper.GetTopic(c.ctx(), "poor")
	require.ErrorIs(t, err, topicstypes.ErrUnknownTopic)
	t.Logf("account with %sstake creating a topic (deposit %s): code %d", c.balance(poor), params.TopicDepositFor(1), res[0].Code)

	c.deliver(0, 500_000, &topicstypes.MsgAddPartitions{Authority: alice.String(), Name: "ta", Partitions: parts + 3})
	want = want.Add(params.PartitionDepositFor(3)...)
	require.Equal(t, want, c.escrow())
	ta, err := c.app.TopicsKeeper.GetTopic(c.ctx(), "ta")
	require.NoError(t, err)
	require.Equal(t, per.Add(params.PartitionDepositFor(3)...), ta.Deposit)

	gs, err := c.app.TopicsKeeper.ExportGenesis(c.ctx())
	require.NoError(t, err)
	exported := sdk.NewCoins()
	for _, tp := range gs.Topics {
		exported = exported.Add(tp.Deposit...)
	}
	require.Equal(t, c.escrow(), exported, "exported deposits equal the module account")

	// Refunds: deposits go back even though the params change in between.
	params.TopicDeposit = sdk.NewInt64Coin(sdk.DefaultBondDenom, 1)
	require.NoError(t, c.app.TopicsKeeper.SetParams(c.ctx(), params))
	mid := c.balance(alice)
	fees = sdkmath.ZeroInt()
	for i := 0; i < n; i++ {
		c.deliver(0, 2_000_000, &topicstypes.MsgDeleteTopic{Authority: alice.String(), Name: "t" + string(rune('a'+i))})
		fees = fees.Add(c.fee(2_000_000).AmountOf(sdk.DefaultBondDenom))
	}
	require.True(t, c.escrow().IsZero(), "every deposit refunded: %s", c.escrow())
	require.Equal(t, mid.Sub(fees).Add(want.AmountOf(sdk.DefaultBondDenom)), c.balance(alice))
	t.Logf("deleting the %d topics refunded %s; escrow now %q", n, want, c.escrow())
}

// Groups are state objects nobody has to delete: creating N escrows N group deposits, deleting
// refunds the admin. InitGenesis refuses a state whose deposits differ from the module account.
func TestAttackGroupDepositsAndGenesisEscrow(t *testing.T) {
	c := newFeeChain(t, 1e15)
	alice := c.addr(0)
	params := c.params()
	const n = 6
	before := c.balance(alice)
	fees := sdkmath.ZeroInt()
	for i := 0; i < n; i++ {
		c.deliver(0, 500_000, &topicstypes.MsgCreateGroup{Admin: alice.String(), GroupId: "g" + string(rune('a'+i))})
		fees = fees.Add(c.fee(500_000).AmountOf(sdk.DefaultBondDenom))
	}
	want := sdk.NewCoins()
	for i := 0; i < n; i++ {
		want = want.Add(params.GroupDepositFor()...)
	}
	require.Equal(t, want, c.escrow(), "N groups escrow N deposits")
	require.Equal(t, before.Sub(fees).Sub(want.AmountOf(sdk.DefaultBondDenom)), c.balance(alice))
	t.Logf("%d groups: escrow %s (group_deposit %s each), fees %sstake", n, c.escrow(), params.GroupDeposit, fees)

	// Genesis: the exported state re-imports against the same bank state; a state claiming
	// less (or more) than the module account holds is refused.
	ctx, _ := c.ctx().CacheContext()
	gs, err := c.app.TopicsKeeper.ExportGenesis(ctx)
	require.NoError(t, err)
	require.NoError(t, c.app.TopicsKeeper.InitGenesis(ctx, gs))
	gs.Groups[0].Deposit = nil
	require.ErrorIs(t, c.app.TopicsKeeper.InitGenesis(ctx, gs), topicstypes.ErrInvalidGenesis)

	mid := c.balance(alice)
	c.deliver(0, 500_000, &topicstypes.MsgDeleteGroup{Authority: alice.String(), GroupId: "ga"})
	require.Equal(t, want.Sub(params.GroupDepositFor()...), c.escrow())
	require.Equal(t, mid.Sub(c.fee(500_000).AmountOf(sdk.DefaultBondDenom)).Add(params.GroupDeposit.Amount), c.balance(alice))
	t.Logf("deleting one group refunded %s; escrow now %s", params.GroupDeposit, c.escrow())
}

// A byzantine proposer's block with a zero-fee transaction, or with gas limits adding up past
// the block's max_gas, is voted down in ProcessProposal, so its bytes never reach a block; a
// block of paid transactions within max_gas is accepted.
func TestAttackProposalWithFreeTransactionRejected(t *testing.T) {
	c := newFeeChain(t, 1e15)
	alice := c.addr(0)
	c.deliver(0, 1_000_000, createMsg(alice, "prop", 1))
	msg := produceMsg(alice, "prop", 10, 100)
	propose := func(txs ...[]byte) abci.ResponseProcessProposal_ProposalStatus {
		res, err := c.app.ProcessProposal(&abci.RequestProcessProposal{Height: c.height, Txs: txs})
		require.NoError(t, err)
		return res.Status
	}
	paid := c.tx(0, c.fee(1_000_000), 1_000_000, msg)
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, propose(paid))
	require.Equal(t, abci.ResponseProcessProposal_REJECT, propose(paid, c.tx(0, nil, 1_000_000, msg)), "one zero-fee tx spoils the proposal")

	// Six transactions at max_tx_gas each: 1.8 billion gas wanted in a 1.5 billion block.
	maxTx := c.params().MaxTxGas
	var txs [][]byte
	for i := uint64(0); i < 6; i++ {
		c.seqs[0] = i
		txs = append(txs, c.tx(0, c.fee(maxTx), maxTx, msg))
	}
	c.seqs[0] = 0
	require.Equal(t, abci.ResponseProcessProposal_ACCEPT, propose(txs[:5]...))
	require.Equal(t, abci.ResponseProcessProposal_REJECT, propose(txs...))
	t.Logf("proposals: paid tx accepted; + a zero-fee tx rejected; 5 x %d gas accepted, 6 x (%d > block max_gas %d) rejected",
		maxTx, 6*maxTx, app.DefaultBlockMaxGas)
}

// Found by the simulation (seed 27): a group created by a first join (MsgJoinGroup) escrowed
// its deposit but stored itself without it, so the deposit was never refunded and the module
// account held more than the groups claim. A first join through either protocol keeps the
// claim, and deleting the group refunds it.
func TestAttackFirstJoinKeepsTheGroupDeposit(t *testing.T) {
	c := newFeeChain(t, 1e15)
	alice := c.addr(0)
	params := c.params()
	c.deliver(0, 5_000_000, createMsg(alice, "orders", 1))
	c.deliver(0, 5_000_000, &topicstypes.MsgJoinGroup{Member: alice.String(), GroupId: "native", Topics: []string{"orders"}})
	c.deliver(0, 5_000_000, &topicstypes.MsgKafkaJoinGroup{Owner: alice.String(), GroupId: "kafka", MemberId: "m", ProtocolType: "consumer",
		Protocols: []topicstypes.KafkaProtocol{{Name: "range"}}, SessionTimeoutMs: 10_000})
	for _, id := range []string{"native", "kafka"} {
		g, err := c.app.TopicsKeeper.Groups.Get(c.ctx(), id)
		require.NoError(t, err)
		require.Equal(t, params.GroupDepositFor(), g.Deposit, id)
	}
	escrowed, err := c.app.TopicsKeeper.EscrowedDeposits(c.ctx())
	require.NoError(t, err)
	require.Equal(t, escrowed, c.escrow(), "the module account holds exactly what topics and groups claim")
	c.deliver(0, 5_000_000, &topicstypes.MsgLeaveGroup{Member: alice.String(), GroupId: "native"})
	c.deliver(0, 5_000_000, &topicstypes.MsgDeleteGroup{Authority: alice.String(), GroupId: "native"})
	escrowed, err = c.app.TopicsKeeper.EscrowedDeposits(c.ctx())
	require.NoError(t, err)
	require.Equal(t, escrowed, c.escrow())
	t.Logf("escrow after a first join of each kind and deleting one: %s (%s per group)", c.escrow(), params.GroupDeposit)
}

// Governance could set x/topics params that halt the chain (a max_batch_bytes above what
// compaction decompresses) or lock it out (a max_tx_gas below a vote's gas; a min_gas_price
// whose fee arithmetic overflows and panics): a proposal carrying them was accepted, passed its
// vote and set them. The gov module now refuses it at submission (MsgUpdateParams'
// ValidateBasic: gov's code for an invalid proposal message); params within the bounds pass.
func TestAttackProposalWithHaltingParamsRefused(t *testing.T) {
	c := newFeeChain(t, 1e15)
	gov := authtypes.NewModuleAddress(govtypes.ModuleName).String()
	propose := func(edit func(*topicstypes.Params)) *abci.ExecTxResult {
		p := c.params()
		edit(&p)
		msg, err := govv1.NewMsgSubmitProposal([]sdk.Msg{&topicstypes.MsgUpdateParams{Authority: gov, Params: p}},
			sdk.NewCoins(sdk.NewInt64Coin(sdk.DefaultBondDenom, 10_000_000)), c.addr(0).String(), "", "x/topics params", "bounds", false)
		require.NoError(t, err)
		const gas = 2_000_000
		r := c.block(c.tx(0, c.fee(gas), gas, msg))[0]
		c.seqs[0]++
		return r
	}
	for _, bad := range []struct {
		name string
		edit func(*topicstypes.Params)
	}{
		{"max_batch_bytes 64 MiB + 1", func(p *topicstypes.Params) { p.MaxBatchBytes = kbatch.MaxDecodedBatchBytes + 1 }},
		{"max_tx_gas 1", func(p *topicstypes.Params) { p.MaxTxGas = 1 }},
	} {
		name, edit := bad.name, bad.edit
		r := propose(edit)
		t.Logf("proposal with %s: codespace %s, code %d", name, r.Codespace, r.Code)
		require.Equal(t, govtypes.ModuleName, r.Codespace, r.Log)
		require.Equal(t, govtypes.ErrInvalidProposalMsg.ABCICode(), r.Code, r.Log)
	}
	r := propose(func(p *topicstypes.Params) { p.MaxBatchBytes = topicstypes.MaxBatchBytesLimit })
	require.Equal(t, uint32(0), r.Code, "at the bound: %s", r.Log)

	// Why min_gas_price has a bound: past it the fee rule's arithmetic panics (in CheckTx and
	// ProcessProposal alike); at it, any gas limit computes.
	p := c.params()
	p.MaxTxGas = 0 // no cap: any gas limit reaches the fee computation
	p.MinGasPrice.Amount = sdkmath.LegacyNewDecFromInt(topicstypes.MaxFeeAmount)
	require.NoError(t, p.Validate())
	require.ErrorIs(t, app.CheckFee(p, math.MaxUint64, nil), topicstypes.ErrInsufficientFee)
	p.MinGasPrice.Amount = sdkmath.LegacyNewDecFromInt(topicstypes.MaxFeeAmount.MulRaw(1 << 62).MulRaw(1 << 10)) // 2^200
	require.ErrorIs(t, p.Validate(), topicstypes.ErrInvalidParams)
	require.Panics(t, func() { _ = app.CheckFee(p, math.MaxUint64, nil) })
}

// TestProposalKeepsEachAccountInSequence: a proposer whose block cannot take an account's
// transaction (too large for what is left) leaves out that account's later transactions too.
// The SDK's default selection took the smaller next one, which then failed in the block with
// "account sequence mismatch" (the benchmark saw 1,188 records fail so at half load).
func TestProposalKeepsEachAccountInSequence(t *testing.T) {
	c := newFeeChain(t, 1e15, 1e15)
	alice, bob := c.addr(0), c.addr(1)
	c.deliver(0, 1_000_000, createMsg(alice, "seq", 1))
	gas := func(m *topicstypes.MsgProduce) uint64 { return 300_000 + 60*uint64(m.Size()) }
	bigMsg, smallMsg, bobMsg := produceMsg(alice, "seq", 200, 1000), produceMsg(alice, "seq", 1, 100), produceMsg(bob, "seq", 1, 100)
	big := c.tx(0, c.fee(gas(bigMsg)), gas(bigMsg), bigMsg)
	c.seqs[0]++
	small := c.tx(0, c.fee(gas(smallMsg)), gas(smallMsg), smallMsg)
	fromBob := c.tx(1, c.fee(gas(bobMsg)), gas(bobMsg), bobMsg)

	// Room for the two small transactions, not for alice's large one.
	room := int64(len(small) + len(fromBob) + 64)
	require.Less(t, room, int64(len(big)))
	res, err := c.app.PrepareProposal(&abci.RequestPrepareProposal{Height: c.height, MaxTxBytes: room, Txs: [][]byte{big, small, fromBob}})
	require.NoError(t, err)
	require.Equal(t, [][]byte{fromBob}, res.Txs, "alice's second transaction went in without her first")
	for _, r := range c.block(res.Txs...) {
		require.Equal(t, uint32(0), r.Code, r.Log)
	}
	// What the default selection proposed: alice's second transaction fails in the block.
	out := c.block(small)
	require.Equal(t, sdkerrors.ErrWrongSequence.ABCICode(), out[0].Code, out[0].Log)

	// With room for everything, everything goes in, in the mempool's order.
	res, err = c.app.PrepareProposal(&abci.RequestPrepareProposal{Height: c.height, MaxTxBytes: 1 << 30, Txs: [][]byte{big, small}})
	require.NoError(t, err)
	require.Equal(t, [][]byte{big, small}, res.Txs)
	for _, r := range c.block(res.Txs...) {
		require.Equal(t, uint32(0), r.Code, r.Log)
	}
	t.Logf("proposal with %d bytes of room: alice's %d-byte transaction and her next one left out, bob's taken; her next one alone fails with code %d (sequence)",
		room, len(big), out[0].Code)
}
