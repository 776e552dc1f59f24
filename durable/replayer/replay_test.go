package replayer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/replayer"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// sources are the two ways to read the recorded histories: straight from
// the provider, and from an export file written from it.
func sources(t *testing.T, p duroxide.Provider) map[string]replayer.Source {
	path := filepath.Join(t.TempDir(), "histories.json")
	must(t, replayer.ExportToFile(t.Context(), path, replayer.FromProvider(p, replayer.Filter{})))
	return map[string]replayer.Source{
		"provider": replayer.FromProvider(p, replayer.Filter{}),
		"export":   replayer.FromExportFile(path),
	}
}

func TestReplayUnchangedCodePasses(t *testing.T) {
	p := record(t)
	for name, src := range sources(t, p) {
		t.Run(name, func(t *testing.T) {
			rep, err := replayer.Replay(t.Context(), original.registry(t), src)
			must(t, err)
			if len(rep.Results) != 4 || !rep.OK() {
				var b strings.Builder
				must(t, rep.WriteText(&b))
				t.Fatalf("want 4 executions replaying, got %d:\n%s", len(rep.Results), b.String())
			}
			replayer.RequireReplays(t, original.registry(t), src)
		})
	}
}

func TestReplayCatchesReorderedActivities(t *testing.T) {
	p := record(t)
	for name, src := range sources(t, p) {
		t.Run(name, func(t *testing.T) {
			rep, err := replayer.Replay(t.Context(), reordered.registry(t), src)
			must(t, err)
			got := byInstance(rep)
			for _, id := range []string{"order-1", "wait-1"} {
				r := got[id]
				if r.Status != replayer.StatusNondeterministic {
					t.Errorf("%s: status %q (%s), want nondeterministic", id, r.Status, r.Message)
				}
				// The mismatching call (B) and the recorded event (A).
				if !strings.Contains(r.Message, `"B"`) || !strings.Contains(r.Message, `"A"`) {
					t.Errorf("%s: message %q does not name the call and the event", id, r.Message)
				}
			}
			for _, id := range []string{"loop-1", "other-1"} {
				if r := got[id]; r.Status != replayer.StatusOK {
					t.Errorf("%s: %s", id, r)
				}
			}
			if rep.OK() || len(rep.Failures()) != 2 {
				t.Errorf("want 2 failures, got %v", rep.Failures())
			}
		})
	}
}

