package durable

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// Ports of the unit tests of duroxide's src/runtime/execution.rs: which
// queue events continue-as-new carries forward, and which schedules a
// terminal turn finds still open.

func xEv(id uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{EventID: id, SourceEventID: source, InstanceID: "inst", ExecutionID: 1, DuroxideVersion: DuroxideVersion, Kind: kind}
}

func xSub(id uint64, name string) duroxide.Event {
	return xEv(id, nil, duroxide.ExternalSubscribedPersistent{Name: name})
}

func xArrival(id uint64, name, data string) duroxide.Event {
	return xEv(id, nil, duroxide.ExternalEventPersistent{Name: name, Data: data})
}

func xCancel(id, source uint64) duroxide.Event {
	return xEv(id, &source, duroxide.ExternalSubscribedPersistentCancelled{Reason: "dropped_future"})
}

func xActivity(id uint64) duroxide.Event {
	return xEv(id, nil, duroxide.ActivityScheduled{Name: "task", Input: "{}"})
}

func xPositionalSub(id uint64, name string) duroxide.Event {
	return xEv(id, nil, duroxide.ExternalSubscribed{Name: name})
}

func xPositionalEvent(id, source uint64, name, data string) duroxide.Event {
	return xEv(id, &source, duroxide.ExternalEvent{Name: name, Data: data})
}

func xPositionalCancelled(id, source uint64) duroxide.Event {
	return xEv(id, &source, duroxide.ExternalSubscribedCancelled{Reason: "dropped_future"})
}

func xActivityCompleted(id, source uint64) duroxide.Event {
	return xEv(id, &source, duroxide.ActivityCompleted{Result: "ok"})
}

func xActivityCancelRequested(id, source uint64) duroxide.Event {
	return xEv(id, &source, duroxide.ActivityCancelRequested{Reason: "dropped_future"})
}

func xChild(id uint64, child string) duroxide.Event {
	return xEv(id, nil, duroxide.SubOrchestrationScheduled{Name: "child", Instance: child, Input: "{}"})
}

func xChildCompleted(id, source uint64) duroxide.Event {
	return xEv(id, &source, duroxide.SubOrchestrationCompleted{Result: "done"})
}

func xChildCancelRequested(id, source uint64) duroxide.Event {
	return xEv(id, &source, duroxide.SubOrchestrationCancelRequested{Reason: "dropped_future"})
}

func xCarry(pairs ...string) []duroxide.CarryForwardEvent {
	out := []duroxide.CarryForwardEvent{}
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, duroxide.CarryForwardEvent{Name: pairs[i], Data: pairs[i+1]})
	}
	return out
}

