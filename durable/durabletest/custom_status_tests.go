package durabletest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
)

// maxCustomStatusBytes is duroxide's limits::MAX_CUSTOM_STATUS_BYTES.
const maxCustomStatusBytes = 256 * 1024

// customStatusTests ports tests/custom_status_tests.rs.
func customStatusTests() []sample {
	return []sample{
		{"custom_status_set_visible_on_completion", customStatusSetVisibleOnCompletion},
		{"custom_status_reset_clears_to_none", customStatusResetClearsToNone},
		{"custom_status_last_write_wins", customStatusLastWriteWins},
		{"custom_status_persists_across_turns", customStatusPersistsAcrossTurns},
		{"custom_status_updated_in_later_turn", customStatusUpdatedInLaterTurn},
		{"custom_status_none_when_not_set", customStatusNoneWhenNotSet},
		{"custom_status_visible_on_failure", customStatusVisibleOnFailure},
		{"custom_status_version_increments", customStatusVersionIncrements},
		{"custom_status_exceeding_size_limit_fails_orchestration", customStatusExceedingSizeLimitFailsOrchestration},
		{"custom_status_at_size_limit_succeeds", customStatusAtSizeLimitSucceeds},
		{"custom_status_persists_across_continue_as_new", customStatusPersistsAcrossContinueAsNew},
		{"custom_status_reset_across_continue_as_new", customStatusResetAcrossContinueAsNew},
		{"custom_status_get_reflects_set_across_turns", customStatusGetReflectsSetAcrossTurns},
		{"custom_status_get_reflects_carry_forward_after_can", customStatusGetReflectsCarryForwardAfterCAN},
		{"custom_status_size_limit_precise_boundary", customStatusSizeLimitPreciseBoundary},
	}
}

// check is Rust's assert! inside orchestration code: it panics, which
// fails the orchestration with the message.
func check(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf(format, args...))
	}
}

func echoAct(e *env, r *durable.Registry) {
	act(e.t, r, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
}

// runStatus registers fn as name, runs instance and returns its final status.
func (e *env) runStatus(instance, name string, fn durable.OrchestrationFunc, input string, extra func(r *durable.Registry)) *durable.OrchestrationStatus {
	e.t.Helper()
	r := durable.NewRegistry()
	echoAct(e, r)
	if extra != nil {
		extra(r)
	}
	orch(e.t, r, name, fn)
	e.start(r, nil)
	e.startOrch(instance, name, input)
	return e.wait(instance)
}

func requireCompleted(e *env, st *durable.OrchestrationStatus) {
	e.t.Helper()
	require.Equal(e.t, durable.StateCompleted, st.State, "Expected Completed, got failure: %s", st.FailureMessage())
}

func customStatusSetVisibleOnCompletion(e *env) {
	st := e.runStatus("cs-set", "SetStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("step-1")
		return "done", nil
	}, "", nil)
	requireCompleted(e, st)
	require.Equal(e.t, "done", st.Output)
	require.Equal(e.t, strp("step-1"), st.CustomStatus)
	require.GreaterOrEqual(e.t, st.CustomStatusVersion, uint64(1))
}

func customStatusResetClearsToNone(e *env) {
	st := e.runStatus("cs-reset", "ResetStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("temporary")
		ctx.ResetCustomStatus()
		return "done", nil
	}, "", nil)
	requireCompleted(e, st)
	require.Nil(e.t, st.CustomStatus, "reset should clear to None")
	require.GreaterOrEqual(e.t, st.CustomStatusVersion, uint64(1))
}

func customStatusLastWriteWins(e *env) {
	st := e.runStatus("cs-lww", "LastWrite", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("first")
		ctx.SetCustomStatus("second")
		ctx.SetCustomStatus("third")
		return "done", nil
	}, "", nil)
	requireCompleted(e, st)
	require.Equal(e.t, strp("third"), st.CustomStatus)
}

func customStatusPersistsAcrossTurns(e *env) {
	st := e.runStatus("cs-persist", "MultiTurn", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("processing")
		return durable.CallActivity[string](ctx, "Echo", "hello").Await()
	}, "", nil)
	requireCompleted(e, st)
	require.Equal(e.t, "hello", st.Output)
	require.Equal(e.t, strp("processing"), st.CustomStatus)
}

