package durable

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The replay engine: one turn of one execution, pure (no provider, no
// I/O). Stage 1 (prepCompletions, this file) turns the messages of a
// fetched orchestration item into events appended to this turn's delta;
// stage 2 (executeOrchestration, replay_execute.go, with replay_apply.go and
// replay_cancel.go) replays baseline+delta through the orchestration code
// and records what the code did beyond history. Both follow Rust's
// replay_engine.rs step by step, so event ids, source ids, order and error
// texts are Rust's. The dispatcher (turn.replay) and CheckHistory reach the
// engine through replayRun (replay_run.go); the ported Rust replay-engine
// tests drive it directly, with the same names in Go spelling (the
// accessors only those tests read live in replay_accessors_test.go):
//
//	Rust (src/runtime/replay_engine.rs)       Go
//	ReplayEngine::new(inst, exec, history)    newReplayEngine(inst, exec, history)
//	.with_persisted_history_len(n)            .withPersistedHistoryLen(n)
//	.with_kv_snapshot(map)                    .withKVSnapshot(map)
//	engine.prep_completions(msgs)             engine.prepCompletions(msgs)
//	engine.execute_orchestration(h, in, name, version, worker)
//	                                          engine.executeOrchestration(h, in, name, version, worker)
//	engine.history_delta()                    engine.historyDelta()
//	engine.pending_actions()                  engine.pendingActions()
//	engine.cancelled_activity_ids()           engine.cancelledActivityIDs()
//	engine.cancelled_sub_orchestration_ids()  engine.cancelledSubOrchestrationIDs()
//	engine.made_progress()                    engine.madeProgress()
//	engine.final_history()                    engine.finalHistory()
//	engine.baseline_history / .abort_error    engine.baselineHistory / .abortError
//	TurnResult::Completed(s) etc.             turnResult{Kind: turnCompleted, Output: s} etc. (replay_result.go)
//	Action::CallActivity { .. } etc.          actionCallActivity{..} etc. (action.go)

// DuroxideVersion is the duroxide release whose behaviour this runtime
// reproduces. Every event the engine writes carries it in duroxide_version,
// as Rust stamps env!("CARGO_PKG_VERSION"), so a Rust node reading a history
// written by Go sees the version it would have written itself.
const DuroxideVersion = "0.1.29"

// replayEngine replays one execution's history and runs one deterministic
// turn of its orchestration. It is pure: no provider, no clock other than
// the one timers and KV timestamps read (now), no I/O.
type replayEngine struct {
	instance    string
	executionID uint64

	// delta holds the events generated this turn (history_delta).
	delta []duroxide.Event
	// actions are the decisions to dispatch after persistence (pending_actions).
	actions []action
	// cancelledActivities are ActivityScheduled ids of dropped activity
	// futures, cancelled through the provider (lock stealing).
	cancelledActivities []uint64
	// cancelledSubOrchestrations are child instance ids of dropped
	// sub-orchestration futures, cancelled with CancelInstance.
	cancelledSubOrchestrations []string

	baselineHistory []duroxide.Event
	nextEventID     uint64
	// abortError is a system error found in stage 1 that fails the turn.
	abortError duroxide.ErrorDetails

	persistedHistoryLen int
	kvSnapshot          map[string]duroxide.KVEntry
	// replayedCode is set once the orchestration code runs against the
	// history: a nondeterminism error after that is the code's (see
	// turn.codeMismatch), not the messages' or a corrupt history's.
	replayedCode bool

	// The state of stage 2 (executeOrchestration): the orchestration's
	// context, the actions its code emitted not yet matched to history,
	// the schedules still open (by event id, with their kinds), whether
	// the code must be polled before the next event, and what the
	// orchestration function returned once done.
	ctx     *OrchestrationContext
	emitted []emittedAction
	// working is the history the code replays and cursor the index of the
	// next event to apply: the code's position, which Patched and
	// HistorySize read.
	working []duroxide.Event
	cursor  int
	// sizes are the running byte totals of working's events, as far as
	// HistorySize has needed them.
	sizes    []int64
	open     map[uint64]bool
	kinds    map[uint64]scheduleKind
	mustPoll bool
	done     bool
	output   string
	outErr   error

	// limits are the runtime's HistoryLimits, for ContinueAsNewSuggested.
	limits HistoryLimits

	// now is the wall clock read for timer fire times, KV timestamps and
	// event timestamps; tests may pin it.
	now func() time.Time
	// logger receives the engine's warnings and the orchestration's
	// replay-safe logs; nil means slog.Default().
	logger *slog.Logger
}

// newReplayEngine creates an engine for one instance and execution, with
// the history read from the store. Every baseline event counts as persisted
// until withPersistedHistoryLen says otherwise.
func newReplayEngine(instance string, executionID uint64, baseline []duroxide.Event) *replayEngine {
	next := uint64(1)
	if n := len(baseline); n > 0 {
		next = baseline[n-1].EventID + 1
	}
	return &replayEngine{
		instance:            instance,
		executionID:         executionID,
		baselineHistory:     baseline,
		nextEventID:         next,
		persistedHistoryLen: len(baseline),
		now:                 time.Now,
	}
}

// withPersistedHistoryLen sets how many baseline events came from the
// store; later ones (such as a freshly appended OrchestrationStarted) are
// new this turn, so IsReplaying is false while they are applied.
func (e *replayEngine) withPersistedHistoryLen(n int) *replayEngine {
	e.persistedHistoryLen = n
	return e
}

// withKVSnapshot seeds the orchestration's KV view with the store's
// snapshot (previous executions' values).
func (e *replayEngine) withKVSnapshot(s map[string]duroxide.KVEntry) *replayEngine {
	e.kvSnapshot = s
	return e
}

// finalHistory returns baseline plus delta.
func (e *replayEngine) finalHistory() []duroxide.Event {
	out := make([]duroxide.Event, 0, len(e.baselineHistory)+len(e.delta))
	out = append(out, e.baselineHistory...)
	return append(out, e.delta...)
}

// newEvent builds an event of this execution stamped with the engine's
// clock and DuroxideVersion, as Rust's Event::with_event_id stamps it.
func (e *replayEngine) newEvent(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	ms := e.now().UnixMilli()
	if ms < 0 {
		ms = 0
	}
	return duroxide.Event{
		EventID:         id,
		SourceEventID:   source,
		InstanceID:      e.instance,
		ExecutionID:     e.executionID,
		TimestampMs:     uint64(ms),
		DuroxideVersion: DuroxideVersion,
		Kind:            kind,
	}
}

// appendEvent gives kind the next event id and appends it to the delta.
func (e *replayEngine) appendEvent(source *uint64, kind duroxide.EventKind) {
	id := e.nextEventID
	e.nextEventID++
	e.delta = append(e.delta, e.newEvent(id, source, kind))
}

func (e *replayEngine) log() *slog.Logger {
	if e.logger != nil {
		return e.logger
	}
	return slog.Default()
}

func u64p(v uint64) *uint64 { return &v }

// prepCompletions is stage 1. Each message, in order, is dropped (another
// execution, or a completion already in history or in this delta), checked
// against its schedule (a mismatch aborts the turn with a nondeterminism
// error), and converted to an event with the next event id. A failure with
// system error details is recorded and aborts the turn.
func (e *replayEngine) prepCompletions(msgs []duroxide.WorkItem) {
	for _, msg := range msgs {
		if !e.isForCurrentExecution(msg) {
			if e.hasContinueAsNewInHistory() {
				e.log().Warn("ignoring completion from previous execution", "instance", e.instance)
			} else {
				e.log().Warn("completion from different execution", "instance", e.instance)
			}
			continue
		}
		if e.isCompletionInHistory(msg, e.baselineHistory, false) {
			e.log().Warn("ignoring duplicate completion", "instance", e.instance)
			continue
		}
		if e.isCompletionInHistory(msg, e.delta, true) {
			e.log().Warn("dropping duplicate completion in current run", "instance", e.instance)
			continue
		}
		if err := e.checkCompletionSchedule(msg); err != nil {
			e.log().Warn("detected nondeterminism in completion batch", "instance", e.instance, "error", displayMessage(err))
			e.abortError = err
			continue
		}
		source, kind := e.messageEvent(msg)
		if kind != nil {
			e.appendEvent(source, kind)
		}
	}
}

// isForCurrentExecution: completions carry their execution id; external,
// queue and cancel messages apply to whichever execution is current.
func (e *replayEngine) isForCurrentExecution(msg duroxide.WorkItem) bool {
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		return m.ExecutionID == e.executionID
	case duroxide.ActivityFailedItem:
		return m.ExecutionID == e.executionID
	case duroxide.TimerFiredItem:
		return m.ExecutionID == e.executionID
	case duroxide.SubOrchCompletedItem:
		return m.ParentExecutionID == e.executionID
	case duroxide.SubOrchFailedItem:
		return m.ParentExecutionID == e.executionID
	case duroxide.ExternalRaisedItem, duroxide.QueueMessageItem, duroxide.CancelInstanceItem:
		return true
	}
	return false
}

