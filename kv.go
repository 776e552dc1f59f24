package cdb

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// kvDoc is a "kv" document (the instance's KV store as of its last
// completed execution) or a "kv_delta" document (the current execution's
// change to one key; a tombstone records a removal).
type kvDoc struct {
	ID              string `json:"id"`
	InstanceID      string `json:"instanceId"`
	Type            string `json:"type"`
	Key             string `json:"key"`
	Value           string `json:"value"`
	LastUpdatedAtMs uint64 `json:"lastUpdatedAtMs"`
	ExecutionID     uint64 `json:"executionId"`
	Tombstone       bool   `json:"tombstone,omitempty"`
	ETag            string `json:"_etag,omitempty"`
}

// kvState is one key's value after a turn (nil value = removed).
type kvState struct {
	value *string
	ts    uint64
}

// kvOps turns the KV events of a turn into document writes. Without a
// terminal status they become kv_delta documents (the current execution's
// changes, which the next fetch's snapshot excludes); when the status is
// Completed, Failed or ContinuedAsNew — the status alone triggers it — the
// delta, including this turn's changes, is merged into the kv documents
// and the delta documents are removed. A rewind's commit first puts the kv
// documents back to the failed execution's baseline, and a Failed merge
// keeps the baseline of the keys it changes (kvbaseline.go).
func kvOps(lk *orchLock, c duroxide.OrchestrationCommit) []cosmos.BatchOp {
	w := &kvWrites{instance: lk.instance, exec: c.ExecutionID, byKey: map[string]*kvState{}}
	store := w.restore(lk, c)
	inDelta := map[string]kvDoc{}
	for _, d := range lk.delta {
		inDelta[d.Key] = d
	}
	changes, order := kvChanges(c.HistoryDelta, store, inDelta)
	merge := c.Metadata.Status != nil && isTerminal(*c.Metadata.Status)
	if !merge {
		return append(append(w.ops(), deltaOps(lk, c, store, inDelta, changes, order)...), undoOps(lk, c, nil)...)
	}
	// Merge: the final value of each key is this turn's change, else the
	// delta's, else the store's (unchanged, so nothing to write).
	var ops []cosmos.BatchOp
	final := map[string]*kvState{}
	var keys []string
	for _, d := range lk.delta {
		st := &kvState{ts: d.LastUpdatedAtMs}
		if !d.Tombstone {
			st.value = ptr(d.Value)
		}
		final[d.Key] = st
		keys = append(keys, d.Key)
		ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: kvDeltaDocID(lk.instance, d.Key), Tolerate: []error{cosmos.ErrNotFound}})
	}
	for _, k := range order {
		if _, ok := final[k]; !ok {
			keys = append(keys, k)
		}
		final[k] = changes[k]
	}
	for _, k := range keys {
		if st := final[k]; st.value != nil {
			w.set(k, st)
		} else if _, ok := store[k]; ok {
			w.set(k, st)
		}
	}
	var baseline []kvDoc
	if *c.Metadata.Status == duroxide.StatusFailed {
		baseline = baselineOf(c.ExecutionID, store, keys)
	}
	return append(append(w.ops(), ops...), undoOps(lk, c, baseline)...)
}

// kvChanges folds a turn's KV events into each key's change, in the order
// the keys were first changed; store and inDelta are the keys
// KeyValuesCleared removes besides the turn's own.
func kvChanges(events []duroxide.Event, store map[string]duroxide.KVEntry, inDelta map[string]kvDoc) (map[string]*kvState, []string) {
	changes := map[string]*kvState{}
	var order []string
	set := func(k string, st *kvState) {
		if _, ok := changes[k]; !ok {
			order = append(order, k)
		}
		changes[k] = st
	}
	for i := range events {
		switch e := events[i].Kind.(type) {
		case duroxide.KeyValueSet:
			set(e.Key, &kvState{value: ptr(e.Value), ts: e.LastUpdatedAtMs})
		case duroxide.KeyValueCleared:
			set(e.Key, &kvState{})
		case duroxide.KeyValuesCleared:
			for k := range store {
				set(k, &kvState{})
			}
			for k := range inDelta {
				set(k, &kvState{})
			}
			for _, k := range order {
				set(k, &kvState{})
			}
		}
	}
	return changes, order
}

// deltaOps writes a running execution's changes as kv_delta documents.
func deltaOps(lk *orchLock, c duroxide.OrchestrationCommit, store map[string]duroxide.KVEntry, inDelta map[string]kvDoc,
	changes map[string]*kvState, order []string) []cosmos.BatchOp {
	var ops []cosmos.BatchOp
	for _, k := range order {
		st := changes[k]
		if _, stored := store[k]; st.value == nil && !stored {
			// Nothing to hide in the store: drop any delta instead of
			// writing a tombstone.
			if _, ok := inDelta[k]; ok {
				ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: kvDeltaDocID(lk.instance, k), Tolerate: []error{cosmos.ErrNotFound}})
			}
			continue
		}
		d := kvDoc{ID: kvDeltaDocID(lk.instance, k), InstanceID: lk.instance, Type: docKVDelta, Key: k, ExecutionID: c.ExecutionID,
			LastUpdatedAtMs: st.ts, Tombstone: st.value == nil}
		if st.value != nil {
			d.Value = *st.value
		}
		ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchUpsert, Doc: mustJSON(d)})
	}
	return ops
}

