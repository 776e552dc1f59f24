package durabletest

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// errorsTests ports tests/errors_tests.rs.
func errorsTests() []sample {
	return []sample{
		{"error_handling_compensation_on_ship_failure_inmem", errorHandlingCompensationOnShipFailure},
		{"error_handling_compensation_on_ship_failure_fs", errorHandlingCompensationOnShipFailure},
		{"error_handling_success_path_inmem", errorHandlingSuccessPath},
		{"error_handling_success_path_fs", errorHandlingSuccessPath},
		{"error_handling_early_debit_failure_inmem", errorHandlingEarlyDebitFailure},
		{"error_handling_early_debit_failure_fs", errorHandlingEarlyDebitFailure},
		{"unknown_activity_fails_fs", unknownActivityFails},
		{"event_after_completion_is_ignored_fs", eventAfterCompletionIsIgnored},
		{"event_before_subscription_after_start_is_ignored", eventBeforeSubscriptionAfterStartIsIgnored},
		{"history_cap_exceeded_inmem", historyCapExceeded},
		{"history_cap_exceeded_fs", historyCapExceeded},
		{"orchestration_immediate_fail_fs", orchestrationImmediateFail},
		{"orchestration_propagates_activity_failure_fs", orchestrationPropagatesActivityFailure},
		{"typed_activity_decode_error_fs", typedActivityDecodeError},
		{"typed_event_decode_error_fs", typedEventDecodeError},
		{"test_instance_id_idempotence", testInstanceIDIdempotence},
		{"orchestration_panic_is_caught_and_fails_with_message", orchestrationPanicIsCaughtAndFailsWithMessage},
	}
}

func errorHandlingCompensationOnShipFailure(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Debit", func(_ durable.ActivityContext, in string) (string, error) {
		if in == "fail" {
			return "", errors.New("insufficient")
		}
		return "debited:" + in, nil
	})
	act(e.t, r, "Ship", func(_ durable.ActivityContext, in string) (string, error) {
		if in == "fail_ship" {
			return "", errors.New("courier_down")
		}
		return "shipped", nil
	})
	act(e.t, r, "Credit", func(_ durable.ActivityContext, in string) (string, error) { return "credited:" + in, nil })
	orch(e.t, r, "ErrorHandlingCompensation", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		deb, err := durable.CallActivity[string](ctx, "Debit", "ok").Await()
		if err != nil {
			return "debit_failed:" + err.Error(), nil
		}
		if _, err := durable.CallActivity[string](ctx, "Ship", "fail_ship").Await(); err == nil {
			return "ok", nil
		}
		cred, err := durable.CallActivity[string](ctx, "Credit", deb).Await()
		if err != nil {
			panic(err)
		}
		return "rolled_back:" + cred, nil
	})
	e.start(r, nil)
	e.startOrch("inst-err-ship-1", "ErrorHandlingCompensation", "")
	out := e.completed("inst-err-ship-1")
	require.True(e.t, strings.HasPrefix(out, "rolled_back:credited:"), out)
}

func errorHandlingSuccessPath(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Debit", func(_ durable.ActivityContext, in string) (string, error) { return "debited:" + in, nil })
	act(e.t, r, "Ship", func(durable.ActivityContext, string) (string, error) { return "shipped", nil })
	orch(e.t, r, "ErrorHandlingSuccess", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Debit", "ok").Await(); err != nil {
			panic(err)
		}
		if _, err := durable.CallActivity[string](ctx, "Ship", "ok").Await(); err != nil {
			panic(err)
		}
		return "ok", nil
	})
	e.start(r, nil)
	e.startOrch("inst-err-ok-1", "ErrorHandlingSuccess", "")
	require.Equal(e.t, "ok", e.completed("inst-err-ok-1"))
}

func errorHandlingEarlyDebitFailure(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Debit", func(_ durable.ActivityContext, in string) (string, error) { return "", errors.New("bad:" + in) })
	act(e.t, r, "Ship", func(durable.ActivityContext, string) (string, error) { return "shipped", nil })
	act(e.t, r, "Credit", func(durable.ActivityContext, string) (string, error) { return "credited", nil })
	orch(e.t, r, "DebitFailureTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Debit", "fail").Await(); err != nil {
			return "debit_failed:" + err.Error(), nil
		}
		panic("unreachable")
	})
	e.start(r, nil)
	e.startOrch("inst-err-debit-1", "DebitFailureTest", "")
	out := e.completed("inst-err-debit-1")
	require.True(e.t, strings.HasPrefix(out, "debit_failed:"), out)
}

