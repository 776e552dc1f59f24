package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/memprovider"
)

// opsRegistry: Echo (versions 1.0.0 and 2.0.0, the latest starting new
// instances) sets its input as custom status and KV value and returns it;
// Fail fails in the activity Boom with its input as the message
// (demo.AddFail); Wait returns the data of the event its input names, or of the
// first message of the queue "inbox" if that comes first; Drift waits for
// the event "go" and then completes, unless drift is set: then its code no
// longer matches the history it wrote, and the runtime blocks it. Fixable
// runs the activity Step (counting its runs in steps), then Flaky, which
// fails until fixed is set, and returns both results.
func opsRegistry(t *testing.T, sw *switches) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	drift := &sw.drift
	must(t, reg.AddActivity("Step", func(_ durable.ActivityContext, in string) (string, error) {
		sw.steps.Add(1)
		return "step(" + in + ")", nil
	}))
	must(t, reg.AddActivity("Flaky", func(_ durable.ActivityContext, in string) (string, error) {
		if !sw.fixed.Load() {
			return "", errors.New("bug #123")
		}
		return "flaky(" + in + ")", nil
	}))
	must(t, reg.AddOrchestration("Fixable", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		a, err := durable.CallActivity[string](ctx, "Step", in).Await()
		if err != nil {
			return "", err
		}
		b, err := durable.CallActivity[string](ctx, "Flaky", in).Await()
		return a + " " + b, err
	}))
	echo := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus(in)
		ctx.SetKVValue("k", in)
		return in, nil
	}
	must(t, reg.AddOrchestration("Echo", echo))
	must(t, reg.AddOrchestrationVersion("Echo", "2.0.0", echo))
	must(t, reg.AddOrchestration("Drift", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		//durablecheck:ignore the flag stands for a deploy that changed this code (the nondeterminism this test shows)
		if drift.Load() {
			if _, err := durable.CallActivity[string](ctx, "Boom", in).Await(); err != nil {
				return "", err
			}
		}
		ctx.SetCustomStatus("waiting")
		return durable.WaitEvent[string](ctx, "go").Await()
	}))
	must(t, reg.AddOrchestration("Wait", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus("waiting")
		ev, msg := durable.WaitEvent[string](ctx, in), durable.DequeueEvent[string](ctx, "inbox")
		if ctx.Select(ev, msg) == 0 {
			return ev.Await()
		}
		return msg.Await()
	}))
	must(t, durable.RegisterOrchestration(reg, "Counter", func(ctx *durable.OrchestrationContext, _ string) (int, error) {
		total := 0
		durable.SetUpdateHandler(ctx, "add", func(_ *durable.OrchestrationContext, n int) (int, error) {
			total += n
			return total, nil
		}, durable.UpdateHandlerOptions[int]{Validator: func(_ *durable.OrchestrationContext, n int) error {
			if n <= 0 {
				return errors.New("add a positive number")
			}
			return nil
		}})
		_, err := durable.DequeueEvent[string](ctx, "inbox").Await()
		return total, err
	}))
	demo.AddFail(t, reg)
	return reg
}

// opsEnv is a runtime over a provider, driven through the CLI.
type opsEnv struct {
	t *testing.T
	p duroxide.Provider
	c *durable.Client
	*switches
}

// switches change the registry's code under running instances.
type switches struct {
	// drift changes Drift's code; fixed fixes Flaky; steps counts Step's
	// runs.
	drift, fixed atomic.Bool
	steps        atomic.Int32
}

// newOpsEnv runs on a memprovider.
func newOpsEnv(t *testing.T) *opsEnv { return newOpsEnvOn(t, memprovider.New()) }

// newCosmosEnv runs on the Cosmos DB provider over an in-memory
// in-process localcosmos server (embedded.Open with InMemory).
func newCosmosEnv(t *testing.T) *opsEnv { return newOpsEnvOn(t, demo.CosmosProvider(t)) }

func newOpsEnvOn(t *testing.T, p duroxide.Provider) *opsEnv {
	t.Helper()
	return newOpsEnvWith(t, p, p, nil)
}

// newOpsEnvWith runs the runtime over rp with opts, and the CLI and
// client over p (rp may wrap p).
func newOpsEnvWith(t *testing.T, p, rp duroxide.Provider, opts *durable.Options) *opsEnv {
	t.Helper()
	sw := new(switches)
	demo.StartRuntime(t, rp, opsRegistry(t, sw), opts)
	return &opsEnv{t: t, p: p, c: durable.NewClient(p), switches: sw}
}

