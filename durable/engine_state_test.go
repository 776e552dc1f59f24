package durable

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/stretchr/testify/require"
)

func TestEngineKVSetClearAndSnapshot(t *testing.T) {
	var seen []string
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		old, _ := ctx.KVValue("prev")
		ctx.SetKVValue("k", "v1")
		ctx.ClearKVValue("prev")
		v, _ := ctx.KVValue("k")
		seen = append(seen, old, v)
		ctx.ClearAllKVValues()
		seen = append(seen, strings.Join(ctx.KVKeys(), ","))
		return "ok", nil
	}
	e := newTestEngineOf(evStarted(1)).withKVSnapshot(map[string]duroxide.KVEntry{"prev": {Value: "p", LastUpdatedAtMs: 5}})
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "ok"}, executeTurn(e, h))
	require.Equal(t, []string{"p", "v1", ""}, seen)
	at := uint64(testClock.UnixMilli())
	requireDelta(t, e,
		evWithID(2, nil, duroxide.KeyValueSet{Key: "k", Value: "v1", LastUpdatedAtMs: at}),
		evWithID(3, nil, duroxide.KeyValueCleared{Key: "prev"}),
		evWithID(4, nil, duroxide.KeyValuesCleared{}))
}

func TestEngineKVReplayChecksKeyAndValue(t *testing.T) {
	hist := []duroxide.Event{evStarted(1), evWithID(2, nil, duroxide.KeyValueSet{Key: "k", Value: "old", LastUpdatedAtMs: 1})}
	e := newTestEngineOf(hist...)
	res := executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetKVValue("k", "new")
		// Block so the walk reaches the KV event (a function that returns
		// in the first poll ends the walk before any event is checked).
		return WaitEvent[string](ctx, "never").Await()
	})
	require.Equal(t, nondeterminismError(`kv set mismatch: action=SetKeyValue { key: "k", value: "new", last_updated_at_ms: `+
		"1700000000000"+` } vs event=KeyValueSet { key: "k", value: "old", last_updated_at_ms: 1 }`), res.Details)
}

func TestEngineKVPruneIsSortedAndSparesThisTurn(t *testing.T) {
	e := newTestEngineOf(evStarted(1)).withKVSnapshot(map[string]duroxide.KVEntry{
		"b": {Value: "1", LastUpdatedAtMs: 10}, "a": {Value: "1", LastUpdatedAtMs: 10}, "c": {Value: "1", LastUpdatedAtMs: 99}})
	var n int
	executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		n = ctx.PruneKVValuesUpdatedBefore(50)
		return "", nil
	})
	require.Equal(t, 2, n)
	requireDelta(t, e,
		evWithID(2, nil, duroxide.KeyValueCleared{Key: "a"}),
		evWithID(3, nil, duroxide.KeyValueCleared{Key: "b"}))
}

func TestEngineCustomStatusCarriedFromStartedEvent(t *testing.T) {
	st := evWithID(1, nil, duroxide.OrchestrationStarted{Name: "Orch", Version: "1.0.0", InitialCustomStatus: refStr("carried")})
	var got []string
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		s, _ := ctx.CustomStatus()
		got = append(got, s)
		ctx.ResetCustomStatus()
		_, ok := ctx.CustomStatus()
		require.False(t, ok)
		return "", nil
	}
	e := newTestEngineOf(st)
	executeTurn(e, h)
	require.Equal(t, []string{"carried"}, got)
	requireDelta(t, e, evWithID(2, nil, duroxide.CustomStatusUpdated{}))
}

func TestEngineIsReplayingFollowsPersistedLength(t *testing.T) {
	var flags []bool
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		flags = append(flags, ctx.IsReplaying())
		CallActivity[string](ctx, "A", "").Await()
		flags = append(flags, ctx.IsReplaying())
		CallActivity[string](ctx, "B", "").Await()
		flags = append(flags, ctx.IsReplaying())
		return "", nil
	}
	hist := []duroxide.Event{evStarted(1),
		evWithID(2, nil, duroxide.ActivityScheduled{Name: "A"}),
		evWithID(3, refU64(2), duroxide.ActivityCompleted{Result: "a"}),
		evWithID(4, nil, duroxide.ActivityScheduled{Name: "B"})}
	e := newTestEngineOf(hist...)
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 4, Result: "b"}})
	executeTurn(e, h)
	// Replaying through the persisted events, live once the new completion
	// (event 5, beyond the persisted four) is applied.
	require.Equal(t, []bool{true, true, false}, flags)

	flags = nil
	executeTurn(newTestEngineOf(evStarted(1)).withPersistedHistoryLen(0), h)
	require.Equal(t, []bool{false}, flags)
}

func TestEngineLoggerIsReplaySafe(t *testing.T) {
	var buf bytes.Buffer
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.TraceInfo("before")
		CallActivity[string](ctx, "A", "").Await()
		ctx.Logger().Info("after", "k", "v")
		return "", nil
	}
	hist := []duroxide.Event{evStarted(1), evWithID(2, nil, duroxide.ActivityScheduled{Name: "A"})}
	e := newTestEngineOf(hist...)
	e.logger = slog.New(slog.NewTextHandler(&buf, nil))
	e.prepCompletions([]duroxide.WorkItem{duroxide.ActivityCompletedItem{Instance: testInstance, ExecutionID: 1, ID: 2, Result: "a"}})
	executeTurn(e, h)
	out := buf.String()
	require.NotContains(t, out, "before")
	require.Contains(t, out, "msg=after")
	require.Contains(t, out, "instance_id="+testInstance)
}