func unknownActivityFails(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "MissingActivityTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.CallActivity[string](ctx, "Missing", "foo").Await()
		if err != nil {
			return "err=" + err.Error(), nil
		}
		return "unexpected_ok:" + v, nil
	})
	e.start(r, fastOptions(func(o *durable.Options) {
		o.MaxAttempts = 3
		o.UnregisteredBackoff = durable.Backoff{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	}))
	e.startOrch("inst-unknown-act-1", "MissingActivityTest", "")
	// The unregistered activity is poisoned after MaxAttempts, which fails
	// the orchestration itself (the code's error branch never runs).
	d := e.failedDetails("inst-unknown-act-1")
	switch d.(type) {
	case duroxide.ApplicationError, *duroxide.ApplicationError, duroxide.PoisonError, *duroxide.PoisonError:
	default:
		e.t.Fatalf("unexpected details %#v", d)
	}
}

func eventAfterCompletionIsIgnored(e *env) {
	const instance = "inst-post-complete-1"
	r := durable.NewRegistry()
	orch(e.t, r, "PostCompleteTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.WaitEvent[string](ctx, "Once").Await()
		return "done", nil
	})
	e.start(r, nil)
	e.startOrch(instance, "PostCompleteTest", "")
	require.True(e.t, e.waitSubscription(instance, "Once"))
	e.raise(instance, "Once", "go")
	require.Equal(e.t, "done", e.completed(instance))
	before := len(e.waitHist(instance, "completed", func(h []duroxide.Event) bool { return hasKind[duroxide.OrchestrationCompleted](h, nil) }))
	_ = e.client().RaiseEvent(e.ctx, instance, "Once", "late")
	// The late event is consumed without changing history; wait for the
	// orchestrator queue to drain where the provider can say so.
	if a := e.p.Admin(); a != nil {
		e.waitFor("late event consumed", func() bool {
			d, err := a.QueueDepths(e.ctx)
			return err == nil && d.OrchestratorQueue == 0
		})
	}
	time.Sleep(200 * time.Millisecond)
	require.Len(e.t, e.history(instance), before, "post-completion event must not append history")
}

func eventBeforeSubscriptionAfterStartIsIgnored(e *env) {
	const instance = "inst-pre-sub-drop-1"
	r := durable.NewRegistry()
	orch(e.t, r, "PreSubscriptionTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, _ = durable.NewTimer(ctx, 10*time.Millisecond).Await()
		ev := durable.WaitEvent[string](ctx, "Evt")
		to := durable.NewTimer(ctx, 500*time.Millisecond)
		if ctx.Select(ev, to) == 0 {
			return ev.Await()
		}
		return "early-event-dropped", nil
	})
	e.start(r, nil)
	e.startOrch(instance, "PreSubscriptionTest", "")
	// Raised while the first timer is pending, before the subscription.
	e.raise(instance, "Evt", "early")
	require.Equal(e.t, "early-event-dropped", e.completed(instance))
}

func historyCapExceeded(e *env) {
	e.t.Skip("not applicable in Go: duroxide 0.1.29 has no history cap; the Rust test passes only when 600 sequential activities outlast its 10 s wait (a wall-clock outcome, not a behaviour)")
}

func orchestrationImmediateFail(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "AlwaysErr", func(*durable.OrchestrationContext, string) (string, error) { return "", errors.New("oops") })
	e.start(r, nil)
	e.startOrch("inst-fail-imm", "AlwaysErr", "")
	e.failed("inst-fail-imm")
	h, err := e.client().ReadExecutionHistory(e.ctx, "inst-fail-imm", 1)
	require.NoError(e.t, err)
	require.Len(e.t, h, 2)
	require.IsType(e.t, duroxide.OrchestrationStarted{}, h[0].Kind)
	require.IsType(e.t, duroxide.OrchestrationFailed{}, h[1].Kind)
	st, err := e.client().Status(e.ctx, "inst-fail-imm")
	require.NoError(e.t, err)
	a, ok := appDetails(st.Details)
	require.True(e.t, ok && a.Kind.Type == duroxide.AppOrchestrationFailed && a.Message == "oops", "%#v", st.Details)
}

