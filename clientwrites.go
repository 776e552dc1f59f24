package cdb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// The client's writes (duroxide.ClientWriter), safe against races and
// retries:
//
//   - A client start's queue message is created in one transactional
//     batch with a start_record document (id <inst>:start, one per
//     instance), so of two concurrent starts exactly one batch commits;
//     the other meets 409 and compares the record to tell a retry from a
//     second start. The record is deleted with the instance.
//   - A request that starts the execution after a terminal one
//     (restart, rewind, re-drive) claims it in the start record, in one
//     batch with its message conditioned on the record's ETag, so of two
//     such requests for one execution exactly one is accepted
//     (nextexecution.go).
//   - A keyed event's queue message has an id derived from the key
//     (<inst>:client_key:<key>) and carries the key as its outboxKey, so
//     the turn that consumes it leaves an orch_received marker under the
//     same id, as for a message delivered through the outbox: a retried
//     write meets 409 before consumption and for receivedRetention after.
//
// Nothing is added to the work item's JSON, which stays what the Rust
// crate writes.
const docStartRecord = "start_record"

// startRecordDoc is the start that created an instance.
type startRecordDoc struct {
	ID            string  `json:"id"`
	InstanceID    string  `json:"instanceId"`
	Type          string  `json:"type"`
	Orchestration string  `json:"orchestration"`
	Version       *string `json:"version"`
	InputSHA256   string  `json:"inputSha256"`
	Key           string  `json:"key,omitempty"`
	// EnqueuedAt lets a deletion's sweep keep a record written after its
	// tombstone, as it keeps such queue messages (delete.go).
	EnqueuedAt int64 `json:"enqueuedAt"`
	// ClaimedAfter is the latest execution whose successor a request
	// (a restart, rewind or re-drive) claimed, ClaimKey that request's
	// key or token (nextexecution.go); absent until the first.
	ClaimedAfter *uint64 `json:"claimedAfter,omitempty"`
	ClaimKey     string  `json:"claimKey,omitempty"`
	// Retired marks the record a deletion left in place of the deleted
	// instance's (recreate.go): no instance has the id.
	Retired bool `json:"retired,omitempty"`
	// LastExecution is the highest execution id a deleted life of the id
	// reached; a start of the id begins after it.
	LastExecution uint64 `json:"lastExecution,omitempty"`
	ETag          string `json:"_etag,omitempty"`
}

func startRecordDocID(inst string) string { return docID(user(inst), fixed("start")) }
func clientKeyDocID(inst, key string) string {
	return docID(user(inst), fixed("client_key"), user(key))
}

func inputDigest(input string) string {
	h := sha256.Sum256([]byte(input))
	return hex.EncodeToString(h[:])
}

var _ duroxide.ClientWriter = (*Provider)(nil)

// StartInstance implements duroxide.ClientWriter.
func (p *Provider) StartInstance(ctx context.Context, item duroxide.StartOrchestrationItem, key string) error {
	const op = "start_instance"
	_, err := p.startWith(ctx, op, item, key, time.Time{}, nil, p.judgeExisting(ctx, op, item, key))
	return err
}

var _ duroxide.DelayedStartWriter = (*Provider)(nil)

// StartInstanceAt implements duroxide.DelayedStartWriter: the start's
// queue message carries at as its visibleAt, and everything else is
// StartInstance's (the start record is written at once, so the instance
// exists and a second start is judged against it).
func (p *Provider) StartInstanceAt(ctx context.Context, item duroxide.StartOrchestrationItem, key string, at time.Time) error {
	const op = "start_instance_at"
	_, err := p.startWith(ctx, op, item, key, at, nil, p.judgeExisting(ctx, op, item, key))
	return err
}

