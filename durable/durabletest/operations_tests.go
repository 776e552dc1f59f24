package durabletest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// operationsTests are Go-only: the Client's search and its bulk cancel and
// purge over instances a real runtime ran, which duroxide's tests do not
// cover.
func operationsTests() []sample {
	return []sample{
		{"search_finds_instances_by_the_state_a_run_left", searchFindsInstancesByState},
		{"cancel_many_cancels_what_runs_and_skips_what_ended", cancelManyCancelsRunningSkipsTerminal},
		{"cancel_many_dry_run_changes_nothing", cancelManyDryRunChangesNothing},
		{"purge_many_deletes_terminal_trees_and_keeps_running", purgeManyDeletesTerminalKeepsRunning},
		{"bulk_reports_progress_per_page_and_honours_the_limit", bulkReportsProgressAndLimit},
		{"bulk_refuses_invalid_input", bulkRefusesInvalidInput},
		{"purge_many_reports_a_transient_failure_and_a_rerun_finishes", purgeManyTransientFailureThenRerun},
	}
}

// opsRegistry has "Wait" (waits for event "go"), "Done" (returns its
// input), "Fail" (fails with its input) and "Parent" (runs "Done" as a
// sub-orchestration).
func opsRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	orch(e.t, r, "Wait", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.WaitEvent[string](ctx, "go").Await()
	})
	orch(e.t, r, "Done", func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "Fail", func(_ *durable.OrchestrationContext, in string) (string, error) { return "", errors.New(in) })
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Done", in).Await()
	})
	return r
}

// searchIDs pages through q and returns the ids, sorted.
func (e *env) searchIDs(q duroxide.InstanceQuery) []string {
	e.t.Helper()
	ids := []string{}
	for {
		page, err := e.client().Search(e.ctx, q)
		require.NoError(e.t, err)
		for _, s := range page.Instances {
			ids = append(ids, s.InstanceID)
		}
		if page.ContinuationToken == "" {
			slices.Sort(ids)
			return ids
		}
		q.ContinuationToken = page.ContinuationToken
	}
}

func states(s ...duroxide.InstanceState) []duroxide.InstanceState { return s }

// startRunning starts n "Wait" instances named prefix-i and waits until
// each has run its first turn.
func (e *env) startRunning(prefix string, n int) []string {
	e.t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		e.startOrch(id, "Wait", "")
		ids = append(ids, id)
	}
	for _, id := range ids {
		e.waitRunning(id)
	}
	return ids
}

func searchFindsInstancesByState(e *env) {
	e.start(opsRegistry(e), fastOptions(nil))
	e.startRunning("find-run", 1)
	e.startOrch("find-done", "Done", "out")
	e.startOrch("find-fail", "Fail", "broken")
	e.startRunning("find-cancel", 1)
	e.cancel("find-cancel-0", "by operator")
	e.completed("find-done")
	e.failed("find-fail")
	e.failed("find-cancel-0")

	require.Equal(e.t, []string{"find-run-0"}, e.searchIDs(duroxide.InstanceQuery{States: states(duroxide.InstanceRunning)}))
	require.Equal(e.t, []string{"find-done"}, e.searchIDs(duroxide.InstanceQuery{States: states(duroxide.InstanceCompleted)}))
	require.Equal(e.t, []string{"find-fail"}, e.searchIDs(duroxide.InstanceQuery{States: states(duroxide.InstanceFailed)}))
	require.Equal(e.t, []string{"find-cancel-0"}, e.searchIDs(duroxide.InstanceQuery{States: states(duroxide.InstanceCancelled)}))
	require.Equal(e.t, []string{"find-fail"}, e.searchIDs(duroxide.InstanceQuery{Name: "Fail"}))

	page, err := e.client().Search(e.ctx, duroxide.InstanceQuery{IDPrefix: "find-cancel"})
	require.NoError(e.t, err)
	require.Len(e.t, page.Instances, 1)
	require.Equal(e.t, "canceled: by operator", page.Instances[0].Output, "the summary carries the cancellation reason")
	require.Equal(e.t, "Wait", page.Instances[0].Name)
	e.raise("find-run-0", "go", "x")
	e.completed("find-run-0")
}

