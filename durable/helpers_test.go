package durable

// The helpers of this package's tests, one set for all of them: the ported
// replay-engine tests of duroxide 0.1.29 (tests/replay_engine/helpers.rs:
// the test identity, event (ev*) and completion message (msg*) builders,
// handlers (h*), turn assertions), the engine's own tests, and the tests
// that run a runtime on the in-memory provider.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// The fixed identity every engine test runs under (helpers.rs constants).
const (
	testInstance        = "test-instance"
	testExecutionID     = uint64(1)
	testOrchName        = "TestOrch"
	testOrchVersion     = "1.0.0"
	testWorkerID        = "test-worker"
	testOrchInput       = "test-input"
	testDuroxideVersion = "0.1.29"
	// testNowMs is the wall clock every test engine reads (Unix ms), so
	// timer fire times and event stamps are known to the tests.
	testNowMs = 1_700_000_000_000
)

// testClock is testNowMs as a time.
var testClock = time.UnixMilli(testNowMs)

// testWait bounds the waits of the tests that run a runtime: generous,
// because the machine may be loaded.
const testWait = 60 * time.Second

// ============================================================================
// Event builders (Rust: Event::with_event_id with the test instance).
// ============================================================================

// evWithID builds an event of the test instance and execution, stamped
// with testClock as the test engine stamps the events it writes.
func evWithID(eventID uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{
		EventID:         eventID,
		SourceEventID:   source,
		InstanceID:      testInstance,
		ExecutionID:     testExecutionID,
		TimestampMs:     testNowMs,
		DuroxideVersion: testDuroxideVersion,
		Kind:            kind,
	}
}

func refU64(v uint64) *uint64 { return &v }
func refStr(v string) *string { return &v }

func evAppDetails(kind duroxide.AppErrorType, message string) duroxide.ErrorDetails {
	return duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: kind}, Message: message}
}

func evStarted(eventID uint64) duroxide.Event {
	return evWithID(eventID, nil, duroxide.OrchestrationStarted{
		Name: testOrchName, Version: testOrchVersion, Input: testOrchInput,
	})
}

func evActivityScheduled(eventID uint64, name, input string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.ActivityScheduled{Name: name, Input: input})
}

func evActivityCompleted(eventID, source uint64, result string) duroxide.Event {
	return evWithID(eventID, refU64(source), duroxide.ActivityCompleted{Result: result})
}

func evActivityFailed(eventID, source uint64, message string) duroxide.Event {
	return evWithID(eventID, refU64(source), duroxide.ActivityFailed{
		Details: evAppDetails(duroxide.AppActivityFailed, message),
	})
}

func evTimerCreated(eventID, fireAtMs uint64) duroxide.Event {
	return evWithID(eventID, nil, duroxide.TimerCreated{FireAtMs: fireAtMs})
}

func evTimerFired(eventID, source, fireAtMs uint64) duroxide.Event {
	return evWithID(eventID, refU64(source), duroxide.TimerFired{FireAtMs: fireAtMs})
}

func evExternalSubscribed(eventID uint64, name string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.ExternalSubscribed{Name: name})
}

func evExternalEvent(eventID uint64, name, data string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.ExternalEvent{Name: name, Data: data})
}

func evSubOrchScheduled(eventID uint64, name, instance, input string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.SubOrchestrationScheduled{Name: name, Instance: instance, Input: input})
}

func evSubOrchCompleted(eventID, source uint64, result string) duroxide.Event {
	return evWithID(eventID, refU64(source), duroxide.SubOrchestrationCompleted{Result: result})
}

func evSubOrchFailed(eventID, source uint64, message string) duroxide.Event {
	return evWithID(eventID, refU64(source), duroxide.SubOrchestrationFailed{
		Details: evAppDetails(duroxide.AppOrchestrationFailed, message),
	})
}

func evOrchestrationCompleted(eventID uint64, output string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.OrchestrationCompleted{Output: output})
}

func evOrchestrationFailed(eventID uint64, message string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.OrchestrationFailed{
		Details: evAppDetails(duroxide.AppOrchestrationFailed, message),
	})
}

func evContinuedAsNew(eventID uint64, input string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.OrchestrationContinuedAsNew{Input: input})
}

func evCancelRequested(eventID uint64, reason string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.OrchestrationCancelRequested{Reason: reason})
}

func evActivityCancelRequested(eventID, source uint64, reason string) duroxide.Event {
	return evWithID(eventID, refU64(source), duroxide.ActivityCancelRequested{Reason: reason})
}

