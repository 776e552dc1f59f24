package durable

// Port of duroxide 0.1.29 src/runtime/replay_engine_tests.rs: the engine's
// in-crate unit tests, which also reach into its fields.

import (
	"reflect"
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

// mockHandler is the Rust MockHandler: a fixed result, nothing scheduled.
func mockHandler(output string, err error) OrchestrationFunc {
	return func(*OrchestrationContext, string) (string, error) { return output, err }
}

// executeUnit runs a turn with the identity the unit tests use.
func executeUnit(e *replayEngine, h OrchestrationFunc) turnResult {
	return e.executeOrchestration(h, "test-input", "test-orch", "1.0.0", "test-worker-id")
}

func init() {
	registerReplaySuite("replay_engine_tests",
		replayCase{"test_engine_creation", func(t *testing.T) {
			baseline := histOf(evStartedNamed(0, "test-orch"))
			e := newReplayEngine("test-instance", 1, cloneHistory(baseline))
			if e.instance != "test-instance" {
				t.Fatalf("instance = %q", e.instance)
			}
			if !reflect.DeepEqual(e.baselineHistory, baseline) {
				t.Fatalf("baseline history = %+v, want %+v", e.baselineHistory, baseline)
			}
			if len(e.historyDelta()) != 0 {
				t.Fatalf("history delta should be empty: %+v", e.historyDelta())
			}
			if len(e.pendingActions()) != 0 {
				t.Fatalf("pending actions should be empty: %+v", e.pendingActions())
			}
			if e.madeProgress() {
				t.Fatal("a new engine has made no progress")
			}
		}},
		// Completions with matching schedules become delta events.
		replayCase{"test_prep_completions", func(t *testing.T) {
			e := newReplayEngine("test-instance", 1, histOf(
				evActivityScheduled(1, "a1", "i1"),
				evActivityScheduled(2, "a2", "i2"),
			))
			e.prepCompletions(msgsOf(
				duroxide.ActivityCompletedItem{Instance: "test-instance", ExecutionID: 1, ID: 1, Result: "result1"},
				duroxide.ActivityCompletedItem{Instance: "test-instance", ExecutionID: 1, ID: 2, Result: "result2"},
			))
			if n := len(e.historyDelta()); n != 2 {
				t.Fatalf("history delta has %d events, want 2: %+v", n, e.historyDelta())
			}
			if !e.madeProgress() {
				t.Fatal("made_progress should be true")
			}
		}},
		replayCase{"test_prep_completions_with_external_events", func(t *testing.T) {
			e := newReplayEngine("test-instance", 1, histOf(
				evStartedNamed(0, "test-orch"),
				evExternalSubscribed(5, "test-event"),
			))
			e.prepCompletions(msgsOf(duroxide.ExternalRaisedItem{Instance: "test-instance", Name: "test-event", Data: "event-data"}))
			if len(e.historyDelta()) == 0 {
				t.Fatal("history delta should hold the external event")
			}
			if !e.madeProgress() {
				t.Fatal("made_progress should be true")
			}
		}},
		// Both copies of a completion already in history are dropped.
		replayCase{"test_prep_completions_duplicate_handling", func(t *testing.T) {
			e := newReplayEngine("test-instance", 1, nil)
			e.baselineHistory = histOf(
				evActivityScheduled(1, "test", "test"),
				evActivityCompleted(2, 1, "first-result"),
			)
			e.prepCompletions(msgsOf(
				duroxide.ActivityCompletedItem{Instance: "test-instance", ExecutionID: 1, ID: 1, Result: "first-result"},
				duroxide.ActivityCompletedItem{Instance: "test-instance", ExecutionID: 1, ID: 1, Result: "second-result"},
			))
			if n := len(e.historyDelta()); n != 0 {
				t.Fatalf("both duplicates should be filtered, delta has %d: %+v", n, e.historyDelta())
			}
		}},
		replayCase{"test_execute_orchestration_completed", func(t *testing.T) {
			e := newReplayEngine("test-instance", 1, histOf(evStartedNamed(0, "test-orch")))
			r := executeUnit(e, mockHandler("orchestration-result", nil))
			if r.Kind != turnCompleted || r.Output != "orchestration-result" {
				t.Fatalf("Expected turnResult::Completed(orchestration-result), got %v", r)
			}
		}},
		// An error returned by the code is Application{OrchestrationFailed}
		// with the error's text.
		replayCase{"test_execute_orchestration_failed", func(t *testing.T) {
			e := newReplayEngine("test-instance", 1, histOf(evStartedNamed(0, "test-orch")))
			r := executeUnit(e, mockHandler("", errString("orchestration-error")))
			if r.Kind != turnFailed {
				t.Fatalf("Expected turnResult::Failed, got %v", r)
			}
			var app duroxide.ApplicationError
			switch d := r.Details.(type) {
			case duroxide.ApplicationError:
				app = d
			case *duroxide.ApplicationError:
				app = *d
			default:
				t.Fatalf("Expected Application failure, got %T %v", r.Details, r)
			}
			if app.Kind.Type != duroxide.AppOrchestrationFailed || app.Message != "orchestration-error" {
				t.Fatalf("Expected Application{OrchestrationFailed, orchestration-error}, got %+v", app)
			}
		}},
		// A completion the code never consumes does not stop it completing.
		replayCase{"test_execute_orchestration_with_unconsumed_completions", func(t *testing.T) {
			e := newReplayEngine("test-instance", 1, histOf(evStartedNamed(0, "test-orch")))
			e.baselineHistory = append(e.baselineHistory, evActivityScheduled(999, "test-activity", "test-input"))
			e.prepCompletions(msgsOf(duroxide.ActivityCompletedItem{Instance: "test-instance", ExecutionID: 1, ID: 999, Result: "test-result"}))
			r := executeUnit(e, mockHandler("orchestration-result", nil))
			if r.Kind != turnCompleted {
				t.Fatalf("Expected turnResult::Completed, got %v", r)
			}
		}},
		replayCase{"test_final_history", func(t *testing.T) {
			baseline := histOf(evStartedNamed(0, "test-orch"))
			e := newReplayEngine("test-instance", 1, cloneHistory(baseline))
			e.delta = histOf(
				evActivityScheduled(1, "test-activity", "activity-input"),
				evActivityCompleted(2, 1, "activity-result"),
			)
			final := e.finalHistory()
			if len(final) != 3 {
				t.Fatalf("want baseline + 2 delta events, got %d: %+v", len(final), final)
			}
			if !reflect.DeepEqual(final[0], baseline[0]) {
				t.Fatalf("final[0] = %+v, want %+v", final[0], baseline[0])
			}
			if _, ok := final[1].Kind.(duroxide.ActivityScheduled); !ok {
				t.Fatalf("final[1] = %+v, want ActivityScheduled", final[1].Kind)
			}
			if _, ok := final[2].Kind.(duroxide.ActivityCompleted); !ok {
				t.Fatalf("final[2] = %+v, want ActivityCompleted", final[2].Kind)
			}
		}},
		replayCase{"test_made_progress", func(t *testing.T) {
			e := newReplayEngine("test-instance", 1, histOf(evActivityScheduled(1, "test", "input")))
			if e.madeProgress() {
				t.Fatal("Initially no progress")
			}
			e.prepCompletions(msgsOf(duroxide.ActivityCompletedItem{Instance: "test-instance", ExecutionID: 1, ID: 1, Result: "result"}))
			if !e.madeProgress() {
				t.Fatal("a completion is progress")
			}
			e.delta = histOf(evActivityScheduled(1, "test", "input"))
			if !e.madeProgress() {
				t.Fatal("history delta is progress")
			}
			e.delta = e.delta[:0]
			if e.madeProgress() {
				t.Fatal("an empty delta is no progress")
			}
		}},
	)
}

// errString is an error with a fixed text.
type errString string

func (e errString) Error() string { return string(e) }
