package durabletest

import (
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// raceReplayTests ports src/provider_validation/race_replay.rs (duroxide
// 729fbb10). Rust keeps these in its provider validation suite, but every
// one of them runs a Runtime over the provider, so here they are runtime
// tests over the provider under test. Five of the nine are defined by
// duroxide 0.1.30/0.1.31 queue-race policies; see raceReplayNewerPolicy.
func raceReplayTests() []sample {
	return []sample{
		{name: "test_duplicate_start_preserves_pinned_handler", run: testDuplicateStartPreservesPinnedHandler},
		{name: "test_continue_as_new_unregistered_backoff", run: testContinueAsNewUnregisteredBackoff},
		{name: "test_continue_as_new_duplicate_start", run: testContinueAsNewDuplicateStart},
		{name: "test_continue_as_new_transition_delivery", run: testContinueAsNewTransitionDelivery},
		{name: "test_queue_race_cancellation_replay", run: raceReplayNewerPolicy},
		{name: "test_continue_as_new_queue_race_replay", run: raceReplayNewerPolicy},
		{name: "test_queue_replay_version_stamp_roundtrip", run: testQueueReplayVersionStampRoundtrip},
		{name: "test_positional_wait_race_replay", run: testPositionalWaitRaceReplay},
		{name: "test_legacy_queue_race_decision_preserved", run: raceReplayNewerPolicy},
	}
}

// raceReplayNewerPolicy is the skip of the behaviours that only duroxide
// 0.1.30/0.1.31 define: each seeds a history stamped 0.1.30 or 0.1.31
// and asserts the decision that version's queue-race policy takes
// (positional dequeue cancellation, the dropped_future re-binding of
// QueueSubscriptionCancelled, the legacy 0.1.30 competition outcome).
// The Go runtime is duroxide 0.1.29: it replays 0.1.29's rules and, as
// docs/versioning-best-practices.md requires, refuses an execution pinned
// above its own build version (runtime-side check and provider filter)
// rather than replay newer semantics with older rules, so these
// executions stay queued for a newer node by design.
func raceReplayNewerPolicy(e *env) {
	e.t.Skipf("not applicable in Go: defined by duroxide 0.1.30/0.1.31 queue-race policies; the Go runtime (%s) refuses executions pinned above its build version, as docs/versioning-best-practices.md requires", durable.DuroxideVersion)
}

// raceReplayStamps stand for Rust's 0.1.30 and 0.1.31 stamps, the two
// policies on either side of its build: an older stamp and the build's
// own. Both select nothing about the successor, which must be stamped
// with the build version. Go cannot use Rust's stamps: they are newer
// than its build and so refused (raceReplayNewerPolicy).
var raceReplayStamps = []string{"0.1.28", durable.DuroxideVersion}

// seedStarted is an OrchestrationStarted of version 1.0.0 stamped stamp.
func seedStarted(instance, name, input, stamp string) duroxide.Event {
	ev := seedEvent(instance, 1, 1, nil, duroxide.OrchestrationStarted{Name: name, Version: durable.DefaultVersion, Input: input})
	ev.DuroxideVersion = stamp
	return ev
}

// seedTurn is the seeding of race_replay.rs: enqueue provider_validation's
// start_item, fetch it and ack execution 1 with history, the orchestrator
// items and the metadata, so that all of them are committed atomically.
func (e *env) seedTurn(instance string, history []duroxide.Event, items []duroxide.WorkItem, md duroxide.ExecutionMetadata) {
	e.t.Helper()
	v := durable.DefaultVersion
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.StartOrchestrationItem{
		Instance: instance, Orchestration: "TestOrch", Input: "{}", Version: &v, ExecutionID: 1,
	}, 0), "seed start")
	item, err := e.p.FetchOrchestrationItem(e.ctx, 30*time.Second, 0, nil)
	require.NoError(e.t, err, "seed fetch")
	require.NotNil(e.t, item, "visible seed")
	require.Equal(e.t, instance, item.Instance, "seed fetch")
	require.NoError(e.t, e.p.AckOrchestrationItem(e.ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1, HistoryDelta: history, OrchestratorItems: items, Metadata: md,
	}), "seed acknowledgement")
}

