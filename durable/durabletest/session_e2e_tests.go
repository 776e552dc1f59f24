package durabletest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
)

// sessionE2ETests ports tests/session_e2e_tests.rs.
func sessionE2ETests() []sample {
	return []sample{
		{name: "test_session_activity_basic_e2e", run: testSessionActivityBasicE2E},
		{name: "test_session_id_visible_in_activity_context", run: testSessionIDVisibleInActivityContext},
		{name: "test_mixed_session_and_regular_activities", run: testMixedSessionAndRegularActivities},
		{name: "test_multiple_sessions_in_orchestration", run: testMultipleSessionsInOrchestration},
		{name: "test_session_activity_typed", run: testSessionActivityTyped},
		{name: "test_session_with_worker_node_id_completes", run: testSessionWithWorkerNodeIDCompletes},
		{name: "test_session_worker_node_id_multiple_sessions_parallel", run: testSessionWorkerNodeIDMultipleSessionsParallel},
		{name: "test_ephemeral_session_still_works", run: testEphemeralSessionStillWorks},
		{name: "test_session_with_worker_node_id_activity_context_has_session_id", run: testSessionWithWorkerNodeIDActivityContextHasSessionID},
		{name: "test_two_slots_serve_same_session_concurrently", run: func(e *env) {
			sameSessionConcurrency(e, "test-concurrent-session", "ConcurrentSessionOrch", "my-node", 2)
		}},
		{name: "test_ephemeral_same_session_serialized", run: func(e *env) {
			sameSessionConcurrency(e, "test-serial-session", "SerialSessionOrch", "", 1)
		}},
		{name: "test_session_fan_out_fan_in", run: testSessionFanOutFanIn},
		{name: "test_session_fan_out_mixed_with_regular", run: testSessionFanOutMixedWithRegular},
		{name: "test_fan_out_multiple_per_session_mixed", run: testFanOutMultiplePerSessionMixed},
		{name: "test_session_survives_continue_as_new", run: testSessionSurvivesContinueAsNew},
		{name: "test_session_continue_as_new_versioned_upgrade", run: testSessionContinueAsNewVersionedUpgrade},
		{name: "test_session_idle_timeout_must_exceed_worker_renewal_interval", run: testSessionIdleTimeoutMustExceedWorkerRenewalInterval},
		{name: "test_max_sessions_per_runtime_enforced", run: testMaxSessionsPerRuntimeEnforced},
		{name: "test_same_session_shares_one_slot", run: testSameSessionSharesOneSlot},
		{name: "test_session_cap_blocks_then_unblocks", run: testSessionCapBlocksThenUnblocks},
		{name: "test_multi_worker_complex_orchestration", run: testMultiWorkerComplexOrchestration},
		{name: "test_multi_worker_heterogeneous_config", run: testMultiWorkerHeterogeneousConfig},
	}
}

// runSessionOrch registers fn as name, starts a runtime with o, starts
// instance and returns its output (requiring completion).
func runSessionOrch(e *env, r *durable.Registry, instance, name string, o *durable.Options, fn durable.OrchestrationFunc) string {
	orch(e.t, r, name, fn)
	e.start(r, o)
	e.startOrch(instance, name, "")
	return e.completed(instance)
}

// joinStrings awaits every future and joins the values with sep; the
// first error is returned (Rust's collect::<Result<Vec<_>,_>>).
func joinStrings(ctx *durable.OrchestrationContext, sep string, futs ...*durable.Future[string]) (string, error) {
	var out []string
	for _, r := range durable.Join(ctx, futs...) {
		if r.Err != nil {
			return "", r.Err
		}
		out = append(out, r.Value)
	}
	return strings.Join(out, sep), nil
}

func prefixActivity(prefix string) func(durable.ActivityContext, string) (string, error) {
	return func(_ durable.ActivityContext, in string) (string, error) { return prefix + in, nil }
}

