package durabletest

import (
	"context"
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// subOrchestrationRoutingTests are Go-only: a child's result must reach
// the parent execution that called it when the runtime that completes the
// child never ran that parent (a restarted process, or another process
// when scaled out). The child carries its parent's execution
// (parent_execution_id, duroxide 0.1.31) from its start to its
// completion; nothing a process remembers decides where a result goes.
func subOrchestrationRoutingTests() []sample {
	return []sample{
		{"child_result_reaches_a_continued_parent_after_a_restart", childResultReachesAContinuedParentAfterARestart},
		{"child_that_continues_as_new_reports_to_the_execution_that_called_it", childThatContinuesAsNewReportsToTheExecutionThatCalledIt},
		{"poisoned_child_reports_to_a_continued_parent_after_a_restart", poisonedChildReportsToAContinuedParentAfterARestart},
		{"legacy_child_without_parent_execution_reports_to_the_parents_current_execution", legacyChildWithoutParentExecutionReportsToTheParentsCurrentExecution},
	}
}

// routingRegistry registers "Parent", which continues as new once and
// then awaits child (auto-named, so the call is the parent's execution 2
// event 2), and the children: "Child" waits for "Go"; "ChildCAN"
// continues as new once before waiting.
func routingRegistry(e *env, child string) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in != "called" {
			return "", durable.ContinueAsNew(ctx, "called")
		}
		out, err := durable.CallSubOrchestration[string](ctx, child, "x").Await()
		if err != nil {
			return "", err
		}
		return "parent<-" + out, nil
	})
	waitGo := func(ctx *durable.OrchestrationContext) (string, error) {
		if _, err := durable.WaitEvent[string](ctx, "Go").Await(); err != nil {
			return "", err
		}
		return "done", nil
	}
	orch(e.t, r, "Child", func(ctx *durable.OrchestrationContext, _ string) (string, error) { return waitGo(ctx) })
	orch(e.t, r, "ChildCAN", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if in != "again" {
			return "", durable.ContinueAsNew(ctx, "again")
		}
		return waitGo(ctx)
	})
	return r
}

// callChildThenStop runs parent on a first runtime over p until its
// second execution's child waits for "Go", then stops that runtime: the
// runtime that completes the child has never seen the parent. It returns
// the child's instance id.
func (e *env) callChildThenStop(p duroxide.Provider, reg *durable.Registry, parent string) string {
	e.t.Helper()
	rt1 := e.startOn(p, reg, nil)
	require.NoError(e.t, durable.NewClient(p).StartOrchestration(e.ctx, parent, "Parent", "first"))
	e.waitHist(parent, "the call of the child", anyKind[duroxide.SubOrchestrationScheduled])
	require.Equal(e.t, []uint64{1, 2}, e.executions(parent), "the parent calls the child from its second execution")
	// Auto-named children are prefixed with their parent's id.
	child := parent + "::" + e.childInstanceOf(parent)
	require.True(e.t, e.waitSubscription(child, "Go"), "the child should wait for Go")
	shutdownRuntime(e, rt1)
	return child
}

// requireStartedRecordsParent checks the OrchestrationStarted of the
// child's execution exec: it names parent's execution 2 and, encoded,
// is the bytes Rust's serde writes (parent_execution_id right after
// parent_id; %q quotes these ASCII values as serde_json does).
func (e *env) requireStartedRecordsParent(child string, exec uint64, name, input, parent string) {
	e.t.Helper()
	h := e.execHistory(child, exec)
	require.NotEmpty(e.t, h)
	ev := h[0]
	s, ok := ev.Kind.(duroxide.OrchestrationStarted)
	require.True(e.t, ok, "first event of %s execution %d: %s", child, exec, kinds(h))
	require.NotNil(e.t, s.ParentExecutionID, "the child's start must record its parent's execution")
	require.Equal(e.t, uint64(2), *s.ParentExecutionID)
	require.NotNil(e.t, s.ParentID)
	raw, err := ev.MarshalJSON()
	require.NoError(e.t, err)
	want := fmt.Sprintf(`{"event_id":1,"source_event_id":null,"instance_id":%q,"execution_id":%d,"timestamp_ms":%d,"duroxide_version":%q,`+
		`"type":"OrchestrationStarted","name":%q,"version":%q,"input":%q,"parent_instance":%q,"parent_id":%d,"parent_execution_id":2}`,
		child, exec, ev.TimestampMs, ev.DuroxideVersion, name, s.Version, input, parent, *s.ParentID)
	require.Equal(e.t, want, string(raw))
}

