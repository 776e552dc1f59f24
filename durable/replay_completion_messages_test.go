package durable

// Port of duroxide 0.1.29 tests/replay_engine/completion_messages.rs: stage
// 1 (prepCompletions) turns work items into events and filters them.

import (
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

// assertDeltaLen checks how many events stage 1 staged.
func assertDeltaLen(t *testing.T, e *replayEngine, want int, why string) {
	t.Helper()
	if got := len(e.historyDelta()); got != want {
		t.Fatalf("%s: history delta has %d events, want %d: %+v", why, got, want, e.historyDelta())
	}
}

func init() {
	registerReplaySuite("completion_messages",
		replayCase{"activity_completed_message", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(msgActivityCompleted(2, "result")))
			assertDeltaLen(t, e, 1, "one completion")
			k, ok := e.historyDelta()[0].Kind.(duroxide.ActivityCompleted)
			if !ok || k.Result != "result" {
				t.Fatalf("delta[0] = %+v, want ActivityCompleted{result}", e.historyDelta()[0].Kind)
			}
			assertDelta(t, e, wantEvent{3, refU64(2), duroxide.ActivityCompleted{Result: "result"}})
		}},
		replayCase{"timer_fired_message", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evTimerCreated(2, 1000)))
			e.prepCompletions(msgsOf(msgTimerFired(2, 1000)))
			assertDeltaLen(t, e, 1, "one completion")
			if _, ok := e.historyDelta()[0].Kind.(duroxide.TimerFired); !ok {
				t.Fatalf("delta[0] = %+v, want TimerFired", e.historyDelta()[0].Kind)
			}
			assertDelta(t, e, wantEvent{3, refU64(2), duroxide.TimerFired{FireAtMs: 1000}})
		}},
		replayCase{"external_raised_message", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evExternalSubscribed(2, "MyEvent")))
			e.prepCompletions(msgsOf(msgExternalRaised("MyEvent", "event-data")))
			assertDeltaLen(t, e, 1, "one external event")
			k, ok := e.historyDelta()[0].Kind.(duroxide.ExternalEvent)
			if !ok || k.Name != "MyEvent" || k.Data != "event-data" {
				t.Fatalf("delta[0] = %+v, want ExternalEvent{MyEvent, event-data}", e.historyDelta()[0].Kind)
			}
			assertDelta(t, e, wantEvent{3, nil, duroxide.ExternalEvent{Name: "MyEvent", Data: "event-data"}})
		}},
		replayCase{"sub_orch_completed_message", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evSubOrchScheduled(2, "Child", "sub::2", "input")))
			e.prepCompletions(msgsOf(msgSubOrchCompleted(2, "child-result")))
			assertDeltaLen(t, e, 1, "one completion")
			k, ok := e.historyDelta()[0].Kind.(duroxide.SubOrchestrationCompleted)
			if !ok || k.Result != "child-result" {
				t.Fatalf("delta[0] = %+v, want SubOrchestrationCompleted{child-result}", e.historyDelta()[0].Kind)
			}
			assertDelta(t, e, wantEvent{3, refU64(2), duroxide.SubOrchestrationCompleted{Result: "child-result"}})
		}},
		// At-least-once delivery: a completion already in history is dropped.
		replayCase{"duplicate_completion_filtered", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "Task", "input"),
				evActivityCompleted(3, 2, "result"),
			))
			e.prepCompletions(msgsOf(msgActivityCompleted(2, "result")))
			assertDeltaLen(t, e, 0, "Duplicate should be filtered")
		}},
		// Two completions for one schedule in a batch: only the first counts.
		replayCase{"duplicate_in_same_batch", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(
				msgActivityCompleted(2, "first-result"),
				msgActivityCompleted(2, "second-result"),
			))
			assertDeltaLen(t, e, 1, "Only first should be added")
			k, ok := e.historyDelta()[0].Kind.(duroxide.ActivityCompleted)
			if !ok || k.Result != "first-result" {
				t.Fatalf("delta[0] = %+v, want ActivityCompleted{first-result}", e.historyDelta()[0].Kind)
			}
			assertDelta(t, e, wantEvent{3, refU64(2), duroxide.ActivityCompleted{Result: "first-result"}})
		}},
		// A stale completion of another execution is dropped.
		replayCase{"wrong_execution_filtered", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(duroxide.ActivityCompletedItem{
				Instance: testInstance, ExecutionID: 999, ID: 2, Result: "result",
			}))
			assertDeltaLen(t, e, 0, "Wrong execution should be filtered")
		}},
		// External events are materialized even with no subscription; the
		// replay loop decides delivery.
		replayCase{"external_without_subscription", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			e.prepCompletions(msgsOf(msgExternalRaised("UnknownEvent", "data")))
			assertDeltaLen(t, e, 1, "External event should be materialized unconditionally (causal check is in replay loop)")
		}},
		replayCase{"multiple_completions_batch", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evActivityScheduled(2, "A", "a"),
				evActivityScheduled(3, "B", "b"),
			))
			e.prepCompletions(msgsOf(
				msgActivityCompleted(2, "result-a"),
				msgActivityCompleted(3, "result-b"),
			))
			assertDeltaLen(t, e, 2, "Both completions should be added")
			assertDelta(t, e,
				wantEvent{4, refU64(2), duroxide.ActivityCompleted{Result: "result-a"}},
				wantEvent{5, refU64(3), duroxide.ActivityCompleted{Result: "result-b"}},
			)
		}},
		// Equal external events in one batch are separate arrivals.
		replayCase{"duplicate_external_events_in_batch_are_kept", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evExternalSubscribed(2, "Evt")))
			e.prepCompletions(msgsOf(
				msgExternalRaised("Evt", "same-data"),
				msgExternalRaised("Evt", "same-data"),
			))
			assertDeltaLen(t, e, 2, "Both external events should be materialized (duplicates are valid separate arrivals)")
			assertDelta(t, e,
				wantEvent{3, nil, duroxide.ExternalEvent{Name: "Evt", Data: "same-data"}},
				wantEvent{4, nil, duroxide.ExternalEvent{Name: "Evt", Data: "same-data"}},
			)
		}},
		// An external event equal to one in history is a new arrival too.
		replayCase{"duplicate_external_event_in_history_is_kept", func(t *testing.T) {
			e := newTestEngine(histOf(
				evStarted(1),
				evExternalSubscribed(2, "Evt"),
				evExternalEvent(3, "Evt", "same-data"),
			))
			e.prepCompletions(msgsOf(msgExternalRaised("Evt", "same-data")))
			assertDeltaLen(t, e, 1, "External event should be materialized even if same name+data exists in history")
		}},
	)
}
