package durable

// Helpers for the second half of the ported replay-engine tests (the files
// other than history_corruption, kv, unobserved_futures and
// action_to_event). The shared builders, handlers and assertions live in
// replay_helpers_test.go; these add only what those files need beyond it.

import (
	"strconv"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

// assertTurnNondeterminismText checks that the turn failed with
// Configuration{Nondeterminism} whose display message is exactly
// "nondeterministic: "+message. The Rust tests assert a substring; the
// whole text is asserted where Rust's format has no Debug rendering,
// because it lands verbatim in the OrchestrationFailed event a Rust node
// would read.
func assertTurnNondeterminismText(t *testing.T, r TurnResult, message string) {
	t.Helper()
	assertTurnNondeterminism(t, r)
	if got, want := displayMessage(r.Details), "nondeterministic: "+message; got != want {
		t.Fatalf("nondeterminism message: got %q, want %q", got, want)
	}
}

// actionsOfType returns the pending actions whose Go type is A.
func actionsOfType[A action](e *replayEngine) []A {
	var out []A
	for _, a := range e.pendingActions() {
		if v, ok := a.(A); ok {
			out = append(out, v)
		}
	}
	return out
}

// evStartedNamed is the OrchestrationStarted event the tests of
// src/runtime/replay_engine_tests.rs build by hand (name "test-orch").
func evStartedNamed(eventID uint64, name string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.OrchestrationStarted{
		Name: name, Version: testOrchVersion, Input: testOrchInput,
	})
}

// histOf is a history literal: the Rust tests' vec![...] of events.
func histOf(events ...duroxide.Event) []duroxide.Event { return events }

// msgsOf is a batch of completion messages for prepCompletions.
func msgsOf(items ...duroxide.WorkItem) []duroxide.WorkItem { return items }

// cloneHistory copies a history so later appends cannot alias the slice an
// engine was built from.
func cloneHistory(h []duroxide.Event) []duroxide.Event { return append([]duroxide.Event(nil), h...) }

// uitoa formats an event id.
func uitoa(v uint64) string { return strconv.FormatUint(v, 10) }