func statusThenActivity(first, second string) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus(first)
		if _, err := durable.CallActivity[string](ctx, "Echo", "a").Await(); err != nil {
			return "", err
		}
		ctx.SetCustomStatus(second)
		return "done", nil
	}
}

func customStatusUpdatedInLaterTurn(e *env) {
	st := e.runStatus("cs-update", "UpdateStatus", statusThenActivity("step-1", "step-2"), "", nil)
	requireCompleted(e, st)
	require.Equal(e.t, strp("step-2"), st.CustomStatus)
}

func customStatusNoneWhenNotSet(e *env) {
	st := e.runStatus("cs-none", "NoStatus", func(*durable.OrchestrationContext, string) (string, error) { return "done", nil }, "", nil)
	requireCompleted(e, st)
	require.Nil(e.t, st.CustomStatus)
	require.Zero(e.t, st.CustomStatusVersion)
}

func customStatusVisibleOnFailure(e *env) {
	st := e.runStatus("cs-fail", "FailWithStatus", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("about-to-fail")
		return "", fmt.Errorf("boom")
	}, "", nil)
	require.Equal(e.t, durable.StateFailed, st.State)
	require.Equal(e.t, strp("about-to-fail"), st.CustomStatus)
}

func customStatusVersionIncrements(e *env) {
	st := e.runStatus("cs-ver", "VersionIncr", statusThenActivity("v1", "v2"), "", nil)
	requireCompleted(e, st)
	require.GreaterOrEqual(e.t, st.CustomStatusVersion, uint64(2))
}

func statusOfSize(n int, out string) durable.OrchestrationFunc {
	return func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus(strings.Repeat("x", n))
		return out, nil
	}
}

func requireSizeLimitFailure(e *env, st *durable.OrchestrationStatus) {
	e.t.Helper()
	require.Equal(e.t, durable.StateFailed, st.State, "Expected Failed due to size limit, got output %q", st.Output)
	msg := st.FailureMessage()
	require.True(e.t, strings.Contains(msg, "Custom status size") && strings.Contains(msg, "exceeds limit"), "Expected size limit error, got: %s", msg)
}

func customStatusExceedingSizeLimitFailsOrchestration(e *env) {
	requireSizeLimitFailure(e, e.runStatus("cs-oversize", "OversizedStatus", statusOfSize(maxCustomStatusBytes+1, "should-not-reach"), "", nil))
}

func customStatusAtSizeLimitSucceeds(e *env) {
	st := e.runStatus("cs-exact", "ExactLimit", statusOfSize(maxCustomStatusBytes, "done"), "", nil)
	requireCompleted(e, st)
	require.Equal(e.t, "done", st.Output)
}

func customStatusPersistsAcrossContinueAsNew(e *env) {
	readStatus := func(r *durable.Registry) {
		act(e.t, r, "ReadStatus", func(ctx durable.ActivityContext, instance string) (string, error) {
			cs, err := e.p.CustomStatus(ctx, instance, 0)
			if err != nil {
				return "", err
			}
			switch {
			case cs == nil:
				return "none", nil
			case cs.Status == nil:
				return fmt.Sprintf("null@v%d", cs.Version), nil
			}
			return fmt.Sprintf("%s@v%d", *cs.Status, cs.Version), nil
		})
	}
	st := e.runStatus("cs-can", "CanStatus", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		switch n {
		case 0:
			ctx.SetCustomStatus("step-A")
			return "", durable.ContinueAsNew(ctx, "1")
		case 1:
			snap, err := durable.CallActivity[string](ctx, "ReadStatus", "cs-can").Await()
			check(err == nil, "ReadStatus activity failed: %v", err)
			check(snap == "step-A@v1", "step-A should be visible in execution 2, got %s", snap)
			return "", durable.ContinueAsNew(ctx, "2")
		}
		ctx.SetCustomStatus("step-B")
		return "done", nil
	}, "0", readStatus)
	requireCompleted(e, st)
	require.Equal(e.t, "done", st.Output)
	require.Equal(e.t, strp("step-B"), st.CustomStatus)
	require.EqualValues(e.t, 2, st.CustomStatusVersion, "two set_custom_status calls total")
}