func childResultReachesAContinuedParentAfterARestart(e *env) {
	const parent = "route-restart"
	reg := routingRegistry(e, "Child")
	child := e.callChildThenStop(e.p, reg, parent)
	e.requireStartedRecordsParent(child, 1, "Child", "x", parent)

	e.start(reg, nil)
	e.raise(child, "Go", "go")
	require.Equal(e.t, "done", e.completed(child))
	require.Equal(e.t, "parent<-done", e.completed(parent), "the child's result must reach the parent's execution 2")
}

func childThatContinuesAsNewReportsToTheExecutionThatCalledIt(e *env) {
	const parent = "route-child-can"
	reg := routingRegistry(e, "ChildCAN")
	child := e.callChildThenStop(e.p, reg, parent)
	require.Equal(e.t, []uint64{1, 2}, e.executions(child))
	e.requireStartedRecordsParent(child, 1, "ChildCAN", "x", parent)
	e.requireStartedRecordsParent(child, 2, "ChildCAN", "again", parent)

	e.start(reg, nil)
	e.raise(child, "Go", "go")
	require.Equal(e.t, "done", e.completed(child))
	require.Equal(e.t, "parent<-done", e.completed(parent), "the child's result must reach the parent's execution 2")
}

func poisonedChildReportsToAContinuedParentAfterARestart(e *env) {
	const parent = "route-poison"
	reg := routingRegistry(e, "Child")
	child := e.callChildThenStop(e.p, reg, parent)

	// Nothing else is queued: the next fetch is the child's, poisoned.
	fp := NewFaultyProvider(e.p)
	fp.InjectOrchestrationAttempts(11)
	e.startOn(fp, reg, fastPoisonOptions(10))
	e.raise(child, "Go", "go")
	p := poisonDetails(e, e.wait(parent))
	require.Equal(e.t, child, p.MessageType.Instance, "the parent fails with its child's poison")
}

// legacyChildStarts is a store whose runtimes predate
// parent_execution_id: children are started without it, as duroxide
// 0.1.29 (and this runtime before 0.1.31's field) wrote them.
type legacyChildStarts struct{ duroxide.Provider }

func (p legacyChildStarts) AckOrchestrationItem(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit) error {
	items := make([]duroxide.WorkItem, len(commit.OrchestratorItems))
	for i, w := range commit.OrchestratorItems {
		if s, ok := w.(duroxide.StartOrchestrationItem); ok {
			s.ParentExecutionID = nil
			w = s
		}
		items[i] = w
	}
	commit.OrchestratorItems = items
	return p.Provider.AckOrchestrationItem(ctx, lockToken, commit)
}

// A child started before parent_execution_id existed records no parent
// execution; its result goes to the parent's current execution as the
// store holds it (duroxide's provider-read fallback), never to what the
// completing process happens to remember.
func legacyChildWithoutParentExecutionReportsToTheParentsCurrentExecution(e *env) {
	const parent = "route-legacy"
	reg := routingRegistry(e, "Child")
	child := e.callChildThenStop(legacyChildStarts{e.p}, reg, parent)
	h := e.execHistory(child, 1)
	s, ok := h[0].Kind.(duroxide.OrchestrationStarted)
	require.True(e.t, ok)
	require.Nil(e.t, s.ParentExecutionID, "a legacy start records no parent execution")

	e.start(reg, nil)
	e.raise(child, "Go", "go")
	require.Equal(e.t, "done", e.completed(child))
	require.Equal(e.t, "parent<-done", e.completed(parent), "the child's result must reach the parent's current execution")
}