// freshEnv is another, empty store for one iteration of a Rust test that
// loops over shapes calling factory.create_provider() each time.
func (e *env) freshEnv() *env {
	return &env{t: e.t, p: e.f.NewProvider(e.t), ctx: e.ctx, f: e.f}
}

// waitWithin waits for instance like wait, but returns the wait's error
// instead of failing, so a test can shut its runtime down first, as the
// Rust tests do.
func (e *env) waitWithin(instance string) (*durable.OrchestrationStatus, error) {
	return e.client().WaitForOrchestration(e.ctx, instance, durable.WaitOptions{Timeout: waitTimeout})
}

// requireCompletedWith requires st to be Completed with output want.
func requireCompletedWith(e *env, st *durable.OrchestrationStatus, err error, want, what string) {
	e.t.Helper()
	require.NoError(e.t, err, what)
	require.Equal(e.t, durable.StateCompleted, st.State, "%s: failed with %s", what, st.FailureMessage())
	require.Equal(e.t, want, st.Output, what)
}

// Duplicate client starts cannot switch a running execution to the latest
// handler, another handler name, or a replacement input.
func testDuplicateStartPreservesPinnedHandler(e *env) {
	for _, duplicate := range []string{"Original", "WrongHandler"} {
		s := e.freshEnv()
		instance := "provider-pinned-handler-" + duplicate
		name, version, running := "Original", durable.DefaultVersion, "Running"
		s.seedTurn(instance,
			[]duroxide.Event{
				seedStarted(instance, "Original", "original-input", durable.DuroxideVersion),
				seedEvent(instance, 1, 2, nil, duroxide.ActivityScheduled{Name: "tick", Input: "v1"}),
			},
			[]duroxide.WorkItem{
				duroxide.StartOrchestrationItem{Instance: instance, Orchestration: duplicate, Input: "wrong-input", ExecutionID: 1},
				duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 2, Result: "ok"},
			},
			duroxide.ExecutionMetadata{Status: &running, OrchestrationName: &name, OrchestrationVersion: &version})
		r := durable.NewRegistry()
		must(e.t, r.AddOrchestrationVersion("Original", "1.0.0", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			if _, err := durable.CallActivity[string](ctx, "tick", "v1").Await(); err != nil {
				return "", err
			}
			return "v1:" + in, nil
		}))
		must(e.t, r.AddOrchestrationVersion("Original", "2.0.0", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if _, err := durable.CallActivity[string](ctx, "tick", "v2").Await(); err != nil {
				return "", err
			}
			return "v2", nil
		}))
		orch(e.t, r, "WrongHandler", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			if _, err := durable.CallActivity[string](ctx, "tick", "wrong").Await(); err != nil {
				return "", err
			}
			return "wrong", nil
		})
		rt := s.start(r, fastOptions(nil))
		st, err := s.waitWithin(instance)
		shutdownRuntime(s, rt)
		requireCompletedWith(s, st, err, "v1:original-input", "duplicate client start ("+duplicate+") must be inert")
	}
}

// canItem is the ContinueAsNew item that starts execution 2 of instance
// with input "next", carrying q=carried.
func canItem(instance, orchestration string) duroxide.ContinueAsNewItem {
	v := durable.DefaultVersion
	return duroxide.ContinueAsNewItem{Instance: instance, Orchestration: orchestration, Input: "next", Version: &v,
		CarryForwardEvents: []duroxide.CarryForwardEvent{{Name: "q", Data: "carried"}}}
}

// dequeueTwice is a successor that reads q twice: the carried value, then
// the one that arrived while it was not running.
func dequeueTwice(ctx *durable.OrchestrationContext, _ string) (string, error) {
	if ctx.ExecutionID() != 2 {
		return "", fmt.Errorf("successor runs as execution %d, want 2", ctx.ExecutionID())
	}
	first, err := durable.DequeueEvent[string](ctx, "q").Await()
	if err != nil {
		return "", err
	}
	second, err := durable.DequeueEvent[string](ctx, "q").Await()
	if err != nil {
		return "", err
	}
	return first + "," + second, nil
}

