package durable

// Helpers for the second half of the ported replay-engine tests (the files
// other than history_corruption, kv, unobserved_futures and
// action_to_event). The shared builders, handlers and assertions live in
// replay_helpers_test.go; these add only what those files need beyond it.

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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

// wantEvent is one expected history event. Timestamps are wall clock in
// Rust too, so they are not compared.
type wantEvent struct {
	id   uint64
	src  *uint64
	kind duroxide.EventKind
}

// assertDelta checks the turn's history delta event by event: ids, source
// ids, kinds and the stamp every event carries (instance, execution,
// duroxide_version), which is what a Rust node reading the history sees.
func assertDelta(t *testing.T, e *replayEngine, want ...wantEvent) {
	t.Helper()
	got := e.historyDelta()
	if len(got) != len(want) {
		t.Fatalf("history delta has %d events, want %d:\n got %s", len(got), len(want), fmtEvents(got))
	}
	for i, w := range want {
		assertEvent(t, i, got[i], w)
	}
}

// assertEvent checks one event against w; i names it in failures.
func assertEvent(t *testing.T, i int, g duroxide.Event, w wantEvent) {
	t.Helper()
	if g.EventID != w.id || !reflect.DeepEqual(g.SourceEventID, w.src) || !reflect.DeepEqual(g.Kind, w.kind) {
		t.Fatalf("event %d: got %s, want id=%d src=%s %#v", i, fmtEvent(g), w.id, fmtSrc(w.src), w.kind)
	}
	if g.InstanceID != testInstance || g.ExecutionID != testExecutionID || g.DuroxideVersion != DuroxideVersion {
		t.Fatalf("event %d stamp: instance %q execution %d version %q", i, g.InstanceID, g.ExecutionID, g.DuroxideVersion)
	}
}

func fmtSrc(p *uint64) string {
	if p == nil {
		return "None"
	}
	return strconv.FormatUint(*p, 10)
}

func fmtEvent(e duroxide.Event) string {
	return fmt.Sprintf("id=%d src=%s %#v", e.EventID, fmtSrc(e.SourceEventID), e.Kind)
}

func fmtEvents(es []duroxide.Event) string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmtEvent(e)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// assertDroppedFutureBreadcrumbs checks that the delta ends with one
// "dropped_future" cancel request of kind K per source id, numbered from
// firstID on. Rust collects dropped futures from a HashSet, so which source
// gets which id is unordered there; only the set and the numbering are
// asserted.
func assertDroppedFutureBreadcrumbs[K duroxide.EventKind](t *testing.T, e *replayEngine, firstID uint64, sources ...uint64) {
	t.Helper()
	crumbs := deltaOfType[K](e)
	if len(crumbs) != len(sources) {
		t.Fatalf("want %d %T breadcrumbs, got %s", len(sources), *new(K), fmtEvents(crumbs))
	}
	var gotSrc []uint64
	for i, c := range crumbs {
		if c.EventID != firstID+uint64(i) || c.SourceEventID == nil {
			t.Fatalf("breadcrumb %d: %s, want id %d with a source", i, fmtEvent(c), firstID+uint64(i))
		}
		var reason string
		switch k := any(c.Kind).(type) {
		case duroxide.ActivityCancelRequested:
			reason = k.Reason
		case duroxide.SubOrchestrationCancelRequested:
			reason = k.Reason
		case duroxide.ExternalSubscribedCancelled:
			reason = k.Reason
		}
		if reason != "dropped_future" {
			t.Fatalf("breadcrumb %d reason %q, want dropped_future", i, reason)
		}
		gotSrc = append(gotSrc, *c.SourceEventID)
	}
	slices.Sort(gotSrc)
	if !slices.Equal(gotSrc, sources) {
		t.Fatalf("breadcrumb sources %v, want %v", gotSrc, sources)
	}
}

// pinnedNowMs is the wall clock the tests that check timer fire times pin.
const pinnedNowMs = 1_700_000_000_000

// pinClock makes the engine read pinnedNowMs as now, so a timer's fire_at_ms
// (now + delay, as in Rust) is known to the test.
func pinClock(e *replayEngine) *replayEngine {
	e.now = func() time.Time { return time.UnixMilli(pinnedNowMs) }
	return e
}

// hScheduleUnawaited schedules the activities, keeps no future and returns
// "done": Go's form of Rust's `let _ = ctx.schedule_activity(..)`, where
// the futures count as dropped because they are unresolved at return.
func hScheduleUnawaited(activities ...nameInput) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		for _, a := range activities {
			CallActivity[string](ctx, a.name, a.input)
		}
		return "done", nil
	}
}
