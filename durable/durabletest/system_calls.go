package durabletest

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// systemCallsTests ports tests/system_calls_test.rs (the Go file cannot
// keep that stem: a _test.go file is not part of the package).
func systemCallsTests() []sample {
	return []sample{
		{"test_new_guid", testNewGUID},
		{"test_utc_now_ms", testUTCNowMs},
		{"test_system_calls_deterministic_replay", testSystemCallsDeterministicReplay},
		{"test_system_calls_with_select", testSystemCallsWithSelect},
		{"test_system_calls_join_with_activities", testSystemCallsJoinWithActivities},
		{"test_utc_now_as_activity_input_replays_correctly", testUTCNowAsActivityInputReplaysCorrectly},
		{"test_new_guid_as_activity_input_replays_correctly", testNewGUIDAsActivityInputReplaysCorrectly},
		{"test_activity_then_syscall_ordering", testActivityThenSyscallOrdering},
		{"test_multiple_syscalls_same_type", testMultipleSyscallsSameType},
		{"test_syscalls_work_in_single_thread_mode", testSyscallsWorkInSingleThreadMode},
		{"test_cancellation_with_pending_syscall", testCancellationWithPendingSyscall},
	}
}

func isHexGUID(g string) bool {
	for _, c := range strings.ReplaceAll(g, "-", "") {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

func twoGUIDs(ctx *durable.OrchestrationContext, _ string) (string, error) {
	g1, err := ctx.NewGUID().Await()
	if err != nil {
		return "", err
	}
	g2, err := ctx.NewGUID().Await()
	if err != nil {
		return "", err
	}
	check(g1 != g2, "guids must differ")
	check(isHexGUID(g1) && isHexGUID(g2), "guids must be hex")
	return g1 + "," + g2, nil
}

func testNewGUID(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestGuid", twoGUIDs)
	e.start(r, nil)
	e.startOrch("test-guid", "TestGuid", "")
	parts := strings.Split(e.completed("test-guid"), ",")
	require.Len(e.t, parts, 2)
	require.NotEqual(e.t, parts[0], parts[1])
	for _, g := range parts {
		u, err := uuid.Parse(g)
		require.NoError(e.t, err, "%s is not a valid UUID", g)
		require.EqualValues(e.t, 4, u.Version(), "%s is not a UUID v4", g)
	}
}

func testUTCNowMs(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TestTime", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		t1, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		_, _ = durable.NewTimer(ctx, 100*time.Millisecond).Await()
		t2, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		check(t1.UnixMilli() > 1577836800000 && t2.UnixMilli() > 1577836800000, "times before 2020")
		check(t2.UnixMilli() >= t1.UnixMilli(), "time went backwards")
		return fmt.Sprintf("%d,%d", t1.UnixMilli(), t2.UnixMilli()), nil
	})
	e.start(r, nil)
	e.startOrch("test-time", "TestTime", "")
	require.Len(e.t, strings.Split(e.completed("test-time"), ","), 2)
}

// restartAndCompare runs instance to completion, restarts the runtime on
// the same store and checks the status is unchanged.
func (e *env) restartAndCompare(instance, name string, fn durable.OrchestrationFunc) {
	e.t.Helper()
	reg := func() *durable.Registry {
		r := durable.NewRegistry()
		orch(e.t, r, name, fn)
		return r
	}
	stop := e.startManual(reg(), nil)
	e.startOrch(instance, name, "")
	out1 := e.completed(instance)
	stop()
	e.start(reg(), nil)
	require.Equal(e.t, out1, e.completed(instance))
}

func testSystemCallsDeterministicReplay(e *env) {
	e.restartAndCompare("test-determinism", "TestDeterminism", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		g, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		t, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("guid:%s,time:%d", g, t.UnixMilli()), nil
	})
}

func testSystemCallsWithSelect(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "QuickTask", func(durable.ActivityContext, string) (string, error) { return "task_done", nil })
	orch(e.t, r, "TestSelect", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		g, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		a1 := durable.CallActivity[string](ctx, "QuickTask", "task1")
		a2 := durable.CallActivity[string](ctx, "QuickTask", "task2")
		w := ctx.Select(a1, a2)
		first, err := []*durable.Future[string]{a1, a2}[w].Await()
		if err != nil {
			first = "error: " + err.Error()
		}
		t, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		check(len(g) == 36, "GUID should be valid")
		check(t.UnixMilli() > 0, "Time should be positive")
		return fmt.Sprintf("winner:%d,result:%s,guid_len:%d,time_valid:true", w, first, len(g)), nil
	})
	e.start(r, nil)
	e.startOrch("test-select", "TestSelect", "")
	out := e.completed("test-select")
	require.True(e.t, strings.HasPrefix(out, "winner:"))
	require.Contains(e.t, out, "result:task_done")
	require.Contains(e.t, out, "guid_len:36")
	require.Contains(e.t, out, "time_valid:true")
}

