package durabletest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// scheduleWithRetryTests ports duroxide 0.1.29's
// tests/schedule_with_retry_tests.rs: RetryPolicy and BackoffStrategy
// arithmetic (Rust's plain unit tests; they leave the provider unused), then
// CallActivity with ActivityOptions.Retry end to end: attempts, backoff timers in
// history, per-attempt timeouts that end the call without a retry, typed
// and session variants, continue-as-new.
//
// Where a Rust test races a slow activity against a short timeout, the Go
// test keeps the race's outcome and what it asserts but widens the gap so
// a loaded machine cannot reorder it: the timeout is long enough for a
// worker to pick the activity up, and the slow activity runs until it is
// cancelled.
func scheduleWithRetryTests() []sample {
	return []sample{
		{"test_retry_policy_default", testRetryPolicyDefault},
		{"test_retry_policy_new", testRetryPolicyNew},
		{"test_retry_policy_new_single_attempt", testRetryPolicyNewSingleAttempt},
		{"test_retry_policy_new_zero_panics", testRetryPolicyNewZeroPanics},
		{"test_retry_policy_builder_with_timeout", testRetryPolicyBuilderWithTimeout},
		{"test_retry_policy_builder_with_backoff", testRetryPolicyBuilderWithBackoff},
		{"test_retry_policy_builder_chained", testRetryPolicyBuilderChained},
		{"test_backoff_none_always_zero", testBackoffNoneAlwaysZero},
		{"test_backoff_fixed_same_delay", testBackoffFixedSameDelay},
		{"test_backoff_fixed_zero_delay", testBackoffFixedZeroDelay},
		{"test_backoff_linear_multiplies_by_attempt", testBackoffLinearMultipliesByAttempt},
		{"test_backoff_linear_respects_max", testBackoffLinearRespectsMax},
		{"test_backoff_linear_zero_base", testBackoffLinearZeroBase},
		{"test_backoff_exponential_doubles", testBackoffExponentialDoubles},
		{"test_backoff_exponential_respects_max", testBackoffExponentialRespectsMax},
		{"test_backoff_exponential_different_multiplier", testBackoffExponentialDifferentMultiplier},
		{"test_backoff_exponential_multiplier_one", testBackoffExponentialMultiplierOne},
		{"test_backoff_exponential_large_attempt_no_overflow", testBackoffExponentialLargeAttemptNoOverflow},
		{"test_backoff_exponential_zero_base", testBackoffExponentialZeroBase},
		{"test_policy_delay_for_attempt_delegates", testPolicyDelayForAttemptDelegates},
		{"test_large_max_attempts", testLargeMaxAttempts},
		{"test_very_short_timeout", testVeryShortTimeout},
		{"test_zero_duration_timeout", testZeroDurationTimeout},
		{"test_activity_succeeds_first_attempt", testActivitySucceedsFirstAttempt},
		{"test_activity_fails_then_succeeds", testActivityFailsThenSucceeds},
		{"test_activity_exhausts_all_attempts", testActivityExhaustsAllAttempts},
		{"test_single_attempt_fails", testSingleAttemptFails},
		{"test_retry_with_fixed_backoff", testRetryWithFixedBackoff},
		{"test_retry_with_no_backoff", testRetryWithNoBackoff},
		{"test_timeout_fires_before_success", testTimeoutFiresBeforeSuccess},
		{"test_success_before_timeout", testSuccessBeforeTimeout},
		{"test_timeout_exits_immediately_without_retry", testTimeoutExitsImmediatelyWithoutRetry},
		{"test_error_retries_but_timeout_exits", testErrorRetriesButTimeoutExits},
		{"test_typed_activity_retry_success", testTypedActivityRetrySuccess},
		{"test_history_contains_all_activity_scheduled_events", testHistoryContainsAllActivityScheduledEvents},
		{"test_large_max_attempts_integration", testLargeMaxAttemptsIntegration},
		{"test_replay_with_stale_events_in_history", testReplayWithStaleEventsInHistory},
		{"test_timeout_history_replays_correctly", testTimeoutHistoryReplaysCorrectly},
		{"test_activity_completes_after_continue_as_new", testActivityCompletesAfterContinueAsNew},
		{"test_retry_timeout_with_continue_as_new", testRetryTimeoutWithContinueAsNew},
		{"test_multiple_orchestrations_retrying", testMultipleOrchestrationsRetrying},
		{"retry_on_session_basic_success", retryOnSessionBasicSuccess},
		{"retry_on_session_all_attempts_fail", retryOnSessionAllAttemptsFail},
		{"retry_on_session_typed_round_trip", retryOnSessionTypedRoundTrip},
	}
}

