package durable

// Shared helpers for the replay-engine tests ported from duroxide 0.1.29's
// tests/replay_engine/helpers.rs. Every replay_<stem>_test.go file uses them.
//
// Names carry a prefix (ev*, msg*, h*, assertTurn*) so they cannot collide
// with the engine's own unexported identifiers, which share this package.

import (
	"errors"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The fixed identity every ported test runs under (helpers.rs constants).
const (
	testInstance        = "test-instance"
	testExecutionID     = uint64(1)
	testOrchName        = "TestOrch"
	testOrchVersion     = "1.0.0"
	testWorkerID        = "test-worker"
	testOrchInput       = "test-input"
	testDuroxideVersion = "0.1.29"
)

// ============================================================================
// Event builders (Rust: Event::with_event_id with the test instance).
// ============================================================================

// evWithID builds an event of the test instance and execution. Rust stamps
// the wall clock; the tests never read it, so zero keeps them deterministic.
func evWithID(eventID uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{
		EventID:         eventID,
		SourceEventID:   source,
		InstanceID:      testInstance,
		ExecutionID:     testExecutionID,
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
// whose whole baseline counts as persisted.
func newTestEngine(history []duroxide.Event) *replayEngine {
	return newReplayEngine(testInstance, testExecutionID, history)
}

// newTestEngineWithPersistedLen is Rust's create_engine_with_persisted_len.
func newTestEngineWithPersistedLen(history []duroxide.Event, persistedLen int) *replayEngine {
	return newTestEngine(history).withPersistedHistoryLen(persistedLen)
}

// executeTurn is Rust's execute: one turn with the test identity.
func executeTurn(e *replayEngine, h OrchestrationFunc) TurnResult {
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
// Assertions on TurnResult.
// ============================================================================

func assertTurnContinue(t *testing.T, r TurnResult) {
	t.Helper()
	if r.Kind != TurnContinue {
		t.Fatalf("Expected TurnResult::Continue, got %v", r)
	}
}

func assertTurnCompleted(t *testing.T, r TurnResult, expected string) {
	t.Helper()
	if r.Kind != TurnCompleted {
		t.Fatalf("Expected TurnResult::Completed, got %v", r)
	}
	if r.Output != expected {
		t.Fatalf("Unexpected completion output: got %q, want %q", r.Output, expected)
	}
}

func assertTurnFailed(t *testing.T, r TurnResult) {
	t.Helper()
	if r.Kind != TurnFailed {
		t.Fatalf("Expected TurnResult::Failed, got %v", r)
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

func assertTurnNondeterminism(t *testing.T, r TurnResult) {
	t.Helper()
	if r.Kind != TurnFailed || !isNondeterminism(r.Details) {
		t.Fatalf("Expected TurnResult::Failed(Nondeterminism), got %v", r)
	}
}

func assertTurnPanicked(t *testing.T, r TurnResult) {
	t.Helper()
	if r.Kind != TurnFailed || appErrorType(r.Details) != duroxide.AppPanicked {
		t.Fatalf("Expected TurnResult::Failed(Panicked), got %v", r)
	}
}

// assertTurnFailedWithMessage checks that the failure's display message
// (Rust's ErrorDetails::display_message) contains substr.
func assertTurnFailedWithMessage(t *testing.T, r TurnResult, substr string) {
	t.Helper()
	if r.Kind != TurnFailed {
		t.Fatalf("Expected TurnResult::Failed, got %v", r)
	}
	if msg := displayMessage(r.Details); !strings.Contains(msg, substr) {
		t.Fatalf("Expected error message to contain %q, got %q", substr, msg)
	}
}

func assertTurnContinueAsNew(t *testing.T, r TurnResult, expectedInput string) {
	t.Helper()
	if r.Kind != TurnContinueAsNew {
		t.Fatalf("Expected TurnResult::ContinueAsNew, got %v", r)
	}
	if r.Input != expectedInput {
		t.Fatalf("Unexpected continue_as_new input: got %q, want %q", r.Input, expectedInput)
	}
}

func assertTurnCancelled(t *testing.T, r TurnResult) {
	t.Helper()
	if r.Kind != TurnCancelled {
		t.Fatalf("Expected TurnResult::Cancelled, got %v", r)
	}
}

func assertTurnCancelledWithReason(t *testing.T, r TurnResult, reason string) {
	t.Helper()
	if r.Kind != TurnCancelled {
		t.Fatalf("Expected TurnResult::Cancelled, got %v", r)
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

// ============================================================================
// Subtest registry: go test -run 'TestReplayEngine/<file stem>/<rust name>'.
// ============================================================================

// replayCase is one ported Rust #[test] fn.
type replayCase struct {
	name string
	fn   func(t *testing.T)
}

// replaySuites maps a Rust file stem (tests/replay_engine/<stem>.rs) to its
// cases in source order. Each replay_<stem>_test.go registers its own in an
// init function, so the two porters never edit a shared list.
var replaySuites = map[string][]replayCase{}

// registerReplaySuite adds the cases of one Rust test file.
func registerReplaySuite(stem string, cases ...replayCase) {
	if _, dup := replaySuites[stem]; dup {
		panic("replay suite registered twice: " + stem)
	}
	replaySuites[stem] = cases
}

// TestReplayEngine runs every ported replay-engine test as
// TestReplayEngine/<file stem>/<exact Rust test name>.
func TestReplayEngine(t *testing.T) {
	stems := make([]string, 0, len(replaySuites))
	for s := range replaySuites {
		stems = append(stems, s)
	}
	sort.Strings(stems)
	for _, stem := range stems {
		t.Run(stem, func(t *testing.T) {
			for _, c := range replaySuites[stem] {
				t.Run(c.name, func(t *testing.T) {
					before := runtime.NumGoroutine()
					t.Cleanup(func() { requireNoLeakedGoroutines(t, before) })
					c.fn(t)
				})
			}
		})
	}
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