// startWith writes a client start: item's queue message, created in one
// batch with its start record and with extra's document (another
// document of the instance; nil: none), if the instance does not exist.
// extra is called after each start message is built, so that a queue
// message it returns is ordered after the start. For an instance that
// exists it writes nothing and returns existing's verdict. started
// reports whether the batch was written. The start becomes visible at at,
// or at once when at has passed (or is zero).
func (p *Provider) startWith(ctx context.Context, op string, item duroxide.StartOrchestrationItem, key string, at time.Time, extra func() ([]byte, error), existing func(rec *startRecordDoc) error) (started bool, err error) {
	inst := item.Instance
	if err := validateInstanceID(op, inst); err != nil {
		return false, err
	}
	now := p.now()
	visible := now
	if at.After(now) {
		visible = at
	}
	msg, err := p.queueDocument(ctx, op, item, docOrchQueue, visible, now)
	if err != nil {
		return false, err
	}
	body, err := p.readPrimary(ctx, inst, instanceDocID(inst))
	if err != nil && !errors.Is(err, cosmos.ErrNotFound) {
		return false, duroxide.Wrap(op, err)
	}
	var doc *instanceDoc
	if err == nil {
		doc = &instanceDoc{}
		if err := json.Unmarshal(body, doc); err != nil {
			return false, duroxide.Permanent(op, "instance document of %q cannot be decoded: %v", inst, err)
		}
	}
	if doc != nil && doc.Deleted != nil {
		// A deletion's tombstone: its sweep would remove what this start
		// writes beside the old documents, so the deletion is finished
		// first, or the start refused for now (delete.go).
		if err := p.settleDeletion(ctx, op, doc); err != nil {
			return false, err
		}
		doc = nil
	}
	if doc.exists() {
		// Started by a runtime (a sub-orchestration) or by an earlier
		// client start.
		return false, existing(nil)
	}
	rec := startRecordDoc{ID: startRecordDocID(inst), InstanceID: inst, Type: docStartRecord, Orchestration: item.Orchestration,
		Version: item.Version, InputSHA256: inputDigest(item.Input), Key: key, EnqueuedAt: ms(now)}
	b := cosmos.NewBatch(inst)
	b.Create(mustJSON(rec))
	b.Create(msg)
	if extra != nil {
		doc, err := extra()
		if err != nil {
			return false, err
		}
		b.Create(doc)
	}
	started = true
	err = p.retryIdempotent(ctx, op, func() error {
		_, err := p.st.Execute(ctx, b, false)
		var be *cosmos.BatchError
		if errors.As(err, &be) && be.Index == 0 && errors.Is(err, cosmos.ErrConflict) {
			// Another start, our own earlier attempt, or a deleted life's
			// retired record.
			started, err = p.startAfterConflict(ctx, op, item, key, rec, extra, visible, now, existing)
		}
		return err
	})
	if err == nil && started && !visible.After(now) {
		p.notifyDoc(docOrchQueue, inst)
	}
	return started, err
}

// startAfterConflict settles a start whose record already exists: a
// retired record (a deleted life's) is taken over, so that the new life
// continues its execution ids (recreate.go); anything else is a start
// that landed before, ours or another's, judged by existing.
func (p *Provider) startAfterConflict(ctx context.Context, op string, item duroxide.StartOrchestrationItem, key string, rec startRecordDoc, extra func() ([]byte, error), visible, now time.Time, existing func(rec *startRecordDoc) error) (bool, error) {
	old, etag, err := p.readStartRecord(ctx, item.Instance)
	if err != nil {
		return false, duroxide.Wrap(op, err)
	}
	if old == nil || !old.Retired {
		return false, existing(old)
	}
	return p.startRecreated(ctx, op, item, &rec, old, etag, extra, visible, now, existing)
}

// judgeExisting is a plain start's verdict on an instance that exists
// (startWith): judgeStart on the start record, read unless the caller
// just read it (rec).
func (p *Provider) judgeExisting(ctx context.Context, op string, item duroxide.StartOrchestrationItem, key string) func(rec *startRecordDoc) error {
	return func(rec *startRecordDoc) error {
		if rec != nil {
			return judgeStart(op, rec, item, key)
		}
		return p.compareStart(ctx, op, item, key)
	}
}

