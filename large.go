package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/google/uuid"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
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
//     whoever finds a pendingTurn — the acking process right away, the
//     next fetch of the instance before it loads anything, or the
//     maintenance loop — can finish it.
//
// Ids are deterministic, so a retried stage or roll-forward never
// duplicates a document.

const docJournal = "turn_journal"

// maxJournalBytes bounds one journal document, leaving room for its
// envelope under the 2 MiB document limit.
const maxJournalBytes = 1536 * 1024

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

// withStaged adds "staged": turn to a JSON object.
func withStaged(doc []byte, turn string) []byte {
	out := make([]byte, 0, len(doc)+len(turn)+16)
	out = append(out, doc[:len(doc)-1]...)
	out = append(out, `,"staged":"`...)
	out = append(out, turn...)
	return append(out, `"}`...)
}

// commitLargeTurn runs the three phases for plan. Every batch of the
// stage phase carries the lock proof (see lockProof), so a holder whose
// lock expired while it staged stops at its next batch instead of
// colliding with — and cleaning up — the new holder's documents.
func (p *Provider) commitLargeTurn(ctx context.Context, plan *turnPlan) error {
	lk := plan.lock
	// Each attempt stages under a turn id of its own: an ack retried after
	// a failure may carry another commit (the runtime fails the
	// orchestration, or re-plans), and a document an earlier attempt
	// staged under the same ids must not be taken for this one's. What an
	// earlier attempt of this lock left is removed first, behind the lock
	// proof; it cannot have committed (a commit that may have applied is
	// settled before, AckOrchestrationItem).
	if lk.staging {
		if _, err := p.cleanStale(ctx, lk, ""); err != nil {
			return err
		}
	}
	lk.staging = true
	turn := uuid.NewString()
	var staged []cosmos.BatchOp
	var stagedIdx []int // plan index (commit = 0) of each staged op
	var unstage []string
	var rest []cosmos.BatchOp
	for i, o := range plan.ops {
		if o.Kind == cosmos.BatchCreate {
			staged = append(staged, cosmos.BatchOp{Kind: cosmos.BatchCreate, ID: o.ID, Doc: withStaged(o.Doc, turn)})
			stagedIdx = append(stagedIdx, i+1)
			unstage = append(unstage, o.ID)
			continue
		}
		rest = append(rest, o)
	}
	journals, err := buildJournal(plan.instance, turn, unstage, rest)
	if err != nil {
		return err
	}
	// Phase 1: stage, then write the journal, each batch proving the lock.
	start := 0
	for _, chunk := range chunkOps(staged, 1) {
		if err := p.stage(ctx, lk, turn, chunk, stagedIdx[start:start+len(chunk)]); err != nil {
			return err
		}
		start += len(chunk)
	}
	for i := range journals {
		b := cosmos.NewBatch(plan.instance)
		b.Add(cosmos.BatchOp{Kind: cosmos.BatchUpsert, ID: journals[i].ID, Doc: mustJSON(journals[i])})
		if _, err := p.executeProved(ctx, lk, b); err != nil {
			return renumber(err, nil)
		}
	}
	// Phase 2: commit.
	var doc instanceDoc
	if err := json.Unmarshal(plan.commit.Doc, &doc); err != nil {
		return err
	}
	doc.PendingTurn = &pendingTurn{Turn: turn, Journal: len(journals), At: ms(p.now())}
	commit := plan.commit
	commit.Doc = mustJSON(doc)
	b := cosmos.NewBatch(plan.instance)
	b.Add(commit)
	if _, err := p.st.Execute(ctx, b, false); err != nil {
		return err
	}
	lk.staging = false
	// Phase 3: roll forward. The turn is committed whatever happens now;
	// a failure is finished later by the next fetch or the maintenance loop.
	if err := p.rollForward(ctx, plan.instance, doc.PendingTurn); err != nil {
		p.opts.Logger.Warn("rolling a large turn forward; it will be finished later", "instance_id", plan.instance, "error", err)
	}
	return nil
}

// lockProof is the first operation of every batch a lock holder writes
// outside its commit: a patch of the instance document conditioned on the
// lock's ETag (it rewrites the lock token with itself). If the lock
// expired and was taken, renewed elsewhere or the instance deleted, the
// batch fails at operation 0 and writes nothing; otherwise the new ETag
// becomes the lock's (executeProved), so the commit's own condition
// still holds.
func lockProof(lk *orchLock) cosmos.BatchOp {
	var ops azcosmos.PatchOperations
	ops.AppendSet("/lockToken", lk.token)
	return cosmos.BatchOp{Kind: cosmos.BatchPatch, ID: instanceDocID(lk.instance), Patch: ops, IfMatch: &lk.etag}
}