// During rolling upgrades an unregistered successor can hide its CAN start
// through backoff. New inputs must survive until a compatible runtime
// resumes it.
func testContinueAsNewUnregisteredBackoff(e *env) {
	const instance = "provider-can-unregistered-backoff"
	can := "ContinuedAsNew"
	e.seedTurn(instance,
		[]duroxide.Event{
			seedStarted(instance, "RollingSuccessor", "old", durable.DuroxideVersion),
			seedEvent(instance, 1, 2, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}),
		},
		[]duroxide.WorkItem{canItem(instance, "RollingSuccessor")},
		duroxide.ExecutionMetadata{Status: &can})
	// Rust backs off 2 s. Here the start must still be hidden after the
	// old runtime's shutdown, which on a loaded machine can take longer;
	// a longer backoff only makes the new runtime wait longer.
	backoff := durable.Backoff{Base: 5 * time.Second, Max: 5 * time.Second}
	// A fetch of ours that finds nothing cannot tell the backed-off start
	// from one the old runtime holds between its fetch and its abandon; a
	// stop that catches it there gives the start back at once, and on a
	// loaded machine a stop can outlast the backoff. Such a round proves
	// nothing, so it is repeated: a runtime that backs off hides the
	// start in some round, one that does not hides it in none.
	hidden := false
	for round := 0; round < 5 && !hidden; round++ {
		hidden = hideBehindUnregisteredBackoff(e, backoff)
	}
	require.True(e.t, hidden, "start must be delayed by unregistered-handler backoff, not merely locked")
	require.Len(e.t, e.execHistory(instance, 1), 2)
	e.enqueue(instance, "q", "late")
	r := durable.NewRegistry()
	orch(e.t, r, "RollingSuccessor", dequeueTwice)
	rt := e.start(r, fastOptions(nil))
	st, err := e.waitWithin(instance)
	shutdownRuntime(e, rt)
	requireCompletedWith(e, st, err, "carried,late", "successor and window input must survive rolling-node backoff")
}

// hideBehindUnregisteredBackoff runs a runtime without the successor's
// orchestration until it has fetched the start and given it back, stops
// it, and reports whether the start is then hidden. A start it finds is
// given back.
func hideBehindUnregisteredBackoff(e *env, backoff durable.Backoff) bool {
	old := e.start(durable.NewRegistry(), fastOptions(func(o *durable.Options) {
		o.OrchestrationConcurrency = 1
		o.UnregisteredBackoff = backoff
	}))
	// Compete with the old runtime until it has fetched the start and
	// hidden it: a fetch of ours sees the start and gives it back without
	// counting the attempt; once the runtime has backed it off, nothing is
	// visible.
	e.waitFor("the unregistered runtime to fetch and hide the start", func() bool {
		item, err := e.p.FetchOrchestrationItem(e.ctx, 30*time.Second, 0, nil)
		if err != nil {
			require.True(e.t, duroxide.IsRetryable(err), "backoff-test fetch failed: %v", err)
			return false
		}
		if item == nil {
			return true
		}
		require.True(e.t, hasItem[duroxide.ContinueAsNewItem](item.Messages), "fetched %v", variantsOf(item.Messages))
		require.NoError(e.t, e.p.AbandonOrchestrationItem(e.ctx, item.LockToken, 0, true), "release competing inspection fetch")
		return false
	})
	shutdownRuntime(e, old)
	item, err := e.p.FetchOrchestrationItem(e.ctx, 30*time.Second, 0, nil)
	require.NoError(e.t, err, "inspect after runtime stopped")
	if item == nil {
		return true
	}
	require.NoError(e.t, e.p.AbandonOrchestrationItem(e.ctx, item.LockToken, 0, true), "release the inspection fetch")
	return false
}

// hasItem reports whether items holds a T.
func hasItem[T duroxide.WorkItem](items []duroxide.WorkItem) bool {
	for _, it := range items {
		if _, ok := it.(T); ok {
			return true
		}
	}
	return false
}

