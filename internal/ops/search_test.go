package ops_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
	"github.com/duroxide-go/cdb/memprovider"
)

// service runs Echo (returns its input), Fail (fails with its input) and
// Wait (waits for the event "go") on a memprovider.
func service(t *testing.T) (*ops.Service, *durable.Client) {
	t.Helper()
	reg := durable.NewRegistry()
	must(t, reg.AddOrchestration("Echo", func(_ *durable.OrchestrationContext, in string) (string, error) { return in, nil }))
	must(t, reg.AddOrchestration("Fail", func(_ *durable.OrchestrationContext, in string) (string, error) { return "", errors.New(in) }))
	must(t, reg.AddOrchestration("Wait", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus("waiting")
		return durable.WaitEvent[string](ctx, "go").Await()
	}))
	p := memprovider.New()
	rt, err := durable.Start(t.Context(), p, reg, nil)
	must(t, err)
	t.Cleanup(func() { must(t, rt.Shutdown(context.Background())) })
	c := durable.NewClient(p)
	return ops.New(c), c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// begin starts instance and waits until it ended or waits for an event.
func begin(t *testing.T, c *durable.Client, instance, orchestration, input string) {
	t.Helper()
	must(t, c.StartOrchestration(t.Context(), instance, orchestration, input))
	for {
		st, err := c.Status(t.Context(), instance)
		must(t, err)
		if st.IsTerminal() || st.CustomStatus != nil {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s never settled", instance)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestSearchSummaries(t *testing.T) {
	s, c := service(t)
	begin(t, c, "ok-1", "Echo", "hello")
	begin(t, c, "bad-1", "Fail", strings.Repeat("x", 300))
	begin(t, c, "w-1", "Wait", "")

	page, err := s.Search(t.Context(), duroxide.InstanceQuery{CountTotal: true, OrderBy: duroxide.OrderAny})
	must(t, err)
	if page.Total == nil || *page.Total != 3 || len(page.Instances) != 3 || page.Next != "" {
		t.Fatalf("page: %+v", page)
	}
	by := map[string]ops.Summary{}
	for _, sum := range page.Instances {
		by[sum.ID] = sum
	}
	ok, bad, w := by["ok-1"], by["bad-1"], by["w-1"]
	if ok.State != duroxide.InstanceCompleted || ok.Output != "hello" || ok.Completed.IsZero() || ok.Completed.Before(ok.Created) ||
		ok.Name != "Echo" || ok.Version != durable.DefaultVersion || ok.ExecutionID != 1 {
		t.Fatalf("ok-1: %+v", ok)
	}
	if bad.State != duroxide.InstanceFailed || len([]rune(bad.Output)) != duroxide.OutputSnippetChars {
		t.Fatalf("bad-1: %+v", bad)
	}
	if w.State != duroxide.InstanceRunning || !w.Completed.IsZero() {
		t.Fatalf("w-1: %+v", w)
	}

	// A page of DefaultPageSize unless asked; counts only when asked.
	page, err = s.Search(t.Context(), duroxide.InstanceQuery{PageSize: 1})
	must(t, err)
	if len(page.Instances) != 1 || page.Next == "" || page.Total != nil {
		t.Fatalf("page of one: %+v", page)
	}
	if _, err := s.Search(t.Context(), duroxide.InstanceQuery{PageSize: 1, ContinuationToken: "forged"}); !errors.Is(err, durable.ErrInvalidInput) {
		t.Fatalf("forged token: %v", err)
	}
}

func TestParseStates(t *testing.T) {
	got, err := ops.ParseStates(" Failed, cancelled ,")
	must(t, err)
	if !slices.Equal(got, []duroxide.InstanceState{duroxide.InstanceFailed, duroxide.InstanceCanceled}) {
		t.Fatalf("%v", got)
	}
	if got, err := ops.ParseStates(""); err != nil || got != nil {
		t.Fatalf("empty: %v %v", got, err)
	}
	if _, err := ops.ParseStates("failed,stuck"); !errors.Is(err, durable.ErrInvalidInput) {
		t.Fatalf("unknown: %v", err)
	}
	if st := ops.States(); !slices.Contains(st, "blocked") || !slices.Contains(st, "suspended") {
		t.Fatalf("States: %v", st)
	}
}

// TestBulk: cancel and purge go to the Client's bulk operations (the
// request's reason and force reach them); raise and enqueue are not
// supported in bulk.
func TestBulk(t *testing.T) {
	s, c := service(t)
	begin(t, c, "w-1", "Wait", "")
	begin(t, c, "ok-1", "Echo", "x")
	all := duroxide.InstanceQuery{}

	var pages []durable.BulkProgress
	res, err := s.Bulk(t.Context(), all, ops.ActionCancel, ops.Request{Reason: "bulk"}, durable.BulkOptions{
		Progress: func(p durable.BulkProgress) { pages = append(pages, p) }})
	must(t, err)
	if res.Done != 1 || res.Skipped != 1 || res.Total != 2 || len(pages) != 1 || pages[0].Examined != 2 {
		t.Fatalf("cancel: %+v, progress %+v", res, pages)
	}
	st, err := c.WaitForOrchestration(t.Context(), "w-1", durable.WaitOptions{Timeout: time.Minute})
	must(t, err)
	if st.FailureMessage() != "canceled: bulk" {
		t.Fatalf("w-1: %v %q", st.State, st.FailureMessage())
	}
	begin(t, c, "w-2", "Wait", "")
	res, err = s.Bulk(t.Context(), all, ops.ActionPurge, ops.Request{}, durable.BulkOptions{DryRun: true})
	must(t, err)
	if res.Done != 2 || res.Skipped != 1 {
		t.Fatalf("purge dry run: %+v", res)
	}
	res, err = s.Bulk(t.Context(), all, ops.ActionPurge, ops.Request{Force: true}, durable.BulkOptions{})
	must(t, err)
	if res.Done != 3 || res.Deleted.InstancesDeleted != 3 {
		t.Fatalf("forced purge: %+v", res)
	}
	for _, a := range []ops.Action{ops.ActionRaise, ops.ActionEnqueue} {
		if _, err := s.Bulk(t.Context(), all, a, ops.Request{}, durable.BulkOptions{}); !errors.Is(err, ops.ErrNotSupported) || ops.BulkSupported(a) {
			t.Fatalf("%s: %v", a, err)
		}
	}
}
