package memprovider

import (
	"context"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// edgeState is what the provider keeps for duroxide.ClientWriter: the
// start that created each instance, the idempotency keys seen per
// instance, and the orphan rule's lifetime and count.
type edgeState struct {
	starts         map[string]startRecord
	keys           map[string]map[string]bool
	orphanLifetime time.Duration
	orphansDropped int64
	notes          map[string]string
	// claims is, per instance, the latest execution whose successor a
	// NextExecutionWriter request claimed, and that request's key.
	claims map[string]claim
	// lastExecutions is, per deleted id, the highest execution id its
	// deleted lives reached: a client start of the id begins after it, so
	// nothing a deleted life left in flight can pass for the new life's
	// (the Cosmos provider's retired start record, recreate.go there).
	lastExecutions map[string]uint64
}

// claim is an accepted request for the execution after `after`.
type claim struct {
	after uint64
	key   string
}

// startRecord is a client start as accepted.
type startRecord struct {
	orchestration, input, key string
	version                   *string
}

func (r startRecord) same(item duroxide.StartOrchestrationItem, key string) bool {
	if key != "" && key == r.key {
		return true
	}
	return r.orchestration == item.Orchestration && r.input == item.Input && equalPtr(r.version, item.Version)
}

func equalPtr(a, b *string) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

// WithOrphanLifetime sets how long an event or cancellation for an
// instance that does not exist waits for its start before it is dropped
// (default duroxide.DefaultOrphanLifetime).
func WithOrphanLifetime(d time.Duration) Option {
	return func(p *Provider) { p.edge.orphanLifetime = d }
}

// OrphansDropped counts the orchestrator messages dropped because their
// instance never started (the metric behind the orphan rule).
func (p *Provider) OrphansDropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.edge.orphansDropped
}

var _ duroxide.ClientWriter = (*Provider)(nil)

// StartInstance implements duroxide.ClientWriter under the provider's
// mutex, so of concurrent starts exactly one is accepted.
func (p *Provider) StartInstance(ctx context.Context, item duroxide.StartOrchestrationItem, key string) error {
	return p.startInstance(ctx, "start_instance", item, key, time.Time{})
}

var _ duroxide.DelayedStartWriter = (*Provider)(nil)

// StartInstanceAt implements duroxide.DelayedStartWriter: StartInstance
// with the start message visible at at on the provider's clock.
func (p *Provider) StartInstanceAt(ctx context.Context, item duroxide.StartOrchestrationItem, key string, at time.Time) error {
	return p.startInstance(ctx, "start_instance_at", item, key, at)
}

func (p *Provider) startInstance(ctx context.Context, op string, item duroxide.StartOrchestrationItem, key string, at time.Time) error {
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	if item.Instance == "" {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "instance id must not be empty")
	}
	if err := p.checkClientWrite(op, item); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.existsLocked(item.Instance) {
		if r, ok := p.edge.starts[item.Instance]; ok && r.same(item, key) {
			return nil
		}
		return duroxide.Kinded(duroxide.ErrInstanceExists, op, "instance %q already exists", item.Instance)
	}
	visible := p.startLocked(item, key, at)
	p.notify()
	if !visible.After(p.now()) {
		p.enqueues.Notify(duroxide.OrchestratorQueue, item.Instance)
	}
	return nil
}

// startLocked records and queues item, the start of an instance that
// does not exist, visible at at (at once when at has passed or is zero),
// and returns when it is visible. Callers hold p.mu.
func (p *Provider) startLocked(item duroxide.StartOrchestrationItem, key string, at time.Time) time.Time {
	if p.edge.starts == nil {
		p.edge.starts, p.edge.keys = map[string]startRecord{}, map[string]map[string]bool{}
	}
	p.edge.starts[item.Instance] = startRecord{orchestration: item.Orchestration, input: item.Input, key: key, version: item.Version}
	if last := p.edge.lastExecutions[item.Instance]; item.ExecutionID <= last {
		item.ExecutionID = last + 1
	}
	// A new instance: an old one's keys, note and claims are gone with it.
	delete(p.edge.keys, item.Instance)
	delete(p.edge.notes, item.Instance)
	delete(p.edge.claims, item.Instance)
	visible := p.now()
	if at.After(visible) {
		visible = at
	}
	p.orchQueue = append(p.orchQueue, &orchMessage{seq: p.nextSeq(), instance: item.Instance, item: item, visibleAt: visible})
	return visible
}

var _ duroxide.SignalStarter = (*Provider)(nil)

// SignalWithStart implements duroxide.SignalStarter under the provider's
// mutex: the existence check, the start and the message are one step.
func (p *Provider) SignalWithStart(ctx context.Context, start duroxide.StartOrchestrationItem, startKey string, msg duroxide.WorkItem, msgKey string) (bool, error) {
	const op = "signal_with_start"
	if err := ctx.Err(); err != nil {
		return false, duroxide.Wrap(op, err)
	}
	if start.Instance == "" {
		return false, duroxide.Kinded(duroxide.ErrInvalidInput, op, "instance id must not be empty")
	}
	if err := duroxide.CheckSignal(op, start.Instance, msg); err != nil {
		return false, err
	}
	if err := p.checkClientWrite(op, start); err != nil {
		return false, err
	}
	if err := p.checkClientWrite(op, msg); err != nil {
		return false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	started := !p.existsLocked(start.Instance)
	if started {
		p.startLocked(start, startKey, time.Time{})
	}
	p.enqueueLocked(start.Instance, msg, msgKey)
	p.notify()
	p.enqueues.Notify(duroxide.OrchestratorQueue, start.Instance)
	return started, nil
}

// EnqueueForInstance implements duroxide.ClientWriter.
func (p *Provider) EnqueueForInstance(ctx context.Context, item duroxide.WorkItem, key string) error {
	const op = "enqueue_for_instance"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	if item == nil || item.Queue() != duroxide.OrchestratorQueue {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "work item %T does not belong on the orchestrator queue", item)
	}
	if err := p.checkClientWrite(op, item); err != nil {
		return err
	}
	inst := item.InstanceID()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.existsLocked(inst) {
		return duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "instance %q not found", inst)
	}
	if p.enqueueLocked(inst, item, key) {
		p.notify()
		p.enqueues.Notify(duroxide.OrchestratorQueue, inst)
	}
	return nil
}

