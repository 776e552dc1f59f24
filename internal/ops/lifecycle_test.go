package ops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
	"github.com/duroxide-go/cdb/memprovider"
)

// instanceUntil reads instance's detail until ok holds.
func instanceUntil(t *testing.T, s *ops.Service, instance string, ok func(*ops.Detail) bool) *ops.Detail {
	t.Helper()
	for {
		d, err := s.Instance(t.Context(), instance)
		must(t, err)
		if ok(d) {
			return d
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: condition never held: %s", instance, d.State)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestSuspendedInstance: the instance page's view of a suspended
// instance, and a bulk suspend that skips what ended.
func TestSuspendedInstance(t *testing.T) {
	s, c := service(t)
	begin(t, c, "w-1", "Wait", "")
	begin(t, c, "ok-1", "Echo", "x")
	var pages int
	res, err := s.Bulk(t.Context(), duroxide.InstanceQuery{}, ops.ActionSuspend, ops.Request{Reason: "hold"},
		durable.BulkOptions{Progress: func(durable.BulkProgress) { pages++ }})
	must(t, err)
	if res.Done != 1 || res.Skipped != 1 || res.Total != 2 || pages != 1 {
		t.Fatalf("bulk suspend: %+v, %d progress reports", res, pages)
	}
	d := instanceUntil(t, s, "w-1", func(d *ops.Detail) bool { return d.State == "Suspended" })
	if d.Summary.State != duroxide.InstanceSuspended || d.SuspendedReason != "hold" || d.Terminal() || d.Poisoned() {
		t.Fatalf("suspended: %+v", d)
	}
	must(t, s.Do(t.Context(), "w-1", ops.ActionResume, ops.Request{}))
	if err := s.Do(t.Context(), "ok-1", ops.ActionResume, ops.Request{}); !errors.Is(err, durable.ErrInvalidState) {
		t.Fatalf("resuming an ended instance: %v", err)
	}
}

// TestRedrivePoisoned: an instance failed by a poisoned activity reads
// as Poisoned, and Redrive runs the activity again.
func TestRedrivePoisoned(t *testing.T) {
	p := memprovider.New()
	fp := durabletest.NewFaultyProvider(p)
	reg := durable.NewRegistry()
	must(t, reg.AddActivity("Work", func(_ durable.ActivityContext, in string) (string, error) { return "did " + in, nil }))
	must(t, reg.AddOrchestration("OneStep", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Work", in).Await()
	}))
	must(t, reg.AddOrchestration("Fail", func(_ *durable.OrchestrationContext, in string) (string, error) { return "", errors.New(in) }))
	rt, err := durable.Start(t.Context(), fp, reg, &durable.Options{MaxAttempts: 2})
	must(t, err)
	t.Cleanup(func() { must(t, rt.Shutdown(context.Background())) })
	c := durable.NewClient(p)
	s := ops.New(c)

	begin(t, c, "bad-1", "Fail", "plain failure")
	fp.InjectActivityAttempts(3) // Work's first delivery counts as its third attempt
	begin(t, c, "px-1", "OneStep", "it")
	if d := instanceUntil(t, s, "bad-1", (*ops.Detail).Terminal); d.Poisoned() {
		t.Fatalf("a plain failure reads as poisoned: %+v", d)
	}
	if d := instanceUntil(t, s, "px-1", (*ops.Detail).Terminal); !d.Poisoned() || d.State != "Failed" {
		t.Fatalf("px-1: %s %q", d.State, d.Failure)
	}
	if err := s.Do(t.Context(), "bad-1", ops.ActionRedrive, ops.Request{}); !errors.Is(err, durable.ErrInvalidState) {
		t.Fatalf("redriving a plain failure: %v", err)
	}
	must(t, s.Do(t.Context(), "px-1", ops.ActionRedrive, ops.Request{}))
	d := instanceUntil(t, s, "px-1", func(d *ops.Detail) bool { return d.State == "Completed" })
	if d.Output != "did it" || len(d.Executions) != 2 || d.Poisoned() {
		t.Fatalf("after redrive: %+v", d)
	}
}