// compareStart accepts a start identical to the recorded one (or with
// its key) as a retry, and refuses anything else with ErrInstanceExists.
func (p *Provider) compareStart(ctx context.Context, op string, item duroxide.StartOrchestrationItem, key string) error {
	rec, _, err := p.readStartRecord(ctx, item.Instance)
	if err != nil {
		return duroxide.Wrap(op, err)
	}
	return judgeStart(op, rec, item, key)
}

// judgeStart is compareStart's verdict on rec, the record read (nil:
// none). A retired record is no start.
func judgeStart(op string, rec *startRecordDoc, item duroxide.StartOrchestrationItem, key string) error {
	if rec != nil && !rec.Retired {
		sameKey := key != "" && key == rec.Key
		same := rec.Orchestration == item.Orchestration && equalStrPtr(rec.Version, item.Version) && rec.InputSHA256 == inputDigest(item.Input)
		if sameKey || same {
			return nil
		}
	}
	return duroxide.Kinded(duroxide.ErrInstanceExists, op, "instance %q already exists", item.Instance)
}

func equalStrPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// EnqueueForInstance implements duroxide.ClientWriter.
func (p *Provider) EnqueueForInstance(ctx context.Context, item duroxide.WorkItem, key string) error {
	const op = "enqueue_for_instance"
	if item == nil || item.Queue() != duroxide.OrchestratorQueue {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "%s does not belong on the orchestrator queue", variantOf(item))
	}
	inst := item.InstanceID()
	q, err := p.clientMessage(ctx, op, item, key)
	if err != nil {
		return err
	}
	msg, err := encodeQueueDoc(op, q)
	if err != nil {
		return err
	}
	exists, err := p.InstanceExists(ctx, inst)
	if err != nil {
		return duroxide.Wrap(op, err)
	}
	if !exists {
		return duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "instance %q not found", inst)
	}
	return p.createClientMessage(ctx, op, item, msg, q.ID)
}

// clientMessage builds item's queue document for a client write, with
// its id derived from key when there is one (so a retry meets 409).
func (p *Provider) clientMessage(ctx context.Context, op string, item duroxide.WorkItem, key string) (*queueDoc, error) {
	now := p.now()
	q, err := p.newQueueDoc(ctx, op, item, docOrchQueue, now, now)
	if err != nil {
		return nil, err
	}
	if key != "" {
		if err := validateUserString(op, "idempotency key", key); err != nil {
			return nil, err
		}
		q.ID, q.OutboxKey = clientKeyDocID(item.InstanceID(), key), "client:"+key
	}
	return q, nil
}

// createClientMessage creates msg (clientMessage's document, id id) for
// an instance known to exist.
func (p *Provider) createClientMessage(ctx context.Context, op string, item duroxide.WorkItem, msg []byte, id string) error {
	inst := item.InstanceID()
	// The id is fixed for the call (from the key, or minted once), so a
	// repeat — ours below, or the caller's with the same key — is a 409:
	// the message, or the marker its consumption left, is there.
	err := p.retryIdempotent(ctx, op, func() error {
		_, err := p.st.Create(ctx, inst, msg)
		if p.trailEnabled() {
			p.opts.Logger.Debug("client message written", "instance_id", inst, "message", id, "item", variantOf(item), "error", err)
		}
		if errors.Is(err, cosmos.ErrConflict) {
			return nil
		}
		return err
	})
	if err == nil {
		p.notifyDoc(docOrchQueue, inst)
	}
	return err
}

var _ duroxide.SignalStarter = (*Provider)(nil)

