package durabletest

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// semanticsTests are Go regression tests, not Rust ports: behaviour where
// the Go runtime deliberately differs from duroxide 0.1.29 because 0.1.29
// loses work (issue 20: sub-orchestrations across continue-as-new, the
// nondeterminism policy, the one typed codec rule).
func semanticsTests() []sample {
	return []sample{
		{"sub_orchestration_continue_as_new_reports_to_parent", subOrchestrationContinueAsNewReportsToParent},
		{"auto_child_ids_unique_per_parent_execution", autoChildIDsUniquePerParentExecution},
		{"typed_kv_string_reads_back_raw_through_client", typedKVStringReadsBackRawThroughClient},
		{"nondeterminism_blocks_until_code_replays_cleanly", nondeterminismBlocksUntilCodeReplaysCleanly},
		{"nondeterminism_fail_policy_fails_the_instance", nondeterminismFailPolicyFailsTheInstance},
		{"nondeterminism_block_fails_a_message_history_disagrees_with", nondeterminismBlockFailsBadMessage},
	}
}

// counterChild continues as new until its input reaches 2, then returns.
func counterChild(ctx *durable.OrchestrationContext, in string) (string, error) {
	n, err := strconv.Atoi(in)
	if err != nil {
		return "", err
	}
	if n < 2 {
		return "", durable.ContinueAsNew(ctx, strconv.Itoa(n+1))
	}
	return "counted:" + in, nil
}

// A child that continues as new still completes its parent's future: the
// parent link travels on the ContinueAsNew item into the next execution's
// OrchestrationStarted.
func subOrchestrationContinueAsNewReportsToParent(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Counter", counterChild)
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		out, err := durable.CallSubOrchestration[string](ctx, "Counter", "0", durable.SubOrchestrationOptions{InstanceID: "can-child"}).Await()
		return "parent saw " + out, err
	})
	e.start(r, fastOptions(nil))
	e.startOrch("can-parent", "Parent", "")
	require.Equal(e.t, "parent saw counted:2", e.completed("can-parent"))
	for exec := uint64(1); exec <= 3; exec++ {
		_, started, ok := findKind[duroxide.OrchestrationStarted](e.executionHistory("can-child", exec))
		require.True(e.t, ok, "execution %d has no OrchestrationStarted", exec)
		require.NotNil(e.t, started.ParentInstance, "execution %d lost its parent", exec)
		require.Equal(e.t, "can-parent", *started.ParentInstance)
		require.NotNil(e.t, started.ParentID)
		require.Equal(e.t, uint64(2), *started.ParentID, "execution %d", exec)
	}
}