// TestReplayMessageIsTheRuntimes: the replayer's text for a mismatch is
// the one the runtime holds the instance with when the reordered code is
// deployed, and replaying wrote nothing.
func TestReplayMessageIsTheRuntimes(t *testing.T) {
	ctx := t.Context()
	p := record(t)
	all := replayer.FromProvider(p, replayer.Filter{})
	before := exportBytes(t, all)
	rep, err := replayer.Replay(ctx, reordered.registry(t), all)
	must(t, err)
	if after := exportBytes(t, all); !bytes.Equal(before, after) {
		t.Fatalf("replaying changed the store:\nbefore %s\nafter  %s", before, after)
	}
	want := byInstance(rep)["wait-1"].Message

	rt, err := durable.Start(ctx, p, reordered.registry(t), nil)
	must(t, err)
	defer func() { must(t, rt.Shutdown(context.WithoutCancel(ctx))) }()
	c := durable.NewClient(p)
	must(t, c.RaiseEvent(ctx, "wait-1", "go", "now"))
	for {
		st, err := c.Status(ctx, "wait-1")
		must(t, err)
		if st.BlockedReason != "" {
			if st.BlockedReason != want {
				t.Fatalf("runtime holds the instance with\n%q\nreplayer reported\n%q", st.BlockedReason, want)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the runtime never held wait-1")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func TestReplayReportsUnregisteredOrchestration(t *testing.T) {
	p := record(t)
	for name, src := range sources(t, p) {
		t.Run(name, func(t *testing.T) {
			rep, err := replayer.Replay(t.Context(), code{}.registry(t), src)
			must(t, err)
			fails := rep.Failures()
			if len(fails) != 1 || fails[0].Instance != "other-1" || fails[0].Status != replayer.StatusUnregistered ||
				fails[0].Orchestration != "Other" {
				t.Fatalf("want other-1 unregistered, got %v", fails)
			}
		})
	}
}

func TestReplayProviderFilter(t *testing.T) {
	p := record(t)
	for _, tc := range []struct {
		name   string
		filter replayer.Filter
		want   []string
	}{
		{"orchestration", replayer.Filter{Orchestration: "Waiter"}, []string{"wait-1"}},
		{"status", replayer.Filter{Status: "Completed"}, []string{"order-1", "other-1"}},
		{"prefix", replayer.Filter{IDPrefix: "o"}, []string{"order-1", "other-1"}},
		{"all executions", replayer.Filter{IDPrefix: "loop", AllExecutions: true}, []string{"loop-1#1", "loop-1#2"}},
		{"current execution", replayer.Filter{IDPrefix: "loop"}, []string{"loop-1#2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := replayer.Replay(t.Context(), original.registry(t), replayer.FromProvider(p, tc.filter))
			must(t, err)
			var got []string
			for _, r := range rep.Results {
				id := r.Instance
				if strings.Contains(tc.name, "execution") {
					id += "#" + string(rune('0'+r.ExecutionID))
				}
				got = append(got, id)
				if r.Status != replayer.StatusOK {
					t.Errorf("%s", r)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReplayRebuildsKVSnapshot: loop-1's second execution picks its
// activity by the KV value its first execution set; without that value in
// the snapshot its replay would schedule the other activity.
func TestReplayRebuildsKVSnapshot(t *testing.T) {
	p := record(t)
	rep, err := replayer.Replay(t.Context(), original.registry(t), replayer.FromProvider(p, replayer.Filter{IDPrefix: "loop"}))
	must(t, err)
	if len(rep.Results) != 1 || !rep.OK() {
		t.Fatalf("loop-1 does not replay: %v", rep.Results)
	}
	src := sources(t, p)["export"]
	var snap map[string]duroxide.KVEntry
	must(t, src.Executions(t.Context(), func(ex replayer.Execution) error {
		if ex.Instance == "loop-1" {
			snap = ex.KVSnapshot
		}
		return nil
	}))
	if snap["phase"].Value != "two" {
		t.Fatalf("exported snapshot of loop-1: %v", snap)
	}
}

func TestReplayHistoryErrors(t *testing.T) {
	started := duroxide.Event{EventID: 1, InstanceID: "bad", ExecutionID: 1, DuroxideVersion: durable.DuroxideVersion,
		Kind: duroxide.OrchestrationStarted{Name: "Order", Version: "1.0.0", Input: "x"}}
	timer := duroxide.Event{EventID: 1, InstanceID: "bad", ExecutionID: 1, DuroxideVersion: durable.DuroxideVersion,
		Kind: duroxide.TimerCreated{FireAtMs: 1}}
	docs := map[string]replayer.Execution{
		"no started": {Instance: "bad", ExecutionID: 1, Events: []duroxide.Event{timer}},
		"empty":      {Instance: "bad", ExecutionID: 1},
		"unreadable": {Instance: "bad", ExecutionID: 1, ReadError: "corrupt row"},
		"fine":       {Instance: "good", ExecutionID: 1, Events: []duroxide.Event{started}},
	}
	for name, ex := range docs {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			must(t, replayer.Export(t.Context(), &b, sliceSource{ex}))
			rep, err := replayer.Replay(t.Context(), original.registry(t), replayer.FromExport(&b))
			must(t, err)
			want := replayer.StatusHistoryError
			if name == "fine" {
				want = replayer.StatusOK
			}
			if len(rep.Results) != 1 || rep.Results[0].Status != want || (want != replayer.StatusOK && rep.Results[0].Message == "") {
				t.Fatalf("want %s with a message, got %v", want, rep.Results)
			}
		})
	}
}

// TestReplayResolvesRecordedVersion: the recorded version is replayed
// exactly; "0.0.0", the placeholder of an unresolved start, resolves by the
// registry's policy as the runtime does.
func TestReplayResolvesRecordedVersion(t *testing.T) {
	for version, want := range map[string]replayer.Status{
		"1.0.0": replayer.StatusOK, "0.0.0": replayer.StatusOK, "2.0.0": replayer.StatusUnregistered, "x": replayer.StatusUnregistered,
	} {
		t.Run(version, func(t *testing.T) {
			ev := duroxide.Event{EventID: 1, InstanceID: "v", ExecutionID: 1,
				Kind: duroxide.OrchestrationStarted{Name: "Order", Version: version, Input: "x"}}
			rep, err := replayer.Replay(t.Context(), original.registry(t), sliceSource{{Instance: "v", ExecutionID: 1, Events: []duroxide.Event{ev}}})
			must(t, err)
			if len(rep.Results) != 1 || rep.Results[0].Status != want {
				t.Fatalf("want %s, got %v", want, rep.Results)
			}
		})
	}
}

func TestReplayRejectsOtherFormats(t *testing.T) {
	for name, doc := range map[string]string{
		"other format": `{"format":"duroxide-history-export/v2","executions":[]}`,
		"no format":    `{"executions":[]}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := replayer.Replay(t.Context(), original.registry(t), replayer.FromExport(strings.NewReader(doc)))
			if !errors.Is(err, replayer.ErrExportFormat) {
				t.Fatalf("got %v, want ErrExportFormat", err)
			}
		})
	}
	_, err := replayer.Replay(t.Context(), original.registry(t), replayer.FromExport(strings.NewReader("{")))
	if err == nil {
		t.Fatal("a truncated document replayed")
	}
}

// TestRequireReplaysListsFailures: the test helper fails the test with one
// error per instance that does not replay.
func TestRequireReplaysListsFailures(t *testing.T) {
	p := record(t)
	rec := &recorder{TB: t}
	replayer.RequireReplays(rec, reordered.registry(t), replayer.FromProvider(p, replayer.Filter{}))
	if len(rec.errors) != 2 || !strings.Contains(rec.errors[0], "order-1") || !strings.Contains(rec.errors[1], "wait-1") {
		t.Fatalf("errors: %q", rec.errors)
	}
	for _, e := range rec.errors {
		if !strings.Contains(e, "nondeterministic") {
			t.Errorf("error %q does not say nondeterministic", e)
		}
	}
}

// recorder collects a testing.TB's errors instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.TB.Fatalf("unexpected fatal: "+format, args...)
}

// sliceSource yields fixed executions.
type sliceSource []replayer.Execution

func (s sliceSource) Executions(ctx context.Context, fn func(replayer.Execution) error) error {
	for _, ex := range s {
		if err := fn(ex); err != nil {
			return err
		}
	}
	return nil
}

// TestReplayReportsPanics: code that panics while replaying a live
// instance's history would fail the instance on its next turn; a history
// that already ended in that failure is not reported.
func TestReplayReportsPanics(t *testing.T) {
	p := record(t)
	reg := durable.NewRegistry()
	for _, name := range []string{"Order", "Waiter", "Looper", "Other"} {
		must(t, reg.AddOrchestration(name, func(ctx *durable.OrchestrationContext, in string) (string, error) {
			panic("boom")
		}))
	}
	rep, err := replayer.Replay(t.Context(), reg, replayer.FromProvider(p, replayer.Filter{IDPrefix: "wait"}))
	must(t, err)
	if len(rep.Results) != 1 || rep.Results[0].Status != replayer.StatusPanicked || !strings.Contains(rep.Results[0].Message, "boom") {
		t.Fatalf("want wait-1 panicked, got %v", rep.Results)
	}

	failed := []duroxide.Event{
		{EventID: 1, InstanceID: "f", ExecutionID: 1, Kind: duroxide.OrchestrationStarted{Name: "Order", Version: "1.0.0"}},
		{EventID: 2, InstanceID: "f", ExecutionID: 1, Kind: duroxide.OrchestrationFailed{Details: duroxide.ApplicationError{
			Kind: duroxide.AppErrorKind{Type: duroxide.AppPanicked}, Message: "boom"}}},
	}
	rep, err = replayer.Replay(t.Context(), reg, sliceSource{{Instance: "f", ExecutionID: 1, Events: failed}})
	must(t, err)
	if !rep.OK() {
		t.Fatalf("a recorded failure reported: %v", rep.Results)
	}
}

// TestReplayReportsUnreadableInstances: an instance whose record or
// history the provider cannot read (deleted meanwhile, a corrupt document)
// is reported as a history error and the others are still checked.
func TestReplayReportsUnreadableInstances(t *testing.T) {
	p := record(t)
	for _, broken := range []string{"info", "history"} {
		t.Run(broken, func(t *testing.T) {
			fp := failingProvider{Provider: p, instance: "order-1", broken: broken}
			rep, err := replayer.Replay(t.Context(), original.registry(t), replayer.FromProvider(fp, replayer.Filter{}))
			must(t, err)
			got := byInstance(rep)
			if r := got["order-1"]; r.Status != replayer.StatusHistoryError || !strings.Contains(r.Message, "unreadable") {
				t.Fatalf("order-1: %s", r)
			}
			if len(rep.Results) != 4 || len(rep.Failures()) != 1 {
				t.Fatalf("want the 3 others checked: %v", rep.Results)
			}
		})
	}
}

// failingProvider fails reads of one instance's record or history.
type failingProvider struct {
	*memprovider.Provider
	instance, broken string
}

func (f failingProvider) Admin() duroxide.ProviderAdmin {
	return failingAdmin{ProviderAdmin: f.Provider.Admin(), f: f}
}

type failingAdmin struct {
	duroxide.ProviderAdmin
	f failingProvider
}

func (a failingAdmin) InstanceInfo(ctx context.Context, instance string) (*duroxide.InstanceInfo, error) {
	if instance == a.f.instance && a.f.broken == "info" {
		return nil, errors.New("instance record unreadable")
	}
	return a.ProviderAdmin.InstanceInfo(ctx, instance)
}

func (a failingAdmin) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	if instance == a.f.instance && a.f.broken == "history" {
		return nil, errors.New("history document unreadable")
	}
	return a.ProviderAdmin.ReadHistoryWithExecutionID(ctx, instance, executionID)
}

func TestReplayWithoutRegistry(t *testing.T) {
	_, err := replayer.Replay(t.Context(), nil, sliceSource{})
	if !errors.Is(err, replayer.ErrNoRegistry) {
		t.Fatalf("got %v, want ErrNoRegistry", err)
	}
	started := duroxide.Event{EventID: 1, InstanceID: "n", ExecutionID: 1,
		Kind: duroxide.OrchestrationStarted{Name: "Order", Version: "1.0.0"}}
	err = durable.CheckHistory(nil, durable.RecordedExecution{Instance: "n", ExecutionID: 1, History: []duroxide.Event{started}})
	if !errors.Is(err, durable.ErrUnregisteredOrchestration) {
		t.Fatalf("CheckHistory(nil): got %v, want ErrUnregisteredOrchestration", err)
	}
}