func customStatusResetAcrossContinueAsNew(e *env) {
	st := e.runStatus("cs-can-reset", "CanReset", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if n, _ := strconv.Atoi(in); n == 0 {
			ctx.SetCustomStatus("foo")
			return "", durable.ContinueAsNew(ctx, "1")
		}
		ctx.ResetCustomStatus()
		return "done", nil
	}, "0", nil)
	requireCompleted(e, st)
	require.Nil(e.t, st.CustomStatus, "reset should clear even across CAN")
	require.EqualValues(e.t, 2, st.CustomStatusVersion, "set + reset = version 2")
}

// statusIs reports whether the context's custom status equals want (nil = none).
func statusIs(ctx *durable.OrchestrationContext, want *string) bool {
	s, ok := ctx.CustomStatus()
	if want == nil {
		return !ok
	}
	return ok && s == *want
}

func customStatusGetReflectsSetAcrossTurns(e *env) {
	st := e.runStatus("cs-getter", "GetterTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		check(statusIs(ctx, nil), "initial should be None")
		ctx.SetCustomStatus("step-1")
		check(statusIs(ctx, strp("step-1")), "should reflect set immediately")
		if _, err := durable.CallActivity[string](ctx, "Echo", "ping").Await(); err != nil {
			return "", err
		}
		check(statusIs(ctx, strp("step-1")), "should survive replay across turns")
		ctx.SetCustomStatus("step-2")
		check(statusIs(ctx, strp("step-2")), "should reflect second set")
		return "done", nil
	}, "", nil)
	requireCompleted(e, st)
	require.Equal(e.t, strp("step-2"), st.CustomStatus)
	require.EqualValues(e.t, 2, st.CustomStatusVersion)
}

func customStatusGetReflectsCarryForwardAfterCAN(e *env) {
	st := e.runStatus("cs-can-getter", "CANGetter", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		switch n {
		case 0:
			check(statusIs(ctx, nil), "iter 0: initial should be None")
			ctx.SetCustomStatus("from-first")
			check(statusIs(ctx, strp("from-first")), "iter 0: should reflect set")
			return "", durable.ContinueAsNew(ctx, "1")
		case 1:
			check(statusIs(ctx, strp("from-first")), "iter 1: should carry forward from iter 0")
			ctx.ResetCustomStatus()
			check(statusIs(ctx, nil), "iter 1: reset should clear")
			return "", durable.ContinueAsNew(ctx, "2")
		case 2:
			check(statusIs(ctx, nil), "iter 2: reset in iter 1 should carry forward as None")
			ctx.SetCustomStatus("from-third")
			return "", durable.ContinueAsNew(ctx, "3")
		}
		check(statusIs(ctx, strp("from-third")), "iter 3: should carry forward from iter 2")
		if _, err := durable.CallActivity[string](ctx, "Echo", "ping").Await(); err != nil {
			return "", err
		}
		check(statusIs(ctx, strp("from-third")), "iter 3: carried value should survive replay")
		return "done", nil
	}, "0", nil)
	requireCompleted(e, st)
	require.Equal(e.t, strp("from-third"), st.CustomStatus)
	require.EqualValues(e.t, 3, st.CustomStatusVersion)
}

func customStatusSizeLimitPreciseBoundary(e *env) {
	r := durable.NewRegistry()
	echoAct(e, r)
	orch(e.t, r, "BelowLimit", statusOfSize(maxCustomStatusBytes-1, "ok"))
	orch(e.t, r, "AtLimit", statusOfSize(maxCustomStatusBytes, "ok"))
	orch(e.t, r, "AboveLimit", statusOfSize(maxCustomStatusBytes+1, "should-not-reach"))
	e.start(r, nil)
	e.startOrch("cs-below", "BelowLimit", "")
	require.Equal(e.t, "ok", e.completed("cs-below"), "one byte below limit should succeed")
	e.startOrch("cs-at", "AtLimit", "")
	require.Equal(e.t, "ok", e.completed("cs-at"), "exactly at limit should succeed")
	e.startOrch("cs-above", "AboveLimit", "")
	requireSizeLimitFailure(e, e.wait("cs-above"))
}