func evSubOrchCancelRequested(eventID, source uint64, reason string) duroxide.Event {
	return evWithID(eventID, refU64(source), duroxide.SubOrchestrationCancelRequested{Reason: reason})
}

func evOrchestrationChained(eventID uint64, name, instance, input string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.OrchestrationChained{Name: name, Instance: instance, Input: input})
}

func evKVSet(eventID uint64, key, value string, lastUpdatedAtMs uint64) duroxide.Event {
	return evWithID(eventID, nil, duroxide.KeyValueSet{Key: key, Value: value, LastUpdatedAtMs: lastUpdatedAtMs})
}

func evKVCleared(eventID uint64, key string) duroxide.Event {
	return evWithID(eventID, nil, duroxide.KeyValueCleared{Key: key})
}

func evKVAllCleared(eventID uint64) duroxide.Event {
	return evWithID(eventID, nil, duroxide.KeyValuesCleared{})
}

// ============================================================================
// Work item builders (completion messages).
// ============================================================================

func msgActivityCompleted(id uint64, result string) duroxide.WorkItem {
	return duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: testExecutionID, ID: id, Result: result}
}

func msgActivityFailed(id uint64, message string) duroxide.WorkItem {
	return duroxide.ActivityFailedItem{
		Instance: testInstance, ExecutionID: testExecutionID, ID: id,
		Details: evAppDetails(duroxide.AppActivityFailed, message),
	}
}

func msgActivityFailedInfra(id uint64, message string) duroxide.WorkItem {
	return duroxide.ActivityFailedItem{
		Instance: testInstance, ExecutionID: testExecutionID, ID: id,
		Details: duroxide.InfrastructureError{Operation: "test", Message: message},
	}
}

func msgActivityFailedConfig(id uint64, message string) duroxide.WorkItem {
	return duroxide.ActivityFailedItem{
		Instance: testInstance, ExecutionID: testExecutionID, ID: id,
		Details: duroxide.ConfigurationError{Kind: duroxide.ConfigNondeterminism, Resource: "test", Message: refStr(message)},
	}
}

func msgTimerFired(id, fireAtMs uint64) duroxide.WorkItem {
	return duroxide.TimerFiredItem{Instance: testInstance, ExecutionID: testExecutionID, ID: id, FireAtMs: fireAtMs}
}

func msgExternalRaised(name, data string) duroxide.WorkItem {
	return duroxide.ExternalRaisedItem{Instance: testInstance, Name: name, Data: data}
}

func msgSubOrchCompleted(parentID uint64, result string) duroxide.WorkItem {
	return duroxide.SubOrchCompletedItem{
		ParentInstance: testInstance, ParentExecutionID: testExecutionID, ParentID: parentID, Result: result,
	}
}

func msgSubOrchFailed(parentID uint64, message string) duroxide.WorkItem {
	return duroxide.SubOrchFailedItem{
		ParentInstance: testInstance, ParentExecutionID: testExecutionID, ParentID: parentID,
		Details: evAppDetails(duroxide.AppOrchestrationFailed, message),
	}
}

func msgCancelInstance(reason string) duroxide.WorkItem {
	return duroxide.CancelInstanceItem{Instance: testInstance, Reason: reason}
}

// ============================================================================
// Engine helpers.
// ============================================================================

// newTestEngine is Rust's create_engine: an engine for the test instance
// whose whole baseline counts as persisted, reading testClock as now and
// logging nowhere.
func newTestEngine(history []duroxide.Event) *replayEngine {
	e := newReplayEngine(testInstance, testExecutionID, history)
	e.now = func() time.Time { return testClock }
	e.logger = quietLogger
	return e
}

// newTestEngineOf is newTestEngine over the events given.
func newTestEngineOf(history ...duroxide.Event) *replayEngine {
	return newTestEngine(history)
}

// executeStep feeds one batch of messages into a fresh engine over hist
// and runs one turn.
func executeStep(t *testing.T, hist []duroxide.Event, h OrchestrationFunc, msgs ...duroxide.WorkItem) (*replayEngine, turnResult) {
	t.Helper()
	e := newTestEngineOf(hist...)
	e.prepCompletions(msgs)
	return e, executeTurn(e, h)
}

// newTestEngineWithPersistedLen is Rust's create_engine_with_persisted_len.
func newTestEngineWithPersistedLen(history []duroxide.Event, persistedLen int) *replayEngine {
	return newTestEngine(history).withPersistedHistoryLen(persistedLen)
}

