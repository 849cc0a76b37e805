package keeper

import "sync/atomic"

// FetchObserver learns about reads the query server answered, for metrics. It is called on the
// query path only, never while executing a transaction, and must be cheap and not touch state.
type FetchObserver interface {
	// ObserveFetch follows a successful Fetch query that returned records records.
	ObserveFetch(records int)
	// ObserveRecord follows a successful Record query (one record).
	ObserveRecord()
}

// fetchObserverSlot is shared by every copy of a Keeper (the query server holds its own copy,
// made before the app can set an observer), so SetFetchObserver reaches all of them.
type fetchObserverSlot struct{ p atomic.Pointer[FetchObserver] }

// SetFetchObserver installs o (nil removes it). Observers are outside consensus: they see only
// queries, which change no state.
func (k Keeper) SetFetchObserver(o FetchObserver) {
	if k.fetchObs == nil {
		return
	}
	if o == nil {
		k.fetchObs.p.Store(nil)
		return
	}
	k.fetchObs.p.Store(&o)
}

func (k Keeper) fetchObserver() FetchObserver {
	if k.fetchObs == nil {
		return nil
	}
	if o := k.fetchObs.p.Load(); o != nil {
		return *o
	}
	return nil
}
