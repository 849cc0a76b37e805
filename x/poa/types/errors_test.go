package types_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	errorsmod "cosmossdk.io/errors"

	"github.com/bftlog/bftlog/x/poa/types"
)

// Registered codes are part of the chain's interface (clients match on codespace and code):
// they never change.
func TestErrorCodesAreStable(t *testing.T) {
	for code, err := range map[uint32]*errorsmod.Error{
		2: types.ErrUnauthorized, 3: types.ErrInvalidPower, 4: types.ErrNotAdmitted, 5: types.ErrBlockedMsg,
		6: types.ErrTombstoned, 7: types.ErrInvalidAddr, 8: types.ErrWrongStake, 9: types.ErrAlreadyExists,
		10: types.ErrInvalidGen,
	} {
		require.Equal(t, "poa", err.Codespace(), err.Error())
		require.Equal(t, code, err.ABCICode(), err.Error())
	}
}