func TestEngineActivityTagsAndSessions(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		CallActivity[string](ctx, "Gpu", "x", ActivityOptions{Tag: "gpu"}).Await()
		return "", nil
	}
	e := newTestEngineOf(evStarted(1))
	executeTurn(e, h)
	requireDelta(t, e, evWithID(2, nil, duroxide.ActivityScheduled{Name: "Gpu", Input: "x", Tag: refStr("gpu")}))

	e = newTestEngineOf(evStarted(1))
	executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "S", "x", ActivityOptions{Session: "sess-1"}).Await()
	})
	require.Equal(t, []action{actionCallActivity{SchedulingEventID: 2, Name: "S", Input: "x", SessionID: refStr("sess-1")}}, e.pendingActions())

	// Replaying with a different tag is a schedule mismatch.
	e = newTestEngineOf(evStarted(1), evWithID(2, nil, duroxide.ActivityScheduled{Name: "Gpu", Input: "x", Tag: refStr("cpu")}))
	require.Equal(t, turnFailed, executeTurn(e, h).Kind)
}

func TestEngineSystemCallsUseReservedActivityNames(t *testing.T) {
	var now time.Time
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		g, _ := ctx.NewGUID().Await()
		now, _ = ctx.UTCNow().Await()
		v, _ := ctx.KVValueFromInstance("other", "key").Await()
		if v == nil {
			return g + ":nil", nil
		}
		return g + ":" + *v, nil
	}
	e := newTestEngineOf(evStarted(1))
	executeTurn(e, h)
	requireDelta(t, e, evWithID(2, nil, duroxide.ActivityScheduled{Name: "__duroxide_syscall:new_guid"}))
	hist := append(e.finalHistory(), evWithID(3, refU64(2), duroxide.ActivityCompleted{Result: "g-1"}),
		evWithID(4, nil, duroxide.ActivityScheduled{Name: "__duroxide_syscall:utc_now_ms"}),
		evWithID(5, refU64(4), duroxide.ActivityCompleted{Result: "1700000000123"}),
		evWithID(6, nil, duroxide.ActivityScheduled{Name: "__duroxide_syscall:get_kv_value", Input: `{"instance_id":"other","key":"key"}`}),
		evWithID(7, refU64(6), duroxide.ActivityCompleted{Result: `"val"`}))
	e = newTestEngineOf(hist...)
	require.Equal(t, turnResult{Kind: turnCompleted, Output: "g-1:val"}, executeTurn(e, h))
	require.Equal(t, time.UnixMilli(1700000000123).UTC(), now)
}

func TestEngineLeavesNoGoroutines(t *testing.T) {
	for i := 0; i < 20; i++ {
		// Blocked main, blocked Go blocks, a never-started block, and a
		// block stuck in ContinueAsNew: all must be gone after the turn.
		e := newTestEngineOf(evStarted(1))
		executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
			Go(ctx, func(ctx *OrchestrationContext) (string, error) { return WaitEvent[string](ctx, "x").Await() })
			Go(ctx, func(ctx *OrchestrationContext) (string, error) {
				defer func() { _ = recover() }()
				return CallActivity[string](ctx, "A", "").Await()
			})
			NewTimer(ctx, time.Hour).Await()
			return "", nil
		})
		e = newTestEngineOf(evStarted(1))
		executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
			Go(ctx, func(ctx *OrchestrationContext) (string, error) { return WaitEvent[string](ctx, "x").Await() })
			return "", ContinueAsNew(ctx, "again")
		})
	}
	// Count only coroutine goroutines, so tests of other code running in
	// the same binary cannot disturb the check. A stopped coroutine may
	// still be returning when the turn ends: wait for the count to reach 0.
	deadline := time.Now().Add(5 * time.Second)
	for liveCoroutines() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	require.Zero(t, liveCoroutines())
}

func TestEngineUTCNowParseErrorsUseRustTexts(t *testing.T) {
	for raw, want := range map[string]string{
		"":                        "cannot parse integer from empty string",
		"12x":                     "invalid digit found in string",
		"99999999999999999999999": "number too large to fit in target type",
	} {
		h := func(ctx *OrchestrationContext, _ string) (string, error) {
			_, err := ctx.UTCNow().Await()
			return "", err
		}
		hist := []duroxide.Event{evStarted(1), evWithID(2, nil, duroxide.ActivityScheduled{Name: SyscallUTCNowMs})}
		_, res := executeStep(t, hist, h, msgActivityCompleted(2, raw))
		require.Equal(t, want, displayMessage(res.Details), "raw %q", raw)
	}
}

func TestEnginePanicInGoBlockFailsTheTurn(t *testing.T) {
	h := func(ctx *OrchestrationContext, _ string) (string, error) {
		f := Go(ctx, func(ctx *OrchestrationContext) (int, error) { panic(fmt.Errorf("inner %d", 7)) })
		return "", func() error { _, err := f.Await(); return err }()
	}
	res := executeTurn(newTestEngineOf(evStarted(1)), h)
	require.Equal(t, "orchestration panicked: inner 7", displayMessage(res.Details))
}

func TestEngineContextUsedAfterTheTurnEndsThatGoroutineOnly(t *testing.T) {
	var kept *OrchestrationContext
	e := newTestEngineOf(evStarted(1))
	executeTurn(e, func(ctx *OrchestrationContext, _ string) (string, error) {
		kept = ctx
		return WaitEvent[string](ctx, "x").Await()
	})
	done := make(chan bool)
	go func() {
		defer close(done)
		CallActivity[string](kept, "Late", "").Await() // misuse: ends this goroutine
		done <- true
	}()
	_, reachedAfterAwait := <-done
	require.False(t, reachedAfterAwait)
}
