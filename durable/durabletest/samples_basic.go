package durabletest

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// samples lists the ported e2e samples in the Rust file's order.
func samples() []sample {
	return []sample{
		{"sample_hello_world_fs", sampleHelloWorld},
		{"sample_basic_control_flow_fs", sampleBasicControlFlow},
		{"sample_loop_fs", sampleLoop},
		{"sample_error_handling_fs", sampleErrorHandling},
		{"sample_timeout_with_timer_race_fs", sampleTimeoutWithTimerRace},
		{"sample_select2_activity_vs_external_fs", sampleSelect2ActivityVsExternal},
		{"dtf_legacy_gabbar_greetings_fs", dtfLegacyGabbarGreetings},
		{"sample_system_activities_fs", sampleSystemActivities},
		{"sample_status_polling_fs", sampleStatusPolling},
		{"sample_sub_orchestration_basic_fs", sampleSubOrchestrationBasic},
		{"sample_sub_orchestration_fanout_fs", sampleSubOrchestrationFanout},
		{"sample_sub_orchestration_chained_fs", sampleSubOrchestrationChained},
		{"sample_detached_orchestration_scheduling_fs", sampleDetachedOrchestrationScheduling},
		{"sample_detached_then_activity_fs", sampleDetachedThenActivity},
		{"sample_continue_as_new_fs", sampleContinueAsNew},
		{"sample_typed_activity_and_orchestration_fs", sampleTypedActivityAndOrchestration},
		{"sample_typed_event_fs", sampleTypedEvent},
		{"sample_mixed_string_and_typed_typed_orch_fs", sampleMixedStringAndTypedTypedOrch},
		{"sample_mixed_string_and_typed_string_orch_fs", sampleMixedStringAndTypedStringOrch},
		{"sample_versioning_start_latest_vs_exact_fs", sampleVersioningStartLatestVsExact},
		{"sample_versioning_sub_orchestration_explicit_vs_policy_fs", sampleVersioningSubOrchestrationExplicitVsPolicy},
		{"sample_versioning_continue_as_new_upgrade_fs", sampleVersioningContinueAsNewUpgrade},
		{"sample_cancellation_parent_cascades_to_children_fs", sampleCancellationParentCascadesToChildren},
		{"sample_basic_error_handling_fs", sampleBasicErrorHandling},
		{"sample_nested_function_error_handling_fs", sampleNestedFunctionErrorHandling},
		{"sample_error_recovery_fs", sampleErrorRecovery},
		{"sample_self_pruning_eternal_orchestration", sampleSelfPruningEternalOrchestration},
		{"sample_config_hot_reload_persistent_events_fs", sampleConfigHotReloadPersistentEvents},
		{"sample_heterogeneous_workers_with_tags", sampleHeterogeneousWorkersWithTags},
		{"sample_starvation_safe_tagged_activity", sampleStarvationSafeTaggedActivity},
		{"sample_dual_runtime_tag_cooperation", sampleDualRuntimeTagCooperation},
		{"sample_kv_request_response", sampleKVRequestResponse},
		{"sample_kv_cross_orchestration_read", sampleKVCrossOrchestrationRead},
		{"sample_kv_read_modify_write_counter", sampleKVReadModifyWriteCounter},
		{"sample_orchestration_stats", sampleOrchestrationStats},
	}
}

func sampleHelloWorld(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Hello", func(ctx durable.ActivityContext, in string) (string, error) {
		ctx.Logger().Info("Hello activity started")
		return fmt.Sprintf("Hello, %s!", in), nil
	})
	orch(e.t, r, "HelloWorld", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.TraceInfo("hello_world started")
		res, err := durable.CallActivity[string](ctx, "Hello", "Rust").Await()
		if err != nil {
			return "", err
		}
		ctx.TraceInfo("hello_world result=" + res)
		return durable.CallActivity[string](ctx, "Hello", in).Await()
	})
	e.start(r, nil)
	e.startOrch("inst-sample-hello-1", "HelloWorld", "World")
	require.Equal(e.t, "Hello, World!", e.completed("inst-sample-hello-1"))
}