// An eternal orchestration that calls a child with an automatic id in
// every execution gets a new child each time; the first execution's ids
// are Rust's ("{parent}::sub::{event_id}").
func autoChildIDsUniquePerParentExecution(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Echo", func(_ *durable.OrchestrationContext, in string) (string, error) { return "echo:" + in, nil })
	orch(e.t, r, "Eternal", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		out, err := durable.CallSubOrchestration[string](ctx, "Echo", in).Await()
		if err != nil {
			return "", err
		}
		if in != "3" {
			n, _ := strconv.Atoi(in)
			return "", durable.ContinueAsNew(ctx, strconv.Itoa(n+1))
		}
		return out, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("eternal", "Eternal", "1")
	require.Equal(e.t, "echo:3", e.completed("eternal"))
	var children []string
	for exec := uint64(1); exec <= 3; exec++ {
		_, sched, ok := findKind[duroxide.SubOrchestrationScheduled](e.executionHistory("eternal", exec))
		require.True(e.t, ok, "execution %d scheduled no child", exec)
		children = append(children, sched.Instance)
	}
	require.Equal(e.t, "sub::2", children[0], "the first execution keeps Rust's automatic id")
	require.Len(e.t, uniq(children), 3, "automatic child ids repeat across executions: %v", children)
	for i, child := range children {
		st := e.wait("eternal::" + child)
		require.Equal(e.t, durable.StateCompleted, st.State)
		require.Equal(e.t, "echo:"+strconv.Itoa(i+1), st.Output)
	}
}

func uniq(s []string) map[string]bool {
	m := map[string]bool{}
	for _, v := range s {
		m[v] = true
	}
	return m
}

// A string stored through the typed KV API is stored as every typed
// string is (raw text, as a typed input travels), so the client reads
// back what was stored; typed reads also accept the JSON-quoted form Rust's
// set_kv_value_typed writes.
func typedKVStringReadsBackRawThroughClient(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TypedKV", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		durable.SetKVValue(ctx, "greeting", in)
		durable.SetKVValue(ctx, "point", map[string]int{"y": 2, "x": 1})
		ctx.SetKVValue("rust_quoted", `"from rust"`)
		s, _, err := durable.KVValue[string](ctx, "greeting")
		if err != nil {
			return "", err
		}
		q, _, err := durable.KVValue[string](ctx, "rust_quoted")
		if err != nil {
			return "", err
		}
		return s + "|" + q, nil
	})
	e.start(r, fastOptions(nil))
	e.startOrch("typed-kv", "TypedKV", "hello")
	require.Equal(e.t, "hello|from rust", e.completed("typed-kv"))
	_, started, _ := findKind[duroxide.OrchestrationStarted](e.history("typed-kv"))
	require.Equal(e.t, "hello", started.Input, "typed input travels as raw text")
	require.Equal(e.t, "hello", *e.kvValue("typed-kv", "greeting"), "typed KV string must be stored as the typed input is")
	require.Equal(e.t, `{"x":1,"y":2}`, *e.kvValue("typed-kv", "point"))
	v, ok, err := durable.ClientKVValue[string](e.ctx, e.client(), "typed-kv", "greeting")
	require.NoError(e.t, err)
	require.True(e.t, ok)
	require.Equal(e.t, "hello", v)
}

// swapRegistry registers "Swap": one activity (first) then a wait for the
// "go" event. Code that calls a different first activity does not match
// the history the original code wrote.
func swapRegistry(e *env, first string) *durable.Registry {
	r := durable.NewRegistry()
	for _, name := range []string{"A", "B"} {
		act(e.t, r, name, func(_ durable.ActivityContext, in string) (string, error) { return name + "(" + in + ")", nil })
	}
	orch(e.t, r, "Swap", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallActivity[string](ctx, first, in).Await()
		if err != nil {
			return "", err
		}
		ev, err := durable.WaitEvent[string](ctx, "go").Await()
		return v + "|" + ev, err
	})
	return r
}

// startPolicy starts a runtime with the given nondeterminism policy (the
// ported Rust tests run with NondeterminismFail: testOptions) and a short
// block backoff; stop shuts it down.
func (e *env) startPolicy(reg *durable.Registry, policy durable.NondeterminismPolicy, log slog.Handler) (stop func()) {
	e.t.Helper()
	o := testOptions(fastOptions(func(o *durable.Options) {
		o.MaxAttempts = 2
		o.NondeterminismBackoff = durable.Backoff{Base: 5 * time.Millisecond, Max: 20 * time.Millisecond}
		if log != nil {
			o.Logger = slog.New(log)
		}
	}))
	o.Nondeterminism = policy
	rt, err := durable.Start(e.ctx, e.p, reg, o)
	require.NoError(e.t, err)
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		if err := rt.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			require.NoError(e.t, err)
		}
	}
	e.t.Cleanup(stop)
	return stop
}

// runSwapToWait runs "Swap" with first activity A until it waits for
// "go", and returns its history then.
func (e *env) runSwapToWait(instance string) []duroxide.Event {
	stop := e.startPolicy(swapRegistry(e, "A"), durable.NondeterminismBlock, nil)
	e.startOrch(instance, "Swap", "x")
	h := e.waitHist(instance, "waiting for go", func(h []duroxide.Event) bool { return hasKind[duroxide.ExternalSubscribed](h, nil) })
	stop()
	return h
}