func TestExecutionRs(t *testing.T) {
	unmatched := func(h ...duroxide.Event) []duroxide.CarryForwardEvent { return unmatchedQueueMessages(h) }
	tests := map[string]func(t *testing.T){
		"no_events_returns_empty": func(t *testing.T) { require.Empty(t, unmatched()) },
		"arrivals_only_all_unmatched": func(t *testing.T) {
			require.Equal(t, xCarry("X", "a", "X", "b", "Y", "c"), unmatched(xArrival(1, "X", "a"), xArrival(2, "X", "b"), xArrival(3, "Y", "c")))
		},
		"subs_consume_arrivals_per_name": func(t *testing.T) {
			require.Equal(t, xCarry("X", "x2"), unmatched(xSub(1, "X"), xSub(2, "Y"), xArrival(3, "X", "x1"), xArrival(4, "X", "x2"), xArrival(5, "Y", "y1")))
		},
		"cancelled_sub_does_not_consume": func(t *testing.T) {
			require.Equal(t, xCarry("X", "b"), unmatched(xSub(1, "X"), xSub(2, "X"), xCancel(3, 2), xArrival(4, "X", "a"), xArrival(5, "X", "b")))
		},
		"per_name_isolation": func(t *testing.T) {
			require.Equal(t, xCarry("X", "x-data"), unmatched(xSub(1, "Y"), xArrival(2, "X", "x-data"), xArrival(3, "Y", "y-data")))
		},
		"fifo_order_preserved_across_names": func(t *testing.T) {
			require.Equal(t, xCarry("B", "b1", "A", "a1", "B", "b2", "A", "a2"),
				unmatched(xArrival(1, "B", "b1"), xArrival(2, "A", "a1"), xArrival(3, "B", "b2"), xArrival(4, "A", "a2")))
		},
		"fifo_order_with_partial_consumption": func(t *testing.T) {
			require.Equal(t, xCarry("B", "b1", "A", "a2", "B", "b2"),
				unmatched(xSub(1, "A"), xArrival(2, "B", "b1"), xArrival(3, "A", "a1"), xArrival(4, "A", "a2"), xArrival(5, "B", "b2")))
		},
		"unrelated_events_are_ignored": func(t *testing.T) {
			require.Equal(t, xCarry("X", "x2"), unmatched(xActivity(1), xSub(2, "X"), xActivity(3), xArrival(4, "X", "x1"), xArrival(5, "X", "x2"), xActivity(6)))
		},
		"more_subs_than_arrivals_returns_empty": func(t *testing.T) {
			require.Empty(t, unmatched(xSub(1, "X"), xSub(2, "X"), xSub(3, "X"), xArrival(4, "X", "only-one")))
		},
		"cancelled_sub_with_multiple_names": func(t *testing.T) {
			require.Equal(t, xCarry("B", "b-data"), unmatched(xSub(1, "A"), xSub(2, "B"), xCancel(3, 2), xArrival(4, "A", "a-data"), xArrival(5, "B", "b-data")))
		},
		"collect_returns_all_unmatched_without_cap": func(t *testing.T) {
			var h []duroxide.Event
			for i := range uint64(25) {
				h = append(h, xArrival(i+1, "X", fmt.Sprintf("data-%d", i)))
			}
			got := unmatched(h...)
			require.Len(t, got, 25)
			for i, c := range got {
				require.Equal(t, duroxide.CarryForwardEvent{Name: "X", Data: fmt.Sprintf("data-%d", i)}, c)
			}
		},
		"max_carry_forward_constant_is_100": func(t *testing.T) { require.Equal(t, 100, maxCarryForwardEvents) },
		"empty_history_no_subs_no_arrivals": func(t *testing.T) { require.Empty(t, unmatched(xActivity(1), xActivity(2))) },
		"cancel_without_matching_sub_is_harmless": func(t *testing.T) {
			require.Equal(t, xCarry("X", "data"), unmatched(xCancel(1, 999), xArrival(2, "X", "data")))
		},
		"outstanding_empty_history": func(t *testing.T) { require.Equal(t, openSchedules{}, outstandingSchedules(nil)) },
		"outstanding_all_resolved": func(t *testing.T) {
			require.Equal(t, openSchedules{}, outstandingSchedules([]duroxide.Event{
				xActivity(1), xActivityCompleted(2, 1), xPositionalSub(3, "ev"), xPositionalEvent(4, 3, "ev", "data"),
				xSub(5, "X"), xArrival(6, "X", "x-data"), xChild(7, "child-1"), xChildCompleted(8, 7)}))
		},
		"outstanding_all_cancelled": func(t *testing.T) {
			require.Equal(t, openSchedules{}, outstandingSchedules([]duroxide.Event{
				xActivity(1), xActivityCancelRequested(2, 1), xPositionalSub(3, "ev"), xPositionalCancelled(4, 3),
				xSub(5, "X"), xCancel(6, 5), xChild(7, "child-1"), xChildCancelRequested(8, 7)}))
		},
		"outstanding_mixed_resolved_and_outstanding": func(t *testing.T) {
			got := outstandingSchedules([]duroxide.Event{
				xActivity(1), xActivityCompleted(2, 1), xActivity(3), xPositionalSub(4, "ev"), xPositionalEvent(5, 4, "ev", "d"),
				xPositionalSub(6, "ev2"), xSub(7, "X"), xArrival(8, "X", "x-data"), xSub(9, "Y"),
				xChild(10, "c1"), xChildCompleted(11, 10), xChild(12, "c2")})
			require.Equal(t, []uint64{3}, got.activities)
			require.Equal(t, []openChild{{12, "c2"}}, got.subOrchestrations)
			require.Equal(t, []uint64{6}, got.externalSubs)
			require.Equal(t, []uint64{9}, got.queueSubs)
		},
		"outstanding_persistent_fifo_partial": func(t *testing.T) {
			require.Equal(t, []uint64{2}, outstandingSchedules([]duroxide.Event{xSub(1, "X"), xSub(2, "X"), xArrival(3, "X", "data")}).queueSubs)
		},
		"outstanding_persistent_cancelled_sub_not_counted_as_consumer": func(t *testing.T) {
			require.Empty(t, outstandingSchedules([]duroxide.Event{xSub(1, "X"), xCancel(3, 1), xSub(2, "X"), xArrival(4, "X", "data")}).queueSubs)
		},
		"outstanding_persistent_more_arrivals_than_subs": func(t *testing.T) {
			require.Empty(t, outstandingSchedules([]duroxide.Event{xSub(1, "X"), xArrival(2, "X", "a"), xArrival(3, "X", "b"), xArrival(4, "X", "c")}).queueSubs)
		},
	}
	t.Run("execution", func(t *testing.T) {
		for name, fn := range tests {
			t.Run(name, fn)
		}
	})
}