func (e *replayEngine) hasContinueAsNewInHistory() bool {
	for _, ev := range e.baselineHistory {
		if _, ok := ev.Kind.(duroxide.OrchestrationContinuedAsNew); ok {
			return true
		}
	}
	return false
}

// isCompletionInHistory reports whether events already hold the completion
// msg carries (same source id and kind), so a re-delivered message is not
// applied twice. In the baseline the kind must match exactly (a Completed
// does not shadow a Failed, as in Rust); in the delta either outcome
// counts. External and queue events are never deduplicated.
func (e *replayEngine) isCompletionInHistory(msg duroxide.WorkItem, events []duroxide.Event, inDelta bool) bool {
	var id uint64
	var match func(duroxide.EventKind) bool
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		id = m.ID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.ActivityCompleted)
			_, f := k.(duroxide.ActivityFailed)
			return c || (inDelta && f)
		}
	case duroxide.ActivityFailedItem:
		if !inDelta {
			// In the baseline a failure is never taken for a duplicate
			// (Rust's baseline check has no ActivityFailed arm).
			return false
		}
		id = m.ID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.ActivityCompleted)
			_, f := k.(duroxide.ActivityFailed)
			return c || f
		}
	case duroxide.TimerFiredItem:
		id = m.ID
		match = func(k duroxide.EventKind) bool { _, ok := k.(duroxide.TimerFired); return ok }
	case duroxide.SubOrchCompletedItem:
		id = m.ParentID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.SubOrchestrationCompleted)
			_, f := k.(duroxide.SubOrchestrationFailed)
			return c || (inDelta && f)
		}
	case duroxide.SubOrchFailedItem:
		id = m.ParentID
		match = func(k duroxide.EventKind) bool {
			_, c := k.(duroxide.SubOrchestrationCompleted)
			_, f := k.(duroxide.SubOrchestrationFailed)
			return f || (inDelta && c)
		}
	default:
		return false
	}
	for _, ev := range events {
		if ev.SourceEventID != nil && *ev.SourceEventID == id && match(ev.Kind) {
			return true
		}
	}
	return false
}