// Code changed under a running instance (its first activity call swapped)
// blocks it: no history is written, the attempts do not make it poison
// (MaxAttempts is 2 and it is blocked many times), the status says
// Blocked with the mismatch, and an ERROR log names the call and the
// event. Rolling the code back resumes it as if nothing happened.
func nondeterminismBlocksUntilCodeReplaysCleanly(e *env) {
	before := e.runSwapToWait("swap-block")
	logs := &logCapture{}
	stop := e.startPolicy(swapRegistry(e, "B"), durable.NondeterminismBlock, logs)
	e.raise("swap-block", "go", "now")
	e.waitFor("5 blocked turns", func() bool { return logs.count(slog.LevelError, "nondeterminism") >= 5 })
	st, err := e.client().Status(e.ctx, "swap-block")
	require.NoError(e.t, err)
	require.Equal(e.t, durable.StateBlocked, st.State, "status: %+v", st)
	require.Contains(e.t, st.BlockedReason, "schedule mismatch")
	require.Contains(e.t, st.BlockedReason, `name: "A"`)
	require.Contains(e.t, st.BlockedReason, `name: "B"`)
	rec, ok := logs.find(slog.LevelError, "nondeterminism")
	require.True(e.t, ok)
	require.Equal(e.t, "swap-block", rec.attrs["instance_id"])
	require.Contains(e.t, rec.attrs["error"], `name: "B"`, "the log names the call the code made")
	require.Contains(e.t, rec.attrs["error"], `name: "A"`, "the log names the event history holds")
	stop()
	require.Equal(e.t, kinds(before), kinds(e.history("swap-block")), "blocking wrote history")

	e.startPolicy(swapRegistry(e, "A"), durable.NondeterminismBlock, nil)
	require.Equal(e.t, "A(x)|now", e.completed("swap-block"))
	after := e.history("swap-block")
	require.Equal(e.t, kinds(before), kinds(after[:len(before)]), "the resumed instance kept its history")
	st, err = e.client().Status(e.ctx, "swap-block")
	require.NoError(e.t, err)
	require.Empty(e.t, st.BlockedReason)
}

// With NondeterminismFail the same swap fails the instance, as in Rust.
func nondeterminismFailPolicyFailsTheInstance(e *env) {
	e.runSwapToWait("swap-fail")
	e.startPolicy(swapRegistry(e, "B"), durable.NondeterminismFail, nil)
	e.raise("swap-fail", "go", "now")
	msg := e.nondeterminismMessage("swap-fail")
	require.True(e.t, strings.Contains(msg, "schedule mismatch"), msg)
}

// Blocking is for code that does not replay history, which deploying
// other code can fix. A message that disagrees with history (a completion
// of the wrong kind) cannot be fixed by any code: it fails the instance
// under NondeterminismBlock too, instead of holding it for ever.
func nondeterminismBlockFailsBadMessage(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "TimerWait", timerThenOutput(time.Hour, "timer_completed"))
	e.startPolicy(r, durable.NondeterminismBlock, nil)
	e.startOrch("bad-message", "TimerWait", "")
	h := e.waitHist("bad-message", "timer created", func(h []duroxide.Event) bool { return hasKind[duroxide.TimerCreated](h, nil) })
	ev, _, _ := findKind[duroxide.TimerCreated](h)
	require.NoError(e.t, e.p.EnqueueForOrchestrator(e.ctx, duroxide.ActivityCompletedItem{
		Instance: "bad-message", ExecutionID: 1, ID: ev.EventID, Result: "wrong_kind_result",
	}, 0))
	msg := e.nondeterminismMessage("bad-message")
	require.Contains(e.t, msg, "kind mismatch")
}
