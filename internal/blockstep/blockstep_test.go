package blockstep_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	cmtproto "github.com/cometbft/cometbft/proto/tendermint/types"
	dbm "github.com/cosmos/cosmos-db"
	"github.com/stretchr/testify/require"

	"cosmossdk.io/log"
	"cosmossdk.io/store"
	"cosmossdk.io/store/metrics"
	storetypes "cosmossdk.io/store/types"

	sdk "github.com/cosmos/cosmos-sdk/types"

	"github.com/bftlog/bftlog/internal/blockstep"
)

// Work that succeeds keeps its writes and events; work that fails or panics leaves neither and
// is handed back as skipped; a storage failure is returned (or re-raised) to stop the node.
func TestIsolate(t *testing.T) {
	key := storetypes.NewKVStoreKey("s")
	cms := store.NewCommitMultiStore(dbm.NewMemDB(), log.NewNopLogger(), metrics.NewNoOpMetrics())
	cms.MountStoreWithDB(key, storetypes.StoreTypeIAVL, nil)
	require.NoError(t, cms.LoadLatestVersion())
	ctx := sdk.NewContext(cms, cmtproto.Header{}, false, log.NewNopLogger())
	work := func(name string, then func() error) func(context.Context) error {
		return func(c context.Context) error {
			sc := sdk.UnwrapSDKContext(c)
			sc.KVStore(key).Set([]byte(name), []byte{1})
			sc.EventManager().EmitEvent(sdk.NewEvent(name))
			return then()
		}
	}
	skipped, err := blockstep.Isolate(ctx, work("ok", func() error { return nil }))
	require.NoError(t, err)
	require.NoError(t, skipped)
	skipped, err = blockstep.Isolate(ctx, work("fails", func() error { return errors.New("boom") }))
	require.NoError(t, err)
	require.EqualError(t, skipped, "boom")
	skipped, err = blockstep.Isolate(ctx, work("panics", func() error { panic("index out of range") }))
	require.NoError(t, err)
	require.EqualError(t, skipped, "panic: index out of range")

	require.True(t, ctx.KVStore(key).Has([]byte("ok")))
	require.False(t, ctx.KVStore(key).Has([]byte("fails")))
	require.False(t, ctx.KVStore(key).Has([]byte("panics")))
	require.Len(t, ctx.EventManager().Events(), 1, "only the kept work's events")

	skipped, err = blockstep.Isolate(ctx, func(context.Context) error { return blockstep.Storage(fmt.Errorf("segment 7: %w", errors.New("EIO"))) })
	require.NoError(t, skipped)
	require.ErrorIs(t, err, blockstep.ErrStorage)
	require.Panics(t, func() {
		_, _ = blockstep.Isolate(ctx, func(context.Context) error { panic(blockstep.Storage(errors.New("EIO"))) })
	})
	require.NoError(t, blockstep.Storage(nil))
}