// executeTurn is Rust's execute: one turn with the test identity.
func executeTurn(e *replayEngine, h OrchestrationFunc) turnResult {
	return e.executeOrchestration(h, testOrchInput, testOrchName, testOrchVersion, testWorkerID)
}

// ============================================================================
// Handlers (helpers.rs mock handlers as OrchestrationFuncs).
// ============================================================================

// hImmediateOK returns result without scheduling anything.
func hImmediateOK(result string) OrchestrationFunc {
	return func(*OrchestrationContext, string) (string, error) { return result, nil }
}

// hImmediateErr fails with message without scheduling anything.
func hImmediateErr(message string) OrchestrationFunc {
	return func(*OrchestrationContext, string) (string, error) { return "", errors.New(message) }
}

// hSingleActivity schedules one activity and returns its result.
func hSingleActivity(name, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, name, input).Await()
	}
}

// hSingleTimer waits for one timer and returns "timer_done".
func hSingleTimer(d time.Duration) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := NewTimer(ctx, d).Await(); err != nil {
			return "", err
		}
		return "timer_done", nil
	}
}

// hWaitExternal waits for the external event name and returns its data.
func hWaitExternal(name string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return WaitEvent[string](ctx, name).Await()
	}
}

// hSubOrch runs one sub-orchestration and returns its result.
func hSubOrch(name, input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallSubOrchestration[string](ctx, name, input).Await()
	}
}

// hContinueAsNew continues as new with input.
func hContinueAsNew(input string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		return "", ContinueAsNew(ctx, input)
	}
}

// hSubOrchThenContinueAsNew schedules a child, drops its future, then
// continues as new.
func hSubOrchThenContinueAsNew(subName, subInput, newInput string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		CallSubOrchestration[string](ctx, subName, subInput).Cancel()
		return "", ContinueAsNew(ctx, newInput)
	}
}

// hDetachedThenActivity starts a detached orchestration, then awaits an
// activity (so the OrchestrationChained event is replayed next turn).
func hDetachedThenActivity(orchName, orchInstance, orchInput, activityName, activityInput string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		StartOrchestration(ctx, orchName, orchInstance, orchInput)
		return CallActivity[string](ctx, activityName, activityInput).Await()
	}
}

// nameInput is one (activity name, input) pair.
type nameInput struct{ name, input string }

// hMultiScheduleNoAwait schedules activities, drops each future at once
// and returns "done".
func hMultiScheduleNoAwait(activities ...nameInput) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		for _, a := range activities {
			CallActivity[string](ctx, a.name, a.input).Cancel()
		}
		return "done", nil
	}
}

// hTwoActivities awaits two activities in turn and returns "r1,r2".
func hTwoActivities(first, second nameInput) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r1, err := CallActivity[string](ctx, first.name, first.input).Await()
		if err != nil {
			return "", err
		}
		r2, err := CallActivity[string](ctx, second.name, second.input).Await()
		if err != nil {
			return "", err
		}
		return r1 + "," + r2, nil
	}
}

// hTwoTimers awaits two timers in turn and returns "done".
func hTwoTimers(first, second time.Duration) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := NewTimer(ctx, first).Await(); err != nil {
			return "", err
		}
		if _, err := NewTimer(ctx, second).Await(); err != nil {
			return "", err
		}
		return "done", nil
	}
}

// hSubOrchThenActivity awaits a child, then an activity: "r1,r2".
func hSubOrchThenActivity(subName, subInput, activityName, activityInput string) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r1, err := CallSubOrchestration[string](ctx, subName, subInput).Await()
		if err != nil {
			return "", err
		}
		r2, err := CallActivity[string](ctx, activityName, activityInput).Await()
		if err != nil {
			return "", err
		}
		return r1 + "," + r2, nil
	}
}

// hActivityThenTimer awaits an activity, then a timer, and returns the
// activity's result.
func hActivityThenTimer(name, input string, d time.Duration) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		r, err := CallActivity[string](ctx, name, input).Await()
		if err != nil {
			return "", err
		}
		if _, err := NewTimer(ctx, d).Await(); err != nil {
			return "", err
		}
		return r, nil
	}
}

// hSelect2 races an activity against a timer: "activity:r" when the
// activity wins, "activity_err:e" when it fails, "timeout" otherwise.
func hSelect2(name, input string, d time.Duration) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		activity := CallActivity[string](ctx, name, input)
		timer := NewTimer(ctx, d)
		if ctx.Select(activity, timer) == 0 {
			r, err := activity.Await()
			if err != nil {
				return "", errors.New("activity_err:" + err.Error())
			}
			return "activity:" + r, nil
		}
		return "timeout", nil
	}
}