const ms = time.Millisecond

// --- RetryPolicy construction ----------------------------------------------------

func testRetryPolicyDefault(e *env) {
	p := durable.DefaultRetryPolicy()
	require.Equal(e.t, uint32(3), p.MaxAttempts)
	require.Zero(e.t, p.Timeout, "no timeout")
	require.Equal(e.t, durable.BackoffExponential, p.Backoff.Kind, "expected exponential backoff")
	require.Equal(e.t, 100*ms, p.Backoff.Base)
	require.InDelta(e.t, 2.0, p.Backoff.Multiplier, 1e-15)
	require.Equal(e.t, 30*time.Second, p.Backoff.Max)
	// Go's zero RetryPolicy is documented to be the default; it must
	// behave as the spelled-out one.
	var zero durable.RetryPolicy
	for _, a := range []uint32{1, 2, 5, 20} {
		require.Equal(e.t, p.DelayForAttempt(a), zero.DelayForAttempt(a), "attempt %d", a)
	}
}

func testRetryPolicyNew(e *env) {
	p := durable.NewRetryPolicy(5)
	require.Equal(e.t, uint32(5), p.MaxAttempts)
	require.Zero(e.t, p.Timeout)
}

func testRetryPolicyNewSingleAttempt(e *env) {
	require.Equal(e.t, uint32(1), durable.NewRetryPolicy(1).MaxAttempts)
}

func testRetryPolicyNewZeroPanics(e *env) {
	var msg string
	func() {
		defer func() { msg = fmt.Sprint(recover()) }()
		_ = durable.NewRetryPolicy(0)
	}()
	require.Contains(e.t, msg, "max_attempts must be at least 1")
}

func testRetryPolicyBuilderWithTimeout(e *env) {
	p := durable.NewRetryPolicy(3).WithTimeout(60 * time.Second)
	require.Equal(e.t, uint32(3), p.MaxAttempts)
	require.Equal(e.t, 60*time.Second, p.Timeout)
}

func testRetryPolicyBuilderWithBackoff(e *env) {
	p := durable.NewRetryPolicy(3).WithBackoff(durable.FixedBackoff(time.Second))
	require.Equal(e.t, durable.BackoffFixed, p.Backoff.Kind, "expected fixed backoff")
	require.Equal(e.t, time.Second, p.Backoff.Delay)
}

func testRetryPolicyBuilderChained(e *env) {
	p := durable.NewRetryPolicy(10).WithTimeout(120 * time.Second).WithBackoff(durable.LinearBackoff(500*ms, 10*time.Second))
	require.Equal(e.t, uint32(10), p.MaxAttempts)
	require.Equal(e.t, 120*time.Second, p.Timeout)
	require.Equal(e.t, durable.BackoffLinear, p.Backoff.Kind, "expected linear backoff")
	require.Equal(e.t, 500*ms, p.Backoff.Base)
	require.Equal(e.t, 10*time.Second, p.Backoff.Max)
}

// --- BackoffStrategy arithmetic ------------------------------------------------------

// requireDelays asserts b's delay for each attempt.
func requireDelays(e *env, b durable.BackoffStrategy, want map[uint32]time.Duration) {
	e.t.Helper()
	for a, d := range want {
		require.Equal(e.t, d, b.DelayForAttempt(a), "attempt %d", a)
	}
}

func testBackoffNoneAlwaysZero(e *env) {
	requireDelays(e, durable.NoBackoff(), map[uint32]time.Duration{1: 0, 2: 0, 100: 0})
}

