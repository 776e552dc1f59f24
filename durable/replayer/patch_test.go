package replayer_test

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/replayer"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

var updatePatchTestdata = flag.Bool("update", false, "record "+beforePatchFile+" by running the code from before the patch")

// beforePatchFile holds histories the code from before the "receipt"
// patch recorded (TestRecordHistoriesBeforeThePatch with -update):
// "passed-1" sent its parcel and waits for "go", "early-1" waits for
// "start", "done-1" completed.
const beforePatchFile = "testdata/before-receipt-patch.json"

// shipCode is one version of "Ship": it waits for "start", packs, sends
// (after a receipt, on the patch's new branch) and waits for "go".
type shipCode int

const (
	beforePatch shipCode = iota
	withPatch
	patchDeprecated
)

func (c shipCode) registry(t *testing.T) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	echo := func(_ durable.ActivityContext, in string) (string, error) { return in, nil }
	for _, a := range []string{"Pack", "Receipt", "Send"} {
		must(t, reg.AddActivity(a, echo))
	}
	must(t, reg.AddOrchestration("Ship", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.WaitEvent[string](ctx, "start").Await(); err != nil {
			return "", err
		}
		parcel, err := durable.CallActivity[string](ctx, "Pack", in).Await()
		if err != nil {
			return "", err
		}
		receipt := false
		switch c {
		case withPatch:
			receipt = ctx.Patched("receipt")
		case patchDeprecated:
			ctx.DeprecatePatch("receipt")
			receipt = true
		}
		if receipt {
			if parcel, err = durable.CallActivity[string](ctx, "Receipt", parcel).Await(); err != nil {
				return "", err
			}
		}
		if _, err := durable.CallActivity[string](ctx, "Send", parcel).Await(); err != nil {
			return "", err
		}
		return durable.WaitEvent[string](ctx, "go").Await()
	}))
	return reg
}