// scheduleKindOf names the schedule event with the given id ("" when
// there is none), for the nondeterminism message of a completion that
// names the wrong kind (worded as Rust's prep-stage check).
func (e *replayEngine) scheduleKindOf(id uint64) string {
	for _, evs := range [][]duroxide.Event{e.baselineHistory, e.delta} {
		for _, ev := range evs {
			if ev.EventID != id {
				continue
			}
			switch ev.Kind.(type) {
			case duroxide.ActivityScheduled:
				return "activity"
			case duroxide.TimerCreated:
				return "timer"
			case duroxide.SubOrchestrationScheduled:
				return "suborchestration"
			}
		}
	}
	return ""
}

// checkCompletionSchedule verifies a completion names a schedule of its
// kind, else returns the nondeterminism failure (Rust's messages, word for
// word).
func (e *replayEngine) checkCompletionSchedule(msg duroxide.WorkItem) duroxide.ErrorDetails {
	var id uint64
	var want, missing string
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		id, want, missing = m.ID, "activity", "no matching schedule for completion id=%d"
	case duroxide.ActivityFailedItem:
		id, want, missing = m.ID, "activity", "no matching schedule for completion id=%d"
	case duroxide.TimerFiredItem:
		id, want, missing = m.ID, "timer", "no matching schedule for timer id=%d"
	case duroxide.SubOrchCompletedItem:
		id, want, missing = m.ParentID, "suborchestration", "no matching schedule for sub-orchestration id=%d"
	case duroxide.SubOrchFailedItem:
		id, want, missing = m.ParentID, "suborchestration", "no matching schedule for sub-orchestration id=%d"
	default:
		return nil
	}
	switch got := e.scheduleKindOf(id); got {
	case want:
		return nil
	case "":
		return nondeterminismError(fmt.Sprintf(missing, id))
	default:
		return nondeterminismError(fmt.Sprintf("completion kind mismatch for id=%d, expected '%s', got '%s'", id, got, want))
	}
}