func testBackoffFixedSameDelay(e *env) {
	d := 5 * time.Second
	requireDelays(e, durable.FixedBackoff(d), map[uint32]time.Duration{1: d, 2: d, 10: d, 100: d})
}

func testBackoffFixedZeroDelay(e *env) {
	requireDelays(e, durable.FixedBackoff(0), map[uint32]time.Duration{1: 0, 5: 0})
}

func testBackoffLinearMultipliesByAttempt(e *env) {
	requireDelays(e, durable.LinearBackoff(100*ms, 10*time.Second),
		map[uint32]time.Duration{1: 100 * ms, 2: 200 * ms, 3: 300 * ms, 10: time.Second})
}

func testBackoffLinearRespectsMax(e *env) {
	requireDelays(e, durable.LinearBackoff(time.Second, 5*time.Second),
		map[uint32]time.Duration{1: time.Second, 5: 5 * time.Second, 10: 5 * time.Second, 100: 5 * time.Second})
}

func testBackoffLinearZeroBase(e *env) {
	requireDelays(e, durable.LinearBackoff(0, 10*time.Second), map[uint32]time.Duration{1: 0, 100: 0})
}

func testBackoffExponentialDoubles(e *env) {
	requireDelays(e, durable.ExponentialBackoff(100*ms, 2, 60*time.Second),
		map[uint32]time.Duration{1: 100 * ms, 2: 200 * ms, 3: 400 * ms, 4: 800 * ms})
}

func testBackoffExponentialRespectsMax(e *env) {
	requireDelays(e, durable.ExponentialBackoff(100*ms, 2, 500*ms),
		map[uint32]time.Duration{1: 100 * ms, 2: 200 * ms, 3: 400 * ms, 4: 500 * ms, 10: 500 * ms})
}

func testBackoffExponentialDifferentMultiplier(e *env) {
	requireDelays(e, durable.ExponentialBackoff(100*ms, 3, 60*time.Second),
		map[uint32]time.Duration{1: 100 * ms, 2: 300 * ms, 3: 900 * ms})
}

func testBackoffExponentialMultiplierOne(e *env) {
	requireDelays(e, durable.ExponentialBackoff(500*ms, 1, 60*time.Second),
		map[uint32]time.Duration{1: 500 * ms, 5: 500 * ms, 100: 500 * ms})
}

func testBackoffExponentialLargeAttemptNoOverflow(e *env) {
	b := durable.ExponentialBackoff(100*ms, 2, 30*time.Second)
	require.Equal(e.t, 30*time.Second, b.DelayForAttempt(1000))
}

func testBackoffExponentialZeroBase(e *env) {
	requireDelays(e, durable.ExponentialBackoff(0, 2, 30*time.Second), map[uint32]time.Duration{1: 0, 100: 0})
}

func testPolicyDelayForAttemptDelegates(e *env) {
	p := durable.NewRetryPolicy(5).WithBackoff(durable.FixedBackoff(2 * time.Second))
	require.Equal(e.t, 2*time.Second, p.DelayForAttempt(1))
	require.Equal(e.t, 2*time.Second, p.DelayForAttempt(5))
}

func testLargeMaxAttempts(e *env) {
	require.Equal(e.t, uint32(1000), durable.NewRetryPolicy(1000).MaxAttempts)
}

func testVeryShortTimeout(e *env) {
	require.Equal(e.t, ms, durable.NewRetryPolicy(3).WithTimeout(ms).Timeout)
}

// Rust's Option<Duration> tells "no timeout" (None) from a zero timeout
// (Some(ZERO)); Go's RetryPolicy.Timeout is a time.Duration on which zero
// means no timeout, so Some(ZERO) has no Go counterpart. The Go
// equivalent is checked first: WithTimeout(0) leaves the policy without a
// timeout and keeps the rest.
func testZeroDurationTimeout(e *env) {
	p := durable.NewRetryPolicy(3).WithTimeout(0)
	require.Equal(e.t, durable.NewRetryPolicy(3), p)
	e.t.Skip("not applicable in Go: RetryPolicy.Timeout is a time.Duration where zero means no timeout; Rust's Option<Duration> keeps Some(ZERO) apart from None")
}

