package memprovider

import (
	"maps"

	"github.com/duroxide-go/cdb/duroxide"
)

// An instance's KV: the store as of the previous execution, the current
// execution's delta over it, and the baseline a rewind of a failed
// execution restores.

// applyKV applies KV events, in order, to the instance's delta.
func applyKV(st *instanceState, events []duroxide.Event) {
	for _, e := range events {
		switch k := e.Kind.(type) {
		case duroxide.KeyValueSet:
			st.kvDelta[k.Key] = &duroxide.KVEntry{Value: k.Value, LastUpdatedAtMs: k.LastUpdatedAtMs}
		case duroxide.KeyValueCleared:
			st.kvDelta[k.Key] = nil
		case duroxide.KeyValuesCleared:
			clear(st.kvDelta)
			for key := range st.kvStore {
				st.kvDelta[key] = nil
			}
		}
	}
}

// keepBaseline records, before a Failed ack merges execution's changes,
// the KV as of its start, for a rewind of it; any other end drops it.
func keepBaseline(st *instanceState, execution uint64, status string) {
	st.kvBaseline, st.kvBaselineOf = nil, 0
	if status == duroxide.StatusFailed {
		st.kvBaseline, st.kvBaselineOf = maps.Clone(st.kvStore), execution
	}
}

// failedBaseline is the item's KVBaseline: the failed current
// execution's starting KV, nil when the current execution did not fail.
func failedBaseline(st *instanceState) map[string]duroxide.KVEntry {
	if st.kvBaseline == nil || st.kvBaselineOf != st.currentExecution || st.status() != duroxide.StatusFailed {
		return nil
	}
	return maps.Clone(st.kvBaseline)
}

// restoreKV drops the KV changes of the failed execution that the
// commit's execution rewinds: the KV becomes the one it started with.
// Without a baseline of that execution (none was kept: the provider
// predates it, or it did not fail) the KV stays as it is.
func restoreKV(st *instanceState, execution uint64) {
	if st.kvBaseline == nil || st.kvBaselineOf+1 != execution {
		return
	}
	st.kvStore, st.kvBaseline, st.kvBaselineOf = st.kvBaseline, nil, 0
	clear(st.kvDelta)
}

// dropStaleBaseline drops a baseline whose failed execution is no longer
// the current one (a restart started the next, or a rewind restored it):
// nothing may rewind it any more.
func dropStaleBaseline(st *instanceState) {
	if st.kvBaseline != nil && st.kvBaselineOf != st.currentExecution {
		st.kvBaseline, st.kvBaselineOf = nil, 0
	}
}

// mergeKV folds the delta into the store and clears it.
func mergeKV(st *instanceState) {
	for key, v := range st.kvDelta {
		if v == nil {
			delete(st.kvStore, key)
		} else {
			st.kvStore[key] = *v
		}
	}
	clear(st.kvDelta)
}

// kvView is the merged KV view (store overridden by delta). Callers hold
// p.mu.
func kvView(st *instanceState) map[string]duroxide.KVEntry {
	view := maps.Clone(st.kvStore)
	for key, v := range st.kvDelta {
		if v == nil {
			delete(view, key)
		} else {
			view[key] = *v
		}
	}
	return view
}