func testSystemCallsJoinWithActivities(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "SlowTask", func(_ durable.ActivityContext, in string) (string, error) { return "processed:" + in, nil })
	orch(e.t, r, "TestJoin", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		g, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		t, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		ar, err := durable.CallActivity[string](ctx, "SlowTask", "data1").Await()
		if err != nil {
			return "", err
		}
		check(len(g) == 36, "GUID should be 36 chars")
		check(t.UnixMilli() > 0, "Time should be positive")
		check(ar == "processed:data1", "activity result %s", ar)
		a1 := durable.CallActivity[string](ctx, "SlowTask", "data2")
		a2 := durable.CallActivity[string](ctx, "SlowTask", "data3")
		w := ctx.Select(a1, a2)
		wr, err := []*durable.Future[string]{a1, a2}[w].Await()
		check(err == nil, "Expected activity output: %v", err)
		return fmt.Sprintf("guid_len:%d,time:%d,activity:%s,winner:%d,winner_result:%s", len(g), t.UnixMilli(), ar, w, wr), nil
	})
	e.start(r, nil)
	e.startOrch("test-join", "TestJoin", "")
	out := e.completed("test-join")
	require.Contains(e.t, out, "guid_len:36")
	require.Contains(e.t, out, "activity:processed:data1")
	require.Contains(e.t, out, "winner:")
}

func testUTCNowAsActivityInputReplaysCorrectly(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ProcessWithTimestamp", func(_ durable.ActivityContext, in string) (string, error) { return "processed:" + in, nil })
	orch(e.t, r, "TestUtcNowReplayAsInput", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		t, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		_, _ = durable.WaitEvent[string](ctx, "continue").Await()
		return durable.CallActivity[string](ctx, "ProcessWithTimestamp", fmt.Sprint(t.UnixMilli())).Await()
	})
	e.start(r, nil)
	e.startOrch("test-utcnow-replay", "TestUtcNowReplayAsInput", "")
	require.True(e.t, e.waitSubscription("test-utcnow-replay", "continue"), "Orchestration should subscribe to 'continue' event")
	time.Sleep(200 * time.Millisecond) // Rust: let wall-clock time move on before the replay
	e.raise("test-utcnow-replay", "continue", "go")
	require.True(e.t, strings.HasPrefix(e.completed("test-utcnow-replay"), "processed:"))
}

func testNewGUIDAsActivityInputReplaysCorrectly(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "ProcessWithId", func(_ durable.ActivityContext, in string) (string, error) { return "processed:" + in, nil })
	orch(e.t, r, "TestGuidNondeterminism", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		g, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		_, _ = durable.WaitEvent[string](ctx, "continue").Await()
		return durable.CallActivity[string](ctx, "ProcessWithId", g).Await()
	})
	e.start(r, nil)
	e.startOrch("test-guid-replay", "TestGuidNondeterminism", "")
	require.True(e.t, e.waitSubscription("test-guid-replay", "continue"))
	e.raise("test-guid-replay", "continue", "go")
	require.True(e.t, strings.HasPrefix(e.completed("test-guid-replay"), "processed:"))
}

func testActivityThenSyscallOrdering(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "A", func(durable.ActivityContext, string) (string, error) { return "a", nil })
	act(e.t, r, "B", func(_ durable.ActivityContext, in string) (string, error) { return "b:" + in, nil })
	orch(e.t, r, "Ordering", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "A", "").Await(); err != nil {
			return "", err
		}
		g, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.CallActivity[string](ctx, "B", g).Await(); err != nil {
			return "", err
		}
		return "ok", nil
	})
	e.start(r, nil)
	e.startOrch("test-ordering-1", "Ordering", "")
	e.completed("test-ordering-1")
	h, err := e.client().ReadExecutionHistory(e.ctx, "test-ordering-1", 1)
	require.NoError(e.t, err)
	var names []string
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok {
			names = append(names, k.Name)
		}
	}
	require.Equal(e.t, []string{"A", "__duroxide_syscall:new_guid", "B"}, names)
}

func testMultipleSyscallsSameType(e *env) {
	e.restartAndCompare("test-two-guids", "TwoGuids", twoGUIDs)
}

func testSyscallsWorkInSingleThreadMode(e *env) {
	// Rust runs this on tokio's current-thread runtime; the Go equivalent
	// is one orchestration and one worker slot.
	r := durable.NewRegistry()
	orch(e.t, r, "SingleThreadSyscalls", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		for i := 0; i < 3; i++ {
			if _, err := ctx.NewGUID().Await(); err != nil {
				return "", err
			}
			if _, err := ctx.UTCNow().Await(); err != nil {
				return "", err
			}
		}
		return "ok", nil
	})
	e.start(r, conc(1, 1))
	e.startOrch("test-single-thread-syscalls", "SingleThreadSyscalls", "")
	e.completed("test-single-thread-syscalls")
}

func testCancellationWithPendingSyscall(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "CancelSyscall", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := ctx.UTCNow().Await(); err != nil {
			return "", err
		}
		_, _ = durable.WaitEvent[string](ctx, "hold").Await()
		return "done", nil
	})
	e.start(r, nil)
	e.startOrch("test-cancel-syscall", "CancelSyscall", "")
	require.True(e.t, e.waitSubscription("test-cancel-syscall", "hold"))
	e.cancel("test-cancel-syscall", "test cancellation")
	require.True(e.t, isCancelled(e.failedDetails("test-cancel-syscall"), ""))
}