// --- helpers ------------------------------------------------------------------------------

// flaky is an activity that fails (with failMsg and the attempt number)
// until attempt okFrom, then succeeds with okMsg(attempt).
func flaky(counter *atomic.Uint32, okFrom uint32, failMsg func(uint32) string, okMsg func(uint32) string) durable.ActivityFunc {
	return func(durable.ActivityContext, string) (string, error) {
		attempt := counter.Add(1)
		if attempt < okFrom {
			return "", errors.New(failMsg(attempt))
		}
		return okMsg(attempt), nil
	}
}

// retryOrch registers "RetryOrch", which returns the retried activity's
// outcome as its own.
func retryOrch(e *env, r *durable.Registry, activity string, policy *durable.RetryPolicy) {
	orch(e.t, r, "RetryOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, activity, in, durable.ActivityOptions{Retry: policy}).Await()
	})
}

// requireOutcomeContains asserts the orchestration's outcome (its output
// when Completed, its failure text when Failed) contains want; Rust
// accepts either for a retried call whose error the orchestration returns.
func (e *env) requireOutcomeContains(st *durable.OrchestrationStatus, want string) {
	e.t.Helper()
	switch st.State {
	case durable.StateCompleted:
		require.Contains(e.t, st.Output, want)
	case durable.StateFailed:
		require.Contains(e.t, st.FailureMessage(), want)
	default:
		e.t.Fatalf("unexpected status: %s", st.State)
	}
}

// slowUntilCancelled is an activity that outlasts any timeout raced
// against it; it returns early when cancelled, so the test does not wait.
// The worker learns of the cancellation when it renews the activity's
// lock, so tests running it use shortLocks.
func slowUntilCancelled(counter *atomic.Uint32) durable.ActivityFunc {
	return func(ctx durable.ActivityContext, _ string) (string, error) {
		if counter != nil {
			counter.Add(1)
		}
		sleepCtx(ctx, 60*time.Second)
		return "should not reach", nil
	}
}

// shortLocks keeps the activity lock short, so a worker renewing it soon
// learns that the orchestration has finished and cancels its abandoned
// slow activity (with the 30 s default, shutdown would wait ~25 s).
func shortLocks() *durable.Options {
	return &durable.Options{WorkerLockTimeout: 2 * time.Second}
}

// runOneWith is runOne with runtime options.
func (e *env) runOneWith(o *durable.Options, reg *durable.Registry, instance, name, input string) *durable.OrchestrationStatus {
	e.t.Helper()
	e.start(reg, o)
	e.startOrch(instance, name, input)
	return e.wait(instance)
}

// --- basic retry behaviour ---------------------------------------------------------------------

func testActivitySucceedsFirstAttempt(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "SuccessActivity", func(_ durable.ActivityContext, in string) (string, error) { return "success:" + in, nil })
	retryOrch(e, r, "SuccessActivity", durable.NewRetryPolicy(3))
	require.Equal(e.t, "success:test", e.requireCompleted(e.runOne(r, "retry-success-1", "RetryOrch", "test")))
}

func testActivityFailsThenSucceeds(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("FlakyActivity", flaky(&counter, 3,
		func(a uint32) string { return fmt.Sprintf("fail on attempt %d", a) },
		func(a uint32) string { return fmt.Sprintf("success on attempt %d", a) })))
	retryOrch(e, r, "FlakyActivity", durable.NewRetryPolicy(5).WithBackoff(durable.NoBackoff()))
	require.Equal(e.t, "success on attempt 3", e.requireCompleted(e.runOne(r, "retry-flaky-1", "RetryOrch", "")))
	require.Equal(e.t, uint32(3), counter.Load())
}

