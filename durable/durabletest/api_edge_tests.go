package durabletest

import (
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// apiEdgeTests are Go-only: the Client's behaviour at the API edge
// (duplicate starts, missing instances, typed errors, idempotent writes),
// which duroxide's tests do not cover.
func apiEdgeTests() []sample {
	return []sample{
		{"duplicate_start_of_another_orchestration_is_refused", duplicateStartOfAnotherOrchestrationIsRefused},
		{"identical_start_retry_is_a_no_op", identicalStartRetryIsANoOp},
		{"id_reuse_allow_terminal_starts_a_new_execution", idReuseAllowTerminalStartsANewExecution},
		{"concurrent_starts_have_one_winner", concurrentStartsHaveOneWinner},
		{"concurrent_reuse_starts_of_a_terminal_instance_have_one_winner", concurrentReuseStartsOfATerminalInstanceHaveOneWinner},
		{"start_after_delete_runs_a_new_instance", startAfterDeleteRunsANewInstance},
		{"turn_replays_the_started_orchestration", turnReplaysTheStartedOrchestration},
		{"writes_to_a_missing_instance_are_not_found", writesToAMissingInstanceAreNotFound},
		{"delete_of_a_running_instance_is_still_running", deleteOfARunningInstanceIsStillRunning},
		{"reads_of_a_missing_instance_are_not_found", readsOfAMissingInstanceAreNotFound},
		{"invalid_input_matches_the_sentinel", invalidInputMatchesTheSentinel},
		{"unregistered_orchestration_is_refused_by_a_client_with_a_registry", unregisteredOrchestrationIsRefused},
		{"status_says_it_waits_for_an_unregistered_orchestration", statusSaysItWaitsForAnUnregisteredOrchestration},
		{"retried_enqueue_with_a_key_is_delivered_once", retriedEnqueueWithAKeyIsDeliveredOnce},
		{"retried_raise_with_a_key_is_delivered_once", retriedRaiseWithAKeyIsDeliveredOnce},
	}
}

// edgeRegistry has "Echo" (waits for event "go", returns "echo:"+input
// +":"+data) and "Other" (returns "other").
func edgeRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "Echo", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		d, err := durable.WaitEvent[string](ctx, "go").Await()
		return "echo:" + in + ":" + d, err
	})
	orch(e.t, r, "Other", func(*durable.OrchestrationContext, string) (string, error) { return "other", nil })
	return r
}

func (e *env) waitRunning(instance string) {
	e.t.Helper()
	e.waitHist(instance, "the instance started", func(h []duroxide.Event) bool { return anyKind[duroxide.OrchestrationStarted](h) })
}

func duplicateStartOfAnotherOrchestrationIsRefused(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	e.startOrch("dup", "Echo", "first")
	e.waitRunning("dup")
	err := e.client().StartOrchestration(e.ctx, "dup", "Other", "second")
	require.ErrorIs(e.t, err, durable.ErrInstanceExists)
	require.ErrorIs(e.t, err, duroxide.ErrInstanceExists)
	// Same orchestration, other input: not a retry either.
	require.ErrorIs(e.t, e.client().StartOrchestration(e.ctx, "dup", "Echo", "other input"), durable.ErrInstanceExists)
	e.raise("dup", "go", "x")
	require.Equal(e.t, "echo:first:x", e.completed("dup"))
	// A terminal instance is still refused by default...
	require.ErrorIs(e.t, e.client().StartOrchestration(e.ctx, "dup", "Other", ""), durable.ErrInstanceExists)
}

func identicalStartRetryIsANoOp(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	// With a key, the caller's retry is recognised by the key alone.
	keyed := durable.StartOptions{IdempotencyKey: "start-1"}
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "keyed-start", "Echo", "in", keyed))
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "keyed-start", "Echo", "in again", keyed))
	require.ErrorIs(e.t, e.client().StartOrchestration(e.ctx, "keyed-start", "Echo", "in again"), durable.ErrInstanceExists)
	e.startOrch("same", "Echo", "in")
	e.startOrch("same", "Echo", "in") // a caller's retry
	e.waitRunning("same")
	e.startOrch("same", "Echo", "in")
	e.raise("same", "go", "x")
	require.Equal(e.t, "echo:in:x", e.completed("same"))
	execs, err := e.client().ListExecutions(e.ctx, "same")
	require.NoError(e.t, err)
	require.Equal(e.t, []uint64{1}, execs)
	require.Equal(e.t, 1, countKind[duroxide.OrchestrationStarted](e.history("same")))
}