func cancelManyCancelsRunningSkipsTerminal(e *env) {
	e.start(opsRegistry(e), fastOptions(nil))
	running := e.startRunning("cm", 5)
	e.startOrch("cm-done", "Done", "out")
	e.completed("cm-done")

	res, err := e.client().CancelMany(e.ctx, duroxide.InstanceQuery{IDPrefix: "cm-", PageSize: 2}, "maintenance", durable.BulkOptions{})
	require.NoError(e.t, err)
	require.Equal(e.t, 6, res.Total)
	require.Equal(e.t, 6, res.Examined)
	require.Equal(e.t, 5, res.Done)
	require.Equal(e.t, 1, res.Skipped, "the completed instance is skipped")
	require.Zero(e.t, res.Failed)
	for _, id := range running {
		require.Equal(e.t, "canceled: maintenance", e.failed(id))
	}
	require.Equal(e.t, running, e.searchIDs(duroxide.InstanceQuery{IDPrefix: "cm-", States: states(duroxide.InstanceCancelled)}))
	require.Equal(e.t, "out", e.completed("cm-done"), "a skipped instance is untouched")
}

func cancelManyDryRunChangesNothing(e *env) {
	e.start(opsRegistry(e), fastOptions(nil))
	running := e.startRunning("dry", 3)
	var seen []string
	res, err := e.client().CancelMany(e.ctx, duroxide.InstanceQuery{IDPrefix: "dry-"}, "x", durable.BulkOptions{DryRun: true, Progress: func(p durable.BulkProgress) {
		for _, it := range p.Page {
			require.Equal(e.t, durable.BulkDone, it.Outcome)
			seen = append(seen, it.InstanceID)
		}
	}})
	require.NoError(e.t, err)
	require.True(e.t, res.DryRun)
	require.Equal(e.t, 3, res.Done, "a dry run counts what it would cancel")
	slices.Sort(seen)
	require.Equal(e.t, running, seen, "the dry run names each instance")
	require.Equal(e.t, running, e.searchIDs(duroxide.InstanceQuery{IDPrefix: "dry-", States: states(duroxide.InstanceRunning)}), "nothing was cancelled")
	for _, id := range running {
		e.raise(id, "go", "x")
		e.completed(id)
	}
}

func purgeManyDeletesTerminalKeepsRunning(e *env) {
	e.start(opsRegistry(e), fastOptions(nil))
	e.startRunning("pm-run", 2)
	e.startOrch("pm-done", "Done", "out")
	e.startOrch("pm-fail", "Fail", "broken")
	e.startOrch("pm-parent", "Parent", "in")
	e.completed("pm-done")
	e.failed("pm-fail")
	e.completed("pm-parent")
	all := e.searchIDs(duroxide.InstanceQuery{IDPrefix: "pm-"})
	require.Len(e.t, all, 6, "two running, three terminal roots and the parent's child: %v", all)

	dry, err := e.client().PurgeMany(e.ctx, duroxide.InstanceQuery{IDPrefix: "pm-"}, durable.BulkOptions{DryRun: true})
	require.NoError(e.t, err)
	require.Equal(e.t, 3, dry.Done, "would purge the three terminal roots")
	require.Equal(e.t, 3, dry.Skipped, "two running instances and a sub-orchestration")
	require.Equal(e.t, all, e.searchIDs(duroxide.InstanceQuery{IDPrefix: "pm-"}), "a dry run deletes nothing")

	res, err := e.client().PurgeMany(e.ctx, duroxide.InstanceQuery{IDPrefix: "pm-"}, durable.BulkOptions{})
	require.NoError(e.t, err)
	require.Equal(e.t, 3, res.Done)
	require.Zero(e.t, res.Failed, "%v", res.Errors)
	require.Equal(e.t, uint64(4), res.Deleted.InstancesDeleted, "three roots and the child")
	require.Equal(e.t, []string{"pm-run-0", "pm-run-1"}, e.searchIDs(duroxide.InstanceQuery{IDPrefix: "pm-"}))
	for _, id := range []string{"pm-run-0", "pm-run-1"} {
		e.raise(id, "go", "x")
		e.completed(id)
	}
}