// recordShips runs code until "passed-1" waits for "go", "early-1" for
// "start" and "done-1" completed, and returns the provider.
func recordShips(t *testing.T, code shipCode) *memprovider.Provider {
	t.Helper()
	ctx := t.Context()
	p := memprovider.New()
	rt, err := durable.Start(ctx, p, code.registry(t), &durable.Options{MinPollInterval: 10 * time.Millisecond})
	must(t, err)
	defer func() { must(t, rt.Shutdown(context.WithoutCancel(ctx))) }()
	c := durable.NewClient(p)
	for _, id := range []string{"passed-1", "early-1", "done-1"} {
		must(t, c.StartOrchestration(ctx, id, "Ship", id))
	}
	waitSubscribed := func(id, name string) {
		t.Helper()
		for !subscribed(t, p, id, name) {
			select {
			case <-ctx.Done():
				t.Fatalf("%s never waited for %q", id, name)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	for _, id := range []string{"passed-1", "early-1", "done-1"} {
		waitSubscribed(id, "start")
	}
	for _, id := range []string{"passed-1", "done-1"} {
		must(t, c.RaiseEvent(ctx, id, "start", ""))
		waitSubscribed(id, "go")
	}
	must(t, c.RaiseEvent(ctx, "done-1", "go", "done"))
	st, err := c.WaitForOrchestration(ctx, "done-1", durable.WaitOptions{Timeout: time.Minute})
	must(t, err)
	if st.State != durable.StateCompleted {
		t.Fatalf("done-1: %v", st.State)
	}
	return p
}

// TestRecordHistoriesBeforeThePatch rewrites beforePatchFile with -update.
func TestRecordHistoriesBeforeThePatch(t *testing.T) {
	if !*updatePatchTestdata {
		t.Skip("run with -update to record " + beforePatchFile)
	}
	p := recordShips(t, beforePatch)
	must(t, replayer.ExportToFile(t.Context(), beforePatchFile, replayer.FromProvider(p, replayer.Filter{})))
}

// The histories from before the patch replay through the patched code:
// the instance that passed the point takes the old branch, and is the one
// that still needs it; the completed one took it too but needs nothing.
func TestReplayReportsOldPatchBranches(t *testing.T) {
	src := replayer.FromExportFile(beforePatchFile)
	rep, err := replayer.Replay(t.Context(), withPatch.registry(t), src)
	must(t, err)
	var text strings.Builder
	must(t, rep.WriteText(&text))
	if !rep.OK() {
		t.Fatalf("the patched code must replay the old histories:\n%s", text.String())
	}
	got := byInstance(rep)
	if len(got) != 3 {
		t.Fatalf("want 3 executions, got %v", rep.Results)
	}
	if old := got["passed-1"].OldPatches; !slices.Equal(old, []string{"receipt"}) || got["passed-1"].Ended {
		t.Errorf("passed-1: old patches %v, ended %v; want [receipt], running", old, got["passed-1"].Ended)
	}
	if old := got["early-1"].OldPatches; len(old) != 0 {
		t.Errorf("early-1 has not reached the patch, so takes the new branch; old patches %v", old)
	}
	if old := got["done-1"].OldPatches; !slices.Equal(old, []string{"receipt"}) || !got["done-1"].Ended {
		t.Errorf("done-1: old patches %v, ended %v; want [receipt], ended", old, got["done-1"].Ended)
	}
	need := rep.OldPatchBranches("receipt")
	if len(need) != 1 || need[0].Instance != "passed-1" {
		t.Errorf("OldPatchBranches(receipt) = %v, want passed-1 only", need)
	}
	if len(rep.OldPatchBranches("other")) != 0 {
		t.Error("no instance needs a patch the code does not make")
	}
	want := `old patch branch: instance "passed-1" execution 1 (Ship@1.0.0) takes the old branch of receipt`
	if !strings.Contains(text.String(), want) || !strings.Contains(text.String(), ", 1 running on an old patch branch") {
		t.Errorf("report text lacks the old branch:\n%s", text.String())
	}
}

// Deprecating the patch too early is caught: the running instance that
// passed the point without the marker does not replay the deprecated
// code.
func TestReplayCatchesAnEarlyDeprecation(t *testing.T) {
	rep, err := replayer.Replay(t.Context(), patchDeprecated.registry(t), replayer.FromExportFile(beforePatchFile))
	must(t, err)
	got := byInstance(rep)
	if r := got["passed-1"]; r.Status != replayer.StatusNondeterministic || !strings.Contains(r.Message, `"Receipt"`) {
		t.Errorf("passed-1: %s; want nondeterministic at the Receipt call", r)
	}
	if r := got["early-1"]; r.Status != replayer.StatusOK {
		t.Errorf("early-1: %s; want ok", r)
	}
}

// Histories the patched code recorded carry the marker: nothing needs the
// old branch, and the deprecated code replays them.
func TestReplayAfterThePatchNeedsNoOldBranch(t *testing.T) {
	p := recordShips(t, withPatch)
	src := replayer.FromProvider(p, replayer.Filter{})
	rep, err := replayer.Replay(t.Context(), withPatch.registry(t), src)
	must(t, err)
	if !rep.OK() || len(rep.OldPatchBranches("receipt")) != 0 {
		t.Fatalf("want every history replaying on the new branch, got %v", rep.Results)
	}
	for _, r := range rep.Results {
		if len(r.OldPatches) != 0 {
			t.Errorf("%s: old patches %v", r.Instance, r.OldPatches)
		}
	}
	replayer.RequireReplays(t, patchDeprecated.registry(t), src)
}

// subscribed reports whether instance's current history waits for name.
func subscribed(t *testing.T, p duroxide.Provider, instance, name string) bool {
	t.Helper()
	events, err := p.Read(t.Context(), instance)
	must(t, err)
	for _, e := range events {
		if k, ok := e.Kind.(duroxide.ExternalSubscribed); ok && k.Name == name {
			return true
		}
	}
	return false
}