// variantsOf names items' variants, for failure messages.
func variantsOf(items []duroxide.WorkItem) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.Variant())
	}
	return out
}

// A duplicate start must not replace the durable CAN successor, even when
// it precedes that successor in queue order. A colliding parent must be
// notified.
//
// Rust prefixes an explicit child id with its parent ("can-child" becomes
// "{parent}::can-child"); Go uses an explicit id as given, so the parent
// schedules the full id.
func testContinueAsNewDuplicateStart(e *env) {
	for _, stamp := range raceReplayStamps {
		for _, collision := range []bool{false, true} {
			s := e.freshEnv()
			const parent = "provider-can-duplicate-parent"
			instance := parent + "::can-child"
			running, can := "Running", "ContinuedAsNew"
			if collision {
				s.seedTurn(parent,
					[]duroxide.Event{
						seedStarted(parent, "CollisionParent", "", stamp),
						seedEvent(parent, 1, 2, nil, duroxide.SubOrchestrationScheduled{Name: "Transition", Instance: instance, Input: "duplicate"}),
					}, nil, duroxide.ExecutionMetadata{Status: &running})
			}
			dup := duroxide.StartOrchestrationItem{Instance: instance, Orchestration: "WrongHandler", Input: "duplicate", ExecutionID: 1}
			if collision {
				p := parent
				dup.ParentInstance, dup.ParentID, dup.ParentExecutionID = &p, u64p(2), u64p(1)
			}
			s.seedTurn(instance,
				[]duroxide.Event{
					seedStarted(instance, "Transition", "", stamp),
					seedEvent(instance, 1, 2, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}),
				},
				[]duroxide.WorkItem{dup, canItem(instance, "Transition"), duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}},
				duroxide.ExecutionMetadata{Status: &can})
			r := durable.NewRegistry()
			orch(e.t, r, "Transition", dequeueTwice)
			orch(e.t, r, "CollisionParent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
				v, err := durable.CallSubOrchestration[string](ctx, "Transition", "duplicate", durable.SubOrchestrationOptions{InstanceID: instance}).Await()
				if err != nil {
					return err.Error(), nil
				}
				return "", fmt.Errorf("collision unexpectedly resolved: %s", v)
			})
			rt := s.start(r, fastOptions(nil))
			what := fmt.Sprintf("%s/collision=%v", stamp, collision)
			st, err := s.waitWithin(instance)
			var pst *durable.OrchestrationStatus
			var perr error
			if collision {
				pst, perr = s.waitWithin(parent)
			}
			shutdownRuntime(s, rt)
			requireCompletedWith(s, st, err, "carried,late", what+": CAN successor must not livelock behind duplicate start")
			if collision {
				require.NoError(e.t, perr, "%s: colliding parent must receive a notification", what)
				require.Equal(e.t, durable.StateCompleted, pst.State, "%s: parent failed with %s", what, pst.FailureMessage())
				require.True(e.t, strings.Contains(pst.Output, "already exists") && !strings.Contains(pst.Output, "is terminal"),
					"%s: collision notification must describe an existing logical instance, not a dead successor: %q", what, pst.Output)
			}
			require.Len(e.t, s.execHistory(instance, 1), 2, "%s: duplicate start must not mutate old recorded history", what)
			next := s.execHistory(instance, 2)
			require.NotEmpty(e.t, next, what)
			started, ok := next[0].Kind.(duroxide.OrchestrationStarted)
			require.True(e.t, ok && started.Name == "Transition" && started.Input == "next", "%s: successor starts with %#v", what, next[0].Kind)
		}
	}
}

// The seven shapes of test_continue_as_new_transition_delivery.
var transitionShapes = []string{"queue", "race", "mixed-stale", "signal", "cancel", "future-completion", "stale-only"}