func sampleBasicControlFlow(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "GetFlag", func(durable.ActivityContext, string) (string, error) { return "yes", nil })
	act(e.t, r, "SayYes", func(durable.ActivityContext, string) (string, error) { return "picked_yes", nil })
	act(e.t, r, "SayNo", func(durable.ActivityContext, string) (string, error) { return "picked_no", nil })
	orch(e.t, r, "ControlFlow", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		flag, err := durable.CallActivity[string](ctx, "GetFlag", "").Await()
		if err != nil {
			return "", err
		}
		if flag == "yes" {
			return durable.CallActivity[string](ctx, "SayYes", "").Await()
		}
		return durable.CallActivity[string](ctx, "SayNo", "").Await()
	})
	e.start(r, nil)
	e.startOrch("inst-sample-cflow-1", "ControlFlow", "")
	require.Equal(e.t, "picked_yes", e.completed("inst-sample-cflow-1"))
}

func sampleLoop(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Append", func(_ durable.ActivityContext, in string) (string, error) { return in + "x", nil })
	orch(e.t, r, "LoopOrchestration", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		acc := "start"
		for i := 0; i < 3; i++ {
			var err error
			if acc, err = durable.CallActivity[string](ctx, "Append", acc).Await(); err != nil {
				return "", err
			}
			ctx.TraceInfo(fmt.Sprintf("loop iteration %d completed acc=%s", i, acc))
		}
		return acc, nil
	})
	e.start(r, nil)
	e.startOrch("inst-sample-loop-1", "LoopOrchestration", "")
	require.Equal(e.t, "startxxx", e.completed("inst-sample-loop-1"))
}

func sampleErrorHandling(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Fragile", func(_ durable.ActivityContext, in string) (string, error) {
		if in == "bad" {
			return "", errors.New("boom")
		}
		return "ok", nil
	})
	act(e.t, r, "Recover", func(durable.ActivityContext, string) (string, error) { return "recovered", nil })
	orch(e.t, r, "ErrorHandling", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.CallActivity[string](ctx, "Fragile", "bad").Await()
		if err == nil {
			return v, nil
		}
		ctx.TraceWarn("fragile failed error=" + err.Error())
		return durable.CallActivity[string](ctx, "Recover", "").Await()
	})
	e.start(r, nil)
	e.startOrch("inst-sample-err-1", "ErrorHandling", "")
	require.Equal(e.t, "recovered", e.completed("inst-sample-err-1"))
}

// The Rust sample races a 500 ms activity against a 100 ms timer. The
// activity here takes 3 s (and stops early when cancelled), so the timer
// wins even on a loaded machine; the assertion is Rust's.
func sampleTimeoutWithTimerRace(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "LongOp", func(ctx durable.ActivityContext, _ string) (string, error) {
		sleepCtx(ctx, 3*time.Second)
		return "done", nil
	})
	orch(e.t, r, "TimeoutSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := durable.CallActivity[string](ctx, "LongOp", "")
		t := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			if _, err := durable.NewTimer(ctx, 100*time.Millisecond).Await(); err != nil {
				return "", err
			}
			return "", errors.New("timeout")
		})
		if ctx.Select(a, t) == 0 {
			return a.Await()
		}
		return t.Await()
	})
	e.start(r, nil)
	e.startOrch("inst-timeout-sample", "TimeoutSample", "")
	require.Equal(e.t, "timeout", e.failed("inst-timeout-sample"))
}

// As above, the activity sleeps longer than Rust's 300 ms so the event,
// raised once the subscription is visible, wins on a loaded machine.
func sampleSelect2ActivityVsExternal(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Sleep", func(ctx durable.ActivityContext, _ string) (string, error) {
		sleepCtx(ctx, 3*time.Second)
		return "slept", nil
	})
	orch(e.t, r, "Select2ActVsEvt", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := durable.CallActivity[string](ctx, "Sleep", "")
		ev := durable.WaitEvent[string](ctx, "Go")
		if ctx.Select(a, ev) == 0 {
			s, err := a.Await()
			return "activity:" + s, err
		}
		s, err := ev.Await()
		return "event:" + s, err
	})
	e.start(r, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if e.waitSubscription("inst-s2-mixed", "Go") {
			_ = e.client().RaiseEvent(e.ctx, "inst-s2-mixed", "Go", "ok")
		}
	}()
	e.startOrch("inst-s2-mixed", "Select2ActVsEvt", "")
	require.Equal(e.t, "event:ok", e.completed("inst-s2-mixed"))
	<-done
}

