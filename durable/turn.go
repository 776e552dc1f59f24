package durable

import (
	"log/slog"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// turn is one orchestration turn, the one value that goes from the
// dispatcher (which fetches an item and reads it into the turn) through
// replay (which adds the outcome, the new events and the actions) to the
// commit (which adds the work items and metadata the ack writes). One
// value keeps what a turn read and decided in one place (Rust spreads it
// over its HistoryManager, WorkItemReader, the engine's inputs and outputs,
// and the commit of its orchestration dispatcher).
type turn struct {
	// The fetched item (nil when CheckHistory replays a recorded
	// execution), its lock lease, the dispatcher loop running it, and its
	// hold on an orchestration slot, given back as its ack begins
	// (dispatch_slots.go).
	item     *duroxide.OrchestrationItem
	lease    *lockLease
	workerID string
	slot     *slotHold
	instance string
	// kv is the instance's KV store as of the previous execution.
	kv map[string]duroxide.KVEntry
	// restoreKV is set by a rewind turn whose provider keeps the failed
	// execution's starting KV (OrchestrationItem.KVBaseline): kv is that
	// baseline and the commit restores it (OrchestrationCommit.RestoreKV).
	restoreKV bool
	// now stamps the events the turn writes (nil: time.Now); a test
	// environment's runtime gives its virtual clock.
	now func() time.Time

	// The execution the turn advances (the next one after a
	// continue-as-new) and its history: history as fetched (empty for a
	// new execution), delta the events this turn adds. started is
	// history's OrchestrationStarted (nil if none), ended whether history
	// ended after it.
	executionID    uint64
	history, delta []duroxide.Event
	started        *duroxide.OrchestrationStarted
	ended          bool

	// What the fetched messages ask: the start item (the first Start or
	// ContinueAsNew; later ones are ignored), the completions for the
	// engine, and the orchestration to run with its parent link.
	start          duroxide.WorkItem
	completions    []duroxide.WorkItem
	name, input    string
	version        *string
	parentInstance *string
	parentID       *uint64
	parentExecID   *uint64
	continueAsNew  bool
	// collisions are the fetched starts that name a parent other than
	// the one this instance started for: another parent's child with an
	// id already in use (dispatch_collisions.go).
	collisions []duroxide.StartOrchestrationItem

	// What replay found: how the turn ended, the actions to dispatch, the
	// children whose futures the code dropped, and whether a
	// nondeterminism failure is the code's (it does not replay history)
	// rather than the messages' or a corrupt history's.
	result            turnResult
	actions           []action
	cancelledChildren []string
	codeMismatch      bool

	// The commit beyond delta: work items for both queues, activities to
	// cancel, the execution's metadata, and the change to the instance's
	// suspension (dispatch_suspend.go; nil: none). carried are fetched messages
	// this turn leaves to a later one (a rewind request after other
	// messages, dispatch_rewind.go; a suspension of an execution that
	// continues as new, dispatch_suspend.go): they go back to the instance's
	// queue after the turn's own orchestrator items.
	worker, orch []duroxide.WorkItem
	carried      []duroxide.WorkItem
	cancelled    []duroxide.ScheduledActivityIdentifier
	metadata     duroxide.ExecutionMetadata
	suspend      *duroxide.SuspendChange
}

// newTurn starts the turn of a fetched item; read fills it in.
func newTurn(item *duroxide.OrchestrationItem, lease *lockLease, workerID string, now func() time.Time) *turn {
	return &turn{item: item, lease: lease, workerID: workerID, instance: item.Instance, kv: item.KVSnapshot,
		now: now, executionID: item.ExecutionID}
}

// readHistory sets the turn's history (duroxide's HistoryManager): the
// last OrchestrationStarted and whether a terminal event followed it.
func (t *turn) readHistory(history []duroxide.Event) {
	t.history, t.started, t.ended = history, nil, false
	start := -1
	for i, e := range history {
		if s, ok := e.Kind.(duroxide.OrchestrationStarted); ok {
			t.started, start = &s, i
		}
	}
	if start < 0 {
		return
	}
	for _, e := range history[start+1:] {
		switch e.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			t.ended = true
			return
		}
	}
}