func testSessionActivityBasicE2E(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Echo", prefixActivity("echo:"))
	out := runSessionOrch(e, r, "test-session-basic", "SessionOrch", nil, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		r1, err := durable.CallActivity[string](ctx, "Echo", "hello", durable.ActivityOptions{Session: "my-session-1"}).Await()
		if err != nil {
			return "", err
		}
		r2, err := durable.CallActivity[string](ctx, "Echo", "world", durable.ActivityOptions{Session: "my-session-1"}).Await()
		return r1 + "|" + r2, err
	})
	require.Equal(e.t, "echo:hello|echo:world", out)
}

// sessionSeen returns an activity recording whether it saw sessionID.
func sessionSeen(seen *atomic.Bool, sessionID string) func(durable.ActivityContext, string) (string, error) {
	return func(ctx durable.ActivityContext, _ string) (string, error) {
		if s, ok := ctx.SessionID(); ok && s == sessionID {
			seen.Store(true)
		}
		return "ok", nil
	}
}

func testSessionIDVisibleInActivityContext(e *env) {
	var seen atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "CheckSession", sessionSeen(&seen, "ctx-test-session"))
	runSessionOrch(e, r, "test-ctx-session", "CheckSessionOrch", nil, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, err := durable.CallActivity[string](ctx, "CheckSession", "input", durable.ActivityOptions{Session: "ctx-test-session"}).Await()
		return "done", err
	})
	require.True(e.t, seen.Load(), "Activity should see session_id in context")
}

func testMixedSessionAndRegularActivities(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "SessionTask", prefixActivity("session:"))
	act(e.t, r, "RegularTask", prefixActivity("regular:"))
	out := runSessionOrch(e, r, "test-mixed", "MixedOrch", nil, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		r1, err := durable.CallActivity[string](ctx, "RegularTask", "a").Await()
		if err != nil {
			return "", err
		}
		r2, err := durable.CallActivity[string](ctx, "SessionTask", "b", durable.ActivityOptions{Session: "sess-1"}).Await()
		if err != nil {
			return "", err
		}
		r3, err := durable.CallActivity[string](ctx, "RegularTask", "c").Await()
		return r1 + "|" + r2 + "|" + r3, err
	})
	require.Equal(e.t, "regular:a|session:b|regular:c", out)
}

// sequentialOnSessions awaits Task(input) on each (input, session) pair in
// turn and joins the results with "|".
func sequentialOnSessions(ctx *durable.OrchestrationContext, activity string, pairs ...[2]string) (string, error) {
	var out []string
	for _, p := range pairs {
		v, err := durable.CallActivity[string](ctx, activity, p[0], durable.ActivityOptions{Session: p[1]}).Await()
		if err != nil {
			return "", err
		}
		out = append(out, v)
	}
	return strings.Join(out, "|"), nil
}

func testMultipleSessionsInOrchestration(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Task", prefixActivity(""))
	out := runSessionOrch(e, r, "test-multi-session", "MultiSessionOrch", nil, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return sequentialOnSessions(ctx, "Task", [2]string{"a", "session-A"}, [2]string{"b", "session-B"}, [2]string{"c", "session-A"})
	})
	require.Equal(e.t, "a|b|c", out)
}

type doubleInput struct {
	Value int32 `json:"value"`
}

func testSessionActivityTyped(e *env) {
	r := durable.NewRegistry()
	must(e.t, durable.RegisterActivity(r, "Double", func(_ durable.ActivityContext, in doubleInput) (int32, error) {
		return in.Value * 2, nil
	}))
	out := runSessionOrch(e, r, "test-typed-session", "TypedSessionOrch", nil, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.CallActivity[int32](ctx, "Double", doubleInput{Value: 21}, durable.ActivityOptions{Session: "typed-sess"}).Await()
		return strconv.Itoa(int(v)), err
	})
	require.Equal(e.t, "42", out)
}

func testSessionWithWorkerNodeIDCompletes(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Work", prefixActivity("done:"))
	out := runSessionOrch(e, r, "test-stable-node", "StableOrch", &durable.Options{WorkerConcurrency: 4, WorkerNodeID: "stable-pod-1"},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return sequentialOnSessions(ctx, "Work", [2]string{"a", "stable-sess"}, [2]string{"b", "stable-sess"}, [2]string{"c", "stable-sess"})
		})
	require.Equal(e.t, "done:a|done:b|done:c", out)
}