// The first Start or ContinueAsNew of a batch wins; a continue-as-new's
// carried events come first, as queue messages.
func TestReadBatch(t *testing.T) {
	v := "2.0.0"
	can := duroxide.ContinueAsNewItem{Instance: "i", Orchestration: "O", Input: "next", Version: &v,
		CarryForwardEvents: xCarry("q", "1")}
	r := &turn{instance: "i"}
	r.readMessages([]duroxide.WorkItem{
		duroxide.ExternalRaisedItem{Instance: "i", Name: "e", Data: "d"},
		can,
		duroxide.StartOrchestrationItem{Instance: "i", Orchestration: "Other"},
	})
	require.True(t, r.continueAsNew)
	require.Equal(t, "O", r.name)
	require.Equal(t, "next", r.input)
	require.Equal(t, &v, r.version)
	require.Equal(t, []duroxide.WorkItem{
		duroxide.QueueMessageItem{Instance: "i", Name: "q", Data: "1"},
		duroxide.ExternalRaisedItem{Instance: "i", Name: "e", Data: "d"},
	}, r.completions)
}

func TestChildInstanceID(t *testing.T) {
	require.Equal(t, "parent::sub::5", childInstanceID("parent", "sub::5"))
	require.Equal(t, "explicit", childInstanceID("parent", "explicit"))
}

// An automatic child id is Rust's in the first execution and names the
// execution in later ones; replay adopts the recorded id, so the next turn
// of execution 2 resolves the child it started.
func TestAutoChildIDPerExecution(t *testing.T) {
	require.Equal(t, "sub::2", autoChildID(1, 2))
	require.Equal(t, "sub::3::2", autoChildID(3, 2))
	orch := func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallSubOrchestration[string](ctx, "Child", "x").Await()
	}
	started := newEventAt(time.UnixMilli(0), 1, "p", 2, nil, duroxide.OrchestrationStarted{Name: "O", Version: "1.0.0"})
	e := newReplayEngine("p", 2, []duroxide.Event{started})
	e.logger = slog.New(slog.DiscardHandler)
	require.Equal(t, turnContinue, e.executeOrchestration(orch, "", "O", "1.0.0", "w").Kind)
	require.Len(t, e.historyDelta(), 1)
	sched := e.historyDelta()[0]
	require.Equal(t, "sub::2::2", sched.Kind.(duroxide.SubOrchestrationScheduled).Instance)

	e = newReplayEngine("p", 2, []duroxide.Event{started, sched})
	e.logger = slog.New(slog.DiscardHandler)
	e.prepCompletions([]duroxide.WorkItem{duroxide.SubOrchCompletedItem{ParentInstance: "p", ParentExecutionID: 2, ParentID: 2, Result: "done"}})
	res := e.executeOrchestration(orch, "", "O", "1.0.0", "w")
	require.Equal(t, turnCompleted, res.Kind, res.String())
	require.Equal(t, "done", res.Output)
}