// KVValue implements duroxide.Provider: the merged view (the current
// execution's delta overrides the store; a tombstone hides it), read with
// one single-partition query.
func (p *Provider) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	const op = "get_kv_value"
	if err := validateInstanceID(op, instance); err != nil {
		return "", false, err
	}
	store, delta, err := p.readKV(ctx, instance, &key)
	if err != nil {
		return "", false, duroxide.Wrap(op, err)
	}
	if d, ok := delta[key]; ok {
		return d.Value, !d.Tombstone, nil
	}
	if d, ok := store[key]; ok {
		return d.Value, true, nil
	}
	return "", false, nil
}

// KVValues implements duroxide.Provider.
func (p *Provider) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	const op = "get_kv_all_values"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	store, delta, err := p.readKV(ctx, instance, nil)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	out := map[string]string{}
	for k, d := range store {
		out[k] = d.Value
	}
	for k, d := range delta {
		if d.Tombstone {
			delete(out, k)
		} else {
			out[k] = d.Value
		}
	}
	return out, nil
}

// readKV reads the kv and kv_delta documents (of one key, or all) with
// one single-partition query that also carries the instance document —
// its deletion tombstone hides every key — and the journals of a large
// turn. A committed large turn writes its KV changes through its
// journal, batch by batch, so while the instance names a pending turn
// the reader applies that turn's remaining journals on top of what it
// read: it sees the turn whole, never half (journal writes are final
// values, so applying one that is partly applied already is harmless).
func (p *Provider) readKV(ctx context.Context, instance string, key *string) (store, delta map[string]kvDoc, err error) {
	store, delta = map[string]kvDoc{}, map[string]kvDoc{}
	deleted := false
	var pending *pendingTurn
	var journals []journalDoc
	q := `SELECT c.id, c.type, c.key, c["value"], c.tombstone, c.lastUpdatedAtMs, c.deleted, c.pendingTurn, c.turn, c.seq, c.writes, c.deletes FROM c WHERE `
	var params cosmos.QueryParams
	if key != nil {
		q += `((c.type = 'kv' OR c.type = 'kv_delta') AND c.key = @key)`
		params = params.Add("@key", *key)
	} else {
		q += `(c.type = 'kv' OR c.type = 'kv_delta')`
	}
	q += ` OR c.type = 'instance' OR c.type = 'turn_journal'`
	_, err = p.st.Query(ctx, q, params, cosmos.QueryOptions{Partition: &instance, PageSize: -1}, func(raw []byte) bool {
		var d kvRow
		if json.Unmarshal(raw, &d) != nil {
			return true
		}
		switch d.Type {
		case docKV:
			store[d.Key] = d.kvDoc
		case docKVDelta:
			delta[d.Key] = d.kvDoc
		case docInstance:
			deleted = d.Deleted != nil
			pending = d.PendingTurn
		case docJournal:
			var j journalDoc
			if json.Unmarshal(raw, &j) == nil {
				journals = append(journals, j)
			}
		}
		return true
	})
	if err != nil || deleted {
		return map[string]kvDoc{}, map[string]kvDoc{}, err
	}
	if pending != nil {
		overlayJournals(instance, key, pending, journals, store, delta)
	}
	return store, delta, nil
}

// overlayJournals applies the KV writes and deletes of the pending turn's
// journals (in order) to store and delta.
func overlayJournals(instance string, key *string, pt *pendingTurn, journals []journalDoc, store, delta map[string]kvDoc) {
	sort.Slice(journals, func(i, j int) bool { return journals[i].Seq < journals[j].Seq })
	for _, j := range journals {
		if j.Turn != pt.Turn {
			continue // garbage of a turn that never committed
		}
		// The order of applyJournal: writes, then deletes.
		for _, w := range j.Writes {
			var kv kvDoc
			if json.Unmarshal(w.Doc, &kv) != nil || (key != nil && kv.Key != *key) {
				continue
			}
			switch kv.Type {
			case docKV:
				store[kv.Key] = kv
			case docKVDelta:
				delta[kv.Key] = kv
			}
		}
		for _, d := range j.Deletes {
			for k := range store {
				if kvDocID(instance, k) == d.ID {
					delete(store, k)
				}
			}
			for k := range delta {
				if kvDeltaDocID(instance, k) == d.ID {
					delete(delta, k)
				}
			}
		}
	}
}

// kvRow is a KV query row; instance rows carry the deletion tombstone
// and the pending turn.
type kvRow struct {
	kvDoc
	Deleted     *int64       `json:"deleted"`
	PendingTurn *pendingTurn `json:"pendingTurn"`
}
