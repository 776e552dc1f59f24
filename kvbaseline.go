package cdb

import (
	"maps"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// A rewind starts execution N+1 replaying failed execution N's prefix,
// which read the KV as of N's start; N's Failed ack merged N's changes
// into the kv documents. So that Failed ack also writes, for each key N
// changed (its kv_delta documents and the ack's own changes), a kv_undo
// document with the key's value as of N's start (a tombstone for a key
// that did not exist). The fetch that locks the failed instance loads
// them with the kv documents (the same query: no request more) and hands
// the runtime the KV as of N's start (OrchestrationItem.KVBaseline); the
// rewind's commit (OrchestrationCommit.RestoreKV) writes the undo
// documents' values back to the kv documents and removes them, in its
// one batch.
//
// Why an undo log and not a copy of the KV: a failed execution changes a
// few keys of a store of up to MaxKVKeys, and the undo log costs one
// document per changed key, written in the Failed ack's batch and removed
// in the rewind's, where a copy would write every key on every failure.
// Each undo document holds one key's value, as its kv document does, so
// it fits the 2 MB document limit whenever the kv document did.
//
// The undo documents are dropped by the first commit of a later execution
// that is not the rewind of N (a restart, or a rewind request that
// arrived after another execution started), and with the instance's
// other documents by a delete. The turn cache (turncache.go) holds no
// undo documents: a turn that writes or finds them is not cached, so the
// next fetch queries and sees them.

// storeKV records a loaded kv document.
func (lk *orchLock) storeKV(d kvDoc) {
	if lk.kvStore == nil {
		lk.kvStore = map[string]duroxide.KVEntry{}
	}
	lk.kvStore[d.Key] = duroxide.KVEntry{Value: d.Value, LastUpdatedAtMs: d.LastUpdatedAtMs}
}

// kvBaseline is the locked item's KVBaseline: when the current execution
// failed, the KV as of its start (snapshot with its undo documents
// applied); nil otherwise. A failed execution with no undo documents
// changed no key (or failed before this provider kept baselines): its
// baseline is the snapshot.
func (lk *orchLock) kvBaseline(snapshot map[string]duroxide.KVEntry) map[string]duroxide.KVEntry {
	if !lk.doc.exists() || lk.doc.Status != duroxide.StatusFailed {
		return nil
	}
	b := maps.Clone(snapshot)
	for _, u := range lk.undo {
		if u.ExecutionID != lk.doc.CurrentExecutionID {
			continue
		}
		if u.Tombstone {
			delete(b, u.Key)
		} else {
			b[u.Key] = duroxide.KVEntry{Value: u.Value, LastUpdatedAtMs: u.LastUpdatedAtMs}
		}
	}
	return b
}

// kvWrites collects a commit's kv document writes by key, so that the
// rewind's restore and the turn's own merge write each document once
// (a batch may not touch one id twice).
type kvWrites struct {
	instance string
	exec     uint64
	byKey    map[string]*kvState
	order    []string
}

func (w *kvWrites) set(k string, st *kvState) {
	if _, ok := w.byKey[k]; !ok {
		w.order = append(w.order, k)
	}
	w.byKey[k] = st
}

// restore returns the kv documents' state the commit applies to: for a
// rewind's commit (RestoreKV) of the failed execution whose undo
// documents the lock loaded, the failed execution's baseline, whose
// writes w then holds; else the loaded kv documents.
func (w *kvWrites) restore(lk *orchLock, c duroxide.OrchestrationCommit) map[string]duroxide.KVEntry {
	if !c.RestoreKV {
		return lk.kvStore
	}
	store := maps.Clone(lk.kvStore)
	if store == nil {
		store = map[string]duroxide.KVEntry{}
	}
	for _, u := range lk.undo {
		if u.ExecutionID+1 != c.ExecutionID {
			continue
		}
		if u.Tombstone {
			delete(store, u.Key)
			w.set(u.Key, &kvState{})
			continue
		}
		store[u.Key] = duroxide.KVEntry{Value: u.Value, LastUpdatedAtMs: u.LastUpdatedAtMs}
		w.set(u.Key, &kvState{value: ptr(u.Value), ts: u.LastUpdatedAtMs})
	}
	return store
}

// ops are the kv document writes (a removal tolerates a document already
// gone: a restore removes keys the failed execution created).
func (w *kvWrites) ops() []cosmos.BatchOp {
	var ops []cosmos.BatchOp
	for _, k := range w.order {
		st := w.byKey[k]
		if st.value == nil {
			ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: kvDocID(w.instance, k), Tolerate: []error{cosmos.ErrNotFound}})
			continue
		}
		d := kvDoc{ID: kvDocID(w.instance, k), InstanceID: w.instance, Type: docKV, Key: k, Value: *st.value,
			LastUpdatedAtMs: st.ts, ExecutionID: w.exec}
		ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchUpsert, Doc: mustJSON(d)})
	}
	return ops
}

// baselineOf is the undo documents of failed execution exec: keys' values
// in store, the kv documents as of its start.
func baselineOf(exec uint64, store map[string]duroxide.KVEntry, keys []string) []kvDoc {
	out := make([]kvDoc, 0, len(keys))
	for _, k := range keys {
		u := kvDoc{Type: docKVUndo, Key: k, ExecutionID: exec, Tombstone: true}
		if v, ok := store[k]; ok {
			u.Value, u.LastUpdatedAtMs, u.Tombstone = v.Value, v.LastUpdatedAtMs, false
		}
		out = append(out, u)
	}
	return out
}

// undoOps writes a Failed ack's undo documents (fresh) and removes the
// loaded ones no longer needed: those fresh ones replace, and those of an
// execution before the commit's (restored by a rewind, or left behind by
// a restart). A commit of the failed execution itself (a late message
// drained) keeps them.
func undoOps(lk *orchLock, c duroxide.OrchestrationCommit, fresh []kvDoc) []cosmos.BatchOp {
	var ops []cosmos.BatchOp
	written := map[string]bool{}
	for _, u := range fresh {
		u.ID, u.InstanceID = kvUndoDocID(lk.instance, u.Key), lk.instance
		written[u.Key] = true
		ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchUpsert, Doc: mustJSON(u)})
	}
	for _, u := range lk.undo {
		if written[u.Key] || (len(fresh) == 0 && u.ExecutionID >= c.ExecutionID) {
			continue
		}
		ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: kvUndoDocID(lk.instance, u.Key), Tolerate: []error{cosmos.ErrNotFound}})
	}
	return ops
}