func concurrentStartsHaveOneWinner(e *env) {
	const n = 8
	errs := make([]error, n)
	c := e.client() // made once: env.client is not safe for concurrent first use
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = c.StartOrchestration(e.ctx, "race", "Echo", strings.Repeat("i", i+1))
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(e.t, err, durable.ErrInstanceExists)
		}
	}
	require.Equal(e.t, 1, won, "exactly one concurrent start wins: %v", errs)
	e.start(edgeRegistry(e), fastOptions(nil))
	e.waitRunning("race")
	e.raise("race", "go", "x")
	require.True(e.t, strings.HasPrefix(e.completed("race"), "echo:i"))
}

// concurrentReuseStartsOfATerminalInstanceHaveOneWinner (issue 29, 5):
// starts with IDReuseAllowTerminal of one terminal instance race (no
// runtime runs, so every caller sees it terminal). Exactly one starts
// execution 2; the others are refused, so no execution 3 replaces it.
func concurrentReuseStartsOfATerminalInstanceHaveOneWinner(e *env) {
	const instance = "reuse-race"
	rt := e.start(edgeRegistry(e), fastOptions(nil))
	e.startOrch(instance, "Other", "")
	require.Equal(e.t, "other", e.completed(instance))
	shutdownRuntime(e, rt)
	const n = 8
	errs := make([]error, n)
	c := e.client()
	reuse := durable.StartOptions{IDReuse: durable.IDReuseAllowTerminal}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = c.StartOrchestration(e.ctx, instance, "Echo", strings.Repeat("i", i+1), reuse)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(e.t, -1, won, "exactly one concurrent reuse start wins: %v", errs)
			won = i
		} else {
			require.ErrorIs(e.t, err, durable.ErrInstanceExists)
		}
	}
	require.NotEqual(e.t, -1, won, "one reuse start wins: %v", errs)
	e.start(edgeRegistry(e), fastOptions(nil))
	e.waitExecutions(instance, 2)
	e.waitSubscription(instance, "go")
	e.raise(instance, "go", "x")
	require.Equal(e.t, "echo:"+strings.Repeat("i", won+1)+":x", e.completed(instance))
	e.requireExecutions(instance, []uint64{1, 2})
}

// startAfterDeleteRunsANewInstance (issue 29, 8): the very start that
// created a deleted instance, made again, is a new instance that runs,
// not a retry of the deleted one's start that enqueues nothing (a
// provider whose deletion is not finished refuses it with the retryable
// ErrInstanceDeleting instead: the Cosmos provider's tests inject that).
// The new instance's first execution is the one after the deleted
// instance's last (deletion_stray_tests says why).
func startAfterDeleteRunsANewInstance(e *env) {
	const instance = "start-after-delete"
	e.start(edgeRegistry(e), fastOptions(nil))
	e.startOrch(instance, "Other", "same")
	require.Equal(e.t, "other", e.completed(instance))
	_, err := e.client().DeleteInstance(e.ctx, instance)
	require.NoError(e.t, err)
	e.startOrch(instance, "Other", "same")
	require.Equal(e.t, "other", e.completed(instance))
	e.requireExecutions(instance, []uint64{2})
}

// turnReplaysTheStartedOrchestration enqueues a second start for another
// orchestration straight through the provider (as a client without the
// check, or a Rust client, could): the running instance must keep
// replaying what it started with.
func turnReplaysTheStartedOrchestration(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	e.startOrch("replay", "Echo", "first")
	e.waitRunning("replay")
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{
		Instance: "replay", Orchestration: "Other", Input: "second", ExecutionID: 1}, 0))
	e.raise("replay", "go", "x")
	require.Equal(e.t, "echo:first:x", e.completed("replay"))
}

// The client tells the refusal by its kind, whatever the provider's
// words: each provider words it its own way.
func deleteOfARunningInstanceIsStillRunning(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	e.startOrch("del-running", "Echo", "x")
	e.waitRunning("del-running")
	_, err := e.client().DeleteInstance(e.ctx, "del-running")
	require.ErrorIs(e.t, err, durable.ErrInstanceStillRunning)
	e.raise("del-running", "go", "y")
	require.Equal(e.t, "echo:x:y", e.completed("del-running"), "the refused delete changed nothing")
}