// cli runs the command line and returns its exit code and output.
func (e *opsEnv) cli(args ...string) (int, string, string) {
	e.t.Helper()
	return run(e.t, nil, e.p, args...)
}

// want runs args and fails unless the exit code is code.
func (e *opsEnv) want(code int, args ...string) (string, string) {
	e.t.Helper()
	got, stdout, stderr := e.cli(args...)
	if got != code {
		e.t.Fatalf("%q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, got, code, stdout, stderr)
	}
	return stdout, stderr
}

// settle waits until instance is terminal, or (for Wait) waiting.
func (e *opsEnv) settle(instance string) *durable.OrchestrationStatus {
	e.t.Helper()
	return e.until(instance, func(st *durable.OrchestrationStatus) bool {
		return st.IsTerminal() || st.CustomStatus != nil && *st.CustomStatus == "waiting"
	})
}

// terminal waits until instance is terminal.
func (e *opsEnv) terminal(instance string) *durable.OrchestrationStatus {
	e.t.Helper()
	return e.until(instance, (*durable.OrchestrationStatus).IsTerminal)
}

// until waits until instance's status satisfies ok.
func (e *opsEnv) until(instance string, ok func(*durable.OrchestrationStatus) bool) *durable.OrchestrationStatus {
	e.t.Helper()
	return demo.Until(e.t, e.c, instance, ok)
}

// start starts instances through the CLI and waits for each to settle.
func (e *opsEnv) start(orchestration, input string, ids ...string) {
	e.t.Helper()
	for _, id := range ids {
		e.want(cli.ExitOK, "start", "-name", orchestration, "-input", input, id)
		e.settle(id)
	}
}

func TestListFiltersPagesAndJSON(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Echo", "x", "ok-1", "ok-2", "ok-3")
	e.start("Fail", "disk on fire", "bad-1")

	out, errOut := e.want(cli.ExitOK, "list")
	for _, id := range []string{"INSTANCE", "ok-1", "ok-2", "ok-3", "bad-1"} {
		if !strings.Contains(out, id) {
			t.Fatalf("list lacks %s:\n%s", id, out)
		}
	}
	if !strings.Contains(errOut, "4 of 4 matching") {
		t.Fatalf("list stderr: %s", errOut)
	}
	out, _ = e.want(cli.ExitOK, "search", "-status", "failed")
	if !strings.Contains(out, "bad-1") || strings.Contains(out, "ok-1") {
		t.Fatalf("status filter:\n%s", out)
	}
	out, _ = e.want(cli.ExitOK, "list", "-name", "Echo", "-created-after", "1h", "-created-before", "2999-01-01T00:00:00Z")
	if strings.Contains(out, "bad-1") || strings.Count(out, "ok-") != 3 {
		t.Fatalf("name and time filters:\n%s", out)
	}

	// Pages of two, followed by their tokens, see every instance once.
	seen := map[string]int{}
	token := regexp.MustCompile(`next page: -page (\S+)`)
	args := []string{"list", "-limit", "2", "-json"}
	for pages := 0; ; pages++ {
		if pages > 2 {
			t.Fatal("more pages than instances")
		}
		out, errOut := e.want(cli.ExitOK, args...)
		var page struct {
			Instances []struct{ ID string }
			Next      string
			Total     *int
		}
		must(t, json.Unmarshal([]byte(out), &page))
		// The first page counts the matches; the count is not repeated.
		if (pages == 0) != (page.Total != nil) || page.Total != nil && *page.Total != 4 || len(page.Instances) > 2 {
			t.Fatalf("page %d: %+v", pages, page)
		}
		for _, s := range page.Instances {
			seen[s.ID]++
		}
		if page.Next == "" {
			break
		}
		_ = errOut
		args = []string{"list", "-limit", "2", "-json", "-page", page.Next}
	}
	if len(seen) != 4 {
		t.Fatalf("pages saw %v", seen)
	}
	_, errOut = e.want(cli.ExitOK, "list", "-limit", "3")
	m := token.FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no next-page token in:\n%s", errOut)
	}
	out, _ = e.want(cli.ExitOK, "list", "-limit", "3", "-page", m[1])
	if strings.Count(out, "\n") != 2 { // the header and the fourth instance
		t.Fatalf("second page:\n%s", out)
	}
	out, _ = e.want(cli.ExitOK, "list", "-limit", "1", "-all")
	if strings.Count(out, "\n") != 5 {
		t.Fatalf("-all:\n%s", out)
	}
	e.want(cli.ExitUsage, "list", "-page", "not-a-token")
	e.want(cli.ExitUsage, "list", "-created-after", "yesterday")
}