// readMessages splits the fetched messages (duroxide's WorkItemReader)
// into the start item and the completions, and names the orchestration
// to run: the start item's, else the one history started.
func (t *turn) readMessages(messages []duroxide.WorkItem) {
	for _, m := range messages {
		switch m.(type) {
		case duroxide.StartOrchestrationItem:
			// A start for an execution that already started is a
			// duplicate: the turn replays what the execution's
			// OrchestrationStarted names, never a later start's name.
			if t.start == nil && t.started == nil {
				t.start = m
			}
		case duroxide.ContinueAsNewItem:
			if t.start == nil {
				t.start = m
			}
		case duroxide.ActivityExecuteItem:
		default:
			t.completions = append(t.completions, m)
		}
	}
	t.collisions = t.collidingStarts(messages)
	switch s := t.start.(type) {
	case duroxide.StartOrchestrationItem:
		t.name, t.input, t.version, t.parentInstance, t.parentID = s.Orchestration, s.Input, s.Version, s.ParentInstance, s.ParentID
		t.parentExecID = s.ParentExecutionID
	case duroxide.ContinueAsNewItem:
		carried := make([]duroxide.WorkItem, 0, len(s.CarryForwardEvents)+len(t.completions))
		for _, c := range s.CarryForwardEvents {
			carried = append(carried, duroxide.QueueMessageItem{Instance: t.instance, Name: c.Name, Data: c.Data})
		}
		t.completions = append(carried, t.completions...)
		t.name, t.input, t.version, t.continueAsNew = s.Orchestration, s.Input, s.Version, true
		// The parent link a sub-orchestration carries across
		// continue-as-new, so its last execution reports to the parent
		// (absent from items written by Rust 0.1.29).
		t.parentInstance, t.parentID, t.parentExecID = s.ParentInstance, s.ParentID, s.ParentExecutionID
	default:
		t.version = t.pinnedVersion()
		if s := t.started; s != nil {
			t.name, t.input = s.Name, s.Input
			t.parentInstance, t.parentID, t.parentExecID = s.ParentInstance, s.ParentID, s.ParentExecutionID
		}
	}
}

// orchestratorItems are the commit's orchestrator items: the turn's own,
// then the messages it carries to a later turn.
func (t *turn) orchestratorItems() []duroxide.WorkItem {
	return append(slices.Clip(t.orch), t.carried...)
}

func (t *turn) empty() bool { return len(t.history) == 0 && len(t.delta) == 0 }

// all is history followed by delta.
func (t *turn) all() []duroxide.Event {
	return append(slices.Clip(t.history), t.delta...)
}

// lastEvent is the last event of history followed by delta, nil when
// both are empty.
func (t *turn) lastEvent() *duroxide.Event {
	if n := len(t.delta); n > 0 {
		return &t.delta[n-1]
	}
	if n := len(t.history); n > 0 {
		return &t.history[n-1]
	}
	return nil
}

func (t *turn) nextEventID() uint64 {
	var m uint64
	for _, e := range t.history {
		m = max(m, e.EventID)
	}
	for _, e := range t.delta {
		m = max(m, e.EventID)
	}
	return m + 1
}

// append adds an event the host writes (not the engine) to the delta.
func (t *turn) append(source *uint64, kind duroxide.EventKind) {
	t.delta = append(t.delta, newEventAt(t.clock(), t.nextEventID(), t.instance, t.executionID, source, kind))
}

// clock reads the turn's clock.
func (t *turn) clock() time.Time {
	if t.now == nil {
		return time.Now()
	}
	return t.now()
}

// pinnedVersion is the version recorded in history, nil for "0.0.0" (the
// placeholder of an unresolved start).
func (t *turn) pinnedVersion() *string {
	var v *string
	if t.started != nil {
		v = &t.started.Version
	} else {
		for i := len(t.delta) - 1; i >= 0; i-- {
			if s, ok := t.delta[i].Kind.(duroxide.OrchestrationStarted); ok {
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
func (t *turn) context() (input string, parent *parentLink) {
	if s := t.started; s != nil {
		return s.Input, newParentLink(s.ParentInstance, s.ParentID, s.ParentExecutionID)
	}
	for i := len(t.delta) - 1; i >= 0; i-- {
		if s, ok := t.delta[i].Kind.(duroxide.OrchestrationStarted); ok {
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

// startedEvent is a new execution's first event.
func (t *turn) startedEvent(version string) duroxide.Event {
	s := duroxide.OrchestrationStarted{Name: t.name, Version: version, Input: t.input,
		ParentInstance: t.parentInstance, ParentID: t.parentID, ParentExecutionID: t.parentExecID}
	if can, ok := t.start.(duroxide.ContinueAsNewItem); ok {
		if len(can.CarryForwardEvents) > 0 {
			s.CarryForwardEvents = can.CarryForwardEvents
		}
		s.InitialCustomStatus = can.InitialCustomStatus
	}
	return newEventAt(t.clock(), 1, t.instance, t.executionID, nil, s)
}

// replay runs the replay engine over the turn (replayRun.replay). The
// turn gets the outcome, the engine's events appended to its delta, the
// actions to dispatch and the futures the code dropped.
func (t *turn) replay(fn OrchestrationFunc, version string, logger *slog.Logger, limits HistoryLimits) {
	input, _ := t.context()
	e, result, codeMismatch := replayRun{instance: t.instance, executionID: t.executionID, history: t.all(),
		persisted: len(t.history), kv: t.kv, completions: t.completions, name: t.name, input: input,
		version: version, workerID: t.workerID, now: t.now, logger: logger, limits: limits}.replay(fn)
	t.result, t.codeMismatch = result, codeMismatch
	t.delta = append(t.delta, e.delta...)
	t.actions = e.actions
	for _, id := range e.cancelledActivities {
		t.cancelled = append(t.cancelled, duroxide.ScheduledActivityIdentifier{Instance: t.instance, ExecutionID: t.executionID, ActivityID: id})
	}
	t.cancelledChildren = e.cancelledSubOrchestrations
}