func writesToAMissingInstanceAreNotFound(e *env) {
	c := e.client()
	require.ErrorIs(e.t, c.RaiseEvent(e.ctx, "ghost", "go", "x"), durable.ErrInstanceNotFound)
	require.ErrorIs(e.t, c.EnqueueEvent(e.ctx, "ghost", "q", "x"), durable.ErrInstanceNotFound)
	require.ErrorIs(e.t, c.CancelInstance(e.ctx, "ghost", "why"), duroxide.ErrInstanceNotFound)
	if c.HasManagementCapability() {
		d, err := c.QueueDepths(e.ctx)
		require.NoError(e.t, err)
		require.Zero(e.t, d.OrchestratorQueue, "nothing was left in the orchestrator queue")
	}
}

func readsOfAMissingInstanceAreNotFound(e *env) {
	c := e.client()
	_, err := c.ExecutionHistory(e.ctx, "ghost", 1)
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "ExecutionHistory")
	_, err = c.ListExecutions(e.ctx, "ghost")
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "ListExecutions")
	_, _, err = c.KVValue(e.ctx, "ghost", "k")
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "KVValue")
	_, err = c.KVValues(e.ctx, "ghost")
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "KVValues")
	_, err = c.CustomStatus(e.ctx, "ghost", 0)
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "CustomStatus")
	_, err = c.InstanceInfo(e.ctx, "ghost")
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "InstanceInfo")
	_, err = c.DeleteInstance(e.ctx, "ghost")
	require.ErrorIs(e.t, err, duroxide.ErrInstanceNotFound, "DeleteInstance")
	// A wait on a missing instance reports it instead of waiting out its
	// timeout (ErrTimeout would mean it waited).
	_, err = c.WaitForOrchestration(e.ctx, "ghost", durable.WaitOptions{Timeout: waitTimeout})
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "WaitForOrchestration")
	_, err = c.WaitForStatusChange(e.ctx, "ghost", 0, durable.WaitOptions{Timeout: waitTimeout, PollInterval: 10 * time.Millisecond})
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "WaitForStatusChange")
	_, err = c.WaitForKVValue(e.ctx, "ghost", "k", durable.WaitOptions{Timeout: waitTimeout})
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "WaitForKVValue")
	// A started instance exists before its first turn: no error.
	e.startOrch("queued", "Echo", "")
	_, err = c.CustomStatus(e.ctx, "queued", 0)
	require.NoError(e.t, err)
	_, err = c.WaitForOrchestration(e.ctx, "queued", durable.WaitOptions{Timeout: time.Millisecond})
	require.ErrorIs(e.t, err, durable.ErrTimeout)
}

func invalidInputMatchesTheSentinel(e *env) {
	c := e.client()
	require.ErrorIs(e.t, c.StartOrchestration(e.ctx, "", "Echo", ""), durable.ErrInvalidInput)
	require.ErrorIs(e.t, c.StartOrchestration(e.ctx, "x", "Echo", "", durable.StartOptions{Version: "not-a-version"}), duroxide.ErrInvalidInput)
	require.ErrorIs(e.t, c.StartOrchestration(e.ctx, "x", "Echo", func() {}), durable.ErrInvalidInput)
}

func unregisteredOrchestrationIsRefused(e *env) {
	r := edgeRegistry(e)
	c := durable.NewClient(e.p, durable.ClientOptions{Registry: r})
	err := c.StartOrchestration(e.ctx, "unreg", "Missing", "")
	require.ErrorIs(e.t, err, durable.ErrNotRegistered)
	require.ErrorIs(e.t, c.StartOrchestration(e.ctx, "unreg", "Echo", "", durable.StartOptions{Version: "9.9.9"}), duroxide.ErrNotRegistered)
	exists, err := e.client().InstanceInfo(e.ctx, "unreg")
	require.ErrorIs(e.t, err, durable.ErrInstanceNotFound, "a refused start writes nothing: %v", exists)
	require.NoError(e.t, c.StartOrchestration(e.ctx, "reg", "Echo", ""))
}