func dtfLegacyGabbarGreetings(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Greetings", func(_ durable.ActivityContext, in string) (string, error) {
		return fmt.Sprintf("Hello, %s!", in), nil
	})
	orch(e.t, r, "Greetings", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := durable.CallActivity[string](ctx, "Greetings", "Gabbar")
		b := durable.CallActivity[string](ctx, "Greetings", "Samba")
		var vals []string
		for _, o := range durable.Join(ctx, a, b) {
			if o.Err != nil {
				return "", o.Err
			}
			vals = append(vals, o.Value)
		}
		sort.Strings(vals)
		return vals[0] + ", " + vals[1], nil
	})
	e.start(r, nil)
	e.startOrch("inst-dtf-greetings", "Greetings", "")
	require.Equal(e.t, "Hello, Gabbar!, Hello, Samba!", e.completed("inst-dtf-greetings"))
}

func sampleSystemActivities(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "SystemActivities", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		now, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		guid, err := ctx.NewGUID().Await()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("n=%d,g=%s", now.UnixMilli(), guid), nil
	})
	e.start(r, nil)
	e.startOrch("inst-system-acts", "SystemActivities", "")
	out := e.completed("inst-system-acts")
	require.True(e.t, strings.Contains(out, "n=") && strings.Contains(out, ",g="), out)
	parts := strings.FieldsFunc(out, func(c rune) bool { return c == ',' || c == '=' })
	require.GreaterOrEqual(e.t, len(parts), 4)
	now, _ := strconv.ParseUint(parts[1], 10, 64)
	require.Greater(e.t, now, uint64(0))
	require.Len(e.t, parts[3], 36)
	for _, c := range strings.ReplaceAll(parts[3], "-", "") {
		require.True(e.t, strings.ContainsRune("0123456789abcdefABCDEF", c), "guid %q", parts[3])
	}
}

func sampleStatusPolling(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "StatusSample", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.NewTimer(ctx, 20*time.Millisecond).Await(); err != nil {
			return "", err
		}
		return "done", nil
	})
	e.start(r, nil)
	e.startOrch("inst-status-sample", "StatusSample", "")
	require.Equal(e.t, "done", e.completed("inst-status-sample"))
}

func sampleSubOrchestrationBasic(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Upper", func(_ durable.ActivityContext, in string) (string, error) { return strings.ToUpper(in), nil })
	orch(e.t, r, "ChildUpper", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Upper", in).Await()
	})
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallSubOrchestration[string](ctx, "ChildUpper", in).Await()
		if err != nil {
			return "", err
		}
		return "parent:" + v, nil
	})
	e.start(r, nil)
	e.startOrch("inst-sub-basic", "Parent", "hi")
	require.Equal(e.t, "parent:HI", e.completed("inst-sub-basic"))
}

func sampleSubOrchestrationFanout(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Add", func(_ durable.ActivityContext, in string) (string, error) {
		a, b, _ := strings.Cut(in, ",")
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return strconv.FormatInt(x+y, 10), nil
	})
	orch(e.t, r, "ChildSum", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Add", in).Await()
	})
	orch(e.t, r, "ParentFan", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a := durable.CallSubOrchestration[string](ctx, "ChildSum", "1,2")
		b := durable.CallSubOrchestration[string](ctx, "ChildSum", "3,4")
		total := int64(0)
		for _, o := range durable.Join(ctx, a, b) {
			if o.Err != nil {
				return "", o.Err
			}
			n, err := strconv.ParseInt(o.Value, 10, 64)
			if err != nil {
				return "", err
			}
			total += n
		}
		return fmt.Sprintf("total=%d", total), nil
	})
	e.start(r, nil)
	e.startOrch("inst-sub-fan", "ParentFan", "")
	require.Equal(e.t, "total=10", e.completed("inst-sub-fan"))
}

func sampleSubOrchestrationChained(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "AppendX", func(_ durable.ActivityContext, in string) (string, error) { return in + "x", nil })
	orch(e.t, r, "Leaf", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "AppendX", in).Await()
	})
	orch(e.t, r, "Mid", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallSubOrchestration[string](ctx, "Leaf", in).Await()
		return v + "-mid", err
	})
	orch(e.t, r, "Root", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallSubOrchestration[string](ctx, "Mid", in).Await()
		return "root:" + v, err
	})
	e.start(r, nil)
	e.startOrch("inst-sub-chain", "Root", "a")
	require.Equal(e.t, "root:ax-mid", e.completed("inst-sub-chain"))
}

func sampleDetachedOrchestrationScheduling(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "Chained", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.NewTimer(ctx, 5*time.Millisecond).Await(); err != nil {
			return "", err
		}
		return durable.CallActivity[string](ctx, "Echo", in).Await()
	})
	orch(e.t, r, "Coordinator", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.StartOrchestration(ctx, "Chained", "W1", "A")
		durable.StartOrchestration(ctx, "Chained", "W2", "B")
		return "scheduled", nil
	})
	e.start(r, nil)
	e.startOrch("CoordinatorRoot", "Coordinator", "")
	require.Equal(e.t, "scheduled", e.completed("CoordinatorRoot"))
	for _, inst := range []string{"W1", "W2"} {
		out := e.completed(inst)
		require.True(e.t, out == "A" || out == "B", "%s output %q", inst, out)
	}
}

