package app

import (
	"bytes"
	"context"
	"fmt"
	"time"

	storetypes "cosmossdk.io/store/types"

	"github.com/cosmos/cosmos-sdk/codec"
	sdk "github.com/cosmos/cosmos-sdk/types"
	"github.com/cosmos/cosmos-sdk/x/authz"
	authzkeeper "github.com/cosmos/cosmos-sdk/x/authz/keeper"
	authzmodule "github.com/cosmos/cosmos-sdk/x/authz/module"
)

// AuthzPrunePerBlock bounds the expired-grant entries (a granter, a grantee and an expiry;
// each lists at most one grant per message type the chain routes) that x/authz's BeginBlock
// deletes in one block. The SDK's v0.53 BeginBlock deletes every entry due at once: grants
// made over many blocks, each paid for, all ending at one instant would be deleted in a
// single block, however many. Here they go at most this many per block, oldest first, as
// x/feegrant's EndBlock prunes at most 200 allowances. An expired grant is refused by MsgExec
// whether or not it is pruned yet (x/authz checks the expiry), so the delay changes no answer.
const AuthzPrunePerBlock = 200

// authzModule is x/authz with its BeginBlock's pruning bounded (AuthzPrunePerBlock).
type authzModule struct {
	authzmodule.AppModule
	key *storetypes.KVStoreKey
	cdc codec.Codec
}

func (m authzModule) BeginBlock(ctx context.Context) error {
	pruneExpiredGrants(sdk.UnwrapSDKContext(ctx), m.key, m.cdc, AuthzPrunePerBlock)
	return nil
}

// boundAuthzPruning puts authzModule in the module manager in place of x/authz's own, before
// the app loads (as quietEmptyBlocks does for three other modules).
func (app *App) boundAuthzPruning() {
	mod, ok := app.ModuleManager.Modules[authz.ModuleName].(authzmodule.AppModule)
	if !ok {
		panic(fmt.Sprintf("authz is %T, not the SDK's AppModule", app.ModuleManager.Modules[authz.ModuleName]))
	}
	app.ModuleManager.Modules[authz.ModuleName] = authzModule{AppModule: mod, key: app.GetKey(authzkeeper.StoreKey), cdc: app.appCodec}
}

// pruneExpiredGrants deletes up to limit entries of x/authz's grant queue due by the block's
// time, and their grants: what the SDK's DequeueAndDeleteExpiredGrants does, bounded. It
// never fails: an entry it cannot read (none can be, the keeper writes them) is deleted alone.
func pruneExpiredGrants(ctx sdk.Context, key *storetypes.KVStoreKey, cdc codec.Codec, limit int) int {
	store := ctx.KVStore(key)
	type due struct {
		key  []byte
		urls []string
	}
	var dues []due
	it := store.Iterator(authzkeeper.GrantQueuePrefix, storetypes.InclusiveEndBytes(authzkeeper.GrantQueueTimePrefix(ctx.BlockTime())))
	for ; it.Valid() && len(dues) < limit; it.Next() {
		var item authz.GrantQueueItem
		if err := cdc.Unmarshal(it.Value(), &item); err != nil {
			item.MsgTypeUrls = nil
		}
		dues = append(dues, due{bytes.Clone(it.Key()), item.MsgTypeUrls})
	}
	_ = it.Close() // a store iterator's Close does not fail
	// A queue key is the prefix, the expiry, then the length-prefixed granter and grantee; a
	// grant's key is its prefix, the same granter and grantee, then the message type URL.
	timeLen := len(sdk.FormatTimeBytes(time.Time{}))
	for _, d := range dues {
		store.Delete(d.key)
		if len(d.key) <= len(authzkeeper.GrantQueuePrefix)+timeLen {
			continue
		}
		pair := d.key[len(authzkeeper.GrantQueuePrefix)+timeLen:]
		for _, url := range d.urls {
			store.Delete(append(append(bytes.Clone(authzkeeper.GrantKey), pair...), url...))
		}
	}
	return len(dues)
}