// retriedEnqueueWithAKeyIsDeliveredOnce is issue 19's case: "a" enqueued,
// retried with the same key (once before and once after the orchestration
// consumed it), then "b": the orchestration dequeues a, b.
func retriedEnqueueWithAKeyIsDeliveredOnce(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Two", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, err := durable.DequeueEvent[string](ctx, "q").Await()
		if err != nil {
			return "", err
		}
		ctx.SetCustomStatus("got " + a)
		b, err := durable.DequeueEvent[string](ctx, "q").Await()
		return a + "," + b, err
	})
	e.start(r, fastOptions(nil))
	e.startOrch("keyed", "Two", "")
	c := e.client()
	ka := durable.EventOptions{IdempotencyKey: "write-a"}
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "keyed", "q", "a", ka))
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "keyed", "q", "a", ka))
	e.waitFor("a consumed", func() bool {
		cs, err := c.CustomStatus(e.ctx, "keyed", 0)
		return err == nil && cs != nil && cs.Status != nil && *cs.Status == "got a"
	})
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "keyed", "q", "a", ka))
	require.NoError(e.t, c.EnqueueEvent(e.ctx, "keyed", "q", "b", durable.EventOptions{IdempotencyKey: "write-b"}))
	require.Equal(e.t, "a,b", e.completed("keyed"))
}

func retriedRaiseWithAKeyIsDeliveredOnce(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Count", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		// Both subscriptions up front: an event is matched to the
		// subscriptions that exist when it arrives.
		fa, fb := durable.WaitEvent[string](ctx, "e"), durable.WaitEvent[string](ctx, "e")
		a, err := fa.Await()
		if err != nil {
			return "", err
		}
		b, err := fb.Await()
		return a + "," + b, err
	})
	e.start(r, fastOptions(nil))
	e.startOrch("raised", "Count", "")
	e.waitRunning("raised")
	c := e.client()
	k := durable.EventOptions{IdempotencyKey: "raise-1"}
	require.NoError(e.t, c.RaiseEvent(e.ctx, "raised", "e", "1", k))
	require.NoError(e.t, c.RaiseEvent(e.ctx, "raised", "e", "1", k))
	require.NoError(e.t, c.RaiseEvent(e.ctx, "raised", "e", "2", durable.EventOptions{IdempotencyKey: "raise-2"}))
	require.Equal(e.t, "1,2", e.completed("raised"))
}

func idReuseAllowTerminalStartsANewExecution(e *env) {
	e.start(edgeRegistry(e), fastOptions(nil))
	reuse := durable.StartOptions{IDReuse: durable.IDReuseAllowTerminal}
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "reuse", "Echo", "one", reuse))
	e.waitRunning("reuse")
	// Running: refused even with the option.
	require.ErrorIs(e.t, e.client().StartOrchestration(e.ctx, "reuse", "Other", "", reuse), durable.ErrInstanceExists)
	e.raise("reuse", "go", "x")
	require.Equal(e.t, "echo:one:x", e.completed("reuse"))
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "reuse", "Other", "two", reuse))
	e.waitFor("the second execution completed", func() bool {
		execs, err := e.client().ListExecutions(e.ctx, "reuse")
		return err == nil && len(execs) == 2 && e.wait("reuse").Output == "other"
	})
	h := e.executionHistory("reuse", 2)
	_, started, ok := findKind[duroxide.OrchestrationStarted](h)
	require.True(e.t, ok)
	require.Equal(e.t, "Other", started.Name)
	require.Equal(e.t, "two", started.Input)
}

// statusSaysItWaitsForAnUnregisteredOrchestration: while the runtime backs
// off an orchestration no runtime has registered, the instance's status
// says so (it used to say only NotFound until it was poisoned).
func statusSaysItWaitsForAnUnregisteredOrchestration(e *env) {
	e.start(edgeRegistry(e), &durable.Options{MaxAttempts: 1000, MinPollInterval: 10 * time.Millisecond,
		UnregisteredBackoff: durable.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}})
	e.startOrch("unknown", "NotHere", "")
	var st *durable.OrchestrationStatus
	e.waitFor("the status names the unregistered orchestration", func() bool {
		var err error
		st, err = e.client().Status(e.ctx, "unknown")
		return err == nil && strings.Contains(st.Waiting, "NotHere")
	})
	require.Equal(e.t, durable.StateNotFound, st.State, "not started yet")
	require.Contains(e.t, st.Waiting, "not registered")
}
