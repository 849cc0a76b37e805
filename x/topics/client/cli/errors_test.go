package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	errorsmod "cosmossdk.io/errors"

	sdkerrors "github.com/cosmos/cosmos-sdk/types/errors"

	"github.com/bftlog/bftlog/x/topics/client/txclient"
	"github.com/bftlog/bftlog/x/topics/types"
)

// multi unwraps to several errors, as verify.Error does.
type multi struct{ errs []error }

func (m *multi) Error() string   { return m.errs[1].Error() + ": " + m.errs[0].Error() }
func (m *multi) Unwrap() []error { return m.errs }

func TestPlainError(t *testing.T) {
	partition := `message index: 0: batch 0: topic "demo" has 3 partitions, asked for partition 7: partition out of range`
	simulated := txclient.NewTxError(txclient.Simulated, "", 0, types.ModuleName, types.ErrInvalidPartition.ABCICode(),
		"failed to simulate tx: failed to execute message; "+partition)
	delivered := txclient.NewTxError(txclient.Delivered, "AB12", 9, types.ModuleName, types.ErrInvalidPartition.ABCICode(),
		"failed to execute message; "+partition)
	checked := txclient.NewTxError(txclient.Checked, "AB12", 0, sdkerrors.ErrWrongSequence.Codespace(), sdkerrors.ErrWrongSequence.ABCICode(),
		"account sequence mismatch, expected 4, got 3: incorrect account sequence")
	for _, c := range []struct {
		in   error
		want string
	}{
		// A refused transaction: the codespace and code it was refused with.
		{simulated, partition + " (codespace topics, code 5)"},
		{fmt.Errorf("produce: %w", simulated), partition + " (codespace topics, code 5)"},
		{delivered, "transaction AB12 failed in block 9: failed to execute message; " + partition + " (codespace topics, code 5)"},
		{checked, "transaction rejected: account sequence mismatch, expected 4, got 3: incorrect account sequence (codespace sdk, code 32)"},
		// An x/topics error raised on this side.
		{errorsmod.Wrapf(types.ErrOffsetOutOfRange, "offset 99999 of demo/0 is outside [log start offset 0, high watermark 2]"),
			`offset 99999 of demo/0 is outside [log start offset 0, high watermark 2]: offset out of range (codespace topics, code 12)`},
		{&multi{[]error{types.ErrNotVerified, errors.New("record 7 does not match its proof")}}, "record 7 does not match its proof: read not verified (codespace topics, code 32)"},
		// Query errors are gRPC statuses: the text is cleaned, and no code is claimed from it.
		{errors.New(`rpc error: code = Unknown desc = offset 99999 of demo/0 is outside [log start offset 0, high watermark 2]: offset out of range: unknown request`),
			`offset 99999 of demo/0 is outside [log start offset 0, high watermark 2]: offset out of range`},
		{errors.New(`rpc error: code = Unknown desc = rpc error: code = Unknown desc = topic "x" does not exist: unknown topic`), `topic "x" does not exist: unknown topic`},
		{errors.New(`rpc error: code = NotFound desc = topic "x" does not exist: unknown topic: key not found`), `topic "x" does not exist: unknown topic`},
		{errors.New(`rpc error: code = InvalidArgument desc = offset 5 must be below 3: invalid offset: invalid request`), `offset 5 must be below 3: invalid offset`},
		{errors.New(`rpc error: code = Unknown desc = failed to execute message; ` + partition + ` [/work/main/x/topics/keeper/produce.go:96] with gas used: '32670': unknown request`), partition},
		{errors.New("connection refused"), "connection refused"},
		// An SDK error raised on this side is shown as it is.
		{errorsmod.Wrap(sdkerrors.ErrInsufficientFunds, "fee of 5stake"), "fee of 5stake: insufficient funds"},
	} {
		got := PlainError(c.in)
		require.Equal(t, c.want, got.Error())
		require.Equal(t, c.want, PlainError(got).Error(), "shown twice (by a command and by main), the code appears once")
		require.ErrorIs(t, got, c.in, "the shown error still unwraps to the original")
	}
	require.ErrorIs(t, PlainError(simulated), types.ErrInvalidPartition)
	require.NoError(t, PlainError(nil))
}
