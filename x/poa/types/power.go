package types

import errorsmod "cosmossdk.io/errors"

// MaxPower bounds an admitted power (CometBFT caps total voting power at MaxInt64/8).
const MaxPower = 1 << 40

// ValidatePower checks an admitted power.
func ValidatePower(p int64) error {
	if p <= 0 || p > MaxPower {
		return errorsmod.Wrapf(ErrInvalidPower, "power %d must be in [1, %d]", p, int64(MaxPower))
	}
	return nil
}
