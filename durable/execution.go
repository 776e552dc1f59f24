package durable

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Turning a turn's result into a commit: the history delta, the work items
// for both queues, the execution metadata and the activities to cancel —
// duroxide's execution.rs, state_helpers.rs and the commit half of its
// orchestration dispatcher.

// duroxide's limits (src/runtime/limits.rs).
const (
	maxCarryForwardEvents = 100
	maxCustomStatusBytes  = 256 * 1024
	maxTagNameBytes       = 256
	maxKVKeys             = 150
	maxKVValueBytes       = 64 * 1024
)

// childInstanceID is the full id of a child: auto-generated ids are
// prefixed with the parent ("{parent}::sub::5"), explicit ids are used as
// given.
func childInstanceID(parent, child string) string {
	if strings.HasPrefix(child, subOrchAutoPrefix) {
		return parent + "::" + child
	}
	return child
}

// newEventAt stamps an event the host writes (outside the engine) at now.
func newEventAt(now time.Time, id uint64, instance string, executionID uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{
		EventID: id, SourceEventID: source, InstanceID: instance, ExecutionID: executionID,
		TimestampMs: uint64(max(now.UnixMilli(), 0)), DuroxideVersion: DuroxideVersion, Kind: kind,
	}
}

func ptr[T any](v T) *T { return &v }

// historyBook is duroxide's HistoryManager: the fetched history plus the
// events this turn adds.
type historyBook struct {
	history, delta []duroxide.Event

	name, version, input *string
	parentInstance       *string
	parentID             *uint64
	parentExecutionID    *uint64
	completed, failed    bool
	continuedAsNew       bool
	// now stamps the events appended (nil: time.Now); a test
	// environment's runtime gives its virtual clock.
	now func() time.Time
}

func newHistoryBook(history []duroxide.Event) *historyBook {
	b := &historyBook{history: history}
	start := -1
	for i, e := range history {
		if s, ok := e.Kind.(duroxide.OrchestrationStarted); ok {
			b.name, b.version, b.input = ptr(s.Name), ptr(s.Version), ptr(s.Input)
			b.parentInstance, b.parentID, b.parentExecutionID = s.ParentInstance, s.ParentID, s.ParentExecutionID
			start = i
		}
	}
	if start < 0 {
		return b
	}
	for _, e := range history[start+1:] {
		switch e.Kind.(type) {
		case duroxide.OrchestrationCompleted:
			b.completed = true
		case duroxide.OrchestrationFailed:
			b.failed = true
		case duroxide.OrchestrationContinuedAsNew:
			b.continuedAsNew = true
		default:
			continue
		}
		break
	}
	return b
}

func (b *historyBook) empty() bool { return len(b.history) == 0 && len(b.delta) == 0 }

func (b *historyBook) all() []duroxide.Event {
	return append(slices.Clip(b.history), b.delta...)
}

func (b *historyBook) nextEventID() uint64 {
	var m uint64
	for _, e := range b.history {
		m = max(m, e.EventID)
	}
	for _, e := range b.delta {
		m = max(m, e.EventID)
	}
	return m + 1
}

func (b *historyBook) append(instance string, executionID uint64, source *uint64, kind duroxide.EventKind) {
	b.delta = append(b.delta, newEventAt(b.clock(), b.nextEventID(), instance, executionID, source, kind))
}

// clock reads the book's clock.
func (b *historyBook) clock() time.Time {
	if b.now == nil {
		return time.Now()
	}
	return b.now()
}

// pinnedVersion is the version recorded in history, nil for "0.0.0" (the
// placeholder of an unresolved start).
func (b *historyBook) pinnedVersion() *string {
	v := b.version
	if v == nil {
		for i := len(b.delta) - 1; i >= 0; i-- {
			if s, ok := b.delta[i].Kind.(duroxide.OrchestrationStarted); ok {
				v = &s.Version
				break
			}
		}
	}
	if v == nil || *v == "0.0.0" {
		return nil
	}
	return v
}

// parentLink is a sub-orchestration's link to the parent's future: the
// parent instance, the id of its SubOrchestrationScheduled event and, when
// recorded (duroxide 0.1.31's optional field), the parent's execution.
type parentLink struct {
	instance    string
	id          uint64
	executionID *uint64
}