// hJoinActivities joins activities and returns their results joined by
// commas, or the first error in argument order.
func hJoinActivities(activities ...nameInput) OrchestrationFunc {
	return func(ctx *OrchestrationContext, _ string) (string, error) {
		futs := make([]*Future[string], len(activities))
		for i, a := range activities {
			futs[i] = CallActivity[string](ctx, a.name, a.input)
		}
		results := Join(ctx, futs...)
		out := make([]string, len(results))
		for i, r := range results {
			if r.Err != nil {
				return "", r.Err
			}
			out[i] = r.Value
		}
		return strings.Join(out, ","), nil
	}
}

// hPanic panics with message.
func hPanic(message string) OrchestrationFunc {
	return func(*OrchestrationContext, string) (string, error) { panic(message) }
}

// countingHandler counts its invocations and returns a fixed result.
type countingHandler struct {
	count  atomic.Int64
	output string
	err    error
}

func newCountingHandler(output string, err error) *countingHandler {
	return &countingHandler{output: output, err: err}
}

func (h *countingHandler) fn(*OrchestrationContext, string) (string, error) {
	h.count.Add(1)
	return h.output, h.err
}

// isReplayingHandler records IsReplaying at the start of the function.
type isReplayingHandler struct {
	mu      sync.Mutex
	atStart *bool
}

func (h *isReplayingHandler) fn(ctx *OrchestrationContext, _ string) (string, error) {
	v := ctx.IsReplaying()
	h.mu.Lock()
	h.atStart = &v
	h.mu.Unlock()
	return "done", nil
}

// ============================================================================
// Assertions on turnResult.
// ============================================================================

func assertTurnContinue(t *testing.T, r turnResult) {
	t.Helper()
	if r.Kind != turnContinue {
		t.Fatalf("Expected turnResult::Continue, got %v", r)
	}
}

func assertTurnCompleted(t *testing.T, r turnResult, expected string) {
	t.Helper()
	if r.Kind != turnCompleted {
		t.Fatalf("Expected turnResult::Completed, got %v", r)
	}
	if r.Output != expected {
		t.Fatalf("Unexpected completion output: got %q, want %q", r.Output, expected)
	}
}

func assertTurnFailed(t *testing.T, r turnResult) {
	t.Helper()
	if r.Kind != turnFailed {
		t.Fatalf("Expected turnResult::Failed, got %v", r)
	}
}

// appErrorType returns the application error kind of d, or "" if d is not
// an ApplicationError.
func appErrorType(d duroxide.ErrorDetails) duroxide.AppErrorType {
	switch a := d.(type) {
	case duroxide.ApplicationError:
		return a.Kind.Type
	case *duroxide.ApplicationError:
		if a != nil {
			return a.Kind.Type
		}
	}
	return ""
}

func assertTurnNondeterminism(t *testing.T, r turnResult) {
	t.Helper()
	if r.Kind != turnFailed || !isNondeterminism(r.Details) {
		t.Fatalf("Expected turnResult::Failed(Nondeterminism), got %v", r)
	}
}

func assertTurnPanicked(t *testing.T, r turnResult) {
	t.Helper()
	if r.Kind != turnFailed || appErrorType(r.Details) != duroxide.AppPanicked {
		t.Fatalf("Expected turnResult::Failed(Panicked), got %v", r)
	}
}

// assertTurnFailedWithMessage checks that the failure's display message
// (Rust's ErrorDetails::display_message) contains substr.
func assertTurnFailedWithMessage(t *testing.T, r turnResult, substr string) {
	t.Helper()
	if r.Kind != turnFailed {
		t.Fatalf("Expected turnResult::Failed, got %v", r)
	}
	if msg := displayMessage(r.Details); !strings.Contains(msg, substr) {
		t.Fatalf("Expected error message to contain %q, got %q", substr, msg)
	}
}

func assertTurnContinueAsNew(t *testing.T, r turnResult, expectedInput string) {
	t.Helper()
	if r.Kind != turnContinueAsNew {
		t.Fatalf("Expected turnResult::ContinueAsNew, got %v", r)
	}
	if r.Input != expectedInput {
		t.Fatalf("Unexpected continue_as_new input: got %q, want %q", r.Input, expectedInput)
	}
}