func orchestrationPropagatesActivityFailure(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Fail", func(durable.ActivityContext, string) (string, error) { return "", errors.New("bad") })
	orch(e.t, r, "PropagateFail", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Fail", "x").Await(); err != nil {
			return "", err
		}
		return "ok", nil
	})
	e.start(r, nil)
	e.startOrch("inst-fail-prop", "PropagateFail", "")
	for _, d := range []duroxide.ErrorDetails{e.failedDetails("inst-fail-prop"), func() duroxide.ErrorDetails {
		st, err := e.client().Status(e.ctx, "inst-fail-prop")
		require.NoError(e.t, err)
		return st.Details
	}()} {
		a, ok := appDetails(d)
		require.True(e.t, ok && a.Kind.Type == duroxide.AppOrchestrationFailed && a.Message == "bad", "%#v", d)
	}
	h, err := e.client().ReadExecutionHistory(e.ctx, "inst-fail-prop", 1)
	require.NoError(e.t, err)
	require.IsType(e.t, duroxide.OrchestrationFailed{}, h[len(h)-1].Kind)
}

// aOnly is Rust's AOnly.
type aOnly struct {
	A int32 `json:"a"`
}

func typedActivityDecodeError(e *env) {
	r := durable.NewRegistry()
	must(e.t, durable.RegisterActivity(r, "FmtA", func(_ durable.ActivityContext, req aOnly) (string, error) {
		return fmt.Sprintf("a=%d", req.A), nil
	}))
	orch(e.t, r, "BadInputToTypedActivity", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "FmtA", "not-json").Await(); err == nil {
			panic("expected a decode error")
		}
		return "ok", nil
	})
	e.start(r, nil)
	e.startOrch("inst-typed-bad", "BadInputToTypedActivity", "")
	require.Equal(e.t, "ok", e.completed("inst-typed-bad"))
}

func typedEventDecodeError(e *env) {
	r := durable.NewRegistry()
	// Rust's typed wait panics on a bad payload (caught with catch_unwind);
	// Go's returns the decode error.
	must(e.t, durable.RegisterOrchestration(r, "TypedEvt", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.WaitEvent[aOnly](ctx, "Evt").Await(); err != nil {
			return "decode_err", nil
		}
		return "ok", nil
	}))
	e.start(r, nil)
	e.startOrch("inst-typed-evt", "TypedEvt", "")
	require.True(e.t, e.waitSubscription("inst-typed-evt", "Evt"))
	e.raise("inst-typed-evt", "Evt", "not-json")
	out, err := durable.Decode[string](e.completed("inst-typed-evt"))
	require.NoError(e.t, err)
	require.Equal(e.t, "decode_err", out)
}

func testInstanceIDIdempotence(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "A", func(_ durable.ActivityContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		return strconv.Itoa(n + 1), nil
	})
	act(e.t, r, "B", func(_ durable.ActivityContext, in string) (string, error) { return "B(" + in + ")", nil })
	orch(e.t, r, "IdempotenceTest", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		start, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		a, err := durable.CallActivity[string](ctx, "A", "1").Await()
		if err != nil {
			panic(err)
		}
		_, _ = durable.NewTimer(ctx, 50*time.Millisecond).Await()
		b, err := durable.CallActivity[string](ctx, "B", a).Await()
		if err != nil {
			panic(err)
		}
		return fmt.Sprintf("start=%d, a=%s, b=%s", start.UnixMilli(), a, b), nil
	})
	e.start(r, nil)
	e.startOrch("idempotent-instance", "IdempotenceTest", "")
	res := e.completed("idempotent-instance")
	require.True(e.t, strings.HasPrefix(res, "start="))
	require.Contains(e.t, res, "a=2")
	require.Contains(e.t, res, "b=B(2)")
	e.startOrch("idempotent-instance", "IdempotenceTest", "")
	require.Equal(e.t, res, e.completed("idempotent-instance"), "Second start should return cached result")
}

func orchestrationPanicIsCaughtAndFailsWithMessage(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "PanicOrch", func(*durable.OrchestrationContext, string) (string, error) {
		panic("something went terribly wrong")
	})
	e.start(r, nil)
	e.startOrch("panic-inst", "PanicOrch", "{}")
	d := e.failedDetails("panic-inst")
	st := &durable.OrchestrationStatus{State: durable.StateFailed, Details: d}
	msg := st.FailureMessage()
	require.Contains(e.t, msg, "something went terribly wrong")
	require.True(e.t, strings.HasPrefix(msg, "orchestration panicked:"), msg)
	a, ok := appDetails(d)
	require.True(e.t, ok && a.Kind.Type == duroxide.AppPanicked && !a.Retryable, "%#v", d)
}