func testActivityExhaustsAllAttempts(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("AlwaysFailActivity", flaky(&counter, ^uint32(0),
		func(a uint32) string { return fmt.Sprintf("fail on attempt %d", a) }, nil)))
	retryOrch(e, r, "AlwaysFailActivity", durable.NewRetryPolicy(3).WithBackoff(durable.NoBackoff()))
	e.requireOutcomeContains(e.runOne(r, "retry-exhaust-1", "RetryOrch", ""), "fail on attempt 3")
	require.Equal(e.t, uint32(3), counter.Load())
}

func testSingleAttemptFails(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "FailOnce", func(durable.ActivityContext, string) (string, error) { return "", errors.New("single failure") })
	retryOrch(e, r, "FailOnce", durable.NewRetryPolicy(1))
	e.requireOutcomeContains(e.runOne(r, "retry-single-1", "RetryOrch", ""), "single failure")
}

// --- backoff timing -------------------------------------------------------------------------------

func failTwiceThenDone(counter *atomic.Uint32) durable.ActivityFunc {
	return flaky(counter, 3, func(a uint32) string { return fmt.Sprintf("fail %d", a) }, func(uint32) string { return "done" })
}

func testRetryWithFixedBackoff(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("FlakyActivity", failTwiceThenDone(&counter)))
	retryOrch(e, r, "FlakyActivity", durable.NewRetryPolicy(5).WithBackoff(durable.FixedBackoff(50*ms)))
	require.Equal(e.t, "done", e.requireCompleted(e.runOne(r, "retry-backoff-1", "RetryOrch", "")))
	n := countKind[duroxide.TimerCreated](e.history("retry-backoff-1"))
	require.Equal(e.t, 2, n, "expected 2 backoff timers, got %d", n)
}

func testRetryWithNoBackoff(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("FlakyActivity", failTwiceThenDone(&counter)))
	retryOrch(e, r, "FlakyActivity", durable.NewRetryPolicy(5).WithBackoff(durable.NoBackoff()))
	require.Equal(e.t, "done", e.requireCompleted(e.runOne(r, "retry-no-backoff-1", "RetryOrch", "")))
	n := countKind[duroxide.TimerCreated](e.history("retry-no-backoff-1"))
	require.Equal(e.t, 0, n, "expected 0 backoff timers, got %d", n)
}

// --- timeouts ------------------------------------------------------------------------------------------

func testTimeoutFiresBeforeSuccess(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("SlowActivity", slowUntilCancelled(nil)))
	retryOrch(e, r, "SlowActivity", durable.NewRetryPolicy(3).WithTimeout(100*ms))
	e.requireOutcomeContains(e.runOneWith(shortLocks(), r, "retry-timeout-1", "RetryOrch", ""), "timeout")
}

func testSuccessBeforeTimeout(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "FastActivity", func(_ durable.ActivityContext, in string) (string, error) { return "fast:" + in, nil })
	retryOrch(e, r, "FastActivity", durable.NewRetryPolicy(3).WithTimeout(60*time.Second))
	require.Equal(e.t, "fast:data", e.requireCompleted(e.runOne(r, "retry-fast-1", "RetryOrch", "data")))
}

// Rust: a 200 ms activity against a 150 ms timeout. Here the activity runs
// until cancelled and the timeout is 2 s, so the attempt is always picked
// up by a worker (the counter Rust asserts) and always times out.
func testTimeoutExitsImmediatelyWithoutRetry(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("SlowActivity", slowUntilCancelled(&counter)))
	retryOrch(e, r, "SlowActivity", durable.NewRetryPolicy(3).WithTimeout(2*time.Second).WithBackoff(durable.NoBackoff()))
	e.requireOutcomeContains(e.runOneWith(shortLocks(), r, "timeout-no-retry-1", "RetryOrch", ""), "timeout")
	require.Equal(e.t, uint32(1), counter.Load(), "expected exactly 1 attempt (no retry on timeout)")
	h := e.history("timeout-no-retry-1")
	require.Equal(e.t, 1, countKind[duroxide.ActivityScheduled](h), "expected 1 ActivityScheduled (no retry)")
	require.Equal(e.t, 1, countKind[duroxide.TimerCreated](h), "expected 1 TimerCreated (deadline)")
	require.Equal(e.t, 1, countKind[duroxide.TimerFired](h), "expected 1 TimerFired (deadline won)")
}

