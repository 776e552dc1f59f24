package durable

import "github.com/duroxide-go/cdb/duroxide"

// prepCompletions is stage 1: it turns the locked messages into events of
// this turn's delta.
func (e *replayEngine) prepCompletions(msgs []duroxide.WorkItem) {
	panic("unimplemented")
}

// executeOrchestration is stage 2: it replays baseline+delta through the
// orchestration and returns how the turn ended.
func (e *replayEngine) executeOrchestration(handler OrchestrationFunc, input, name, version, workerID string) TurnResult {
	panic("unimplemented")
}