func assertTurnCancelled(t *testing.T, r turnResult) {
	t.Helper()
	if r.Kind != turnCancelled {
		t.Fatalf("Expected turnResult::Cancelled, got %v", r)
	}
}

func assertTurnCancelledWithReason(t *testing.T, r turnResult, reason string) {
	t.Helper()
	if r.Kind != turnCancelled {
		t.Fatalf("Expected turnResult::Cancelled, got %v", r)
	}
	if r.Reason != reason {
		t.Fatalf("Unexpected cancellation reason: got %q, want %q", r.Reason, reason)
	}
}

// ============================================================================
// Queries on pending actions and the history delta.
// ============================================================================

func hasActivityAction(e *replayEngine, name string) bool {
	for _, a := range e.pendingActions() {
		if c, ok := a.(actionCallActivity); ok && c.Name == name {
			return true
		}
	}
	return false
}

func hasTimerAction(e *replayEngine) bool {
	for _, a := range e.pendingActions() {
		if _, ok := a.(actionCreateTimer); ok {
			return true
		}
	}
	return false
}

func hasExternalAction(e *replayEngine, name string) bool {
	for _, a := range e.pendingActions() {
		if w, ok := a.(actionWaitExternal); ok && w.Name == name {
			return true
		}
	}
	return false
}

func hasSubOrchAction(e *replayEngine, name string) bool {
	for _, a := range e.pendingActions() {
		if s, ok := a.(actionStartSubOrchestration); ok && s.Name == name {
			return true
		}
	}
	return false
}

func hasContinueAsNewAction(e *replayEngine, expectedInput string) bool {
	for _, a := range e.pendingActions() {
		if c, ok := a.(actionContinueAsNew); ok && c.Input == expectedInput {
			return true
		}
	}
	return false
}

func hasActivityScheduledDelta(e *replayEngine, name string) bool {
	for _, ev := range e.historyDelta() {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && k.Name == name {
			return true
		}
	}
	return false
}

func hasTimerCreatedDelta(e *replayEngine) bool {
	for _, ev := range e.historyDelta() {
		if _, ok := ev.Kind.(duroxide.TimerCreated); ok {
			return true
		}
	}
	return false
}

func hasExternalSubscribedDelta(e *replayEngine, name string) bool {
	for _, ev := range e.historyDelta() {
		if k, ok := ev.Kind.(duroxide.ExternalSubscribed); ok && k.Name == name {
			return true
		}
	}
	return false
}

// deltaEventIDs returns the event ids of the history delta in order.
func deltaEventIDs(e *replayEngine) []uint64 {
	ids := make([]uint64, 0, len(e.historyDelta()))
	for _, ev := range e.historyDelta() {
		ids = append(ids, ev.EventID)
	}
	return ids
}

// deltaOfType returns the delta events whose kind has Go type K.
func deltaOfType[K duroxide.EventKind](e *replayEngine) []duroxide.Event {
	var out []duroxide.Event
	for _, ev := range e.historyDelta() {
		if _, ok := ev.Kind.(K); ok {
			out = append(out, ev)
		}
	}
	return out
}

// requireNoLeakedGoroutines fails the test if the goroutine count does not
// fall back to before: the coroutines of a finished turn must be stopped.
// Stopped goroutines may take a moment to exit, so it waits for the
// condition; the bound only matters when something really leaked.
func requireNoLeakedGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			t.Fatalf("leaked goroutines: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:n])
		}
		time.Sleep(time.Millisecond)
	}
}

// ============================================================================
// Exact texts, typed actions and deltas.
// ============================================================================

