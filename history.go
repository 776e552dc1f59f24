package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
	"github.com/duroxide-go/cdb/internal/limits"
)

// Read implements duroxide.Provider: the current execution's history. An
// unknown instance has an empty history; an undecodable event is an error,
// never skipped.
func (p *Provider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	const op = "read"
	if err := validateInstanceID(op, instance); err != nil {
		return nil, err
	}
	events, _, err := p.readCurrent(ctx, op, instance)
	return events, err
}

// readCurrent is Read, also returning the instance document the history
// is consistent with (nil when there is none, or it is being deleted).
func (p *Provider) readCurrent(ctx context.Context, op, instance string) ([]duroxide.Event, *instanceDoc, error) {
	doc, etag, err := p.readInstanceRaw(ctx, instance)
	if err != nil {
		return nil, nil, duroxide.Wrap(op, err)
	}
	if doc != nil && doc.Deleted != nil {
		return nil, nil, nil // being deleted: already gone for readers
	}
	if doc.exists() {
		docs, err := p.queryHistory(ctx, instance, &doc.CurrentExecutionID)
		if err != nil {
			return nil, nil, duroxide.Wrap(op, err)
		}
		return p.settleHistory(ctx, op, instance, doc.CurrentExecutionID, docs, doc, etag)
	}
	// No instance document: history may still have been appended directly
	// (AppendWithExecution). Read the latest execution there is.
	docs, err := p.queryHistory(ctx, instance, nil)
	if err != nil {
		return nil, nil, duroxide.Wrap(op, err)
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
	events, err := decodeVisible(op, instance, cur, nil)
	return events, doc, err
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
	return decodeAll(op, instance, kept)
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
	events, _, err := p.settleHistory(ctx, op, instance, exec, docs, nil, "")
	return events, err
}

// A large turn's history documents are created staged and unstaged by its
// roll-forward, batch by batch; they count once the turn is committed
// (the instance's pendingTurn names it, or names it no longer because
// the roll-forward ended). A reader that sees staged documents must
// therefore know, for the moment of its query, whether their turn had
// committed. It brackets the query with two reads of the instance
// document: a staged document is visible if either read names its turn
// pending, and garbage of a turn that never committed if the instance did
// not change in between (no commit happened during the query, and a turn
// committed before it would have been fully unstaged or still pending).
// Otherwise a turn committed and ended around the query: read again.
// Only this rare path costs the extra reads.

// The same bracketing covers a reader racing a deletion's sweep, which
// removes history batch by batch: Read knows from the instance document
// how many events the execution has, and only a count that does not match
// (or staged documents) costs the second read. A reader then sees the
// history whole or, once the instance is tombstoned, nothing.

// maxSettleRounds bounds the re-reads of a history that keeps changing
// under a reader.
const maxSettleRounds = 8

// settleHistory decodes docs (one execution's history, queried after the
// instance read before, if any) so that it shows every large turn whole
// or not at all, and never a history half swept by a deletion.
func (p *Provider) settleHistory(ctx context.Context, op, instance string, exec uint64, docs []historyDoc, before *instanceDoc, beforeTag azcore.ETag) ([]duroxide.Event, *instanceDoc, error) {
	for round := 0; ; round++ {
		if !anyStaged(docs) && countMatches(docs, before, exec) {
			events, err := decodeVisible(op, instance, docs, nil)
			return events, before, err
		}
		after, afterTag, err := p.readInstanceRaw(ctx, instance)
		if err != nil {
			return nil, nil, duroxide.Wrap(op, err)
		}
		if after == nil || after.Deleted != nil {
			return nil, nil, nil // deleted meanwhile: gone for readers
		}
		if before != nil {
			same := beforeTag == afterTag
			if !anyStaged(docs) && same {
				// Nothing changed during the query: the count is off for
				// another reason (events appended directly).
				events, err := decodeVisible(op, instance, docs, nil)
				return events, after, err
			}
			if keep, ok := committedTurns(docs, before, after, same); ok && anyStaged(docs) {
				// A turn named pending only by the second read may have
				// been committed after the query ran, while it was still
				// staging: the query then saw part of its documents. The
				// count the second read records tells; if it is off, the
				// next round queries after the commit.
				if kept := keptDocs(docs, keep); countMatches(kept, after, exec) {
					events, err := decodeAll(op, instance, kept)
					return events, after, err
				}
			}
		}
		if round >= maxSettleRounds {
			return nil, nil, &duroxide.ProviderError{Operation: op, Message: fmt.Sprintf("the history of %q kept changing during the read; try again", instance), Retryable: true}
		}
		// The query comes after a known instance state now.
		before, beforeTag = after, afterTag
		if docs, err = p.queryHistory(ctx, instance, &exec); err != nil {
			return nil, nil, duroxide.Wrap(op, err)
		}
	}
}

// countMatches reports whether docs hold as many events as the instance
// document before records for the execution; true when it records none
// (no instance read, or a document without per-execution counts).
func countMatches(docs []historyDoc, before *instanceDoc, exec uint64) bool {
	if before == nil {
		return true
	}
	ex := before.execution(exec)
	if ex == nil || ex.EventCount == 0 {
		return true
	}
	return len(docs) == ex.EventCount
}

func anyStaged(docs []historyDoc) bool {
	for _, d := range docs {
		if d.Staged != nil {
			return true
		}
	}
	return false
}

// committedTurns decides the staged turns seen by a query made between
// the instance states before and after (same reports that nothing
// changed in between). ok is false when a turn's fate cannot be told.
func committedTurns(docs []historyDoc, before, after *instanceDoc, same bool) (keep map[string]bool, ok bool) {
	keep = map[string]bool{}
	for _, pt := range []*pendingTurn{before.PendingTurn, after.PendingTurn} {
		if pt != nil {
			keep[pt.Turn] = true
		}
	}
	for _, d := range docs {
		if d.Staged != nil && !keep[*d.Staged] && !same {
			return nil, false
		}
	}
	return keep, true
}

// decodeAll decodes docs, staged or not.
func decodeAll(op, instance string, docs []historyDoc) ([]duroxide.Event, error) {
	events, err := decodeHistory(docs)
	if err != nil {
		return nil, duroxide.Permanent(op, "instance %q: %v", instance, err)
	}
	return events, nil
}

// keptDocs returns the unstaged documents and those staged by a turn in
// keep.
func keptDocs(docs []historyDoc, keep map[string]bool) []historyDoc {
	kept := make([]historyDoc, 0, len(docs))
	for _, d := range docs {
		if d.Staged == nil || keep[*d.Staged] {
			kept = append(kept, d)
		}
	}
	return kept
}

// queryHistory reads history documents of one execution (or all) with a
// single-partition query; ordering happens client-side after decoding, as
// eventId is only a double in Cosmos.
func (p *Provider) queryHistory(ctx context.Context, instance string, exec *uint64) ([]historyDoc, error) {
	q := "SELECT * FROM c WHERE c.type = 'history'"
	var params cosmos.QueryParams
	if exec != nil {
		q += " AND c.executionId = @exec"
		params = params.Add("@exec", *exec)
	}
	var docs []historyDoc
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{Partition: &instance, PageSize: -1}, func(raw []byte) bool {
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
	// The appended events bypass the instance document, so the turn
	// cache could not notice them (turncache.go).
	p.turns.drop(instance)
	defer p.turns.drop(instance)
	b := cosmos.NewBatch(instance)
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		_, err := p.st.Execute(ctx, b, false)
		b = cosmos.NewBatch(instance)
		if be, ok := err.(*BatchError); ok && errors.Is(be, cosmos.ErrConflict) {
			return duroxide.Kinded(duroxide.ErrDuplicateEvent, op, "duplicate history event: %s already exists", be.ID)
		}
		return duroxide.Wrap(op, err)
	}
	for i := range events {
		data, err := events[i].MarshalJSON() // serde's bytes: json.Marshal would HTML-escape
		if err != nil {
			return duroxide.Permanent(op, "event %d cannot be encoded: %v", events[i].EventID, err)
		}
		h := historyDoc{ID: historyDocID(instance, executionID, events[i].EventID), InstanceID: instance, Type: docHistory,
			ExecutionID: executionID, EventID: events[i].EventID, EventData: string(data)}
		doc := mustJSON(h)
		if len(doc) > cosmos.MaxDocBytes {
			return limits.DocSize(op, fmt.Sprintf("history event %d", events[i].EventID), len(doc))
		}
		if b.Len()+1 > cosmos.MaxBatchOps || b.Bytes+len(doc)+64 > cosmos.MaxBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
		b.Add(cosmos.BatchOp{Kind: cosmos.BatchCreate, ID: h.ID, Doc: doc})
	}
	return flush()
}

// decodeHistory orders history documents by event id and decodes them.
// Any undecodable event fails the whole history: callers turn that into
// history_error (fetch) or an error (read); nothing is dropped.
func decodeHistory(docs []historyDoc) ([]duroxide.Event, error) {
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].EventID < docs[j].EventID })
	events := make([]duroxide.Event, 0, len(docs))
	for _, d := range docs {
		ev, err := duroxide.UnmarshalEvent([]byte(d.EventData))
		if err != nil {
			return nil, fmt.Errorf("history event %d of execution %d cannot be decoded: %w", d.EventID, d.ExecutionID, err)
		}
		events = append(events, ev)
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].EventID < events[j].EventID })
	return events, nil
}

func (p *Provider) historyExecutions(ctx context.Context, instance string) ([]uint64, error) {
	var execs []uint64
	_, err := p.st.Query(ctx, "SELECT DISTINCT VALUE c.executionId FROM c WHERE c.type = 'history'", nil, cosmos.QueryOptions{Partition: &instance}, func(raw []byte) bool {
		var n uint64
		if json.Unmarshal(raw, &n) == nil {
			execs = append(execs, n)
		}
		return true
	})
	sort.Slice(execs, func(i, j int) bool { return execs[i] < execs[j] })
	return execs, err
}

// committedExecutions drops from execs (ascending) the executions past
// the instance document's current one: a large turn that starts the next
// execution stages its history before the commit that moves the
// document, and until then (or for ever, if its process dies first) that
// history is no execution of the instance.
func committedExecutions(execs []uint64, doc *instanceDoc) []uint64 {
	for len(execs) > 0 && execs[len(execs)-1] > doc.CurrentExecutionID {
		execs = execs[:len(execs)-1]
	}
	return execs
}