// Rust: attempt 1 fails at once, attempt 2 sleeps 1 s, timeout 500 ms.
// Here the timeout is 2 s and attempt 2 runs until cancelled.
func testErrorRetriesButTimeoutExits(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	slow := slowUntilCancelled(nil)
	act(e.t, r, "MixedActivity", func(ctx durable.ActivityContext, in string) (string, error) {
		if counter.Add(1) == 1 {
			return "", errors.New("fast failure")
		}
		return slow(ctx, in)
	})
	retryOrch(e, r, "MixedActivity", durable.NewRetryPolicy(5).WithTimeout(2*time.Second).WithBackoff(durable.NoBackoff()))
	e.requireOutcomeContains(e.runOneWith(shortLocks(), r, "error-then-timeout-1", "RetryOrch", ""), "timeout")
	h := e.history("error-then-timeout-1")
	require.Equal(e.t, 2, countKind[duroxide.ActivityScheduled](h), "expected 2 ActivityScheduled (error triggered retry)")
	require.Equal(e.t, 1, countKind[duroxide.ActivityFailed](h), "expected 1 ActivityFailed (first attempt's error)")
	require.GreaterOrEqual(e.t, countKind[duroxide.TimerCreated](h), 2, "expected at least 2 TimerCreated (one per attempt)")
}

// --- typed variant -------------------------------------------------------------------------------------

type retryTypedInput struct {
	Value int32 `json:"value"`
}

type retryTypedOutput struct {
	Result int32 `json:"result"`
}

func testTypedActivityRetrySuccess(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "TypedActivity", func(_ durable.ActivityContext, in string) (string, error) {
		var parsed retryTypedInput
		if err := json.Unmarshal([]byte(in), &parsed); err != nil {
			return "", err
		}
		b, err := json.Marshal(retryTypedOutput{Result: parsed.Value * 2})
		return string(b), err
	})
	orch(e.t, r, "RetryOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		res, err := durable.CallActivity[retryTypedOutput](ctx, "TypedActivity", retryTypedInput{Value: 21}, durable.ActivityOptions{Retry: durable.NewRetryPolicy(3)}).Await()
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(res)
		return string(b), err
	})
	out := e.requireCompleted(e.runOne(r, "retry-typed-1", "RetryOrch", ""))
	var got retryTypedOutput
	require.NoError(e.t, json.Unmarshal([]byte(out), &got))
	require.Equal(e.t, retryTypedOutput{Result: 42}, got)
}

// --- history ---------------------------------------------------------------------------------------------

func testHistoryContainsAllActivityScheduledEvents(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("FlakyActivity", flaky(&counter, 4,
		func(a uint32) string { return fmt.Sprintf("fail %d", a) }, func(uint32) string { return "done" })))
	retryOrch(e, r, "FlakyActivity", durable.NewRetryPolicy(5).WithBackoff(durable.NoBackoff()))
	e.requireCompleted(e.runOne(r, "retry-history-1", "RetryOrch", ""))
	require.Equal(e.t, 4, countKind[duroxide.ActivityScheduled](e.history("retry-history-1")), "expected 4 ActivityScheduled events")
}

func testLargeMaxAttemptsIntegration(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("FlakyActivity", flaky(&counter, 10,
		func(a uint32) string { return fmt.Sprintf("fail %d", a) }, func(uint32) string { return "done" })))
	retryOrch(e, r, "FlakyActivity", durable.NewRetryPolicy(20).WithBackoff(durable.NoBackoff()))
	require.Equal(e.t, "done", e.requireCompleted(e.runOne(r, "retry-large-1", "RetryOrch", "")))
	require.Equal(e.t, uint32(10), counter.Load())
}

// --- stale events / replay ---------------------------------------------------------------------------------