func testSessionWorkerNodeIDMultipleSessionsParallel(e *env) {
	var counter atomic.Int64
	r := durable.NewRegistry()
	act(e.t, r, "Count", func(durable.ActivityContext, string) (string, error) {
		counter.Add(1)
		return "counted", nil
	})
	out := runSessionOrch(e, r, "test-parallel-sess", "ParallelSessions", &durable.Options{WorkerConcurrency: 4, WorkerNodeID: "multi-sess-pod"},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return joinStrings(ctx, "|",
				durable.CallActivity[string](ctx, "Count", "x", durable.ActivityOptions{Session: "sess-1"}),
				durable.CallActivity[string](ctx, "Count", "y", durable.ActivityOptions{Session: "sess-2"}),
				durable.CallActivity[string](ctx, "Count", "z", durable.ActivityOptions{Session: "sess-3"}))
		})
	require.Equal(e.t, "counted|counted|counted", out)
	require.GreaterOrEqual(e.t, counter.Load(), int64(3), "All 3 session activities should have executed")
}

func testEphemeralSessionStillWorks(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Echo", prefixActivity(""))
	out := runSessionOrch(e, r, "test-ephemeral", "EphemeralOrch", &durable.Options{WorkerConcurrency: 1},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return durable.CallActivity[string](ctx, "Echo", "ephemeral-val", durable.ActivityOptions{Session: "eph-sess"}).Await()
		})
	require.Equal(e.t, "ephemeral-val", out)
}

func testSessionWithWorkerNodeIDActivityContextHasSessionID(e *env) {
	var seen atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "CheckSess", sessionSeen(&seen, "my-session"))
	runSessionOrch(e, r, "test-node-ctx", "NodeIdSessionOrch", &durable.Options{WorkerConcurrency: 2, WorkerNodeID: "k8s-pod-name"},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			_, err := durable.CallActivity[string](ctx, "CheckSess", "", durable.ActivityOptions{Session: "my-session"}).Await()
			return "done", err
		})
	require.True(e.t, seen.Load(), "ActivityContext.SessionID() should return the session ID, not the worker node ID")
}

// inFlight tracks how many activities run at once and the peak.
type inFlight struct {
	cur, peak atomic.Int64
}

func (f *inFlight) enter() {
	n := f.cur.Add(1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			return
		}
	}
}

func (f *inFlight) leave() { f.cur.Add(-1) }

// sameSessionConcurrency is Rust's pair of tests scheduling SlowTask and
// FastTask on one session with two worker slots: with a worker node ID
// both slots own the session and run them at once (peak 2); without one,
// one slot owns it and they run one after the other (peak 1). Rust sleeps
// 500 ms and 200 ms; the sleeps here are 2 s and 1 s so that on a loaded
// machine the second slot's fetch surely lands while the first activity
// still runs.
func sameSessionConcurrency(e *env, instance, name, nodeID string, wantPeak int64) {
	var f inFlight
	r := durable.NewRegistry()
	task := func(prefix string, d time.Duration) func(durable.ActivityContext, string) (string, error) {
		return func(_ durable.ActivityContext, in string) (string, error) {
			f.enter()
			time.Sleep(d)
			f.leave()
			return prefix + in, nil
		}
	}
	act(e.t, r, "SlowTask", task("slow:", 2*time.Second))
	act(e.t, r, "FastTask", task("fast:", time.Second))
	out := runSessionOrch(e, r, instance, name, &durable.Options{WorkerConcurrency: 2, WorkerNodeID: nodeID},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return joinStrings(ctx, "|",
				durable.CallActivity[string](ctx, "SlowTask", "a", durable.ActivityOptions{Session: "same-session"}),
				durable.CallActivity[string](ctx, "FastTask", "b", durable.ActivityOptions{Session: "same-session"}))
		})
	require.Equal(e.t, "slow:a|fast:b", out)
	require.Equal(e.t, wantPeak, f.peak.Load(), "peak concurrency on one session")
}