// context returns the execution's input and parent link (nil for a root).
func (b *historyBook) context() (input string, parent *parentLink) {
	if b.input != nil {
		return *b.input, newParentLink(b.parentInstance, b.parentID, b.parentExecutionID)
	}
	for i := len(b.delta) - 1; i >= 0; i-- {
		if s, ok := b.delta[i].Kind.(duroxide.OrchestrationStarted); ok {
			return s.Input, newParentLink(s.ParentInstance, s.ParentID, s.ParentExecutionID)
		}
	}
	return "", nil
}

func newParentLink(instance *string, id, executionID *uint64) *parentLink {
	if instance == nil || id == nil {
		return nil
	}
	return &parentLink{instance: *instance, id: *id, executionID: executionID}
}

// batch is duroxide's WorkItemReader: a fetched batch split into the
// start item (the first Start or ContinueAsNew; later ones are ignored)
// and the completion messages for the engine.
type batch struct {
	start          duroxide.WorkItem
	completions    []duroxide.WorkItem
	name, input    string
	version        *string
	parentInstance *string
	parentID       *uint64
	parentExecID   *uint64
	continueAsNew  bool
}

func readBatch(messages []duroxide.WorkItem, b *historyBook, instance string) *batch {
	r := &batch{}
	for _, m := range messages {
		switch m.(type) {
		case duroxide.StartOrchestrationItem:
			// A start for an execution that already started is a
			// duplicate: the turn replays what the execution's
			// OrchestrationStarted names, never a later start's name.
			if r.start == nil && b.name == nil {
				r.start = m
			}
		case duroxide.ContinueAsNewItem:
			if r.start == nil {
				r.start = m
			}
		case duroxide.ActivityExecuteItem:
		default:
			r.completions = append(r.completions, m)
		}
	}
	switch s := r.start.(type) {
	case duroxide.StartOrchestrationItem:
		r.name, r.input, r.version, r.parentInstance, r.parentID = s.Orchestration, s.Input, s.Version, s.ParentInstance, s.ParentID
		r.parentExecID = s.ParentExecutionID
	case duroxide.ContinueAsNewItem:
		carried := make([]duroxide.WorkItem, 0, len(s.CarryForwardEvents)+len(r.completions))
		for _, c := range s.CarryForwardEvents {
			carried = append(carried, duroxide.QueueMessageItem{Instance: instance, Name: c.Name, Data: c.Data})
		}
		r.completions = append(carried, r.completions...)
		r.name, r.input, r.version, r.continueAsNew = s.Orchestration, s.Input, s.Version, true
		// The parent link a sub-orchestration carries across
		// continue-as-new (absent from items written by Rust 0.1.29).
		r.parentInstance, r.parentID, r.parentExecID = s.ParentInstance, s.ParentID, s.ParentExecutionID
	default:
		if b.name != nil {
			r.name = *b.name
		}
		if b.input != nil {
			r.input = *b.input
		}
		r.version, r.parentInstance, r.parentID, r.parentExecID = b.pinnedVersion(), b.parentInstance, b.parentID, b.parentExecutionID
	}
	return r
}

// commit is everything one turn acks.
type commit struct {
	executionID uint64
	book        *historyBook
	worker      []duroxide.WorkItem
	orch        []duroxide.WorkItem
	cancelled   []duroxide.ScheduledActivityIdentifier
	metadata    duroxide.ExecutionMetadata
	suspend     *duroxide.SuspendChange
}

// startedEvent is a new execution's first event.
func startedEvent(b *historyBook, instance string, executionID uint64, r *batch, version string) duroxide.Event {
	s := duroxide.OrchestrationStarted{Name: r.name, Version: version, Input: r.input,
		ParentInstance: r.parentInstance, ParentID: r.parentID, ParentExecutionID: r.parentExecID}
	if can, ok := r.start.(duroxide.ContinueAsNewItem); ok {
		if len(can.CarryForwardEvents) > 0 {
			s.CarryForwardEvents = can.CarryForwardEvents
		}
		s.InitialCustomStatus = can.InitialCustomStatus
	}
	return newEventAt(b.clock(), 1, instance, executionID, nil, s)
}

