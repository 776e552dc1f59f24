package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
)

// Turns bigger than one transactional batch (100 operations / 2 MB), e.g.
// a fan-out of 500 activities, commit in three phases without ever being
// half-visible:
//
//  1. Stage. Every new document (history, work items, messages, outbox
//     intents) is created carrying "staged": <turn>; staged documents are
//     invisible to discovery and to history reads. Everything else the
//     turn does (KV writes, message deletes, markers) is written as
//     journal documents. Nothing is visible yet; a crash here leaves only
//     garbage that the next lock holder of the instance removes, and the
//     turn is simply retried.
//  2. Commit. One batch replaces the instance document (If-Match: the
//     lock) and records pendingTurn = {turn, journal count}. From here on
//     the turn has happened: history readers treat documents staged by the
//     pending turn as visible.
//  3. Roll forward. Staged documents are unstaged, the journal is applied
//     and deleted, and pendingTurn is cleared. Every step is idempotent, so
//     whoever finds a pendingTurn — the acking process right away, the next
//     fetch of the instance before it loads anything, or the reconciler —
//     can finish it.
//
// Ids are deterministic, so a retried stage or roll-forward never
// duplicates a document.

const docJournal = "turn_journal"

// maxJournalBytes bounds one journal document, leaving room for its
// envelope under the 2 MiB document limit.
const maxJournalBytes = 1536 * 1024

// pendingTurn is recorded on the instance document between commit and
// roll-forward.
type pendingTurn struct {
	Turn    string `json:"turn"`
	Journal int    `json:"journal"`
}

// journalDoc holds part of a committed turn's remaining work.
type journalDoc struct {
	ID         string         `json:"id"`
	InstanceID string         `json:"instanceId"`
	Type       string         `json:"type"`
	Turn       string         `json:"turn"`
	Seq        int            `json:"seq"`
	Unstage    []string       `json:"unstage,omitempty"`
	Deletes    []journalWrite `json:"deletes,omitempty"`
	Writes     []journalWrite `json:"writes,omitempty"`
}

type journalWrite struct {
	Replace  bool            `json:"replace,omitempty"` // else upsert
	ID       string          `json:"id"`
	Doc      json.RawMessage `json:"doc,omitempty"`
	Tolerate []int           `json:"tolerate,omitempty"`
}

func journalDocID(inst, turn string, seq int) string {
	return docID(user(inst), fixed("journal"), fixed(turn), num(uint64(seq)))
}

func turnOf(token string) string { return token[strings.LastIndexByte(token, '.')+1:] }

// withStaged adds "staged": turn to a JSON object.
func withStaged(doc []byte, turn string) []byte {
	out := make([]byte, 0, len(doc)+len(turn)+16)
	out = append(out, doc[:len(doc)-1]...)
	out = append(out, `,"staged":"`...)
	out = append(out, turn...)
	return append(out, `"}`...)
}

// commitLargeTurn runs the three phases for plan.
func (p *Provider) commitLargeTurn(ctx context.Context, plan *turnPlan) error {
	turn := turnOf(plan.token)
	var staged []batchOp
	var unstage []string
	var rest []batchOp
	for _, o := range plan.ops {
		if o.kind == bCreate {
			staged = append(staged, batchOp{kind: bCreate, id: o.id, doc: withStaged(o.doc, turn)})
			unstage = append(unstage, o.id)
			continue
		}
		rest = append(rest, o)
	}
	journals, err := buildJournal(plan.instance, turn, unstage, rest)
	if err != nil {
		return err
	}
	// Phase 1: stage, then write the journal.
	for _, chunk := range chunkOps(staged) {
		if err := p.stage(ctx, plan.instance, turn, chunk); err != nil {
			return err
		}
	}
	for i := range journals {
		if _, err := p.st.upsert(ctx, plan.instance, mustJSON(journals[i]), nil); err != nil {
			return err
		}
	}
	// Phase 2: commit.
	var doc instanceDoc
	if err := json.Unmarshal(plan.commit.doc, &doc); err != nil {
		return err
	}
	doc.PendingTurn = &pendingTurn{Turn: turn, Journal: len(journals)}
	commit := plan.commit
	commit.doc = mustJSON(doc)
	b := newBatch(plan.instance)
	b.add(commit)
	if _, err := p.st.execute(ctx, b, false); err != nil {
		return err
	}
	// Phase 3: roll forward. The turn is committed whatever happens now;
	// a failure is finished later by the next fetch or the reconciler.
	if err := p.rollForward(ctx, plan.instance, doc.PendingTurn); err != nil {
		p.opts.Logger.Warn("rolling a large turn forward; it will be finished later", "instance", plan.instance, "error", err)
	}
	return nil
}