// SignalWithStart implements duroxide.SignalStarter: the message joins
// the start's batch (start record, start message, this message), so the
// partition commits all three or none; an instance that exists gets the
// message alone. Of concurrent callers one batch commits and the others
// meet 409 on the start record and write their message alone.
func (p *Provider) SignalWithStart(ctx context.Context, start duroxide.StartOrchestrationItem, startKey string, msg duroxide.WorkItem, msgKey string) (bool, error) {
	const op = "signal_with_start"
	if err := validateInstanceID(op, start.Instance); err != nil {
		return false, err
	}
	if err := duroxide.CheckSignal(op, start.Instance, msg); err != nil {
		return false, err
	}
	q, err := p.clientMessage(ctx, op, msg, msgKey)
	if err != nil {
		return false, err
	}
	// The message keeps its id across the calls but is ordered after the
	// start message built before each: a fetch returns the start first.
	var doc []byte
	stamp := func() ([]byte, error) {
		now := p.now()
		q.VisibleAt, q.EnqueuedAt, q.EnqueueOrder = p.visibleAt(now, now), ms(now), nextOrder(now)
		doc, err = encodeQueueDoc(op, q)
		return doc, err
	}
	return p.startWith(ctx, op, start, startKey, time.Time{}, stamp, func(*startRecordDoc) error {
		if doc == nil {
			if _, err := stamp(); err != nil {
				return err
			}
		}
		return p.createClientMessage(ctx, op, msg, doc, q.ID)
	})
}

