package durabletest

import (
	"strconv"

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
	}
}

// counterChild continues as new until its input reaches 2, then returns.
func counterChild(ctx *durable.OrchestrationContext, in string) (string, error) {
	n, err := strconv.Atoi(in)
	if err != nil {
		return "", err
	}
	if n < 2 {
		return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
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
		out, err := ctx.ScheduleSubOrchestrationWithID("Counter", "can-child", "0").Await()
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
		out, err := ctx.ScheduleSubOrchestration("Echo", in).Await()
		if err != nil {
			return "", err
		}
		if in != "3" {
			n, _ := strconv.Atoi(in)
			return "", ctx.ContinueAsNew(strconv.Itoa(n + 1))
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
		s, _, err := durable.GetKVValue[string](ctx, "greeting")
		if err != nil {
			return "", err
		}
		q, _, err := durable.GetKVValue[string](ctx, "rust_quoted")
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
	v, ok, err := durable.KVValue[string](e.ctx, e.client(), "typed-kv", "greeting")
	require.NoError(e.t, err)
	require.True(e.t, ok)
	require.Equal(e.t, "hello", v)
}
