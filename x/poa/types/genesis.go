package types

import (
	"fmt"

	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/types/bech32"
)

// ValidateEndpoints checks the data-plane endpoints: operators well formed, each once, each
// endpoint and key valid, not both empty.
func (gs GenesisState) ValidateEndpoints() error {
	operators, keys := map[string]bool{}, map[string]bool{}
	for _, e := range gs.DataPlaneEndpoints {
		_, op, err := bech32.DecodeAndConvert(e.Operator)
		if err != nil {
			return fmt.Errorf("%w: data-plane endpoint of %q: %v", ErrInvalidGen, e.Operator, err)
		}
		if e.Endpoint == "" && len(e.DataPlaneKey) == 0 {
			return fmt.Errorf("%w: empty data-plane endpoint of %s", ErrInvalidGen, e.Operator)
		}
		if err := ValidateEndpoint(e.Endpoint); err != nil {
			return fmt.Errorf("%w: data-plane endpoint of %s: %v", ErrInvalidGen, e.Operator, err)
		}
		if err := ValidateDataPlaneKey(op, e.DataPlaneKey, e.DataPlaneKeyProof); err != nil {
			return fmt.Errorf("%w: data-plane key of %s: %v", ErrInvalidGen, e.Operator, err)
		}
		if operators[e.Operator] {
			return fmt.Errorf("%w: data-plane endpoint of %s listed twice", ErrInvalidGen, e.Operator)
		}
		operators[e.Operator] = true
		if len(e.DataPlaneKey) > 0 {
			if keys[string(e.DataPlaneKey)] {
				return fmt.Errorf("%w: data-plane key of %s registered by another validator too", ErrInvalidGen, e.Operator)
			}
			keys[string(e.DataPlaneKey)] = true
		}
	}
	return nil
}

// ValidateStake checks the minted stake x/poa still has to burn: accounts well formed, amounts
// positive, one grant per account and one clawback per (completion time, account).
func (gs GenesisState) ValidateStake() error {
	grants := map[string]bool{}
	for _, g := range gs.Grants {
		if _, err := sdk.AccAddressFromBech32(g.Account); err != nil {
			return fmt.Errorf("%w: grant account %q: %v", ErrInvalidGen, g.Account, err)
		}
		if g.Amount.IsNil() || !g.Amount.IsPositive() {
			return fmt.Errorf("%w: grant to %s of %s", ErrInvalidGen, g.Account, g.Amount)
		}
		if grants[g.Account] {
			return fmt.Errorf("%w: grant to %s listed twice", ErrInvalidGen, g.Account)
		}
		grants[g.Account] = true
	}
	type due struct {
		at      int64
		account string
	}
	clawbacks := map[due]bool{}
	for _, c := range gs.Clawbacks {
		if _, err := sdk.AccAddressFromBech32(c.Account); err != nil {
			return fmt.Errorf("%w: clawback account %q: %v", ErrInvalidGen, c.Account, err)
		}
		if c.Amount.IsNil() || !c.Amount.IsPositive() {
			return fmt.Errorf("%w: clawback from %s of %s", ErrInvalidGen, c.Account, c.Amount)
		}
		k := due{c.CompletionTime.UnixNano(), c.Account}
		if clawbacks[k] {
			return fmt.Errorf("%w: clawback from %s at %s listed twice", ErrInvalidGen, c.Account, c.CompletionTime)
		}
		clawbacks[k] = true
	}
	return nil
}
