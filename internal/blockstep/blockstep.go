// Package blockstep runs the work of a chain's block-level steps (EndBlock, PreBlock) under
// their one rule: an error or a panic there stops every validator alike at that height, for
// good (a restart replays the same block), so no step may fail because of state an account or
// a client shaped. Work runs on a branch of the state; a failure drops the branch and is handed
// back to the module, which logs and reports it and goes on. Only a failure of the node's own
// storage (ErrStorage) stops the node, since going on would make it diverge from the others.
package blockstep

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/cosmos/cosmos-sdk/types"
)

// ErrStorage marks a failure of the node's own storage: a file it cannot read or write, bytes
// that no longer match the hash its state commits. Errors an account's input can cause are
// never wrapped in it.
var ErrStorage = errors.New("node storage failure")

// Storage wraps err (if any) as an ErrStorage.
func Storage(err error) error {
	if err == nil || errors.Is(err, ErrStorage) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrStorage, err)
}

// Isolate runs fn on a branch of ctx's state and keeps its writes and events only if fn
// succeeds. If fn fails or panics, the branch is dropped and the failure returned as skipped,
// for the caller to report; an ErrStorage failure is returned as err instead (a panic with one
// is re-raised). Every validator runs the same fn on the same state, so all of them skip alike.
func Isolate(ctx context.Context, fn func(context.Context) error) (skipped, err error) {
	branch, write := sdk.UnwrapSDKContext(ctx).CacheContext()
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok && errors.Is(e, ErrStorage) {
				panic(r)
			}
			skipped, err = fmt.Errorf("panic: %v", r), nil
		}
	}()
	if ferr := fn(branch); ferr != nil {
		if errors.Is(ferr, ErrStorage) {
			return nil, ferr
		}
		return ferr, nil
	}
	write()
	return nil, nil
}