// retryIdempotent runs write, which must be idempotent (a read, or a
// write under a fixed id), until it succeeds, fails permanently or has
// failed clientWriteAttempts times (10 ms · 2ⁿ apart): a client write's
// outcome is not left ambiguous for a transient error the provider can
// settle itself.
func (p *Provider) retryIdempotent(ctx context.Context, op string, write func() error) error {
	for attempt := 0; ; attempt++ {
		err := duroxide.Wrap(op, write())
		if err == nil || !duroxide.IsRetryable(err) || attempt+1 >= clientWriteAttempts {
			return err
		}
		t := time.NewTimer(10 * time.Millisecond << attempt)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// clientWriteAttempts bounds retryIdempotent.
const clientWriteAttempts = 4

// InstanceExists implements duroxide.ClientWriter: an instance exists
// from the moment its start is accepted — a client start's record, a
// queued start message, or an outbox intent that will deliver a
// runtime's start (a sub-orchestration's or a detached one's; an intent
// for an instance is only ever written by or after its start) — until it
// is deleted. A client-started or committed instance costs one or two
// point reads, made from the primary (readPrimary) so that another
// process's fresh start is never missed on a lagging replica; the
// queries run only for a missing instance or a runtime's start not yet
// run, in the order the start moves (intent, then message, then instance
// document), so a start in flight is seen in one place or the next.
func (p *Provider) InstanceExists(ctx context.Context, inst string) (bool, error) {
	const op = "instance_exists"
	if err := validateInstanceID(op, inst); err != nil {
		return false, err
	}
	// A client start's record is never removed but with the instance,
	// which then leaves it retired.
	rec, _, err := p.readStartRecord(ctx, inst)
	if err != nil || (rec != nil && !rec.Retired) {
		return err == nil, duroxide.Wrap(op, err)
	}
	if found, err := p.committedInstance(ctx, inst); err != nil || found {
		return found, duroxide.Wrap(op, err)
	}
	found, err := p.anyDocument(ctx, nil, "SELECT c.id FROM c WHERE c.type = 'outbox_intent' AND c.targetInstanceId = @inst", inst)
	if err != nil || found {
		return found, duroxide.Wrap(op, err)
	}
	found, err = p.anyDocument(ctx, &inst, "SELECT c.id FROM c WHERE c.type = 'orch_queue' AND STARTSWITH(c.workItem, '{\"StartOrchestration\"')", inst)
	if err != nil || found {
		return found, duroxide.Wrap(op, err)
	}
	found, err = p.committedInstance(ctx, inst)
	return found, duroxide.Wrap(op, err)
}

// committedInstance reports whether inst's instance document exists, is
// not provisional and carries no deletion tombstone (read from the
// primary).
func (p *Provider) committedInstance(ctx context.Context, inst string) (bool, error) {
	body, err := p.readPrimary(ctx, inst, instanceDocID(inst))
	if errors.Is(err, cosmos.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var doc instanceDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return false, duroxide.Permanent("read_instance", "instance document of %q cannot be decoded: %v", inst, err)
	}
	return doc.exists(), nil
}

// readPrimary reads one document through a single-operation
// transactional batch, which the partition's primary replica serves: an
// existence check must see a start another process has just written,
// which a plain read without that process's session token may miss on a
// lagging replica. It costs what a point read costs.
func (p *Provider) readPrimary(ctx context.Context, inst, id string) ([]byte, error) {
	body, _, err := p.readPrimaryTagged(ctx, inst, id)
	return body, err
}

// readPrimaryTagged is readPrimary that also returns the document's ETag,
// for a write conditioned on what was read.
func (p *Provider) readPrimaryTagged(ctx context.Context, inst, id string) ([]byte, azcore.ETag, error) {
	b := cosmos.NewBatch(inst)
	b.Read(id)
	var body []byte
	var etag azcore.ETag
	err := p.retryIdempotent(ctx, "read", func() error {
		res, err := p.st.Execute(ctx, b, true)
		if err != nil {
			return err
		}
		if len(res.Bodies) == 0 {
			return fmt.Errorf("cosmos batch read of %s returned no body", id)
		}
		body, etag = res.Bodies[0], res.ETags[0]
		return nil
	})
	return body, etag, err
}

// anyDocument reports whether query (parameter @inst) finds a document,
// in partition (nil: across partitions).
func (p *Provider) anyDocument(ctx context.Context, partition *string, query, inst string) (bool, error) {
	found := false
	_, err := p.st.Query(ctx, query, cosmos.QueryParams{}.Add("@inst", inst), cosmos.QueryOptions{Partition: partition}, func([]byte) bool {
		found = true
		return false
	})
	return found, err
}

// orphanExpired reports whether the orphan rule deletes m (whose item is
// it) now: a queue message or a result (duroxide.IsResult) at once,
// anything else after OrphanLifetime.
func (p *Provider) orphanExpired(it duroxide.WorkItem, m *queueDoc) bool {
	if _, ok := it.(duroxide.QueueMessageItem); ok || duroxide.IsResult(it) {
		return true
	}
	// From enqueue, not visibility: every fetch that releases an orphan
	// makes it visible again, which must not renew its lifetime.
	return m.EnqueuedAt+p.opts.OrphanLifetime.Milliseconds() <= ms(p.now())
}

// OrphansDropped counts the orchestrator messages this provider deleted
// because their instance never started (exported as cdb.orphans.dropped).
func (p *Provider) OrphansDropped() int64 { return p.orphansDropped.Load() }

// pendingNoteDoc is the runtime's note on an instance that cannot run yet
// (id <inst>:pending_note); deleted with the instance.
type pendingNoteDoc struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
	Type       string `json:"type"`
	Note       string `json:"note"`
	UpdatedAt  int64  `json:"updatedAt"`
}

const docPendingNote = "pending_note"

func pendingNoteDocID(inst string) string { return docID(user(inst), fixed("pending_note")) }

var _ duroxide.PendingNoter = (*Provider)(nil)

// NotePending implements duroxide.PendingNoter: one upsert.
func (p *Provider) NotePending(ctx context.Context, inst, note string) error {
	const op = "note_pending"
	if err := validateInstanceID(op, inst); err != nil {
		return err
	}
	doc := pendingNoteDoc{ID: pendingNoteDocID(inst), InstanceID: inst, Type: docPendingNote, Note: note, UpdatedAt: ms(p.now())}
	_, err := p.st.Upsert(ctx, inst, mustJSON(doc), nil)
	return duroxide.Wrap(op, err)
}

// PendingNote implements duroxide.PendingNoter: one point read.
func (p *Provider) PendingNote(ctx context.Context, inst string) (string, error) {
	const op = "pending_note"
	if err := validateInstanceID(op, inst); err != nil {
		return "", err
	}
	body, _, err := p.st.Read(ctx, inst, pendingNoteDocID(inst))
	if errors.Is(err, cosmos.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", duroxide.Wrap(op, err)
	}
	var doc pendingNoteDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return "", duroxide.Permanent(op, "pending note of %q cannot be decoded: %v", inst, err)
	}
	return doc.Note, nil
}