// assertTurnNondeterminismText checks that the turn failed with
// Configuration{Nondeterminism} whose display message is exactly
// "nondeterministic: "+message. The Rust tests assert a substring; the
// whole text is asserted where Rust's format has no Debug rendering,
// because it lands verbatim in the OrchestrationFailed event a Rust node
// would read.
func assertTurnNondeterminismText(t *testing.T, r turnResult, message string) {
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

// ============================================================================
// Exact deltas (ids, sources, kinds and stamps).
// ============================================================================

// eventKinds strips ids and stamps so a test can compare the shape of a delta.
func eventKinds(evs []duroxide.Event) []duroxide.EventKind {
	out := make([]duroxide.EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}

// requireDelta asserts the exact delta: ids, source ids, kinds, stamps.
func requireDelta(t *testing.T, e *replayEngine, want ...duroxide.Event) {
	t.Helper()
	require.Equal(t, want, e.historyDelta())
}

// ============================================================================
// Runtime tests on the in-memory provider.
// ============================================================================

// quietLogger is a logger that drops everything.
var quietLogger = slog.New(slog.DiscardHandler)

// fetchCountingProvider counts fetches of a provider.
type fetchCountingProvider struct {
	duroxide.Provider
	orchFetches, workFetches atomic.Int64
}

func (c *fetchCountingProvider) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	c.orchFetches.Add(1)
	return c.Provider.FetchOrchestrationItem(ctx, lock, poll, f)
}

func (c *fetchCountingProvider) FetchWorkItem(ctx context.Context, lock, poll time.Duration, s *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	c.workFetches.Add(1)
	return c.Provider.FetchWorkItem(ctx, lock, poll, s, tags)
}

// fastOptions are fast test options on top of o.
func fastOptions(o Options) *Options {
	if o.MinPollInterval == 0 {
		o.MinPollInterval = 5 * time.Millisecond
	}
	if o.MaxIdlePollInterval == 0 {
		o.MaxIdlePollInterval = 50 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = quietLogger
	}
	return &o
}

// startRuntime starts a runtime that is shut down (and checked for leaks) at
// cleanup.
func startRuntime(t *testing.T, p duroxide.Provider, reg *Registry, o Options) *Runtime {
	t.Helper()
	rt, err := Start(t.Context(), p, reg, fastOptions(o))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testWait)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	return rt
}

func waitDone(t *testing.T, c *Client, instance string) *OrchestrationStatus {
	t.Helper()
	st, err := c.WaitForOrchestration(t.Context(), instance, WaitOptions{Timeout: testWait})
	require.NoError(t, err)
	return st
}

func newMemProvider() *memprovider.Provider { return memprovider.New() }

// runtimeGoroutines counts goroutines running the runtime's code.
func runtimeGoroutines() int {
	buf := make([]byte, 1<<20)
	n := runtime.Stack(buf, true)
	count := 0
	for _, g := range strings.Split(string(buf[:n]), "\n\n") {
		if strings.Contains(g, "durable.(*Runtime)") {
			count++
		}
	}
	return count
}

// requireEventually polls cond until it holds or testWait passes.
func requireEventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ============================================================================
// Handlers, counters and probes shared by the engine and runtime tests.
// ============================================================================

// hHello greets its input, then greets the greeting: two activities in a
// row, "a|b".
func hHello(ctx *OrchestrationContext, in string) (string, error) {
	a, err := CallActivity[string](ctx, "Greet", in).Await()
	if err != nil {
		return "", err
	}
	b, err := CallActivity[string](ctx, "Greet", a).Await()
	if err != nil {
		return "", err
	}
	return a + "|" + b, nil
}

// hRace races the activity "Slow" against a one-second timer.
func hRace(ctx *OrchestrationContext, _ string) (string, error) {
	act := CallActivity[string](ctx, "Slow", "x")
	timer := NewTimer(ctx, time.Second)
	if ctx.Select(act, timer) == 1 {
		return "timeout", nil
	}
	return act.Await()
}

// liveCoroutines counts live goroutines running a coroutine body.
func liveCoroutines() int {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "durable.(*coroutine).body(")
}

// sessionCountingProvider counts the session calls of a provider.
type sessionCountingProvider struct {
	duroxide.Provider
	renews, cleanups chan []string
}

func (s *sessionCountingProvider) RenewSessionLock(ctx context.Context, owners []string, extend, idle time.Duration) (int, error) {
	select {
	case s.renews <- owners:
	default:
	}
	return s.Provider.RenewSessionLock(ctx, owners, extend, idle)
}

func (s *sessionCountingProvider) CleanupOrphanedSessions(ctx context.Context, idle time.Duration) (int, error) {
	select {
	case s.cleanups <- nil:
	default:
	}
	return s.Provider.CleanupOrphanedSessions(ctx, idle)
}

// statusReadCountingProvider counts a provider's status reads. Embedding
// the interface hides the provider's optional ClientWriter and
// StatusReader, so every status is one Read and one CustomStatus.
type statusReadCountingProvider struct {
	duroxide.Provider
	reads, customStatus atomic.Int64
}

func (r *statusReadCountingProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	r.reads.Add(1)
	return r.Provider.Read(ctx, instance)
}

func (r *statusReadCountingProvider) CustomStatus(ctx context.Context, instance string, lastSeen uint64) (*duroxide.CustomStatus, error) {
	r.customStatus.Add(1)
	return r.Provider.CustomStatus(ctx, instance, lastSeen)
}