func sampleDetachedThenActivity(e *env) {
	r := durable.NewRegistry()
	act(e.t, r, "Echo", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "Child", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.NewTimer(ctx, 5*time.Millisecond).Await(); err != nil {
			return "", err
		}
		return "child-" + in, nil
	})
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.StartOrchestration(ctx, "Child", "detached-child", "payload")
		return durable.CallActivity[string](ctx, "Echo", "hello").Await()
	})
	e.start(r, nil)
	e.startOrch("ParentInstance", "Parent", "")
	require.Equal(e.t, "hello", e.completed("ParentInstance"))
	require.Equal(e.t, "child-payload", e.completed("detached-child"))
}

func sampleContinueAsNew(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "CanSample", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		n, _ := strconv.Atoi(in)
		if n < 3 {
			return "", durable.ContinueAsNew(ctx, strconv.Itoa(n+1))
		}
		return fmt.Sprintf("final:%d", n), nil
	})
	e.start(r, nil)
	e.startOrch("inst-sample-can", "CanSample", "0")
	require.Equal(e.t, "final:3", e.completed("inst-sample-can"))
	execs, err := e.admin().ListExecutions(e.ctx, "inst-sample-can")
	require.NoError(e.t, err)
	require.Equal(e.t, []uint64{1, 2, 3, 4}, execs)
}

// readyAck is the typed event sample's payload.
type readyAck struct {
	OK bool `json:"ok"`
}

func addActivity(_ durable.ActivityContext, req addReq) (addRes, error) {
	return addRes{Sum: req.A + req.B}, nil
}

func sampleTypedActivityAndOrchestration(e *env) {
	r := durable.NewRegistry()
	must(e.t, durable.RegisterActivity(r, "Add", addActivity))
	must(e.t, durable.RegisterOrchestration(r, "Adder", func(ctx *durable.OrchestrationContext, req addReq) (addRes, error) {
		return durable.CallActivity[addRes](ctx, "Add", req).Await()
	}))
	e.start(r, nil)
	e.startOrch("inst-typed-add", "Adder", addReq{A: 2, B: 3})
	res, err := durable.DecodeOutput[addRes](e.wait("inst-typed-add"))
	require.NoError(e.t, err)
	require.Equal(e.t, addRes{Sum: 5}, res)
}

func sampleTypedEvent(e *env) {
	r := durable.NewRegistry()
	must(e.t, durable.RegisterOrchestration(r, "WaitAck", func(ctx *durable.OrchestrationContext, _ struct{}) (string, error) {
		ack, err := durable.WaitEvent[readyAck](ctx, "Ready").Await()
		if err != nil {
			return "", err
		}
		return durable.Encode(ack)
	}))
	e.start(r, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if e.waitSubscription("inst-typed-ack", "Ready") {
			_ = e.client().RaiseEvent(e.ctx, "inst-typed-ack", "Ready", readyAck{OK: true})
		}
	}()
	e.startOrch("inst-typed-ack", "WaitAck", nil)
	out, err := durable.DecodeOutput[string](e.wait("inst-typed-ack"))
	require.NoError(e.t, err)
	require.Equal(e.t, `{"ok":true}`, out)
	<-done
}

func mixedActivities(e *env) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Upper", func(_ durable.ActivityContext, in string) (string, error) { return strings.ToUpper(in), nil })
	must(e.t, durable.RegisterActivity(r, "Add", addActivity))
	return r
}

// raceTypedAndString selects between a typed and a string activity, each
// mapped to text in its own block, as the Rust samples' async blocks do.
func raceTypedAndString(ctx *durable.OrchestrationContext, req addReq, upper string) (string, error) {
	typed := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
		r, err := durable.CallActivity[addRes](ctx, "Add", req).Await()
		return fmt.Sprintf("sum=%d", r.Sum), err
	})
	str := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
		s, err := durable.CallActivity[string](ctx, "Upper", upper).Await()
		return "up=" + s, err
	})
	if ctx.Select(typed, str) == 0 {
		return typed.Await()
	}
	return str.Await()
}