func testReplayWithStaleEventsInHistory(e *env) {
	var calls atomic.Uint32
	r := durable.NewRegistry()
	act(e.t, r, "CountedActivity", func(durable.ActivityContext, string) (string, error) {
		calls.Add(1)
		return "done", nil
	})
	orch(e.t, r, "ReplayOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "CountedActivity", "", durable.ActivityOptions{Retry: durable.NewRetryPolicy(3).WithBackoff(durable.NoBackoff())}).Await()
	})
	require.Equal(e.t, "done", e.requireCompleted(e.runOne(r, "replay-1", "ReplayOrch", "")))
	require.Equal(e.t, uint32(1), calls.Load())
}

func testTimeoutHistoryReplaysCorrectly(e *env) {
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("SlowActivity", slowUntilCancelled(nil)))
	orch(e.t, r, "TimeoutOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.CallActivity[string](ctx, "SlowActivity", "", durable.ActivityOptions{Retry: durable.NewRetryPolicy(1).WithTimeout(50 * ms)}).Await()
		if err != nil {
			return "error:" + err.Error(), nil
		}
		return v, nil
	})
	out := e.requireCompleted(e.runOneWith(shortLocks(), r, "timeout-replay-1", "TimeoutOrch", ""))
	require.Contains(e.t, out, "timeout", "expected timeout error")
	h := e.history("timeout-replay-1")
	require.GreaterOrEqual(e.t, countKind[duroxide.TimerCreated](h), 1, "expected at least 1 TimerCreated")
	require.GreaterOrEqual(e.t, countKind[duroxide.TimerFired](h), 1, "expected at least 1 TimerFired (deadline)")
}

// --- continue-as-new ------------------------------------------------------------------------------------------

func testActivityCompletesAfterContinueAsNew(e *env) {
	var execs atomic.Uint32
	r := durable.NewRegistry()
	act(e.t, r, "TrackedActivity", func(_ durable.ActivityContext, in string) (string, error) {
		return fmt.Sprintf("exec%d:%s", execs.Add(1)-1, in), nil
	})
	orch(e.t, r, "CANOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		count, _ := strconv.Atoi(in)
		res, err := durable.CallActivity[string](ctx, "TrackedActivity", in).Await()
		if err != nil {
			return "", err
		}
		if count < 2 {
			return "", durable.ContinueAsNew(ctx, strconv.Itoa(count+1))
		}
		return res, nil
	})
	out := e.requireCompleted(e.runOne(r, "can-stale-1", "CANOrch", "0"))
	require.Contains(e.t, out, "2", "expected final execution with count 2")
	require.Equal(e.t, uint32(3), execs.Load())
}

func testRetryTimeoutWithContinueAsNew(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	act(e.t, r, "FlakyActivity", func(_ durable.ActivityContext, in string) (string, error) {
		attempt := counter.Add(1)
		if exec, _ := strconv.Atoi(in); exec != 0 {
			return fmt.Sprintf("success exec%d attempt%d", exec, attempt), nil
		}
		return "", fmt.Errorf("fail exec0 attempt%d", attempt)
	})
	orch(e.t, r, "RetryCANOrch", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		exec, _ := strconv.Atoi(in)
		v, err := durable.CallActivity[string](ctx, "FlakyActivity", in, durable.ActivityOptions{Retry: durable.NewRetryPolicy(2).WithBackoff(durable.NoBackoff())}).Await()
		switch {
		case err == nil:
			return v, nil
		case exec < 1:
			return "", durable.ContinueAsNew(ctx, strconv.Itoa(exec+1))
		default:
			return "", err
		}
	})
	out := e.requireCompleted(e.runOne(r, "retry-can-1", "RetryCANOrch", "0"))
	require.Contains(e.t, out, "success", "expected success")
}

// --- concurrent orchestrations --------------------------------------------------------------------------------------