// applyTurn runs the handler for one turn and folds its result into c
// (duroxide's run_single_execution_atomic). A nondeterministic turn under
// NondeterminismBlock folds nothing: it returns the error's message, and
// the caller holds the instance (nondeterminism.go).
func (rt *Runtime) applyTurn(c *commit, instance string, r *batch, fn OrchestrationFunc, version string, kv map[string]duroxide.KVEntry, workerID string) (blocked string) {
	b := c.book
	input, parent := b.context()
	out := runTurn(turnInput{
		Instance: instance, ExecutionID: c.executionID, History: b.all(), PersistedLen: len(b.history),
		Messages: r.completions, KVSnapshot: kv, Handler: fn, Input: input, Name: r.name, Version: version,
		WorkerID: workerID, Logger: rt.log, Now: rt.now,
	})
	if out.CodeMismatch {
		if msg := rt.nondeterministic(instance, c.executionID, r.name, version, out.Result.Details); msg != "" {
			return msg
		}
	}
	for _, id := range out.CancelledActivityIDs {
		c.cancelled = append(c.cancelled, duroxide.ScheduledActivityIdentifier{Instance: instance, ExecutionID: c.executionID, ActivityID: id})
	}
	b.delta = append(b.delta, out.Delta...)
	res := out.Result
	switch res.Kind {
	case TurnContinue:
		rt.dispatchActions(c, instance, out.Actions)
	case TurnCompleted:
		c.orch = append(c.orch, detachedStarts(out.Actions)...)
		cancelOpenSubscriptions(b, instance, c.executionID)
		b.append(instance, c.executionID, nil, duroxide.OrchestrationCompleted{Output: res.Output})
		if parent != nil {
			c.orch = append(c.orch, duroxide.SubOrchCompletedItem{ParentInstance: parent.instance,
				ParentExecutionID: rt.parentExecution(parent), ParentID: parent.id, Result: res.Output})
		}
	case TurnFailed:
		c.orch = append(c.orch, detachedStarts(out.Actions)...)
		cancelOpenSubscriptions(b, instance, c.executionID)
		b.append(instance, c.executionID, nil, duroxide.OrchestrationFailed{Details: res.Details})
		if parent != nil {
			c.orch = append(c.orch, duroxide.SubOrchFailedItem{ParentInstance: parent.instance,
				ParentExecutionID: rt.parentExecution(parent), ParentID: parent.id, Details: res.Details})
		}
	case TurnContinueAsNew:
		unmatched := unmatchedQueueMessages(b.all())
		cancelOpenSubscriptions(b, instance, c.executionID)
		b.append(instance, c.executionID, nil, duroxide.OrchestrationContinuedAsNew{Input: res.Input})
		if len(unmatched) > maxCarryForwardEvents {
			rt.log.Warn("dropping carry-forward events beyond the limit during continue-as-new",
				"instance_id", instance, "dropped", len(unmatched)-maxCarryForwardEvents)
			unmatched = unmatched[:maxCarryForwardEvents]
		}
		can := duroxide.ContinueAsNewItem{Instance: instance, Orchestration: r.name, Input: res.Input,
			Version: res.Version, CarryForwardEvents: unmatched, InitialCustomStatus: accumulatedCustomStatus(b.all())}
		if parent != nil {
			// The next execution reports to the parent in this one's place
			// (duroxide 0.1.31's optional fields; omitted for a root).
			can.ParentInstance, can.ParentID, can.ParentExecutionID = &parent.instance, &parent.id, parent.executionID
		}
		c.orch = append(c.orch, can)
	case TurnCancelled:
		details := duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppCancelled, Reason: res.Reason}}
		open := outstandingSchedules(b.all())
		cancelOpenSubscriptions(b, instance, c.executionID)
		b.append(instance, c.executionID, nil, duroxide.OrchestrationFailed{Details: details})
		for _, child := range open.subOrchestrations {
			c.orch = append(c.orch, duroxide.CancelInstanceItem{Instance: childInstanceID(instance, child.instance), Reason: "parent canceled"})
		}
		if parent != nil {
			c.orch = append(c.orch, duroxide.SubOrchFailedItem{ParentInstance: parent.instance,
				ParentExecutionID: rt.parentExecution(parent), ParentID: parent.id, Details: details})
		}
	}
	for _, child := range out.CancelledSubOrchestrationIDs {
		c.orch = append(c.orch, duroxide.CancelInstanceItem{Instance: childInstanceID(instance, child),
			Reason: "parent dropped sub-orchestration future"})
	}
	return ""
}

// parentExecution is the parent execution a child reports to: the one
// recorded in its OrchestrationStarted, else (histories written by
// duroxide 0.1.29 record none) the parent's current execution as this
// runtime knows it, as Rust does.
func (rt *Runtime) parentExecution(p *parentLink) uint64 {
	if p.executionID != nil {
		return *p.executionID
	}
	return rt.executionID(p.instance, 0)
}