func sampleMixedStringAndTypedTypedOrch(e *env) {
	r := mixedActivities(e)
	must(e.t, durable.RegisterOrchestration(r, "MixedTypedOrch", func(ctx *durable.OrchestrationContext, req addReq) (string, error) {
		return raceTypedAndString(ctx, req, "hello")
	}))
	e.start(r, nil)
	e.startOrch("inst-mixed-typed", "MixedTypedOrch", addReq{A: 1, B: 2})
	s, err := durable.DecodeOutput[string](e.wait("inst-mixed-typed"))
	require.NoError(e.t, err)
	require.True(e.t, s == "sum=3" || s == "up=HELLO", s)
}

func sampleMixedStringAndTypedStringOrch(e *env) {
	r := mixedActivities(e)
	orch(e.t, r, "MixedStringOrch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return raceTypedAndString(ctx, addReq{A: 5, B: 7}, "race")
	})
	e.start(r, nil)
	e.startOrch("inst-mixed-string", "MixedStringOrch", "")
	s := e.completed("inst-mixed-string")
	require.True(e.t, s == "sum=12" || s == "up=RACE", s)
}

func constant(s string) durable.OrchestrationFunc {
	return func(*durable.OrchestrationContext, string) (string, error) { return s, nil }
}

func sampleVersioningStartLatestVsExact(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "Versioned", constant("v1"))
	must(e.t, r.AddOrchestrationVersion("Versioned", "2.0.0", constant("v2")))
	e.start(r, nil)
	e.startOrch("inst-vers-latest", "Versioned", "")
	require.Equal(e.t, "v2", e.completed("inst-vers-latest"))
	must(e.t, r.SetVersionPolicy("Versioned", durable.Exact("1.0.0")))
	e.startOrch("inst-vers-exact", "Versioned", "")
	require.Equal(e.t, "v1", e.completed("inst-vers-exact"))
}

func sampleVersioningSubOrchestrationExplicitVsPolicy(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "ParentVers", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		a, err := durable.CallSubOrchestration[string](ctx, "Child", "exp", durable.SubOrchestrationOptions{Version: "1.0.0"}).Await()
		if err != nil {
			return "", err
		}
		b, err := durable.CallSubOrchestration[string](ctx, "Child", "pol").Await()
		if err != nil {
			return "", err
		}
		return a + "-" + b, nil
	})
	orch(e.t, r, "Child", constant("c1"))
	must(e.t, r.AddOrchestrationVersion("Child", "2.0.0", constant("c2")))
	e.start(r, nil)
	e.startOrch("inst-sub-vers", "ParentVers", "")
	require.Equal(e.t, "c1-c2", e.completed("inst-sub-vers"))
}

func sampleVersioningContinueAsNewUpgrade(e *env) {
	r := durable.NewRegistry()
	orch(e.t, r, "LongRunner", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.TraceInfo("v1: upgrading via ContinueAsNew (default policy)")
		return "", durable.ContinueAsNew(ctx, "v1:"+in)
	})
	must(e.t, r.AddOrchestrationVersion("LongRunner", "2.0.0", func(_ *durable.OrchestrationContext, in string) (string, error) {
		return "upgraded:" + in, nil
	}))
	e.start(r, nil)
	require.NoError(e.t, e.client().StartOrchestration(e.ctx, "inst-can-upgrade", "LongRunner", "state", durable.StartOptions{Version: "1.0.0"}))
	require.Equal(e.t, "upgraded:v1:state", e.completed("inst-can-upgrade"))
	a := e.admin()
	execs, err := a.ListExecutions(e.ctx, "inst-can-upgrade")
	require.NoError(e.t, err)
	require.Equal(e.t, []uint64{1, 2}, execs)
	e1, err := a.ReadHistoryWithExecutionID(e.ctx, "inst-can-upgrade", 1)
	require.NoError(e.t, err)
	require.True(e.t, hasKind[duroxide.OrchestrationContinuedAsNew](e1, nil))
	e2, err := a.ReadHistoryWithExecutionID(e.ctx, "inst-can-upgrade", 2)
	require.NoError(e.t, err)
	require.True(e.t, hasKind(e2, func(s duroxide.OrchestrationStarted) bool { return s.Input == "v1:state" }))
}

// hasKind reports whether history holds an event of kind K matching pred
// (nil = any).
func hasKind[K duroxide.EventKind](history []duroxide.Event, pred func(K) bool) bool {
	for _, ev := range history {
		if k, ok := ev.Kind.(K); ok && (pred == nil || pred(k)) {
			return true
		}
	}
	return false
}