func bulkReportsProgressAndLimit(e *env) {
	e.start(opsRegistry(e), fastOptions(nil))
	for i := range 5 {
		e.startOrch(fmt.Sprintf("lim-%d", i), "Done", "out")
	}
	for i := range 5 {
		e.completed(fmt.Sprintf("lim-%d", i))
	}
	var reports []durable.BulkProgress
	res, err := e.client().PurgeMany(e.ctx, duroxide.InstanceQuery{IDPrefix: "lim-", PageSize: 1},
		durable.BulkOptions{Limit: 3, Progress: func(p durable.BulkProgress) { reports = append(reports, p) }})
	require.NoError(e.t, err)
	require.Equal(e.t, 3, res.Done, "stops at the limit")
	require.Len(e.t, e.searchIDs(duroxide.InstanceQuery{IDPrefix: "lim-"}), 2)
	require.Len(e.t, reports, 3, "one report per page of one")
	for i, p := range reports {
		require.Equal(e.t, 5, p.Total, "the total is the count at the start")
		require.Equal(e.t, i+1, p.Examined)
		require.Equal(e.t, i+1, p.Done)
		require.Len(e.t, p.Page, 1)
	}
}

func bulkRefusesInvalidInput(e *env) {
	c := e.client()
	_, err := c.CancelMany(e.ctx, duroxide.InstanceQuery{States: states("Running")}, "x", durable.BulkOptions{})
	require.ErrorIs(e.t, err, duroxide.ErrInvalidInput)
	_, err = c.PurgeMany(e.ctx, duroxide.InstanceQuery{IDPrefix: "\xff"}, durable.BulkOptions{})
	require.ErrorIs(e.t, err, duroxide.ErrInvalidInput)
	_, err = c.PurgeMany(e.ctx, duroxide.InstanceQuery{}, durable.BulkOptions{Limit: -1})
	require.ErrorIs(e.t, err, duroxide.ErrInvalidInput)
	_, err = c.Search(e.ctx, duroxide.InstanceQuery{ContinuationToken: "forged"})
	require.ErrorIs(e.t, err, duroxide.ErrInvalidInput)
}

// failingDeletes is a provider whose admin fails DeleteInstance of one
// instance with a retryable error, as a throttled or reset request would.
type failingDeletes struct {
	duroxide.Provider
	fail string
}

func (f failingDeletes) Admin() duroxide.ProviderAdmin {
	return failingDeleteAdmin{ProviderAdmin: f.Provider.Admin(), fail: f.fail}
}

type failingDeleteAdmin struct {
	duroxide.ProviderAdmin
	fail string
}

func (a failingDeleteAdmin) DeleteInstance(ctx context.Context, instance string, force bool) (*duroxide.DeleteInstanceResult, error) {
	if instance == a.fail {
		return nil, duroxide.Retryable("delete_instance", "injected: service unavailable")
	}
	return a.ProviderAdmin.DeleteInstance(ctx, instance, force)
}

func purgeManyTransientFailureThenRerun(e *env) {
	e.start(opsRegistry(e), fastOptions(nil))
	for i := range 4 {
		e.startOrch(fmt.Sprintf("tf-%d", i), "Done", "out")
	}
	for i := range 4 {
		e.completed(fmt.Sprintf("tf-%d", i))
	}
	q := duroxide.InstanceQuery{IDPrefix: "tf-", PageSize: 3}
	res, err := durable.NewClient(failingDeletes{Provider: e.p, fail: "tf-2"}).PurgeMany(e.ctx, q, durable.BulkOptions{})
	require.NoError(e.t, err, "one instance's failure does not stop the operation")
	require.Equal(e.t, 3, res.Done)
	require.Equal(e.t, 1, res.Failed)
	require.Len(e.t, res.Errors, 1)
	require.Equal(e.t, "tf-2", res.Errors[0].InstanceID)
	require.ErrorIs(e.t, res.Errors[0].Err, duroxide.ErrRetryable, "the failure keeps its kind")
	require.Equal(e.t, []string{"tf-2"}, e.searchIDs(q))

	again, err := e.client().PurgeMany(e.ctx, q, durable.BulkOptions{})
	require.NoError(e.t, err)
	require.Equal(e.t, 1, again.Done, "running it again purges what is left, and only that")
	require.Equal(e.t, []string{}, e.searchIDs(q))
}
