package durable

import "github.com/duroxide-go/cdb/duroxide"

// The replay engine's accessors that only the ported Rust replay-engine
// tests read (replay.go's table); the dispatcher reads the engine's fields
// through turn.replay.

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