func testSessionFanOutFanIn(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Process", prefixActivity("processed:"))
	out := runSessionOrch(e, r, "test-fan-out", "FanOutOrch", &durable.Options{WorkerConcurrency: 4, WorkerNodeID: "fan-pod"},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			var futs []*durable.Future[string]
			for i := 0; i < 3; i++ {
				futs = append(futs, durable.CallActivity[string](ctx, "Process", strconv.Itoa(i), durable.ActivityOptions{Session: fmt.Sprintf("session-%d", i)}))
			}
			return joinStrings(ctx, "|", futs...)
		})
	require.Equal(e.t, "processed:0|processed:1|processed:2", out)
}

func testSessionFanOutMixedWithRegular(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "SessionWork", prefixActivity("sess:"))
	act(e.t, r, "RegularWork", prefixActivity("reg:"))
	out := runSessionOrch(e, r, "test-mixed-fan", "MixedFanOrch", nil, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return joinStrings(ctx, "|",
			durable.CallActivity[string](ctx, "SessionWork", "a", durable.ActivityOptions{Session: "s1"}),
			durable.CallActivity[string](ctx, "RegularWork", "b"),
			durable.CallActivity[string](ctx, "SessionWork", "c", durable.ActivityOptions{Session: "s2"}),
			durable.CallActivity[string](ctx, "RegularWork", "d"))
	})
	require.Equal(e.t, "sess:a|reg:b|sess:c|reg:d", out)
}

func testFanOutMultiplePerSessionMixed(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Tag", prefixActivity("tag:"))
	out := runSessionOrch(e, r, "test-multi-mix", "MultiMixOrch", &durable.Options{WorkerConcurrency: 4, WorkerNodeID: "mix-pod"},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return joinStrings(ctx, "|",
				durable.CallActivity[string](ctx, "Tag", "s1-a", durable.ActivityOptions{Session: "session-1"}),
				durable.CallActivity[string](ctx, "Tag", "s1-b", durable.ActivityOptions{Session: "session-1"}),
				durable.CallActivity[string](ctx, "Tag", "s2-a", durable.ActivityOptions{Session: "session-2"}),
				durable.CallActivity[string](ctx, "Tag", "s2-b", durable.ActivityOptions{Session: "session-2"}),
				durable.CallActivity[string](ctx, "Tag", "no-sess-a"),
				durable.CallActivity[string](ctx, "Tag", "no-sess-b"))
		})
	require.Equal(e.t, "tag:s1-a|tag:s1-b|tag:s2-a|tag:s2-b|tag:no-sess-a|tag:no-sess-b", out)
}

func testSessionSurvivesContinueAsNew(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Track", prefixActivity("tracked:"))
	out := runSessionOrch(e, r, "test-session-can", "SessionCAN",
		&durable.Options{WorkerConcurrency: 1, OrchestrationConcurrency: 1, WorkerNodeID: "can-pod"},
		func(ctx *durable.OrchestrationContext, in string) (string, error) {
			iteration, _ := strconv.Atoi(in)
			res, err := durable.CallActivity[string](ctx, "Track", fmt.Sprintf("iter-%d", iteration), durable.ActivityOptions{Session: "persistent-session"}).Await()
			if err != nil {
				return "", err
			}
			if iteration == 0 {
				return "", durable.ContinueAsNew(ctx, "1")
			}
			return res, nil
		})
	require.Equal(e.t, "tracked:iter-1", out)
}