// messageEvent converts a message to the event it records (nil kind: none).
func (e *replayEngine) messageEvent(msg duroxide.WorkItem) (*uint64, duroxide.EventKind) {
	switch m := msg.(type) {
	case duroxide.ActivityCompletedItem:
		return u64p(m.ID), duroxide.ActivityCompleted{Result: m.Result}
	case duroxide.ActivityFailedItem:
		e.noteSystemError(m.Details)
		return u64p(m.ID), duroxide.ActivityFailed{Details: m.Details}
	case duroxide.TimerFiredItem:
		return u64p(m.ID), duroxide.TimerFired{FireAtMs: m.FireAtMs}
	case duroxide.ExternalRaisedItem:
		return nil, duroxide.ExternalEvent{Name: m.Name, Data: m.Data}
	case duroxide.QueueMessageItem:
		return nil, duroxide.ExternalEventPersistent{Name: m.Name, Data: m.Data}
	case duroxide.SubOrchCompletedItem:
		return u64p(m.ParentID), duroxide.SubOrchestrationCompleted{Result: m.Result}
	case duroxide.SubOrchFailedItem:
		e.noteSystemError(m.Details)
		return u64p(m.ParentID), duroxide.SubOrchestrationFailed{Details: m.Details}
	case duroxide.CancelInstanceItem:
		if e.baselineTerminated() || e.cancelRequested() {
			return nil, nil
		}
		return nil, duroxide.OrchestrationCancelRequested{Reason: m.Reason}
	}
	return nil, nil
}

// noteSystemError aborts the turn on Infrastructure, Configuration or
// Poison details (the first one wins); the event is still recorded.
func (e *replayEngine) noteSystemError(d duroxide.ErrorDetails) {
	if isSystemError(d) && e.abortError == nil {
		e.log().Warn("system error aborts turn", "instance", e.instance, "error", displayMessage(d))
		e.abortError = d
	}
}

func (e *replayEngine) baselineTerminated() bool {
	for _, ev := range e.baselineHistory {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed:
			return true
		}
	}
	return false
}

// cancelEvent returns the first OrchestrationCancelRequested of baseline
// or delta.
func (e *replayEngine) cancelEvent() (duroxide.OrchestrationCancelRequested, bool) {
	for _, evs := range [][]duroxide.Event{e.baselineHistory, e.delta} {
		for _, ev := range evs {
			if c, ok := ev.Kind.(duroxide.OrchestrationCancelRequested); ok {
				return c, true
			}
		}
	}
	return duroxide.OrchestrationCancelRequested{}, false
}

func (e *replayEngine) cancelRequested() bool {
	_, ok := e.cancelEvent()
	return ok
}
