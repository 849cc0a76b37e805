package txclient

import (
	"context"
	"errors"
	"testing"
	"time"

	coretypes "github.com/cometbft/cometbft/rpc/core/types"
	"github.com/stretchr/testify/require"

	"github.com/cosmos/cosmos-sdk/client"
	"github.com/cosmos/cosmos-sdk/client/tx"
	sdk "github.com/cosmos/cosmos-sdk/types"
	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"
)

// sequences is an account retriever that answers a fixed account sequence.
type sequences struct{ seq uint64 }

func (a sequences) GetAccount(client.Context, sdk.AccAddress) (client.Account, error) {
	return nil, errors.New("unused")
}

func (a sequences) GetAccountWithHeight(client.Context, sdk.AccAddress) (client.Account, int64, error) {
	return nil, 0, errors.New("unused")
}
func (a sequences) EnsureExists(client.Context, sdk.AccAddress) error { return nil }
func (a sequences) GetAccountNumberSequence(client.Context, sdk.AccAddress) (uint64, uint64, error) {
	return 1, a.seq, nil
}

// Only "the node expects an earlier sequence than this signer's next one" is worth asking
// again: the node will catch up with transactions it already accepted from us. Whether the node
// is behind is read from its account, not from the error's text.
func TestAheadOfNode(t *testing.T) {
	wrongSeq := NewTxError(Simulated, "", 0, sdkerrors.ErrWrongSequence.Codespace(), sdkerrors.ErrWrongSequence.ABCICode(),
		"account sequence mismatch, expected 2, got 3: incorrect account sequence")
	for _, c := range []struct {
		name    string
		nodeSeq uint64
		err     error
		want    bool
	}{
		{"node behind us", 2, wrongSeq, true},
		{"node ahead of us: resync instead", 4, wrongSeq, false},
		{"node at our sequence", 3, wrongSeq, false},
		{"another error", 2, NewTxError(Simulated, "", 0, sdkerrors.ErrOutOfGas.Codespace(), sdkerrors.ErrOutOfGas.ABCICode(), "out of gas"), false},
		// The words alone decide nothing.
		{"text without a code", 2, errors.New("account sequence mismatch, expected 2, got 3: incorrect account sequence"), false},
		{"no error", 2, nil, false},
	} {
		s := &Signer{txf: tx.Factory{}.WithSequence(3).WithAccountRetriever(sequences{c.nodeSeq})}
		require.Equal(t, c.want, s.aheadOfNode(c.err), c.name)
	}
}

// notFound is a node on which no transaction is ever found.
type notFound struct{ client.CometRPC }

func (notFound) Tx(context.Context, []byte, bool) (*coretypes.ResultTx, error) {
	return nil, errors.New("tx not found")
}

// TxSearch finds no block that named it by digest either (OrderedQuery).
func (notFound) TxSearch(context.Context, string, bool, *int, *int, string) (*coretypes.ResultTxSearch, error) {
	return &coretypes.ResultTxSearch{}, nil
}

// A transaction not in a block in time has an unknown outcome: ErrNotCommitted, with the same
// message as ever.
func TestWaitNotCommitted(t *testing.T) {
	defer func(d time.Duration) { commitTimeout = d }(commitTimeout)
	commitTimeout = 300 * time.Millisecond
	_, err := Wait(client.Context{}.WithClient(notFound{}), "ABCD")
	require.ErrorIs(t, err, ErrNotCommitted)
	require.EqualError(t, err, "transaction ABCD not committed after 300ms: tx not found")
	var txErr *TxError
	require.False(t, errors.As(err, &txErr), "not a refusal")
}