func testSessionContinueAsNewVersionedUpgrade(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Work", prefixActivity("done:"))
	orch(e.t, r, "UpgradeSession", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		res, err := durable.CallActivity[string](ctx, "Work", "from-v1", durable.ActivityOptions{Session: "upgrade-session"}).Await()
		if err != nil {
			return "", err
		}
		return "", durable.ContinueAsNew(ctx, res, durable.ContinueAsNewOptions{Version: "2.0.0"})
	})
	must(e.t, r.AddOrchestrationVersion("UpgradeSession", "2.0.0", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		res, err := durable.CallActivity[string](ctx, "Work", "from-v2", durable.ActivityOptions{Session: "upgrade-session"}).Await()
		return in + "+" + res, err
	}))
	must(e.t, r.SetVersionPolicy("UpgradeSession", durable.Exact("1.0.0")))
	e.start(r, &durable.Options{WorkerConcurrency: 1, OrchestrationConcurrency: 1, WorkerNodeID: "upgrade-pod"})
	e.startOrch("test-session-can-ver", "UpgradeSession", "")
	require.Equal(e.t, "done:from-v1+done:from-v2", e.completed("test-session-can-ver"))
}

// Rust's start panics with a message naming session_idle_timeout; Go's
// Start returns an *OptionsError for the field.
func testSessionIdleTimeoutMustExceedWorkerRenewalInterval(e *env) {
	rt, err := durable.Start(e.ctx, e.p, durable.NewRegistry(), &durable.Options{
		SessionIdleTimeout: 25 * time.Second, WorkerLockTimeout: 30 * time.Second, WorkerLockRenewalBuffer: 5 * time.Second,
	})
	if rt != nil {
		shutdownRuntime(e, rt)
	}
	var oe *durable.OptionsError
	require.True(e.t, errors.As(err, &oe), "expected an OptionsError, got %v", err)
	require.Equal(e.t, "SessionIdleTimeout", oe.Field)
}

// slowSessionOrch schedules SlowActivity on two sessions and joins them.
func slowSessionRun(e *env, instance, name, activity, s1, s2 string, d time.Duration) *inFlight {
	var f inFlight
	r := durable.NewRegistry()
	act(e.t, r, activity, func(_ durable.ActivityContext, in string) (string, error) {
		f.enter()
		time.Sleep(d)
		f.leave()
		if activity == "SlowSession" {
			return "done", nil
		}
		return "ok", nil
	})
	out := runSessionOrch(e, r, instance, name, &durable.Options{WorkerConcurrency: 2, MaxSessionsPerRuntime: 1, OrchestrationConcurrency: 1},
		func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return joinStrings(ctx, "|",
				durable.CallActivity[string](ctx, activity, "a", durable.ActivityOptions{Session: s1}),
				durable.CallActivity[string](ctx, activity, "b", durable.ActivityOptions{Session: s2}))
		})
	if activity == "SlowSession" {
		require.Equal(e.t, "done|done", out)
	} else {
		require.Equal(e.t, "ok|ok", out)
	}
	return &f
}

func testMaxSessionsPerRuntimeEnforced(e *env) {
	f := slowSessionRun(e, "test-max-sessions", "TwoSessions", "SlowSession", "session-A", "session-B", 200*time.Millisecond)
	require.Equal(e.t, int64(1), f.peak.Load(),
		"With max_sessions_per_runtime=1, activities on different sessions should not run concurrently")
}

func testSameSessionSharesOneSlot(e *env) {
	slowSessionRun(e, "test-same-session-slot", "SameSessionFanOut", "SlowSame", "shared-session", "shared-session", 300*time.Millisecond)
}

// sessionLog records activity start/finish lines.
type sessionLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *sessionLog) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