// enqueueLocked queues item for inst unless key (non-empty) was seen for
// it before (a retry of a write that was applied); it reports whether it
// queued. Callers hold p.mu.
func (p *Provider) enqueueLocked(inst string, item duroxide.WorkItem, key string) bool {
	if key != "" {
		if p.edge.keys[inst][key] {
			return false
		}
		if p.edge.keys == nil {
			p.edge.keys = map[string]map[string]bool{}
		}
		if p.edge.keys[inst] == nil {
			p.edge.keys[inst] = map[string]bool{}
		}
		p.edge.keys[inst][key] = true
	}
	p.orchQueue = append(p.orchQueue, &orchMessage{seq: p.nextSeq(), instance: inst, item: item, visibleAt: p.now()})
	return true
}

var _ duroxide.NextExecutionWriter = (*Provider)(nil)

// EnqueueNextExecution implements duroxide.NextExecutionWriter: the claim
// and the enqueue happen under the provider's mutex, so of requests for
// the successor of one execution exactly one is accepted.
func (p *Provider) EnqueueNextExecution(ctx context.Context, item duroxide.WorkItem, after uint64, key string) error {
	const op = "enqueue_next_execution"
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap(op, err)
	}
	if !duroxide.StartsNextExecution(item) {
		return duroxide.Kinded(duroxide.ErrInvalidInput, op, "work item %T does not start a new execution", item)
	}
	inst := item.InstanceID()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.existsLocked(inst) {
		return duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "instance %q not found", inst)
	}
	if c, ok := p.edge.claims[inst]; ok && c.after >= after {
		if key != "" && c.key == key && c.after == after {
			return nil // a retry of the accepted request
		}
		return duroxide.Kinded(duroxide.ErrStaleExecution, op, "a request already started the execution after %d of %q", c.after, inst)
	}
	if p.edge.claims == nil {
		p.edge.claims = map[string]claim{}
	}
	p.edge.claims[inst] = claim{after: after, key: key}
	p.orchQueue = append(p.orchQueue, &orchMessage{seq: p.nextSeq(), instance: inst, item: item, visibleAt: p.now()})
	p.notify()
	p.enqueues.Notify(duroxide.OrchestratorQueue, inst)
	return nil
}

// InstanceExists implements duroxide.ClientWriter.
func (p *Provider) InstanceExists(ctx context.Context, instance string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, duroxide.Wrap("instance_exists", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.existsLocked(instance), nil
}

// existsLocked: the instance has state, or a start for it is queued.
func (p *Provider) existsLocked(instance string) bool {
	if p.instances[instance] != nil {
		return true
	}
	for _, m := range p.orchQueue {
		if m.instance == instance {
			if _, ok := m.item.(duroxide.StartOrchestrationItem); ok {
				return true
			}
		}
	}
	return false
}

// expiredOrphans returns the messages of batch (all for one instance that
// does not exist and is not being started) to drop: queue messages and
// results (duroxide.IsResult) at once, anything else once it has waited
// the orphan lifetime.
func (p *Provider) expiredOrphans(batch []*orchMessage, now time.Time) []*orchMessage {
	lifetime := p.edge.orphanLifetime
	if lifetime <= 0 {
		lifetime = duroxide.DefaultOrphanLifetime
	}
	var out []*orchMessage
	for _, m := range batch {
		if _, queued := m.item.(duroxide.QueueMessageItem); queued || duroxide.IsResult(m.item) || !m.visibleAt.Add(lifetime).After(now) {
			out = append(out, m)
		}
	}
	return out
}

var _ duroxide.PendingNoter = (*Provider)(nil)

// NotePending implements duroxide.PendingNoter.
func (p *Provider) NotePending(ctx context.Context, instance, note string) error {
	if err := ctx.Err(); err != nil {
		return duroxide.Wrap("note_pending", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.edge.notes == nil {
		p.edge.notes = map[string]string{}
	}
	p.edge.notes[instance] = note
	return nil
}

// PendingNote implements duroxide.PendingNoter.
func (p *Provider) PendingNote(ctx context.Context, instance string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", duroxide.Wrap("pending_note", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.edge.notes[instance], nil
}

// noteDeletedLife remembers the highest execution id s, being deleted,
// reached. Callers hold p.mu.
func (e *edgeState) noteDeletedLife(id string, s *instanceState) {
	last := max(e.lastExecutions[id], s.currentExecution)
	for x := range s.executions {
		last = max(last, x)
	}
	if e.lastExecutions == nil {
		e.lastExecutions = map[string]uint64{}
	}
	e.lastExecutions[id] = last
}