// executeProved runs b behind the lock proof. A *BatchError keeps the
// batch's numbering: index 0 is the proof (the lock is gone).
func (p *Provider) executeProved(ctx context.Context, lk *orchLock, b *cosmos.Batch) (*cosmos.BatchResult, error) {
	pb := cosmos.NewBatch(b.Partition)
	pb.Add(lockProof(lk))
	for _, o := range b.Ops {
		pb.Add(o)
	}
	res, err := p.st.ExecuteTolerant(ctx, pb, false)
	if err != nil {
		return nil, err
	}
	lk.etag = res.ETags[0]
	lk.doc.ETag = string(lk.etag)
	return res, nil
}

// renumber maps a failed proved batch's operation index to the turn
// plan's (commit = 0, so a failed proof reads as the lock check that it
// is); planIdx[i] is the plan index of the batch's operation i+1, nil
// when no operation of the batch belongs to the plan.
func renumber(err error, planIdx []int) error {
	var be *BatchError
	if !errors.As(err, &be) {
		return err
	}
	out := *be
	switch {
	case be.Index == 0:
	case be.Index-1 < len(planIdx):
		out.Index = planIdx[be.Index-1]
	default:
		out.Index = -1
	}
	return &out
}

// stage creates one batch of staged documents behind the lock proof. A
// 409 on a retry means our own earlier attempt landed (batches are
// atomic), unless the existing document is not ours: then it is garbage
// of a turn that never committed (removed once, under the lock) or a
// genuine duplicate.
func (p *Provider) stage(ctx context.Context, lk *orchLock, turn string, ops []cosmos.BatchOp, planIdx []int) error {
	b := cosmos.NewBatch(lk.instance)
	for _, o := range ops {
		b.Add(o)
	}
	for cleaned := false; ; cleaned = true {
		_, err := p.executeProved(ctx, lk, b)
		var be *BatchError
		if !errors.As(err, &be) || !errors.Is(be, cosmos.ErrConflict) || be.Index == 0 {
			return renumber(err, planIdx)
		}
		body, _, rerr := p.st.Read(ctx, lk.instance, be.ID)
		if rerr != nil {
			return renumber(err, planIdx)
		}
		var head struct {
			Staged *string `json:"staged"`
		}
		if json.Unmarshal(body, &head) == nil && head.Staged != nil && *head.Staged == turn {
			return nil
		}
		if cleaned {
			return renumber(err, planIdx)
		}
		if n, cerr := p.cleanStale(ctx, lk, turn); cerr != nil || n == 0 {
			if cerr != nil {
				return cerr
			}
			return renumber(err, planIdx)
		}
	}
}