// transitionInputs are the messages that arrive in a shape's CAN window.
func transitionInputs(instance, shape string) []duroxide.WorkItem {
	late := duroxide.QueueMessageItem{Instance: instance, Name: "q", Data: "late"}
	switch shape {
	case "mixed-stale":
		return []duroxide.WorkItem{late,
			duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 99, Result: "stale"},
			duroxide.TimerFiredItem{Instance: instance, ExecutionID: 1, ID: 100, FireAtMs: 1},
			duroxide.SubOrchCompletedItem{ParentInstance: instance, ParentExecutionID: 1, ParentID: 101, Result: "stale"}}
	case "future-completion":
		return []duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 2, ID: 99, Result: "unmatched"}}
	case "stale-only":
		return []duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: instance, ExecutionID: 1, ID: 99, Result: "unmatched"}}
	case "signal":
		return []duroxide.WorkItem{late, duroxide.ExternalRaisedItem{Instance: instance, Name: "signal", Data: "answer"}}
	case "cancel":
		return []duroxide.WorkItem{late, duroxide.CancelInstanceItem{Instance: instance, Reason: "requested-during-CAN"}}
	}
	return []duroxide.WorkItem{late}
}

// transitionSuccessor is the Transition orchestration of a shape.
func transitionSuccessor(shape string) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if ctx.ExecutionID() == 1 {
			return "", durable.ContinueAsNew(ctx, "next")
		}
		dequeue := func() (string, error) { return durable.DequeueEvent[string](ctx, "q").Await() }
		switch shape {
		case "stale-only":
			return dequeue()
		case "signal":
			answer, err := durable.WaitEvent[string](ctx, "signal").Await()
			if err != nil {
				return "", err
			}
			first, err := dequeue()
			if err != nil {
				return "", err
			}
			second, err := dequeue()
			if err != nil {
				return "", err
			}
			return first + "," + second + "|" + answer, nil
		}
		var values []string
		for len(values) < 2 {
			if shape != "race" {
				v, err := dequeue()
				if err != nil {
					return "", err
				}
				values = append(values, v)
				continue
			}
			q := durable.DequeueEvent[string](ctx, "q")
			if ctx.Select(q, durable.NewTimer(ctx, 10*time.Millisecond)) == 0 {
				v, err := q.Await()
				if err != nil {
					return "", err
				}
				values = append(values, v)
			}
		}
		return strings.Join(values, ","), nil
	}
}

// Persistent inputs must survive a CAN-terminal fetch without the
// successor's start item. The delayed start deterministically exposes the
// provider's visibility-cutoff window. Rust's function takes the stamp as
// a parameter; this runs it at each of raceReplayStamps.
func testContinueAsNewTransitionDelivery(e *env) {
	for _, stamp := range raceReplayStamps {
		for _, shape := range transitionShapes {
			transitionDelivery(e.freshEnv(), stamp, shape)
		}
	}
}

