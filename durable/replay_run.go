package durable

import (
	"log/slog"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// replayRun is everything one replay of an execution takes: the engine's
// whole input, so that the dispatcher's turn and CheckHistory hand it the
// same things and the engine needs neither.
type replayRun struct {
	instance    string
	executionID uint64
	// history is the persisted history followed by the events the host
	// added this turn (a new execution's OrchestrationStarted); persisted
	// is how many of them the store holds.
	history   []duroxide.Event
	persisted int
	kv        map[string]duroxide.KVEntry
	// completions are the fetched messages for stage 1 to turn into events.
	completions                    []duroxide.WorkItem
	name, input, version, workerID string
	// now stamps the engine's events (nil: time.Now); logger is the
	// orchestration's logger.
	now    func() time.Time
	logger *slog.Logger
	// limits are the runtime's HistoryLimits (zero: the defaults).
	limits HistoryLimits
}

// replay runs the replay engine over r: stage 1 turns the completions into
// events, stage 2 runs fn over history and those. It returns the engine,
// which holds the new events, the actions to dispatch and the futures the
// code dropped, with how the turn ended and whether a nondeterminism
// failure is the code's (it does not replay history) rather than the
// messages' or a corrupt history's.
func (r replayRun) replay(fn OrchestrationFunc) (e *replayEngine, result turnResult, codeMismatch bool) {
	e = newReplayEngine(r.instance, r.executionID, r.history).
		withPersistedHistoryLen(r.persisted).
		withKVSnapshot(r.kv)
	e.logger, e.limits = r.logger, r.limits
	if r.now != nil {
		e.now = r.now
	}
	e.prepCompletions(r.completions)
	result = e.executeOrchestration(fn, r.input, r.name, r.version, r.workerID)
	return e, result, e.replayedCode && result.Kind == turnFailed && isNondeterminism(result.Details)
}