func testMultipleOrchestrationsRetrying(e *env) {
	var c1, c2 atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("Flaky1", flaky(&c1, 2,
		func(a uint32) string { return fmt.Sprintf("flaky1 fail %d", a) },
		func(a uint32) string { return fmt.Sprintf("flaky1 ok %d", a) })))
	must(e.t, r.AddActivity("Flaky2", flaky(&c2, 3,
		func(a uint32) string { return fmt.Sprintf("flaky2 fail %d", a) },
		func(a uint32) string { return fmt.Sprintf("flaky2 ok %d", a) })))
	for orchName, actName := range map[string]string{"Orch1": "Flaky1", "Orch2": "Flaky2"} {
		orch(e.t, r, orchName, func(ctx *durable.OrchestrationContext, _ string) (string, error) {
			return durable.CallActivity[string](ctx, actName, "", durable.ActivityOptions{Retry: durable.NewRetryPolicy(5).WithBackoff(durable.NoBackoff())}).Await()
		})
	}
	e.start(r, nil)
	e.startOrch("multi-1", "Orch1", "")
	e.startOrch("multi-2", "Orch2", "")
	require.Contains(e.t, e.completed("multi-1"), "flaky1 ok", "expected flaky1 success")
	require.Contains(e.t, e.completed("multi-2"), "flaky2 ok", "expected flaky2 success")
	require.Equal(e.t, uint32(2), c1.Load(), "flaky1 should have 2 attempts")
	require.Equal(e.t, uint32(3), c2.Load(), "flaky2 should have 3 attempts")
}

// --- retry on a session ---------------------------------------------------------------------------------------------

func retryOnSessionBasicSuccess(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	must(e.t, r.AddActivity("FlakySession", flaky(&counter, 2,
		func(a uint32) string { return fmt.Sprintf("fail attempt %d", a) },
		func(a uint32) string { return fmt.Sprintf("ok attempt %d", a) })))
	orch(e.t, r, "RetrySession", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		session, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, "FlakySession", "input", durable.ActivityOptions{Retry: durable.NewRetryPolicy(3).WithBackoff(durable.NoBackoff()), Session: session}).Await()
	})
	require.Equal(e.t, "ok attempt 2", e.requireCompleted(e.runOne(r, "retry-sess-1", "RetrySession", "")))
	require.Equal(e.t, uint32(2), counter.Load(), "Should have 2 attempts")
}

func retryOnSessionAllAttemptsFail(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "AlwaysFail", func(durable.ActivityContext, string) (string, error) { return "", errors.New("nope") })
	orch(e.t, r, "RetrySessionFail", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		session, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, "AlwaysFail", "", durable.ActivityOptions{Retry: durable.NewRetryPolicy(2).WithBackoff(durable.NoBackoff()), Session: session}).Await()
	})
	st := e.runOne(r, "retry-sess-fail", "RetrySessionFail", "")
	require.Equal(e.t, durable.StateFailed, st.State, "Expected Failed, got output %q", st.Output)
	require.Contains(e.t, st.FailureMessage(), "nope")
}

type retryQuery struct {
	SQL string `json:"sql"`
}

type retryQueryResult struct {
	Rows uint32 `json:"rows"`
}

func retryOnSessionTypedRoundTrip(e *env) {
	var counter atomic.Uint32
	r := durable.NewRegistry()
	act(e.t, r, "TypedSessionAct", func(_ durable.ActivityContext, in string) (string, error) {
		attempt := counter.Add(1)
		var q retryQuery
		if err := json.Unmarshal([]byte(in), &q); err != nil {
			return "", err
		}
		if attempt < 2 {
			return "", errors.New("transient")
		}
		b, err := json.Marshal(retryQueryResult{Rows: 42})
		return string(b), err
	})
	orch(e.t, r, "TypedRetrySession", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		session, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		res, err := durable.CallActivity[retryQueryResult](ctx, "TypedSessionAct", retryQuery{SQL: "SELECT 1"}, durable.ActivityOptions{Retry: durable.NewRetryPolicy(3).WithBackoff(durable.NoBackoff()), Session: session}).Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("rows=%d", res.Rows), nil
	})
	require.Equal(e.t, "rows=42", e.requireCompleted(e.runOne(r, "typed-retry-sess", "TypedRetrySession", "")))
	require.Equal(e.t, uint32(2), counter.Load())
}