// transitionDelivery is one stamp and shape of
// test_continue_as_new_transition_delivery.
func transitionDelivery(e *env, stamp, shape string) {
	what := stamp + "/" + shape
	instance := fmt.Sprintf("provider-can-window-%s-%s", stamp, shape)
	pinned, err := duroxide.ParseSemVer(stamp)
	require.NoError(e.t, err, "test stamp must parse")
	status, output, name, version := "ContinuedAsNew", "next", "Transition", durable.DefaultVersion
	e.seedTurn(instance,
		[]duroxide.Event{
			seedStarted(instance, "Transition", "old", stamp),
			seedEvent(instance, 1, 2, nil, duroxide.OrchestrationContinuedAsNew{Input: "next"}),
		},
		transitionInputs(instance, shape),
		duroxide.ExecutionMetadata{Status: &status, Output: &output, OrchestrationName: &name,
			OrchestrationVersion: &version, PinnedDuroxideVersion: &pinned})
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, canItem(instance, "Transition"), 2*time.Second),
		"must enqueue the delayed successor start")
	r := durable.NewRegistry()
	orch(e.t, r, "Transition", transitionSuccessor(shape))
	rt := e.start(r, fastOptions(func(o *durable.Options) {
		o.UnregisteredBackoff = durable.Backoff{Base: 250 * time.Millisecond, Max: time.Second}
	}))
	if shape == "signal" {
		e.waitHist(instance, "successor must audit the preserved window signal and bind its wait", func(h []duroxide.Event) bool {
			return len(h) > 0 && h[0].ExecutionID == 2 && hasKind(h, extSub("signal")) && hasKind(h, extEventData("signal", "answer"))
		})
		e.raise(instance, "signal", "fresh")
	}
	st, werr := e.waitWithin(instance)
	shutdownRuntime(e, rt)
	successor := e.execHistory(instance, 2)
	old := e.execHistory(instance, 1)
	require.Len(e.t, old, 2, "%s: admission cannot mutate execution 1", what)
	require.True(e.t, isKind[duroxide.OrchestrationStarted](old[0]) && isKind[duroxide.OrchestrationContinuedAsNew](old[1]), what)
	require.NotEmpty(e.t, successor, "%s: successor never started; this does not prove arrival loss", what)
	require.Equal(e.t, durable.DuroxideVersion, successor[0].DuroxideVersion, "%s: the predecessor stamp does not select the successor's policy", what)
	require.NoError(e.t, werr, "%s: terminal CAN must preserve the queued input; history=%s", what, kinds(successor))
	switch shape {
	case "future-completion":
		require.Equal(e.t, durable.StateFailed, st.State, "%s: a future-scoped malformed completion must be validated, not silently ACKed: %q", what, st.Output)
		c, ok := st.Details.(duroxide.ConfigurationError)
		require.True(e.t, ok && c.Kind == duroxide.ConfigNondeterminism, "%s: want a nondeterminism failure, got %#v", what, st.Details)
		return
	case "stale-only":
		requireCompletedWith(e, st, nil, "carried", what+": stale-only batch must not obstruct the successor")
		return
	case "cancel":
		require.Equal(e.t, durable.StateFailed, st.State, "%s: logical instance cancellation must reach the successor: %q", what, st.Output)
		require.True(e.t, isCancelled(st.Details, "requested-during-CAN"), "%s: want Cancelled(requested-during-CAN), got %#v", what, st.Details)
		return
	}
	want := "carried,late"
	if shape == "signal" {
		// Abandon visibility may split the CAN start and the window
		// inputs into separate fetches: bound admission is defined at
		// event application, not by when the test enqueued the signal.
		binding := eventIndex(successor, func(ev duroxide.Event) bool { return hasKind([]duroxide.Event{ev}, extSub("signal")) })
		answer := eventIndex(successor, isAnswer)
		require.GreaterOrEqual(e.t, binding, 0, "successor must bind its signal wait")
		require.GreaterOrEqual(e.t, answer, 0, "preserved window signal must reach the successor audit history")
		if successor[answer].EventID < successor[binding].EventID {
			want = "carried,late|fresh" // the audited answer before binding is skipped
		} else {
			want = "carried,late|answer" // the answer applied after binding resolves the wait
		}
		require.Equal(e.t, 1, countEvents(successor, isAnswer),
			"%s: positional input must reach successor admission exactly once", what)
	}
	requireCompletedWith(e, st, nil, want, what+": carried input must precede the preserved window arrival")
	var delivered []string
	for _, ev := range successor {
		if k, ok := ev.Kind.(duroxide.ExternalEventPersistent); ok && k.Name == "q" {
			delivered = append(delivered, k.Data)
		}
	}
	require.Equal(e.t, []string{"carried", "late"}, delivered, "%s: no loss or duplication", what)
	if shape == "mixed-stale" {
		// Only mixed-stale injects stale completions (ids 99-101 of
		// execution 1); in the race shape the successor's own timers can
		// reach those ids.
		require.Zero(e.t, countEvents(successor, func(ev duroxide.Event) bool {
			switch ev.Kind.(type) {
			case duroxide.ActivityCompleted, duroxide.TimerFired, duroxide.SubOrchestrationCompleted:
				return ev.SourceEventID != nil && *ev.SourceEventID >= 99
			}
			return false
		}), "%s: stale execution completions must not be applied to the successor", what)
	}
}

