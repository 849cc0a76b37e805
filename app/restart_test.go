package app_test

import (
	"testing"

	abci "github.com/cometbft/cometbft/abci/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"

	"github.com/cosmos/cosmos-sdk/baseapp"
	simtestutil "github.com/cosmos/cosmos-sdk/testutil/sims"
	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/app"
	topicstypes "github.com/bftlog/bftlog/x/topics/types"
)

// A node restarted from disk checks transactions before its first new block on a header of
// height 0, which the SDK's ante handler takes for genesis: every signature was checked against
// account number 0 and refused (sdk code 4), so producers were turned away until the first
// block, and neither the fee rule nor a gas limit applied. Now CheckTx runs at the next height:
// a valid produce is admitted and one paying nothing is refused by the fee rule.
func TestCheckTxAfterARestartBeforeTheFirstBlock(t *testing.T) {
	db, home := dbm.NewMemDB(), t.TempDir()
	c := newFeeChainOn(t, db, home, 1e15, 1e15)
	c.deliver(0, 2_000_000, createMsg(c.addr(0), "restart", 1))
	restarted := app.New(log.NewNopLogger(), db, nil, true, simtestutil.NewAppOptionsWithFlagHome(home), baseapp.SetChainID("fees"))
	require.Equal(t, c.height-1, restarted.LastBlockHeight())

	msg := produceMsg(c.addr(1), "restart", 5, 100)
	gas := uint64(300_000 + 60*msg.Size())
	res, err := restarted.CheckTx(&abci.RequestCheckTx{Tx: c.tx(1, c.fee(gas), gas, msg), Type: abci.CheckTxType_New})
	require.NoError(t, err)
	require.Zero(t, res.Code, "a valid produce admitted before the first block: %s", res.Log)
	c.seqs[1]++
	free, err := restarted.CheckTx(&abci.RequestCheckTx{Tx: c.tx(1, sdk.NewCoins(), gas, produceMsg(c.addr(1), "restart", 5, 100)), Type: abci.CheckTxType_New})
	require.NoError(t, err)
	require.Equal(t, topicstypes.ErrInsufficientFee.ABCICode(), free.Code, "the fee rule holds before the first block: %s", free.Log)
}