func TestShowTimeline(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Fail", "disk on fire", "bad-1")
	e.start("Echo", "hello", "ok-1")

	out, _ := e.want(cli.ExitOK, "show", "bad-1")
	for _, want := range []string{"Status         Failed", "Failure        disk on fire", "Execution 1 (Failed)",
		"ActivityScheduled", "ActivityFailed", "Boom", "FAILED: disk on fire", "OrchestrationFailed"} {
		if !strings.Contains(out, want) {
			t.Fatalf("show lacks %q:\n%s", want, out)
		}
	}
	// The failed activity's row says how long it took ("2ms", "13ms"...).
	if !regexp.MustCompile(`ActivityFailed\s+Boom\s+\d+(\.\d+)?m?s\s+FAILED`).MatchString(out) {
		t.Fatalf("no duration on the failure:\n%s", out)
	}
	out, _ = e.want(cli.ExitOK, "show", "-json", "ok-1")
	var d struct {
		ID           string
		State        string
		Output       string
		CustomStatus *string `json:"custom_status"`
		KV           []struct{ Key, Value string }
		Executions   []struct {
			Timeline []struct{ Kind string }
		}
	}
	must(t, json.Unmarshal([]byte(out), &d))
	if d.ID != "ok-1" || d.State != "Completed" || d.Output != "hello" || d.CustomStatus == nil || *d.CustomStatus != "hello" ||
		len(d.KV) != 1 || d.KV[0].Value != "hello" || len(d.Executions) != 1 || len(d.Executions[0].Timeline) < 3 {
		t.Fatalf("show -json: %s", out)
	}
}

