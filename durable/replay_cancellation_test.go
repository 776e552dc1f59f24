package durable

// Port of duroxide 0.1.29 tests/replay_engine/cancellation.rs:
// OrchestrationCancelRequested handling.

import (
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

func init() {
	registerReplaySuite("cancellation",
		// A cancel request arriving as a message wins over the code's result.
		replayCase{"cancel_via_message", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			e.prepCompletions(msgsOf(msgCancelInstance("user requested")))
			assertDelta(t, e, wantEvent{2, nil, duroxide.OrchestrationCancelRequested{Reason: "user requested"}})
			r := executeTurn(e, hImmediateOK("success"))
			assertTurnCancelledWithReason(t, r, "user requested")
		}},
		// A cancel request already in history.
		replayCase{"cancel_in_history", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evCancelRequested(2, "admin cancelled")))
			r := executeTurn(e, hImmediateOK("success"))
			assertTurnCancelledWithReason(t, r, "admin cancelled")
		}},
		replayCase{"cancel_precedence_over_completion", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1)))
			e.prepCompletions(msgsOf(msgCancelInstance("cancelled")))
			r := executeTurn(e, hImmediateOK("would have completed"))
			assertTurnCancelled(t, r)
		}},
		replayCase{"cancel_with_pending_activity", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evActivityScheduled(2, "Task", "input")))
			e.prepCompletions(msgsOf(msgCancelInstance("cancelled")))
			r := executeTurn(e, hSingleActivity("Task", "input"))
			assertTurnCancelledWithReason(t, r, "cancelled")
			// The cancel request is the only new event; the pending activity
			// is neither rescheduled nor given a dropped-future breadcrumb.
			assertDelta(t, e, wantEvent{3, nil, duroxide.OrchestrationCancelRequested{Reason: "cancelled"}})
			assertPendingLen(t, e, 0, "nothing new to dispatch")
		}},
		// Once a cancel is recorded, later requests add nothing.
		replayCase{"cancel_duplicate_filtered", func(t *testing.T) {
			e := newTestEngine(histOf(evStarted(1), evCancelRequested(2, "first cancel")))
			e.prepCompletions(msgsOf(msgCancelInstance("second cancel")))
			if d := e.historyDelta(); len(d) != 0 {
				t.Fatalf("Duplicate cancel should be filtered: delta %+v", d)
			}
		}},
	)
}