// dispatchActions turns a continuing turn's new actions into work items.
func (rt *Runtime) dispatchActions(c *commit, instance string, actions []action) {
	for _, a := range actions {
		switch a := a.(type) {
		case actionCallActivity:
			c.worker = append(c.worker, duroxide.ActivityExecuteItem{Instance: instance, ExecutionID: c.executionID,
				ID: a.SchedulingEventID, Name: a.Name, Input: a.Input, SessionID: a.SessionID, Tag: a.Tag})
		case actionCreateTimer:
			c.orch = append(c.orch, duroxide.TimerFiredItem{Instance: instance, ExecutionID: c.executionID,
				ID: a.SchedulingEventID, FireAtMs: a.FireAtMs})
		case actionStartSubOrchestration:
			c.orch = append(c.orch, duroxide.StartOrchestrationItem{Instance: childInstanceID(instance, a.Instance),
				Orchestration: a.Name, Input: a.Input, Version: a.Version, ParentInstance: ptr(instance),
				ParentID: ptr(a.SchedulingEventID), ExecutionID: initialExecutionID})
		case actionStartOrchestrationDetached:
			c.orch = append(c.orch, detachedStart(a))
		}
	}
}

func detachedStart(a actionStartOrchestrationDetached) duroxide.WorkItem {
	return duroxide.StartOrchestrationItem{Instance: a.Instance, Orchestration: a.Name, Input: a.Input,
		Version: a.Version, ExecutionID: initialExecutionID}
}

// detachedStarts are the only actions a terminal turn still dispatches.
func detachedStarts(actions []action) []duroxide.WorkItem {
	var out []duroxide.WorkItem
	for _, a := range actions {
		if d, ok := a.(actionStartOrchestrationDetached); ok {
			out = append(out, detachedStart(d))
		}
	}
	return out
}

// accumulatedCustomStatus is the custom status at the end of history,
// carried into the next execution by continue-as-new.
func accumulatedCustomStatus(history []duroxide.Event) *string {
	var status *string
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationStarted:
			if k.InitialCustomStatus != nil {
				status = k.InitialCustomStatus
			}
		case duroxide.CustomStatusUpdated:
			status = k.Status
		}
	}
	return status
}

// unmatchedQueueMessages are the delivered queue events no active
// subscription consumed, in arrival order: continue-as-new carries them.
func unmatchedQueueMessages(history []duroxide.Event) []duroxide.CarryForwardEvent {
	cancelled := map[uint64]bool{}
	var subs []struct {
		id   uint64
		name string
	}
	var arrivals []duroxide.CarryForwardEvent
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.ExternalSubscribedPersistentCancelled:
			if e.SourceEventID != nil {
				cancelled[*e.SourceEventID] = true
			}
		case duroxide.ExternalSubscribedPersistent:
			subs = append(subs, struct {
				id   uint64
				name string
			}{e.EventID, k.Name})
		case duroxide.ExternalEventPersistent:
			arrivals = append(arrivals, duroxide.CarryForwardEvent{Name: k.Name, Data: k.Data})
		}
	}
	active := map[string]int{}
	for _, s := range subs {
		if !cancelled[s.id] {
			active[s.name]++
		}
	}
	consumed := map[string]int{}
	out := []duroxide.CarryForwardEvent{}
	for _, a := range arrivals {
		if consumed[a.Name] < active[a.Name] {
			consumed[a.Name]++
			continue
		}
		out = append(out, a)
	}
	return out
}

// openSchedules lists what a history scheduled and never resolved nor
// cancelled.
type openSchedules struct {
	activities        []uint64
	subOrchestrations []openChild
	externalSubs      []uint64
	queueSubs         []uint64
}

// openChild is a sub-orchestration still running: its schedule event id
// and its instance id as scheduled.
type openChild struct {
	id       uint64
	instance string
}

