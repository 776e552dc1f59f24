package cdb

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/duroxide-go/cdb/duroxide"
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
// and the delta documents are removed.
func kvOps(lk *orchLock, c duroxide.OrchestrationCommit) []batchOp {
	inStore := map[string]bool{}
	for _, k := range lk.kvKeys {
		inStore[k] = true
	}
	inDelta := map[string]kvDoc{}
	for _, d := range lk.delta {
		inDelta[d.Key] = d
	}
	changes := map[string]*kvState{}
	var order []string
	set := func(k string, st *kvState) {
		if _, ok := changes[k]; !ok {
			order = append(order, k)
		}
		changes[k] = st
	}
	for i := range c.HistoryDelta {
		switch e := c.HistoryDelta[i].Kind.(type) {
		case duroxide.KeyValueSet:
			set(e.Key, &kvState{value: ptr(e.Value), ts: e.LastUpdatedAtMs})
		case duroxide.KeyValueCleared:
			set(e.Key, &kvState{})
		case duroxide.KeyValuesCleared:
			for k := range inStore {
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
	merge := c.Metadata.Status != nil && isTerminal(*c.Metadata.Status)
	var ops []batchOp
	if !merge {
		for _, k := range order {
			st := changes[k]
			if st.value == nil && !inStore[k] {
				// Nothing to hide in the store: drop any delta instead of
				// writing a tombstone.
				if _, ok := inDelta[k]; ok {
					ops = append(ops, batchOp{kind: bDelete, id: kvDeltaDocID(lk.instance, k), tolerate: []int{http.StatusNotFound}})
				}
				continue
			}
			d := kvDoc{ID: kvDeltaDocID(lk.instance, k), InstanceID: lk.instance, Type: docKVDelta, Key: k, ExecutionID: c.ExecutionID,
				LastUpdatedAtMs: st.ts, Tombstone: st.value == nil}
			if st.value != nil {
				d.Value = *st.value
			}
			ops = append(ops, batchOp{kind: bUpsert, doc: mustJSON(d)})
		}
		return ops
	}
	// Merge: the final value of each key is this turn's change, else the
	// delta's, else the store's (unchanged, so nothing to write).
	final := map[string]*kvState{}
	var keys []string
	for _, d := range lk.delta {
		st := &kvState{ts: d.LastUpdatedAtMs}
		if !d.Tombstone {
			st.value = ptr(d.Value)
		}
		final[d.Key] = st
		keys = append(keys, d.Key)
		ops = append(ops, batchOp{kind: bDelete, id: kvDeltaDocID(lk.instance, d.Key), tolerate: []int{http.StatusNotFound}})
	}
	for _, k := range order {
		if _, ok := final[k]; !ok {
			keys = append(keys, k)
		}
		final[k] = changes[k]
	}
	for _, k := range keys {
		st := final[k]
		if st.value == nil {
			if inStore[k] {
				ops = append(ops, batchOp{kind: bDelete, id: kvDocID(lk.instance, k), tolerate: []int{http.StatusNotFound}})
			}
			continue
		}
		d := kvDoc{ID: kvDocID(lk.instance, k), InstanceID: lk.instance, Type: docKV, Key: k, Value: *st.value,
			LastUpdatedAtMs: st.ts, ExecutionID: c.ExecutionID}
		ops = append(ops, batchOp{kind: bUpsert, doc: mustJSON(d)})
	}
	return ops
}

// GetKVValue implements duroxide.Provider: the merged view (the current
// execution's delta overrides the store; a tombstone hides it), read with
// one single-partition query.
func (p *Provider) GetKVValue(ctx context.Context, instance, key string) (string, bool, error) {
	const op = "get_kv_value"
	if err := validateInstanceID(op, instance); err != nil {
		return "", false, err
	}
	// The instance document rides along (projected to a few fields) so a
	// deletion tombstone hides the keys in the same request.
	q := `SELECT c.type, c.key, c["value"], c.tombstone, c.deleted FROM c WHERE ((c.type = 'kv' OR c.type = 'kv_delta') AND c.key = @key) OR c.type = 'instance'`
	var store, delta *kvDoc
	deleted := false
	_, err := p.st.query(ctx, q, queryParams{}.add("@key", key), queryOptions{Partition: &instance}, func(raw []byte) bool {
		var d kvRow
		if json.Unmarshal(raw, &d) == nil {
			switch d.Type {
			case docKV:
				store = &d.kvDoc
			case docKVDelta:
				delta = &d.kvDoc
			case docInstance:
				deleted = d.Deleted != nil
			}
		}
		return true
	})
	if err != nil {
		return "", false, duroxide.Wrap(op, err)
	}
	switch {
	case deleted:
		return "", false, nil
	case delta != nil && delta.Tombstone:
		return "", false, nil
	case delta != nil:
		return delta.Value, true, nil
	case store != nil:
		return store.Value, true, nil
	}
	return "", false, nil
}

// GetKVAllValues implements duroxide.Provider.
func (p *Provider) GetKVAllValues(ctx context.Context, instance string) (map[string]string, error) {
	const op = "get_kv_all_values"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	store, delta, err := p.readKV(ctx, instance)
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

func (p *Provider) readKV(ctx context.Context, instance string) (store, delta map[string]kvDoc, err error) {
	store, delta = map[string]kvDoc{}, map[string]kvDoc{}
	deleted := false
	q := `SELECT c.type, c.key, c["value"], c.tombstone, c.deleted FROM c WHERE c.type = 'kv' OR c.type = 'kv_delta' OR c.type = 'instance'`
	_, err = p.st.query(ctx, q, nil, queryOptions{Partition: &instance, PageSize: -1}, func(raw []byte) bool {
		var d kvRow
		if json.Unmarshal(raw, &d) == nil {
			switch d.Type {
			case docKV:
				store[d.Key] = d.kvDoc
			case docKVDelta:
				delta[d.Key] = d.kvDoc
			case docInstance:
				deleted = d.Deleted != nil
			}
		}
		return true
	})
	if deleted {
		return map[string]kvDoc{}, map[string]kvDoc{}, err
	}
	return store, delta, err
}

// kvRow is a KV query row; instance rows carry the deletion tombstone.
type kvRow struct {
	kvDoc
	Deleted *int64 `json:"deleted"`
}