func (l *sessionLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func indexOf(lines []string, s string) int {
	for i, l := range lines {
		if l == s {
			return i
		}
	}
	return -1
}

// Rust checks after 500 ms that the second activity has not started while
// the first holds the only session slot; that negative check keeps its
// fixed wait (nothing can be waited for).
func testSessionCapBlocksThenUnblocks(e *env) {
	var log sessionLog
	release := map[string]chan struct{}{"A": make(chan struct{}), "B": make(chan struct{})}
	r := durable.NewRegistry()
	act(e.t, r, "Tracked", func(_ durable.ActivityContext, in string) (string, error) {
		log.add(in + "-started")
		if ch, ok := release[in]; ok {
			<-ch
		}
		log.add(in + "-finished")
		return "result-" + in, nil
	})
	orch(e.t, r, "BlockUnblock", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return joinStrings(ctx, "|",
			durable.CallActivity[string](ctx, "Tracked", "A", durable.ActivityOptions{Session: "session-A"}),
			durable.CallActivity[string](ctx, "Tracked", "B", durable.ActivityOptions{Session: "session-B"}))
	})
	e.start(r, &durable.Options{WorkerConcurrency: 2, MaxSessionsPerRuntime: 1, OrchestrationConcurrency: 1})
	released := map[string]bool{}
	e.t.Cleanup(func() {
		for k, ch := range release {
			if !released[k] {
				close(ch)
			}
		}
	})
	e.startOrch("test-block-unblock", "BlockUnblock", "")
	var first string
	require.True(e.t, eventually(func() bool {
		l := log.snapshot()
		switch {
		case indexOf(l, "A-started") >= 0:
			first = "A"
		case indexOf(l, "B-started") >= 0:
			first = "B"
		}
		return first != ""
	}), "Timed out waiting for any activity to start")
	second := map[string]string{"A": "B", "B": "A"}[first]
	time.Sleep(500 * time.Millisecond)
	require.Equal(e.t, -1, indexOf(log.snapshot(), second+"-started"),
		"%s should NOT have started while %s holds the session cap", second, first)
	close(release[first])
	released[first] = true
	require.True(e.t, eventually(func() bool { return indexOf(log.snapshot(), second+"-started") >= 0 }),
		"Timed out waiting for %s to start after %s finished", second, first)
	close(release[second])
	released[second] = true
	require.Equal(e.t, "result-A|result-B", e.completed("test-block-unblock"))
	l := log.snapshot()
	ff, ss := indexOf(l, first+"-finished"), indexOf(l, second+"-started")
	require.GreaterOrEqual(e.t, ff, 0)
	require.GreaterOrEqual(e.t, ss, 0)
	require.Less(e.t, ff, ss, "%s should start only after %s finishes. Event log: %v", second, first, l)
}

func testMultiWorkerComplexOrchestration(e *env) {
	var countA, countB atomic.Int64
	var sessionMissing atomic.Bool
	build := func(counter *atomic.Int64) *durable.Registry {
		r := durable.NewRegistry()
		act(e.t, r, "SessionWork", func(ctx durable.ActivityContext, in string) (string, error) {
			counter.Add(1)
			if _, ok := ctx.SessionID(); !ok {
				sessionMissing.Store(true)
			}
			time.Sleep(50 * time.Millisecond)
			return "session-result:" + in, nil
		})
		act(e.t, r, "PlainWork", func(_ durable.ActivityContext, in string) (string, error) {
			time.Sleep(30 * time.Millisecond)
			return "plain-result:" + in, nil
		})
		orch(e.t, r, "MultiWorkerOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
			parts := strings.SplitN(in, "|", 2)
			cycle, _ := strconv.Atoi(parts[0])
			prev := ""
			if len(parts) > 1 {
				prev = parts[1]
			}
			switch cycle {
			case 0:
				res := durable.Join(ctx,
					durable.CallActivity[string](ctx, "SessionWork", "a", durable.ActivityOptions{Session: "sess-alpha"}),
					durable.CallActivity[string](ctx, "SessionWork", "b", durable.ActivityOptions{Session: "sess-alpha"}),
					durable.CallActivity[string](ctx, "SessionWork", "c", durable.ActivityOptions{Session: "sess-beta"}),
					durable.CallActivity[string](ctx, "PlainWork", "d"))
				var combined []string
				for _, x := range res {
					if x.Err != nil {
						combined = append(combined, "ERR:"+x.Err.Error())
					} else {
						combined = append(combined, x.Value)
					}
				}
				return "", durable.ContinueAsNew(ctx, "1|"+strings.Join(combined, ";"))
			case 1:
				r1, err := durable.CallActivity[string](ctx, "SessionWork", "e", durable.ActivityOptions{Session: "sess-alpha"}).Await()
				if err != nil {
					return "", err
				}
				r2, err := durable.CallActivity[string](ctx, "SessionWork", "f", durable.ActivityOptions{Session: "sess-beta"}).Await()
				if err != nil {
					return "", err
				}
				return prev + ";" + r1 + ";" + r2, nil
			}
			return fmt.Sprintf("unexpected cycle %d", cycle), nil
		})
		return r
	}
	e.start(build(&countA), &durable.Options{WorkerConcurrency: 2, OrchestrationConcurrency: 2, WorkerNodeID: "node-A", MaxSessionsPerRuntime: 4})
	e.start(build(&countB), &durable.Options{WorkerConcurrency: 2, OrchestrationConcurrency: 2, WorkerNodeID: "node-B", MaxSessionsPerRuntime: 4})
	e.startOrch("multi-worker-complex", "MultiWorkerOrch", "0|")
	out := e.completed("multi-worker-complex")
	parts := strings.Split(out, ";")
	require.Len(e.t, parts, 6, "Should have 6 results total, got: %s", out)
	n := 0
	for _, p := range parts {
		if strings.Contains(p, "session-result:") {
			n++
		}
	}
	require.Equal(e.t, 5, n, "Should have 5 session results, got: %s", out)
	require.Contains(e.t, out, "plain-result:d")
	require.False(e.t, sessionMissing.Load(), "SessionWork must have a session_id")
	require.Equal(e.t, int64(5), countA.Load()+countB.Load(), "Total session activities should be 5 (3 + 2 from CAN)")
}

