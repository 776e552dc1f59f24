package cdb

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/duroxide-go/cdb/duroxide"
)

// Read implements duroxide.Provider: the current execution's history. An
// unknown instance has an empty history; an undecodable event is an error,
// never skipped.
func (p *Provider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	const op = "read"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	doc, _, err := p.readInstanceRaw(ctx, instance)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	if doc != nil && doc.Deleted != nil {
		return nil, nil // being deleted: already gone for readers
	}
	if doc.exists() {
		docs, err := p.queryHistory(ctx, instance, &doc.CurrentExecutionID)
		if err != nil {
			return nil, duroxide.Wrap(op, err)
		}
		return decodeVisible(op, instance, docs, doc.PendingTurn)
	}
	// No instance document: history may still have been appended directly
	// (AppendWithExecution). Read the latest execution there is.
	docs, err := p.queryHistory(ctx, instance, nil)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	var latest uint64
	for _, d := range docs {
		latest = max(latest, d.ExecutionID)
	}
	var cur []historyDoc
	for _, d := range docs {
		if d.ExecutionID == latest {
			cur = append(cur, d)
		}
	}
	return decodeVisible(op, instance, cur, nil)
}

// decodeVisible decodes the committed history: documents staged by a
// large turn count only once that turn is committed (pt).
func decodeVisible(op, instance string, docs []historyDoc, pt *pendingTurn) ([]duroxide.Event, error) {
	kept := docs[:0]
	for _, d := range docs {
		if visible(d.Staged, pt) {
			kept = append(kept, d)
		}
	}
	events, err := decodeHistory(kept)
	if err != nil {
		return nil, duroxide.Permanent(op, "instance %q: %v", instance, err)
	}
	return events, nil
}

// ReadWithExecution implements duroxide.Provider.
func (p *Provider) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	const op = "read_with_execution"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	if err := validateExecutionID(op, executionID); err != nil {
		return nil, err
	}
	return p.readExecution(ctx, op, instance, executionID)
}

func (p *Provider) readExecution(ctx context.Context, op, instance string, exec uint64) ([]duroxide.Event, error) {
	docs, err := p.queryHistory(ctx, instance, &exec)
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	var pt *pendingTurn
	for _, d := range docs {
		if d.Staged != nil {
			// Rare: a large turn is in flight; only the instance knows
			// whether it committed.
			doc, _, err := p.readInstance(ctx, instance)
			if err != nil {
				return nil, duroxide.Wrap(op, err)
			}
			if doc != nil {
				pt = doc.PendingTurn
			}
			break
		}
	}
	return decodeVisible(op, instance, docs, pt)
}

// queryHistory reads history documents of one execution (or all) with a
// single-partition query; ordering happens client-side after decoding, as
// eventId is only a double in Cosmos.
func (p *Provider) queryHistory(ctx context.Context, instance string, exec *uint64) ([]historyDoc, error) {
	q := "SELECT * FROM c WHERE c.type = 'history'"
	var params queryParams
	if exec != nil {
		q += " AND c.executionId = @exec"
		params = params.add("@exec", *exec)
	}
	var docs []historyDoc
	_, err := p.st.query(ctx, q, params, queryOptions{Partition: &instance, PageSize: -1}, func(raw []byte) bool {
		var h historyDoc
		if err := json.Unmarshal(raw, &h); err != nil {
			h = historyDoc{EventData: string(raw)} // surfaces as a decode error
		}
		docs = append(docs, h)
		return true
	})
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].EventID < docs[j].EventID })
	return docs, err
}

// AppendWithExecution implements duroxide.Provider (tests and fault
// injection). Events are created, never upserted: a duplicate event id is
// refused, never overwritten. Each batch is atomic.
func (p *Provider) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []duroxide.Event) error {
	const op = "append_with_execution"
	if err := validateInstanceID(op, instance); err != nil {
		return err
	}
	b := newBatch(instance)
	flush := func() error {
		if b.len() == 0 {
			return nil
		}
		_, err := p.st.execute(ctx, b, false)
		b = newBatch(instance)
		if be, ok := err.(*BatchError); ok && be.StatusCode == http.StatusConflict {
			return duroxide.Kinded(duroxide.ErrDuplicateEvent, op, "duplicate history event: %s already exists", be.ID)
		}
		return duroxide.Wrap(op, err)
	}
	for i := range events {
		data, err := json.Marshal(&events[i])
		if err != nil {
			return duroxide.Permanent(op, "event %d cannot be encoded: %v", events[i].EventID, err)
		}
		h := historyDoc{ID: historyDocID(instance, executionID, events[i].EventID), InstanceID: instance, Type: docHistory,
			ExecutionID: executionID, EventID: events[i].EventID, EventData: string(data)}
		doc := mustJSON(h)
		if len(doc) > maxDocBytes {
			return duroxide.Permanent(op, "event %d would be %d bytes; Cosmos DB allows %d per document", events[i].EventID, len(doc), maxDocBytes)
		}
		if b.len()+1 > maxBatchOps || b.bytes+len(doc)+64 > maxBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		b.add(batchOp{kind: bCreate, id: h.ID, doc: doc})
	}
	return flush()
}