func TestShowKeepsControlCharactersOffTheTerminal(t *testing.T) {
	e := newOpsEnv(t)
	hostile := "\x1b[2J\x1b]0;pwned\x07<b>"
	e.start("Echo", hostile, "esc-1")
	out, _ := e.want(cli.ExitOK, "show", "esc-1")
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\x1b[2J\x1b]0;pwned\a<b>`) {
		t.Fatalf("control characters reached the output: %q", out)
	}
	out, _ = e.want(cli.ExitOK, "list")
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Fatalf("control characters reached the list: %q", out)
	}
}

func TestRaiseEnqueueCancel(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Wait", "approval", "w-1", "w-2", "w-3")

	out, _ := e.want(cli.ExitOK, "raise", "w-1", "approval", "yes")
	if st := e.terminal("w-1"); st.State != durable.StateCompleted || st.Output != "yes" || !strings.Contains(out, "raised approval to w-1") {
		t.Fatalf("raise: %v %q %s", st.State, st.Output, out)
	}
	e.want(cli.ExitOK, "enqueue", "w-2", "inbox", "queued")
	if st := e.terminal("w-2"); st.State != durable.StateCompleted || st.Output != "queued" {
		t.Fatalf("enqueue: %v %q", st.State, st.Output)
	}
	e.want(cli.ExitOK, "cancel", "w-3", "-reason", "stuck")
	if st := e.terminal("w-3"); st.FailureMessage() != "canceled: stuck" {
		t.Fatalf("cancel: %v %q", st.State, st.FailureMessage())
	}
	// A cancelled instance is its own state, apart from the failed ones.
	e.start("Fail", "x", "bad-1")
	out, _ = e.want(cli.ExitOK, "list", "-status", "cancelled")
	if !strings.Contains(out, "w-3") || !strings.Contains(out, "cancelled") || strings.Contains(out, "bad-1") {
		t.Fatalf("cancelled:\n%s", out)
	}
	out, _ = e.want(cli.ExitOK, "list", "-status", "failed")
	if !strings.Contains(out, "bad-1") || strings.Contains(out, "w-3") {
		t.Fatalf("failed:\n%s", out)
	}
}

func TestBulkCancelDryRunAndProgress(t *testing.T) {
	e := newOpsEnv(t)
	ids := []string{"w-1", "w-2", "w-3", "w-4", "w-5"}
	e.start("Wait", "approval", ids...)
	e.start("Wait", "approval", "keep-1")

	out, errOut := e.want(cli.ExitOK, "cancel", "-prefix", "w-", "-dry-run")
	if strings.Count(out, "\n") != 5 || strings.Contains(out, "keep-1") || !strings.Contains(errOut, "would apply to 5") {
		t.Fatalf("dry run:\n%s\n%s", out, errOut)
	}
	for _, id := range ids {
		if st := e.settle(id); st.State != durable.StateRunning {
			t.Fatalf("the dry run changed %s: %v", id, st.State)
		}
	}
	out, errOut = e.want(cli.ExitOK, "cancel", "-prefix", "w-", "-status", "Running", "-progress", "-reason", "bulk")
	if !strings.Contains(out, "cancel: 5 done, 0 skipped, 0 failed, of 5 matching") || !strings.Contains(errOut, "] 5/5 cancel\n") {
		t.Fatalf("bulk cancel:\n%s\n%q", out, errOut)
	}
	for _, id := range ids {
		if st := e.terminal(id); st.FailureMessage() != "canceled: bulk" {
			t.Fatalf("%s: %v %q", id, st.State, st.FailureMessage())
		}
	}
	if st := e.settle("keep-1"); st.State != durable.StateRunning {
		t.Fatalf("keep-1: %v", st.State)
	}
	// Without -progress and not on a terminal, no bar.
	e.start("Echo", "x", "done-1", "done-2")
	out, errOut = e.want(cli.ExitOK, "purge", "-name", "Echo")
	if !strings.Contains(out, "purge: 2 done, 0 skipped, 0 failed, of 2 matching") || strings.Contains(errOut, "[#") {
		t.Fatalf("bulk purge:\n%s\n%s", out, errOut)
	}
	e.want(cli.ExitNotFound, "show", "done-1")
	// A bulk purge skips running instances and says why.
	out, errOut = e.want(cli.ExitOK, "purge", "-prefix", "keep-")
	if !strings.Contains(out, "purge: 0 done, 1 skipped, 0 failed") || !strings.Contains(errOut, "skipped keep-1: not terminal") {
		t.Fatalf("refused purge:\n%s\n%s", out, errOut)
	}
	e.want(cli.ExitOK, "purge", "-prefix", "keep-", "-force")
}

func TestOperationExitCodes(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Wait", "approval", "w-1")
	e.start("Fail", "x", "bad-1")
	for _, tc := range []struct {
		code int
		args []string
		want string
	}{
		{cli.ExitNotFound, []string{"show", "nope"}, "not found"},
		{cli.ExitNotFound, []string{"cancel", "nope"}, "not found"},
		{cli.ExitNotFound, []string{"raise", "nope", "ev"}, "not found"},
		{cli.ExitNotFound, []string{"rewind", "nope"}, "not found"},
		{cli.ExitNotFound, []string{"suspend", "nope"}, "not found"},
		{cli.ExitFailed, []string{"rewind", "w-1"}, "needs a failed instance"},
		{cli.ExitFailed, []string{"restart", "w-1"}, "needs a terminal instance"},
		{cli.ExitFailed, []string{"resume", "w-1"}, "not suspended"},
		{cli.ExitFailed, []string{"suspend", "bad-1"}, "needs a running instance"},
		{cli.ExitFailed, []string{"redrive", "bad-1"}, "poison"},
		{cli.ExitUsage, []string{"restart", "-pin", "two", "bad-1"}, "version"},
		{cli.ExitFailed, []string{"purge", "w-1"}, "still running"},
		{cli.ExitFailed, []string{"start", "-name", "Wait", "-input", "other", "w-1"}, "exists"},
		{cli.ExitUsage, []string{"start", "w-9"}, "-name"},
		{cli.ExitUsage, []string{"cancel"}, "one INSTANCE, or filters"},
		{cli.ExitUsage, []string{"cancel", "w-1", "-prefix", "w"}, "one INSTANCE, or filters"},
		{cli.ExitUsage, []string{"show"}, "INSTANCE"},
		{cli.ExitUsage, []string{"raise", "w-1"}, "EVENT"},
		{cli.ExitUsage, []string{"list", "-limit", "-1"}, "page size"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			sub := *e
			sub.t = t
			_, stderr := sub.want(tc.code, tc.args...)
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr lacks %q:\n%s", tc.want, stderr)
			}
		})
	}
	if st := e.settle("w-1"); st.State != durable.StateRunning {
		t.Fatalf("a refused command changed w-1: %v", st.State)
	}
}

func TestUIServesTheDashboard(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Fail", "disk on fire", "bad-1")
	ctx, cancel := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	var out, errOut strings.Builder
	var mu sync.Mutex
	cmd := cli.Command{Stdout: &lockedWriter{&mu, &out}, Stderr: &lockedWriter{&mu, &errOut}, Ready: func(u string) { urls <- u },
		Open: func(context.Context) (duroxide.Provider, func() error, error) { return e.p, nil, nil }}
	done := make(chan int, 1)
	go func() { done <- cmd.Run(ctx, []string{"ui", "-addr", "127.0.0.1:0", "-read-only"}) }()
	var url string
	select {
	case url = <-urls:
	case code := <-done:
		t.Fatalf("ui exited %d: %s", code, errOut.String())
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url+"?status=Failed", nil)
	must(t, err)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	must(t, err)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "bad-1") || !strings.Contains(string(body), "read-only") {
		t.Fatalf("%d\n%s", resp.StatusCode, body)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	if code := <-done; code != cli.ExitOK {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("ui exit %d: %s", code, errOut.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestOnCosmos: the operator's path on the Cosmos DB provider (over
// cosmostest): find the failed instance, read its timeline, unstick a
// waiting one, cancel and purge the rest by filter.
func TestOnCosmos(t *testing.T) {
	e := newCosmosEnv(t)
	e.start("Fail", "disk on fire", "bad-1")
	e.start("Wait", "approval", "w-1", "w-2", "w-3")
	e.start("Echo", "hello", "ok-1")

	out, errOut := e.want(cli.ExitOK, "list", "-status", "Failed")
	if !strings.Contains(out, "bad-1") || strings.Contains(out, "w-1") || !strings.Contains(errOut, "1 of 1 matching") {
		t.Fatalf("list:\n%s\n%s", out, errOut)
	}
	out, _ = e.want(cli.ExitOK, "show", "bad-1")
	if !strings.Contains(out, "FAILED: disk on fire") || !strings.Contains(out, "ActivityFailed") {
		t.Fatalf("show:\n%s", out)
	}
	out, _ = e.want(cli.ExitOK, "show", "ok-1")
	if !strings.Contains(out, "Custom status  hello") || !strings.Contains(out, "k = hello") {
		t.Fatalf("show:\n%s", out)
	}
	e.want(cli.ExitOK, "raise", "w-1", "approval", "yes")
	if st := e.terminal("w-1"); st.Output != "yes" {
		t.Fatalf("raise: %v %q", st.State, st.Output)
	}
	out, errOut = e.want(cli.ExitOK, "cancel", "-status", "Running", "-prefix", "w-", "-progress")
	if !strings.Contains(out, "2 done, 0 skipped, 0 failed") || !strings.Contains(errOut, "2/2 cancel") {
		t.Fatalf("bulk cancel:\n%s\n%s", out, errOut)
	}
	for _, id := range []string{"w-2", "w-3"} {
		e.terminal(id)
	}
	out, _ = e.want(cli.ExitOK, "purge", "-prefix", "w-")
	if !strings.Contains(out, "3 done, 0 skipped, 0 failed") {
		t.Fatalf("purge:\n%s", out)
	}
	e.want(cli.ExitNotFound, "show", "w-2")
	// Fix the bug, rewind: the failed activity runs again, the step before
	// it does not.
	e.start("Fixable", "a", "fx-1")
	e.fixed.Store(true)
	e.want(cli.ExitOK, "rewind", "fx-1")
	e.until("fx-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateCompleted })
	if st := e.terminal("fx-1"); st.Output != "step(a) flaky(a)" || e.steps.Load() != 1 {
		t.Fatalf("rewind: %v %q, %d steps", st.State, st.Output, e.steps.Load())
	}
}

// TestBulkMaxAndDryRunSkips: -max stops a bulk action after that many;
// a dry run names the instances it would skip, and why.
func TestBulkMaxAndDryRunSkips(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Wait", "approval", "w-1", "w-2", "w-3")
	e.start("Echo", "x", "ok-1")

	out, errOut := e.want(cli.ExitOK, "purge", "-status", "running,completed", "-dry-run")
	if out != "ok-1\n" || strings.Count(errOut, ": not terminal") != 3 || !strings.Contains(errOut, "would apply to 1 instance(s), 3 skipped, of 4 matching") {
		t.Fatalf("dry run:\n%s\n%s", out, errOut)
	}
	out, _ = e.want(cli.ExitOK, "cancel", "-prefix", "w-", "-max", "2", "-reason", "two only")
	if !strings.Contains(out, "cancel: 2 done, 0 skipped, 0 failed, of 3 matching") {
		t.Fatalf("-max 2:\n%s", out)
	}
	// Two end cancelled; the third still waits (the cancels are already
	// delivered, so once two have ended a third would be too).
	for {
		var ended []string
		for _, id := range []string{"w-1", "w-2", "w-3"} {
			st, err := e.c.Status(t.Context(), id)
			must(t, err)
			if st.IsTerminal() {
				ended = append(ended, id)
			}
		}
		if len(ended) >= 2 {
			if len(ended) != 2 {
				t.Fatalf("-max 2 cancelled %v", ended)
			}
			break
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("cancelled only %v", ended)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// raise and enqueue with -start start a missing instance in the same
// write and only deliver to an existing one.
func TestSignalWithStart(t *testing.T) {
	for name, env := range map[string]func(*testing.T) *opsEnv{"memprovider": newOpsEnv, "cosmos": newCosmosEnv} {
		t.Run(name, func(t *testing.T) { testSignalWithStartOn(t, env(t)) })
	}
}

func testSignalWithStartOn(t *testing.T, e *opsEnv) {
	out, _ := e.want(cli.ExitOK, "enqueue", "-start", "Wait", "-input", "approval", "sws-1", "inbox", "first")
	if !strings.Contains(out, "enqueued inbox to sws-1, which it started as Wait") {
		t.Fatalf("enqueue -start: %s", out)
	}
	if st := e.terminal("sws-1"); st.State != durable.StateCompleted || st.Output != "first" {
		t.Fatalf("enqueue -start: %v %q", st.State, st.Output)
	}
	e.start("Wait", "approval", "sws-2")
	out, _ = e.want(cli.ExitOK, "raise", "-start", "Wait", "-input", "other", "sws-2", "approval", "yes")
	if strings.Contains(out, "started") {
		t.Fatalf("raise -start on an existing instance claims a start: %s", out)
	}
	if st := e.terminal("sws-2"); st.State != durable.StateCompleted || st.Output != "yes" {
		t.Fatalf("raise -start on an existing instance: %v %q", st.State, st.Output)
	}
	_, errOut := e.want(cli.ExitUsage, "raise", "-input", "x", "sws-3", "approval")
	if !strings.Contains(errOut, "-start") {
		t.Fatalf("-input without -start: %s", errOut)
	}
}

// update prints the answer, a retry with the same -id prints the first
// answer without running the handler again, and refusals and missing
// instances get their exit codes.
func TestUpdate(t *testing.T) {
	for name, env := range map[string]func(*testing.T) *opsEnv{"memprovider": newOpsEnv, "cosmos": newCosmosEnv} {
		t.Run(name, func(t *testing.T) { testUpdateOn(t, env(t)) })
	}
}

func testUpdateOn(t *testing.T, e *opsEnv) {
	e.want(cli.ExitOK, "start", "-name", "Counter", "upd-1")
	out, _ := e.want(cli.ExitOK, "update", "-id", "u-1", "upd-1", "add", "5")
	if strings.TrimSpace(out) != "5" {
		t.Fatalf("update: %q", out)
	}
	out, _ = e.want(cli.ExitOK, "update", "-id", "u-1", "upd-1", "add", "5")
	if strings.TrimSpace(out) != "5" {
		t.Fatalf("retried update ran again: %q", out)
	}
	out, _ = e.want(cli.ExitOK, "update", "upd-1", "add", "2")
	if strings.TrimSpace(out) != "7" {
		t.Fatalf("second update: %q", out)
	}
	_, errOut := e.want(cli.ExitFailed, "update", "upd-1", "add", "0")
	if !strings.Contains(errOut, "add a positive number") {
		t.Fatalf("rejected update: %s", errOut)
	}
	e.want(cli.ExitFailed, "update", "upd-1", "subtract", "1")
	e.want(cli.ExitNotFound, "update", "nope-1", "add", "1")
	e.want(cli.ExitUsage, "update", "upd-1")
	e.want(cli.ExitOK, "enqueue", "upd-1", "inbox", "done")
	if st := e.terminal("upd-1"); st.State != durable.StateCompleted || st.Output != "7" {
		t.Fatalf("counter: %v %q", st.State, st.Output)
	}
}