func testMultiWorkerHeterogeneousConfig(e *env) {
	var countA, countB atomic.Int64
	build := func(counter *atomic.Int64) *durable.Registry {
		r := durable.NewRegistry()
		act(e.t, r, "Work", func(_ durable.ActivityContext, in string) (string, error) {
			counter.Add(1)
			time.Sleep(800 * time.Millisecond)
			return "done:" + in, nil
		})
		orch(e.t, r, "HeteroOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			res := durable.Join(ctx,
				durable.CallActivity[string](ctx, "Work", "1", durable.ActivityOptions{Session: "sess-X"}),
				durable.CallActivity[string](ctx, "Work", "2", durable.ActivityOptions{Session: "sess-Y"}),
				durable.CallActivity[string](ctx, "Work", "3", durable.ActivityOptions{Session: "sess-Z"}))
			var out []string
			for _, x := range res {
				if x.Err != nil {
					out = append(out, "ERR:"+x.Err.Error())
				} else {
					out = append(out, x.Value)
				}
			}
			return strings.Join(out, "|"), nil
		})
		return r
	}
	e.start(build(&countA), &durable.Options{WorkerConcurrency: 2, OrchestrationConcurrency: 2, WorkerNodeID: "constrained-node",
		MaxSessionsPerRuntime: 1, SessionLockTimeout: 5 * time.Second, SessionLockRenewalBuffer: time.Second, SessionIdleTimeout: 30 * time.Second})
	e.start(build(&countB), &durable.Options{WorkerConcurrency: 2, OrchestrationConcurrency: 2, WorkerNodeID: "unconstrained-node",
		MaxSessionsPerRuntime: 10, SessionLockTimeout: 30 * time.Second, SessionLockRenewalBuffer: 5 * time.Second, SessionIdleTimeout: 60 * time.Second})
	e.startOrch("hetero-test", "HeteroOrch", "")
	out := e.completed("hetero-test")
	parts := strings.Split(out, "|")
	require.Len(e.t, parts, 3, "Should have 3 results, got: %s", out)
	for _, p := range parts {
		require.True(e.t, strings.HasPrefix(p, "done:"), "Each result should start with 'done:', got: %s", p)
	}
	a, b := countA.Load(), countB.Load()
	require.Equal(e.t, int64(3), a+b, "Total should be 3, got A=%d B=%d", a, b)
	require.GreaterOrEqual(e.t, b, int64(1), "Worker B should handle at least 1 session (overflow from A's max_sessions=1), got A=%d B=%d", a, b)
}