// cleanStale removes what a large turn that never committed left behind
// (staged documents and journals of any turn other than keep and the
// instance's committed pending turn). Every delete batch carries the
// lock proof, so only the current lock holder removes anything: while it
// holds the lock no other turn can commit.
func (p *Provider) cleanStale(ctx context.Context, lk *orchLock, keep string) (int, error) {
	inst := lk.instance
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
	_, err = p.st.Query(ctx, q, nil, cosmos.QueryOptions{Partition: &inst, PageSize: 1000}, func(raw []byte) bool {
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
	return len(ids), p.deleteProved(ctx, lk, ids)
}

// deleteProved deletes ids from the locked instance's partition, every
// batch behind the lock proof; already-deleted documents are fine.
func (p *Provider) deleteProved(ctx context.Context, lk *orchLock, ids []string) error {
	const per = cosmos.MaxBatchOps - 1
	for start := 0; start < len(ids); start += per {
		b := cosmos.NewBatch(lk.instance)
		for _, id := range ids[start:min(start+per, len(ids))] {
			b.Delete(id, nil, cosmos.ErrNotFound)
		}
		if _, err := p.executeProved(ctx, lk, b); err != nil {
			return renumber(err, nil)
		}
	}
	return nil
}

// chunkOps splits ops into batches within the service limits, leaving
// room for reserve leading operations of at most reservedBytes each
// (the lock proof or the roll-forward condition).
func chunkOps(ops []cosmos.BatchOp, reserve int) [][]cosmos.BatchOp {
	const reservedBytes = 512
	fresh := func() *cosmos.Batch {
		b := cosmos.NewBatch("")
		for range reserve {
			b.Add(cosmos.BatchOp{Doc: make([]byte, reservedBytes)})
		}
		return b
	}
	var out [][]cosmos.BatchOp
	b := fresh()
	var cur []cosmos.BatchOp
	for _, o := range ops {
		b.Add(o)
		if !b.Fits() && len(cur) > 0 {
			out = append(out, cur)
			b = fresh()
			b.Add(o)
			cur = nil
		}
		cur = append(cur, o)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func buildJournal(inst, turn string, unstage []string, rest []cosmos.BatchOp) ([]journalDoc, error) {
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
		w := journalWrite{ID: o.ID, Tolerate: cosmos.StatusCodes(o.Tolerate)}
		switch o.Kind {
		case cosmos.BatchDelete:
			grow(len(o.ID) + 16)
			cur.Deletes = append(cur.Deletes, w)
			continue
		case cosmos.BatchReplace:
			w.Replace = true
		case cosmos.BatchUpsert:
		default:
			return nil, fmt.Errorf("cdb: internal error: cannot journal operation kind %d", o.Kind)
		}
		if len(o.Doc) > maxJournalBytes {
			return nil, duroxide.Kinded(duroxide.ErrInvalidInput, "ack_orchestration_item", "a %d-byte document cannot be part of a turn larger than one batch", len(o.Doc))
		}
		w.Doc = o.Doc
		grow(len(o.Doc) + len(o.ID) + 32)
		cur.Writes = append(cur.Writes, w)
	}
	flush()
	return out, nil
}

// rollForward finishes a committed large turn. Every step tolerates having
// been done before.
func (p *Provider) rollForward(ctx context.Context, inst string, pt *pendingTurn) error {
	_, _, err := p.rollForwardIDs(ctx, inst, pt)
	return err
}

// errTurnNotPending stops a roll-forward whose turn is no longer pending:
// finished by someone else (and possibly followed by newer turns) or
// its instance deleted. Nothing is left to do.
var errTurnNotPending = errors.New("cdb: the turn is no longer pending")

// pendingCondition is the first operation of every roll-forward batch: a
// patch of the instance document that applies only while the instance
// still has this pending turn and is not being deleted. A roll-forward
// that stalled after reading a journal therefore cannot write over a
// newer turn nor resurrect a deleted instance: its batch fails at
// operation 0 and writes nothing. cond is pendingTurnCondition's (which
// validated the turn id spliced into it).
func pendingCondition(inst string, pt *pendingTurn, cond string) cosmos.BatchOp {
	var ops azcosmos.PatchOperations
	ops.SetCondition(cond + " AND NOT IS_DEFINED(c.deleted)")
	ops.AppendSet("/pendingTurn/turn", pt.Turn)
	return cosmos.BatchOp{Kind: cosmos.BatchPatch, ID: instanceDocID(inst), Patch: ops}
}

// rollForwardIDs is rollForward, also reporting the ids of the documents
// the journal deleted or replaced (the turn's consumed messages). unknown
// reports that a journal had been applied and deleted by someone else:
// the ids it held are not in gone.
func (p *Provider) rollForwardIDs(ctx context.Context, inst string, pt *pendingTurn) (gone map[string]bool, unknown bool, err error) {
	gone = map[string]bool{}
	cond, err := pendingTurnCondition(pt.Turn)
	if err != nil {
		return gone, false, err
	}
	for seq := 0; seq < pt.Journal; seq++ {
		body, err := p.readJournal(ctx, inst, journalDocID(inst, pt.Turn, seq), seq)
		if errors.Is(err, cosmos.ErrNotFound) {
			unknown = true
			continue // applied and deleted by an earlier roll-forward
		}
		if err != nil {
			return gone, unknown, err
		}
		var j journalDoc
		if err := json.Unmarshal(body, &j); err != nil {
			return gone, unknown, fmt.Errorf("journal %d of turn %s cannot be decoded: %w", seq, pt.Turn, err)
		}
		for _, d := range j.Deletes {
			gone[d.ID] = true
		}
		for _, w := range j.Writes {
			if w.Replace {
				gone[w.ID] = true
			}
		}
		if err := p.applyJournal(ctx, inst, pendingCondition(inst, pt, cond), &j); err != nil {
			if errors.Is(err, errTurnNotPending) {
				return gone, true, nil // finished by someone else meanwhile
			}
			return gone, unknown, err
		}
	}
	// Clear the marker only if it is still this turn's; the condition
	// makes a concurrent roll-forward harmless.
	var ops azcosmos.PatchOperations
	ops.SetCondition(cond)
	ops.AppendSet("/pendingTurn", jsonNull)
	_, _, err = p.st.Patch(ctx, inst, instanceDocID(inst), ops, nil, false)
	if err != nil && !errors.Is(err, cosmos.ErrPreconditionFailed) && !errors.Is(err, cosmos.ErrNotFound) {
		return gone, unknown, err
	}
	return gone, unknown, nil
}

// readJournal reads one journal document of a pending turn. A 404 is
// confirmed at the primary before it is believed: a process without a
// session token for the partition (the maintenance loop, another
// process's fetch) may be served by a replica that has not applied the
// journal's write yet, and taking that 404 for "applied" would clear the
// pending turn with its staged documents never unstaged. The confirmation
// is a write (writes always reach the primary) that changes nothing: it
// rewrites the journal's seq and returns the document, or 404 when the
// journal really is gone.
func (p *Provider) readJournal(ctx context.Context, inst, id string, seq int) ([]byte, error) {
	body, _, err := p.st.Read(ctx, inst, id)
	if !errors.Is(err, cosmos.ErrNotFound) {
		return body, err
	}
	var ops azcosmos.PatchOperations
	ops.AppendSet("/seq", seq)
	body, _, err = p.st.Patch(ctx, inst, id, ops, nil, true)
	return body, err
}

// applyJournal writes j in batches, each led by guard (pendingCondition).
func (p *Provider) applyJournal(ctx context.Context, inst string, guard cosmos.BatchOp, j *journalDoc) error {
	var ops []cosmos.BatchOp
	for _, id := range j.Unstage {
		var po azcosmos.PatchOperations
		po.AppendSet("/staged", jsonNull)
		ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchPatch, ID: id, Patch: po, Tolerate: []error{cosmos.ErrNotFound}})
	}
	for _, w := range j.Writes {
		if w.Replace {
			ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchReplace, ID: w.ID, Doc: w.Doc, Tolerate: []error{cosmos.ErrNotFound}})
		} else {
			ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchUpsert, ID: w.ID, Doc: w.Doc})
		}
	}
	for _, d := range j.Deletes {
		ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: d.ID, Tolerate: append([]error{cosmos.ErrNotFound}, cosmos.Conditions(d.Tolerate)...)})
	}
	ops = append(ops, cosmos.BatchOp{Kind: cosmos.BatchDelete, ID: j.ID, Tolerate: []error{cosmos.ErrNotFound}})
	for _, chunk := range chunkOps(ops, 1) {
		b := cosmos.NewBatch(inst)
		b.Add(guard)
		for _, o := range chunk {
			b.Add(o)
		}
		if _, err := p.st.ExecuteTolerant(ctx, b, false); err != nil {
			var be *BatchError
			if errors.As(err, &be) && be.Index == 0 && (errors.Is(be, cosmos.ErrPreconditionFailed) || errors.Is(be, cosmos.ErrNotFound)) {
				return errTurnNotPending
			}
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
// after the commit; run by the maintenance loop, a bounded step per round
// unless full (internal/cosmos/scan.go). One failing instance does not stop
// the others.
//
// The background loop (not full) only takes turns committed more than
// OutboxMinAge ago: a younger one is being rolled forward by its acking
// process, and rolling it forward beside it gains nothing. Turns recorded
// without a commit time (by earlier versions) are taken at once.
// RunMaintenance (full) takes them all.
func (p *Provider) finishPendingTurns(ctx context.Context, full bool) error {
	q := "SELECT c.instanceId, c.pendingTurn FROM c WHERE c.type = 'instance' AND IS_DEFINED(c.pendingTurn) AND NOT IS_NULL(c.pendingTurn)" +
		" AND (NOT IS_DEFINED(c.pendingTurn.at) OR c.pendingTurn.at <= @cutoff)"
	fresh := func() cosmos.QueryParams {
		cutoff := int64(maxExactInt)
		if !full {
			cutoff = ms(p.now().Add(-p.opts.OutboxMinAge))
		}
		return cosmos.QueryParams{}.Add("@cutoff", cutoff)
	}
	type row struct {
		InstanceID  string       `json:"instanceId"`
		PendingTurn *pendingTurn `json:"pendingTurn"`
	}
	var rows []row
	err := p.maintenanceScan(ctx, "pending_turns", full, cosmos.ScanRequest{Text: q, Fresh: fresh, PageSize: 100}, func(raw []byte) {
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
