package durable

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// SEAM: stable API used by host and tests.
//
// This file is the contract between the replay engine (rt-engine) and its
// two users: the orchestration dispatcher (rt-host) and the ported Rust
// replay-engine tests (rt-replaytests). It mirrors Rust duroxide 0.1.29's
// ReplayEngine (src/runtime/replay_engine.rs) one to one in Go naming, so a
// Rust test ports line by line:
//
//	Rust                                      Go (package durable, unexported)
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
//	engine.baseline_history / .instance / .abort_error (fields)
//	                                          engine.baselineHistory / .instance / .abortError
//	TurnResult::Completed(s) etc.             TurnResult{Kind: TurnCompleted, Output: s} etc.
//	Action::CallActivity { .. } etc.          actionCallActivity{..} etc. (action.go)
//
// The host can also use runTurn, which runs both stages for one fetched
// orchestration item. Changes to this file are additive, or announced in a
// commit message starting "durable seam:".

// DuroxideVersion is the duroxide release whose behaviour this runtime
// reproduces. Every event the engine writes carries it in duroxide_version,
// as Rust stamps env!("CARGO_PKG_VERSION"), so a Rust node reading a history
// written by Go sees the version it would have written itself.
const DuroxideVersion = "0.1.29"

// OrchestrationFunc is the untyped form of an orchestration: raw input in,
// raw output or error out. The typed helpers in the registry adapt
// func(*OrchestrationContext, In) (Out, error) to it. A returned error
// fails the orchestration with its Error() text as the message.
type OrchestrationFunc func(ctx *OrchestrationContext, input string) (string, error)

// TurnResultKind says how an orchestration turn ended.
type TurnResultKind int

// The outcomes of a turn, in Rust's TurnResult order.
const (
	// TurnContinue: the orchestration is waiting for more completions.
	TurnContinue TurnResultKind = iota
	// TurnCompleted: the orchestration returned an output.
	TurnCompleted
	// TurnFailed: the orchestration (or the turn) failed; see Details.
	TurnFailed
	// TurnContinueAsNew: the orchestration asked to restart with new input.
	TurnContinueAsNew
	// TurnCancelled: a cancellation request was recorded; see Reason.
	TurnCancelled
)

// String returns the Rust variant name.
func (k TurnResultKind) String() string {
	switch k {
	case TurnContinue:
		return "Continue"
	case TurnCompleted:
		return "Completed"
	case TurnFailed:
		return "Failed"
	case TurnContinueAsNew:
		return "ContinueAsNew"
	case TurnCancelled:
		return "Cancelled"
	}
	return fmt.Sprintf("TurnResultKind(%d)", int(k))
}

// TurnResult is Rust's TurnResult enum. Only the fields of Kind are set.
type TurnResult struct {
	Kind    TurnResultKind
	Output  string                // TurnCompleted
	Details duroxide.ErrorDetails // TurnFailed
	Input   string                // TurnContinueAsNew
	Version *string               // TurnContinueAsNew; nil = resolve by policy
	Reason  string                // TurnCancelled
}

// String renders the result for test failure messages.
func (r TurnResult) String() string {
	switch r.Kind {
	case TurnCompleted:
		return fmt.Sprintf("Completed(%q)", r.Output)
	case TurnFailed:
		if r.Details == nil {
			return "Failed(<nil>)"
		}
		return fmt.Sprintf("Failed(%s: %q)", r.Details.Variant(), displayMessage(r.Details))
	case TurnContinueAsNew:
		v := "None"
		if r.Version != nil {
			v = *r.Version
		}
		return fmt.Sprintf("ContinueAsNew(input=%q, version=%s)", r.Input, v)
	case TurnCancelled:
		return fmt.Sprintf("Cancelled(%q)", r.Reason)
	}
	return r.Kind.String()
}

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
	// turnOutput.CodeMismatch), not the messages' or a corrupt history's.
	replayedCode bool

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

// historyDelta returns the events generated this turn.
func (e *replayEngine) historyDelta() []duroxide.Event { return e.delta }

// pendingActions returns the actions to dispatch after persistence.
func (e *replayEngine) pendingActions() []action { return e.actions }

// cancelledActivityIDs returns the ActivityScheduled ids to cancel.
func (e *replayEngine) cancelledActivityIDs() []uint64 { return e.cancelledActivities }

// cancelledSubOrchestrationIDs returns the child instance ids to cancel.
func (e *replayEngine) cancelledSubOrchestrationIDs() []string { return e.cancelledSubOrchestrations }

// madeProgress reports whether this turn added history.
func (e *replayEngine) madeProgress() bool { return len(e.delta) > 0 }

// finalHistory returns baseline plus delta.
func (e *replayEngine) finalHistory() []duroxide.Event {
	out := make([]duroxide.Event, 0, len(e.baselineHistory)+len(e.delta))
	out = append(out, e.baselineHistory...)
	return append(out, e.delta...)
}

// turnInput is everything one orchestration turn needs: the fetched history
// (with a new execution's OrchestrationStarted already appended), how much
// of it was persisted, the locked messages, the KV snapshot and the handler.
type turnInput struct {
	Instance     string
	ExecutionID  uint64
	History      []duroxide.Event
	PersistedLen int
	Messages     []duroxide.WorkItem
	KVSnapshot   map[string]duroxide.KVEntry
	Handler      OrchestrationFunc
	Input        string
	Name         string
	Version      string
	WorkerID     string
	Logger       *slog.Logger
	// Now is the clock of timer fire times and event timestamps (nil:
	// time.Now).
	Now func() time.Time
}

// turnOutput is what the host commits for one turn.
type turnOutput struct {
	Result                       TurnResult
	Delta                        []duroxide.Event
	Actions                      []action
	CancelledActivityIDs         []uint64
	CancelledSubOrchestrationIDs []string
	// CodeMismatch: the turn failed with a nondeterminism error because
	// the orchestration code does not replay the history (other code could
	// replay it), rather than because a message disagrees with history or
	// the history is corrupt.
	CodeMismatch bool
}

// runTurn runs stage 1 (prepCompletions) and stage 2
// (executeOrchestration) for one orchestration item.
func runTurn(in turnInput) turnOutput {
	e := newReplayEngine(in.Instance, in.ExecutionID, in.History).
		withPersistedHistoryLen(in.PersistedLen).
		withKVSnapshot(in.KVSnapshot)
	e.logger = in.Logger
	if in.Now != nil {
		e.now = in.Now
	}
	e.prepCompletions(in.Messages)
	res := e.executeOrchestration(in.Handler, in.Input, in.Name, in.Version, in.WorkerID)
	return turnOutput{
		Result:                       res,
		Delta:                        e.delta,
		Actions:                      e.actions,
		CancelledActivityIDs:         e.cancelledActivities,
		CancelledSubOrchestrationIDs: e.cancelledSubOrchestrations,
		CodeMismatch:                 e.replayedCode && res.Kind == TurnFailed && isNondeterminism(res.Details),
	}
}