func outstandingSchedules(history []duroxide.Event) openSchedules {
	type sub struct {
		id   uint64
		name string
	}
	var children []sub
	var activities []uint64
	resolvedAct, cancelledAct := map[uint64]bool{}, map[uint64]bool{}
	var externals []uint64
	var queues []sub
	resolvedChild, cancelledChild := map[uint64]bool{}, map[uint64]bool{}
	resolvedExt, cancelledExt, cancelledQueue := map[uint64]bool{}, map[uint64]bool{}, map[uint64]bool{}
	pendingExt := map[string][]uint64{}
	arrivals := map[string]int{}
	src := func(e duroxide.Event) uint64 {
		if e.SourceEventID == nil {
			return 0
		}
		return *e.SourceEventID
	}
	for _, e := range history {
		switch k := e.Kind.(type) {
		case duroxide.ActivityScheduled:
			activities = append(activities, e.EventID)
		case duroxide.ActivityCompleted, duroxide.ActivityFailed:
			resolvedAct[src(e)] = true
		case duroxide.ActivityCancelRequested:
			cancelledAct[src(e)] = true
		case duroxide.SubOrchestrationScheduled:
			children = append(children, sub{e.EventID, k.Instance})
		case duroxide.SubOrchestrationCompleted, duroxide.SubOrchestrationFailed:
			resolvedChild[src(e)] = true
		case duroxide.SubOrchestrationCancelRequested:
			cancelledChild[src(e)] = true
		case duroxide.ExternalSubscribed:
			externals = append(externals, e.EventID)
			pendingExt[k.Name] = append(pendingExt[k.Name], e.EventID)
		case duroxide.ExternalEvent:
			if q := pendingExt[k.Name]; len(q) > 0 {
				resolvedExt[q[0]] = true
				pendingExt[k.Name] = q[1:]
			}
		case duroxide.ExternalSubscribedCancelled:
			if e.SourceEventID != nil {
				cancelledExt[*e.SourceEventID] = true
				for name, q := range pendingExt {
					pendingExt[name] = slices.DeleteFunc(q, func(id uint64) bool { return id == *e.SourceEventID })
				}
			}
		case duroxide.ExternalSubscribedPersistent:
			queues = append(queues, sub{e.EventID, k.Name})
		case duroxide.ExternalEventPersistent:
			arrivals[k.Name]++
		case duroxide.ExternalSubscribedPersistentCancelled:
			cancelledQueue[src(e)] = true
		}
	}
	var o openSchedules
	for _, id := range activities {
		if !resolvedAct[id] && !cancelledAct[id] {
			o.activities = append(o.activities, id)
		}
	}
	for _, c := range children {
		if !resolvedChild[c.id] && !cancelledChild[c.id] {
			o.subOrchestrations = append(o.subOrchestrations, openChild{c.id, c.name})
		}
	}
	for _, id := range externals {
		if !resolvedExt[id] && !cancelledExt[id] {
			o.externalSubs = append(o.externalSubs, id)
		}
	}
	consumed := map[string]int{}
	for _, q := range queues {
		if cancelledQueue[q.id] {
			continue
		}
		if consumed[q.name] < arrivals[q.name] {
			consumed[q.name]++
			continue
		}
		o.queueSubs = append(o.queueSubs, q.id)
	}
	return o
}

// cancelOpenSubscriptions writes the "orchestration_terminal" breadcrumbs
// for subscriptions still waiting when an execution ends; they precede the
// terminal event.
func cancelOpenSubscriptions(b *historyBook, instance string, executionID uint64) {
	open := outstandingSchedules(b.all())
	for _, id := range open.externalSubs {
		b.append(instance, executionID, ptr(id), duroxide.ExternalSubscribedCancelled{Reason: "orchestration_terminal"})
	}
	for _, id := range open.queueSubs {
		b.append(instance, executionID, ptr(id), duroxide.ExternalSubscribedPersistentCancelled{Reason: "orchestration_terminal"})
	}
}

// executionMetadata derives what the provider stores about the execution
// from the delta (duroxide's compute_execution_metadata).
func executionMetadata(delta []duroxide.Event) duroxide.ExecutionMetadata {
	var m duroxide.ExecutionMetadata
	for _, e := range delta {
		switch k := e.Kind.(type) {
		case duroxide.OrchestrationStarted:
			m.OrchestrationName, m.OrchestrationVersion, m.ParentInstanceID = ptr(k.Name), ptr(k.Version), k.ParentInstance
			if v, err := duroxide.ParseSemVer(e.DuroxideVersion); err == nil {
				m.PinnedDuroxideVersion = &v
			}
		case duroxide.OrchestrationCompleted:
			m.Status, m.Output = ptr(duroxide.StatusCompleted), ptr(k.Output)
			return m
		case duroxide.OrchestrationFailed:
			m.Status, m.Output = ptr(duroxide.StatusFailed), ptr(displayMessage(k.Details))
			return m
		case duroxide.OrchestrationContinuedAsNew:
			m.Status, m.Output = ptr(duroxide.StatusContinuedAsNew), ptr(k.Input)
			return m
		}
	}
	return m
}

