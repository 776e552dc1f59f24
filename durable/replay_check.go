package durable

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/duroxide-go/cdb/duroxide"
)

// Checking recorded histories against code without a runtime. The
// replayer (package durable/replayer) feeds each stored execution here; this
// file owns the one step that needs the unexported replay engine. It runs
// the same pure turn the runtime runs (turn.replay) with no messages, so it
// never runs an activity, starts a child or writes anything, and its error
// text is the runtime's.

// The replay check's outcomes, matched with errors.Is on the *ReplayError
// that CheckHistory returns.
var (
	// ErrNondeterministic: the code does not replay the history. The
	// runtime would fail (NondeterminismFail) or hold (NondeterminismBlock)
	// the instance with the same message.
	ErrNondeterministic = errors.New("durable: orchestration code does not replay the recorded history")
	// ErrUnregisteredOrchestration: the registry has no orchestration of
	// the name and version the history's OrchestrationStarted records.
	ErrUnregisteredOrchestration = errors.New("durable: orchestration of the recorded history is not registered")
	// ErrCorruptHistory: the history cannot be replayed by any code (empty,
	// no OrchestrationStarted first, or inconsistent events).
	ErrCorruptHistory = errors.New("durable: recorded history is corrupt")
	// ErrReplayPanicked: the code panics while replaying a history that did
	// not end in a failure, so the runtime would fail the instance.
	ErrReplayPanicked = errors.New("durable: orchestration code panics replaying the recorded history")
)

// RecordedExecution is one execution's stored history to check.
type RecordedExecution struct {
	Instance    string
	ExecutionID uint64
	// History is the execution's events ordered by event id, starting with
	// OrchestrationStarted.
	History []duroxide.Event
	// KVSnapshot is the instance's KV store as of the previous execution
	// (nil for a first execution), as the runtime hands it to a turn.
	KVSnapshot map[string]duroxide.KVEntry
	// HistoryLimits are the runtime's Options.HistoryLimits, which
	// ctx.ContinueAsNewSuggested reads (zero: the defaults).
	HistoryLimits HistoryLimits
}

// ReplayError says why a recorded execution does not replay. Kind is one
// of ErrNondeterministic, ErrUnregisteredOrchestration, ErrCorruptHistory,
// ErrReplayPanicked;
// Message is the runtime's text (for a mismatch, the mismatching call and
// event, as the runtime logs and records it).
type ReplayError struct {
	Kind          error
	Instance      string
	ExecutionID   uint64
	Orchestration string
	Version       string
	Message       string
}

// Error returns the message with the instance it belongs to.
func (e *ReplayError) Error() string {
	return fmt.Sprintf("instance %q execution %d (%s@%s): %s", e.Instance, e.ExecutionID, e.Orchestration, e.Version, e.Message)
}

// Unwrap returns Kind so errors.Is matches the sentinel.
func (e *ReplayError) Unwrap() error { return e.Kind }

// CheckHistory replays rec through the orchestration its
// OrchestrationStarted names (exact version; "0.0.0", the placeholder of
// an unresolved start, resolves by the registry's policy as the runtime
// does) and returns nil when the code replays every recorded event, else a
// *ReplayError. A terminal event (completed, failed, continued as new) is
// set aside first so the code replays up to it: the check is that the code
// makes the recorded calls in the recorded order, not that it ends the same
// way. Calls the code makes beyond the history are what a live instance
// would do next and are fine. Nothing is run or written. A nil reg has
// nothing registered.
func CheckHistory(reg *Registry, rec RecordedExecution) error {
	_, err := OldPatchBranches(reg, rec)
	return err
}

// OldPatchBranches replays rec as CheckHistory does and returns the change
// ids whose Patched call the replay answered false, in call order: the
// patches whose old branch the execution took, and takes again on every
// replay. A patch the execution had not reached yet is not listed (it
// will take the new branch). The error is CheckHistory's.
func OldPatchBranches(reg *Registry, rec RecordedExecution) ([]string, error) {
	fail := func(kind error, name, version, msg string) ([]string, error) {
		return nil, &ReplayError{Kind: kind, Instance: rec.Instance, ExecutionID: rec.ExecutionID,
			Orchestration: name, Version: version, Message: msg}
	}
	if len(rec.History) == 0 {
		return fail(ErrCorruptHistory, "", "", "corrupted history: empty")
	}
	started, ok := rec.History[0].Kind.(duroxide.OrchestrationStarted)
	if !ok {
		return fail(ErrCorruptHistory, "", "", "corrupted history: first event must be OrchestrationStarted")
	}
	version, fn, ok := resolveRecorded(reg, started)
	if !ok {
		return fail(ErrUnregisteredOrchestration, started.Name, started.Version,
			fmt.Sprintf("orchestration %s version %s is not registered", started.Name, started.Version))
	}
	history := beforeTerminal(rec.History)
	e, res, codeMismatch := replayRun{instance: rec.Instance, executionID: rec.ExecutionID, history: history,
		persisted: len(history), kv: rec.KVSnapshot, name: started.Name, input: started.Input, version: version,
		workerID: "replayer", logger: slog.New(slog.DiscardHandler), limits: rec.HistoryLimits}.replay(fn)
	var old []string
	if e.ctx != nil {
		old = e.ctx.oldPatches
	}
	if res.Kind != turnFailed {
		return old, nil
	}
	if isPanic(res.Details) && !endedInFailure(rec.History, len(history)) {
		return fail(ErrReplayPanicked, started.Name, version, displayMessage(res.Details))
	}
	if !isNondeterminism(res.Details) {
		return old, nil
	}
	if codeMismatch {
		return fail(ErrNondeterministic, started.Name, version, displayMessage(res.Details))
	}
	return fail(ErrCorruptHistory, started.Name, version, displayMessage(res.Details))
}

// resolveRecorded finds the handler the runtime would replay started with.
func resolveRecorded(reg *Registry, started duroxide.OrchestrationStarted) (string, OrchestrationFunc, bool) {
	if reg == nil {
		return "", nil, false
	}
	if started.Version == "0.0.0" {
		return reg.resolveOrchestration(started.Name)
	}
	return reg.resolveOrchestrationExact(started.Name, started.Version)
}

// beforeTerminal cuts history at its first terminal event: the engine
// skips a finished execution, and the code must replay what led there.
func beforeTerminal(history []duroxide.Event) []duroxide.Event {
	for i, ev := range history {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			return history[:i]
		}
	}
	return history
}

// isPanic reports whether d is the failure of a panicking orchestration.
func isPanic(d duroxide.ErrorDetails) bool {
	switch v := d.(type) {
	case duroxide.ApplicationError:
		return v.Kind.Type == duroxide.AppPanicked
	case *duroxide.ApplicationError:
		return v != nil && v.Kind.Type == duroxide.AppPanicked
	}
	return false
}

// endedInFailure reports whether history's terminal event, at cut, is a
// failure: code that fails replaying it again does what was recorded.
func endedInFailure(history []duroxide.Event, cut int) bool {
	if cut >= len(history) {
		return false
	}
	_, ok := history[cut].Kind.(duroxide.OrchestrationFailed)
	return ok
}
