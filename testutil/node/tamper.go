package node

import (
	"bytes"
	"fmt"
	"path/filepath"

	"cosmossdk.io/log"
	"cosmossdk.io/store/metrics"
	"cosmossdk.io/store/rootmulti"
	storetypes "cosmossdk.io/store/types"

	dbm "github.com/cosmos/cosmos-db"
	"github.com/cosmos/iavl"

	"cosmossdk.io/store/wrapper"
)

// Tampering describes an edit made to a stopped node's application state.
type Tampering struct {
	Height   int64  // the version that was rewritten (the node's last committed height)
	Store    string // module store the edited value lives in
	Key      []byte
	Original []byte // the app hash before, as CometBFT recorded it
	Tampered []byte // the app hash the node's store now reports
}

// TamperAppState rewrites the last committed version of a stopped node's application store so
// that it is identical except that the value under key in store is replaced by edit(value) —
// what an operator with a database editor could do. The version keeps its height, so only the
// app hash betrays the edit.
func (n *Node) TamperAppState(store string, key []byte, edit func(value []byte) ([]byte, error)) (Tampering, error) {
	if n.Running() {
		return Tampering{}, fmt.Errorf("stop the node before tampering with its state")
	}
	db, err := dbm.NewGoLevelDB("application", filepath.Join(n.Home, "data"), nil)
	if err != nil {
		return Tampering{}, err
	}
	defer db.Close()
	cms := rootmulti.NewStore(db, log.NewNopLogger(), metrics.NewNoOpMetrics())
	h := rootmulti.GetLatestVersion(db)
	info, err := cms.GetCommitInfo(h)
	if err != nil {
		return Tampering{}, err
	}
	keys := map[string]*storetypes.KVStoreKey{}
	for _, si := range info.StoreInfos {
		keys[si.Name] = storetypes.NewKVStoreKey(si.Name)
		cms.MountStoreWithDB(keys[si.Name], storetypes.StoreTypeIAVL, nil)
	}
	if keys[store] == nil {
		return Tampering{}, fmt.Errorf("no store %q at height %d", store, h)
	}
	if err := cms.LoadLatestVersion(); err != nil {
		return Tampering{}, err
	}
	t := Tampering{Height: h, Store: store, Original: cms.LastCommitID().Hash}

	// Read what block h changed in every store (IAVL keeps it: the nodes of version h), step
	// the stores back to h-1 and apply the same changes again, so that version h is rebuilt
	// exactly; then edit one value.
	changes := map[string][]*iavl.KVPair{}
	var stored [][2][]byte
	for name := range keys {
		tree := iavl.NewMutableTree(wrapper.NewDBWrapper(dbm.NewPrefixDB(db, []byte("s/k:"+name+"/"))), 0, true, log.NewNopLogger())
		if _, err := tree.LoadVersion(h); err != nil {
			return Tampering{}, fmt.Errorf("store %s: %w", name, err)
		}
		err := tree.TraverseStateChanges(h, h, func(_ int64, cs *iavl.ChangeSet) error {
			changes[name] = cs.Pairs
			return nil
		})
		if err != nil {
			return Tampering{}, fmt.Errorf("store %s: %w", name, err)
		}
	}
	it := cms.GetKVStore(keys[store]).Iterator(nil, nil)
	for ; it.Valid(); it.Next() {
		stored = append(stored, [2][]byte{bytes.Clone(it.Key()), bytes.Clone(it.Value())})
	}
	it.Close()
	if err := cms.RollbackToVersion(h - 1); err != nil {
		return Tampering{}, err
	}
	for name, k := range keys {
		kv := cms.GetKVStore(k)
		for _, c := range changes[name] {
			if c.Delete {
				kv.Delete(c.Key)
			} else {
				kv.Set(c.Key, c.Value)
			}
		}
	}
	if rebuilt := cms.WorkingHash(); !bytes.Equal(rebuilt, t.Original) {
		return Tampering{}, fmt.Errorf("rebuilding version %d gave app hash %X, not %X", h, rebuilt, t.Original)
	}
	for _, e := range stored {
		if bytes.Equal(e[0], key) {
			v, err := edit(bytes.Clone(e[1]))
			if err != nil {
				return Tampering{}, err
			}
			cms.GetKVStore(keys[store]).Set(e[0], v)
			t.Key = e[0]
			break
		}
	}
	if t.Key == nil {
		return Tampering{}, fmt.Errorf("no key %X in store %s at height %d", key, store, h)
	}
	id := cms.Commit()
	if id.Version != h {
		return Tampering{}, fmt.Errorf("tampered state committed as version %d, want %d", id.Version, h)
	}
	t.Tampered = id.Hash
	return t, nil
}