// limitViolation checks the turn's delta against duroxide's limits and
// returns the failure message of the first one exceeded ("" if none).
func limitViolation(delta []duroxide.Event, kv map[string]duroxide.KVEntry) string {
	for i := len(delta) - 1; i >= 0; i-- {
		if k, ok := delta[i].Kind.(duroxide.CustomStatusUpdated); ok && k.Status != nil {
			if len(*k.Status) > maxCustomStatusBytes {
				return fmt.Sprintf("Custom status size (%d bytes) exceeds limit (%d bytes)", len(*k.Status), maxCustomStatusBytes)
			}
			break
		}
	}
	for _, e := range delta {
		if k, ok := e.Kind.(duroxide.ActivityScheduled); ok && k.Tag != nil && len(*k.Tag) > maxTagNameBytes {
			return fmt.Sprintf("Activity '%s' tag size (%d bytes) exceeds limit (%d bytes)", k.Name, len(*k.Tag), maxTagNameBytes)
		}
	}
	for _, e := range delta {
		if k, ok := e.Kind.(duroxide.KeyValueSet); ok && len(k.Value) > maxKVValueBytes {
			return fmt.Sprintf("KV value for key '%s' (%d bytes) exceeds limit (%d bytes)", k.Key, len(k.Value), maxKVValueBytes)
		}
	}
	keys := map[string]bool{}
	for k := range kv {
		keys[k] = true
	}
	for _, e := range delta {
		switch k := e.Kind.(type) {
		case duroxide.KeyValueSet:
			keys[k.Key] = true
		case duroxide.KeyValueCleared:
			delete(keys, k.Key)
		case duroxide.KeyValuesCleared:
			clear(keys)
		}
	}
	if len(keys) > maxKVKeys {
		return fmt.Sprintf("KV key count (%d) exceeds limit (%d)", len(keys), maxKVKeys)
	}
	return ""
}

// enforceLimits fails the execution when the turn exceeded a limit: the
// failure event is appended and every work item dropped.
func enforceLimits(c *commit, instance string, kv map[string]duroxide.KVEntry) {
	msg := limitViolation(c.book.delta, kv)
	if msg == "" {
		return
	}
	details := duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: msg}
	c.book.append(instance, c.executionID, nil, duroxide.OrchestrationFailed{Details: details})
	c.metadata.Status, c.metadata.Output = ptr(duroxide.StatusFailed), ptr(displayMessage(details))
	c.worker, c.orch = nil, nil
}

// cancelInflightActivities ends a terminal turn: every activity still in
// flight gets an ActivityCancelRequested after the terminal event, and is
// listed for the provider to delete from the worker queue.
func cancelInflightActivities(c *commit, instance string) {
	var reason string
	switch valueOf(c.metadata.Status) {
	case duroxide.StatusCompleted:
		reason = "orchestration_terminal_completed"
	case duroxide.StatusFailed:
		reason = "orchestration_terminal_failed"
	case duroxide.StatusContinuedAsNew:
		reason = "orchestration_terminal_continued_as_new"
	default:
		return
	}
	all := c.book.all()
	done := map[uint64]bool{}
	for _, e := range all {
		switch e.Kind.(type) {
		case duroxide.ActivityCompleted, duroxide.ActivityFailed, duroxide.ActivityCancelRequested:
			if e.SourceEventID != nil {
				done[*e.SourceEventID] = true
			}
		}
	}
	for _, e := range all {
		if _, ok := e.Kind.(duroxide.ActivityScheduled); ok && !done[e.EventID] {
			c.book.append(instance, c.executionID, ptr(e.EventID), duroxide.ActivityCancelRequested{Reason: reason})
			c.cancelled = append(c.cancelled, duroxide.ScheduledActivityIdentifier{Instance: instance, ExecutionID: c.executionID, ActivityID: e.EventID})
		}
	}
}

// valueOf is *p, or "" for nil.
func valueOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// dedupeCancelled drops repeated activity identifiers, keeping order.
func dedupeCancelled(ids []duroxide.ScheduledActivityIdentifier) []duroxide.ScheduledActivityIdentifier {
	seen := map[duroxide.ScheduledActivityIdentifier]bool{}
	return slices.DeleteFunc(ids, func(id duroxide.ScheduledActivityIdentifier) bool {
		if seen[id] {
			return true
		}
		seen[id] = true
		return false
	})
}