// extEventData matches ExternalEvent name=data.
func extEventData(name, data string) func(duroxide.ExternalEvent) bool {
	return func(k duroxide.ExternalEvent) bool { return k.Name == name && k.Data == data }
}

// isAnswer reports whether ev is the window signal's ExternalEvent.
func isAnswer(ev duroxide.Event) bool {
	return hasKind([]duroxide.Event{ev}, extEventData("signal", "answer"))
}

// eventIndex is the index of h's first event matching match, or -1.
func eventIndex(h []duroxide.Event, match func(duroxide.Event) bool) int {
	for i, ev := range h {
		if match(ev) {
			return i
		}
	}
	return -1
}

// An old semantic version must round-trip without being restamped by a
// newer reader: through ack and read, and through the fetch path. Rust
// stamps 0.1.30, older than its build; Go's build is 0.1.29, so the stamp
// here is older than that. No runtime is involved.
func testQueueReplayVersionStampRoundtrip(e *env) {
	const instance, stamp = "queue-version-roundtrip", "0.1.20"
	name, version := "TestOrch", durable.DefaultVersion
	ev := seedStarted(instance, "TestOrch", "{}", stamp)
	e.seedTurn(instance, []duroxide.Event{ev}, nil,
		duroxide.ExecutionMetadata{OrchestrationName: &name, OrchestrationVersion: &version})
	h, err := e.p.Read(e.ctx, instance)
	require.NoError(e.t, err)
	require.Len(e.t, h, 1)
	require.Equal(e.t, stamp, h[0].DuroxideVersion, "read path restamped history")
	require.Equal(e.t, ev.Kind, h[0].Kind)
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ExternalRaisedItem{Instance: instance, Name: "fetch-stamp", Data: "wake"}, 0),
		"enqueue fetch-path stamp probe")
	item, err := e.p.FetchOrchestrationItem(e.ctx, 30*time.Second, 0, nil)
	require.NoError(e.t, err, "fetch old-stamped execution")
	require.NotNil(e.t, item, "old-stamped execution was not fetchable")
	require.Equal(e.t, stamp, item.History[0].DuroxideVersion, "fetch path restamped history")
	require.NoError(e.t, e.p.AbandonOrchestrationItem(e.ctx, item.LockToken, 0, true), "release stamp probe lock")
}

// Sequential positional round trips with a long timer loser, then
// identical replay. Rust replays the recorded body with its replay engine
// and compares the output; Go's exported check of a recorded history is
// durable.CheckHistory, which replays it through the same engine and
// reports whether the code makes every recorded call in order.
func testPositionalWaitRaceReplay(e *env) {
	const instance = "provider-live-signal"
	r := durable.NewRegistry()
	orch(e.t, r, "LiveSignalRace", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		first := "timeout"
		w := durable.WaitEvent[string](ctx, "s")
		if ctx.Select(w, durable.NewTimer(ctx, 30*time.Second)) == 0 {
			v, err := w.Await()
			if err != nil {
				return "", err
			}
			first = v
		}
		second, err := durable.WaitEvent[string](ctx, "s").Await()
		if err != nil {
			return "", err
		}
		return first + ":" + second, nil
	})
	rt := e.start(r, nil)
	e.startOrch(instance, "LiveSignalRace", "")
	e.waitHist(instance, "signal subscription", func(h []duroxide.Event) bool { return hasKind(h, extSub("s")) })
	e.raise(instance, "s", "one")
	e.waitHist(instance, "replacement signal subscription", func(h []duroxide.Event) bool {
		return countEvents(h, func(ev duroxide.Event) bool {
			k, ok := ev.Kind.(duroxide.ExternalSubscribed)
			return ok && k.Name == "s"
		}) >= 2
	})
	e.raise(instance, "s", "two")
	st, err := e.waitWithin(instance)
	shutdownRuntime(e, rt)
	requireCompletedWith(e, st, err, "one:two", "live signal race")
	history := e.history(instance)
	for range 2 {
		require.NoError(e.t, durable.CheckHistory(r, durable.RecordedExecution{Instance: instance, ExecutionID: 1, History: history}),
			"provider live/replay differs: history=%s", kinds(history))
	}
}