// stage creates one batch of staged documents. A 409 on a retry means our
// own earlier attempt landed (batches are atomic), unless the existing
// document is not ours: then it is a genuine duplicate.
func (p *Provider) stage(ctx context.Context, inst, turn string, ops []batchOp) error {
	b := newBatch(inst)
	for _, o := range ops {
		b.add(o)
	}
	for cleaned := false; ; cleaned = true {
		_, err := p.st.execute(ctx, b, false)
		var be *BatchError
		if !errors.As(err, &be) || be.StatusCode != http.StatusConflict {
			return err
		}
		body, _, rerr := p.st.read(ctx, inst, be.ID)
		if rerr != nil {
			return err
		}
		var head struct {
			Staged *string `json:"staged"`
		}
		if json.Unmarshal(body, &head) == nil && head.Staged != nil && *head.Staged == turn {
			return nil
		}
		if cleaned {
			return err
		}
		if n, cerr := p.cleanStale(ctx, inst, turn); cerr != nil || n == 0 {
			return err
		}
	}
}

// cleanStale removes what a large turn that never committed left behind
// (staged documents and journals of any turn other than keep and the
// instance's committed pending turn). Only the lock holder calls it, so
// no such turn can still commit.
func (p *Provider) cleanStale(ctx context.Context, inst, keep string) (int, error) {
	doc, _, err := p.readInstanceRaw(ctx, inst)
	if err != nil {
		return 0, err
	}
	pending := ""
	if doc != nil && doc.PendingTurn != nil {
		pending = doc.PendingTurn.Turn
	}
	var ids []string
	q := "SELECT c.id, c.staged, c.turn, c.type FROM c WHERE (IS_DEFINED(c.staged) AND NOT IS_NULL(c.staged)) OR c.type = 'turn_journal'"
	_, err = p.st.query(ctx, q, nil, queryOptions{Partition: &inst, PageSize: 1000}, func(raw []byte) bool {
		var r struct {
			ID     string `json:"id"`
			Staged string `json:"staged"`
			Turn   string `json:"turn"`
			Type   string `json:"type"`
		}
		if json.Unmarshal(raw, &r) != nil {
			return true
		}
		t := r.Staged
		if r.Type == docJournal {
			t = r.Turn
		}
		if t != keep && t != pending {
			ids = append(ids, r.ID)
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	return len(ids), p.deleteAll(ctx, inst, ids)
}

// chunkOps splits ops into batches within the service limits.
func chunkOps(ops []batchOp) [][]batchOp {
	var out [][]batchOp
	b := newBatch("")
	var cur []batchOp
	for _, o := range ops {
		b.add(o)
		if !b.fits() && len(cur) > 0 {
			out = append(out, cur)
			b = newBatch("")
			b.add(o)
			cur = nil
		}
		cur = append(cur, o)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func buildJournal(inst, turn string, unstage []string, rest []batchOp) ([]journalDoc, error) {
	var out []journalDoc
	cur := journalDoc{InstanceID: inst, Type: docJournal, Turn: turn}
	size := 0
	flush := func() {
		cur.Seq = len(out)
		cur.ID = journalDocID(inst, turn, cur.Seq)
		out = append(out, cur)
		cur = journalDoc{InstanceID: inst, Type: docJournal, Turn: turn}
		size = 0
	}
	grow := func(n int) {
		if size+n > maxJournalBytes && size > 0 {
			flush()
		}
		size += n
	}
	for _, id := range unstage {
		grow(len(id) + 4)
		cur.Unstage = append(cur.Unstage, id)
	}
	for _, o := range rest {
		w := journalWrite{ID: o.id, Tolerate: o.tolerate}
		switch o.kind {
		case bDelete:
			grow(len(o.id) + 16)
			cur.Deletes = append(cur.Deletes, w)
			continue
		case bReplace:
			w.Replace = true
		case bUpsert:
		default:
			return nil, fmt.Errorf("cdb: internal error: cannot journal operation kind %d", o.kind)
		}
		if len(o.doc) > maxJournalBytes {
			return nil, duroxide.Permanent("ack_orchestration_item", "a %d-byte document cannot be part of a turn larger than one batch", len(o.doc))
		}
		w.Doc = o.doc
		grow(len(o.doc) + len(o.id) + 32)
		cur.Writes = append(cur.Writes, w)
	}
	flush()
	return out, nil
}

// rollForward finishes a committed large turn. Every step tolerates having
// been done before.
func (p *Provider) rollForward(ctx context.Context, inst string, pt *pendingTurn) error {
	_, err := p.rollForwardIDs(ctx, inst, pt)
	return err
}

// rollForwardIDs is rollForward, also reporting the ids of the documents
// the journal deleted or replaced (the turn's consumed messages).
func (p *Provider) rollForwardIDs(ctx context.Context, inst string, pt *pendingTurn) (map[string]bool, error) {
	gone := map[string]bool{}
	for seq := 0; seq < pt.Journal; seq++ {
		body, _, err := p.st.read(ctx, inst, journalDocID(inst, pt.Turn, seq))
		if isNotFound(err) {
			continue // applied and deleted by an earlier roll-forward
		}
		if err != nil {
			return gone, err
		}
		var j journalDoc
		if err := json.Unmarshal(body, &j); err != nil {
			return gone, fmt.Errorf("journal %d of turn %s cannot be decoded: %w", seq, pt.Turn, err)
		}
		for _, d := range j.Deletes {
			gone[d.ID] = true
		}
		for _, w := range j.Writes {
			if w.Replace {
				gone[w.ID] = true
			}
		}
		if err := p.applyJournal(ctx, inst, &j); err != nil {
			return gone, err
		}
	}
	// Clear the marker only if it is still this turn's; the condition
	// makes a concurrent roll-forward harmless.
	cond, err := pendingTurnCondition(pt.Turn)
	if err != nil {
		return gone, err
	}
	var ops azcosmos.PatchOperations
	ops.SetCondition(cond)
	ops.AppendSet("/pendingTurn", jsonNull)
	_, _, err = p.st.patch(ctx, inst, instanceDocID(inst), ops, nil, false)
	if err != nil && !isPrecondition(err) && !isNotFound(err) {
		return gone, err
	}
	return gone, nil
}

func (p *Provider) applyJournal(ctx context.Context, inst string, j *journalDoc) error {
	var ops []batchOp
	for _, id := range j.Unstage {
		var po azcosmos.PatchOperations
		po.AppendSet("/staged", jsonNull)
		ops = append(ops, batchOp{kind: bPatch, id: id, patch: po, tolerate: []int{http.StatusNotFound}})
	}
	for _, w := range j.Writes {
		if w.Replace {
			ops = append(ops, batchOp{kind: bReplace, id: w.ID, doc: w.Doc, tolerate: []int{http.StatusNotFound}})
		} else {
			ops = append(ops, batchOp{kind: bUpsert, id: w.ID, doc: w.Doc})
		}
	}
	for _, d := range j.Deletes {
		ops = append(ops, batchOp{kind: bDelete, id: d.ID, tolerate: append([]int{http.StatusNotFound}, d.Tolerate...)})
	}
	ops = append(ops, batchOp{kind: bDelete, id: j.ID, tolerate: []int{http.StatusNotFound}})
	for _, chunk := range chunkOps(ops) {
		b := newBatch(inst)
		for _, o := range chunk {
			b.add(o)
		}
		if _, err := p.st.executeTolerant(ctx, b, false); err != nil {
			return err
		}
	}
	return nil
}

// visible reports whether a document is part of the committed state: not
// staged, or staged by the instance's committed pending turn.
func visible(staged *string, pt *pendingTurn) bool {
	return staged == nil || (pt != nil && *staged == pt.Turn)
}

// finishPendingTurns rolls forward large turns whose acking process died
// after the commit; run by the reconciler, a bounded step per round unless
// full (paging.go). One failing instance does not stop the others.
func (p *Provider) finishPendingTurns(ctx context.Context, full bool) error {
	q := "SELECT c.instanceId, c.pendingTurn FROM c WHERE c.type = 'instance' AND IS_DEFINED(c.pendingTurn) AND NOT IS_NULL(c.pendingTurn)"
	type row struct {
		InstanceID  string       `json:"instanceId"`
		PendingTurn *pendingTurn `json:"pendingTurn"`
	}
	var rows []row
	err := p.reconcileScan(ctx, "pending_turns", full, scanRequest{text: q, fresh: noParams, pageSize: 100}, func(raw []byte) {
		var r row
		if json.Unmarshal(raw, &r) == nil && r.PendingTurn != nil {
			rows = append(rows, r)
		}
	})
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range rows {
		if err := p.rollForward(ctx, r.InstanceID, r.PendingTurn); err != nil {
			errs = append(errs, fmt.Errorf("instance %q: %w", r.InstanceID, err))
		}
	}
	return errors.Join(errs...)
}
