package browsertest

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/internal/leaktest"
	"github.com/duroxide-go/cdb/memprovider"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// registry: Order charges a card (the activity fails for a "declined"
// card until funded is set: the fix) and ships the order, or, for an input
// starting "manual:", waits for the event "approval" and returns its data.
func registry(t *testing.T, funded *atomic.Bool) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	must(t, reg.AddActivity("ChargeCard", func(_ durable.ActivityContext, in string) (string, error) {
		time.Sleep(40 * time.Millisecond) // the payment service's latency, shown in the timeline
		if strings.Contains(in, "declined") && !funded.Load() {
			return "", errors.New("card declined: insufficient funds")
		}
		return "charged " + in, nil
	}))
	must(t, reg.AddOrchestration("Order", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus(`{"step":"charging"}`)
		charged, err := durable.CallActivity[string](ctx, "ChargeCard", in).Await()
		if err != nil {
			return "", err
		}
		ctx.SetKVValue("charge", charged)
		if !strings.HasPrefix(in, "manual:") {
			ctx.SetCustomStatus(`{"step":"shipped"}`)
			return "shipped: " + charged, nil
		}
		ctx.SetCustomStatus(`{"step":"awaiting approval"}`)
		return durable.WaitEvent[string](ctx, "approval").Await()
	}))
	return reg
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// chromium returns the browser binary, skipping the test when there is
// none unless BROWSERTEST_REQUIRE is set (as .ci/run sets it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("BROWSERTEST_REQUIRE") != "" {
		t.Fatal("no chromium on PATH (apt-get install -y chromium)")
	}
	t.Skip("no chromium on PATH: apt-get install -y chromium (set BROWSERTEST_REQUIRE=1 to fail instead)")
	return ""
}

// artifacts is the screenshot directory.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("BROWSERTEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "duroxide-browsertest")
	}
	must(t, os.MkdirAll(dir, 0o755))
	t.Logf("screenshots in %s", dir)
	return dir
}

// session is a headless Chromium tab on the dashboard.
type session struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
}

func newSession(t *testing.T, base string) *session {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // root in CI containers
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// Start the browser on the tab's own context: a browser started by a
	// first action under a step's timeout would close when that step ends.
	must(t, chromedp.Do(ctx))
	return &session{t: t, ctx: ctx, base: base, dir: artifacts(t)}
}

// run runs actions with a bound on each step, so a missing element fails
// the test with its selector instead of hanging it.
func (s *session) run(step string, actions ...chromedp.Action[chromedp.Void]) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		s.t.Fatalf("%s: %v", step, err)
	}
}

// value runs one action that returns a value.
func value[T any](s *session, step string, a chromedp.Action[T]) T {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		s.t.Fatalf("%s: %v", step, err)
	}
	return v
}

// shot saves a full-page screenshot as name.png (quality 100 is PNG).
func (s *session) shot(name string) {
	s.t.Helper()
	png := value(s, "screenshot "+name, chromedp.FullScreenshot(100))
	must(s.t, os.WriteFile(filepath.Join(s.dir, name+".png"), png, 0o644))
}

func (s *session) text(step, sel string) string {
	s.t.Helper()
	return value(s, step, chromedp.Text(chromedp.CSS(sel)))
}

// orders runs the order service on a memprovider with three orders:
// order-1001 waits for approval, order-1002 failed (its card was
// declined), order-1003 shipped; and serves the dashboard over it.
func orders(t *testing.T) (*durable.Client, *atomic.Bool, string) {
	t.Helper()
	p := memprovider.New()
	funded := new(atomic.Bool)
	rt, err := durable.Start(t.Context(), p, registry(t, funded), nil)
	must(t, err)
	t.Cleanup(func() { must(t, rt.Shutdown(context.Background())) })
	c := durable.NewClient(p)
	ctx := t.Context()
	for id, in := range map[string]string{"order-1001": "manual:visa", "order-1002": "visa-declined", "order-1003": "amex"} {
		must(t, c.StartOrchestration(ctx, id, "Order", in))
	}
	waitFor(t, c, "order-1001", func(st *durable.OrchestrationStatus) bool {
		return st.CustomStatus != nil && strings.Contains(*st.CustomStatus, "awaiting")
	})
	for _, id := range []string{"order-1002", "order-1003"} {
		waitFor(t, c, id, (*durable.OrchestrationStatus).IsTerminal)
	}
	srv := httptest.NewServer(dashboard.New(c, dashboard.Options{Title: "orders · duroxide"}))
	t.Cleanup(srv.Close)
	return c, funded, srv.URL
}

// TestRewindAFailedOrder: find the failed order by filter (state and
// completion time), open it, read the failure in its timeline, fix the
// cause, rewind it behind the confirmation, and watch it complete.
func TestRewindAFailedOrder(t *testing.T) {
	_, funded, base := orders(t)
	s := newSession(t, base)

	s.run("open the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#instances")))
	s.shot("01-instances")
	s.run("filter by state and completion time",
		chromedp.SetValue(chromedp.CSS("#f-status"), "failed"),
		chromedp.SendKeys(chromedp.CSS("#f-completed-after"), time.Now().Add(-time.Hour).UTC().Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS("#f-apply")),
		// The server marks the option selected only on the filtered page.
		chromedp.WaitReady(chromedp.Search(`//select[@id="f-status"]/option[@selected and text()="failed"]`)),
	)
	if got := s.text("count", "#count"); got != "1 matching" {
		t.Fatalf("after filtering: %q", got)
	}
	rows := s.text("rows", "#instances tbody")
	if !strings.Contains(rows, "order-1002") || strings.Contains(rows, "order-1001") || strings.Contains(rows, "order-1003") {
		t.Fatalf("the failed filter shows:\n%s", rows)
	}
	s.shot("02-failed-filter")

	s.run("open the failed order",
		chromedp.Click(chromedp.CSS(`a.inst`)),
		chromedp.WaitVisible(chromedp.CSS("#failure")),
	)
	if got := s.text("failure", "#failure"); !strings.Contains(got, "card declined: insufficient funds") {
		t.Fatalf("failure: %q", got)
	}
	failedRow := s.text("failed row", "tr.ActivityFailed")
	if !strings.Contains(failedRow, "ChargeCard") || !strings.Contains(failedRow, "card declined") {
		t.Fatalf("the timeline's failed row: %q", failedRow)
	}
	s.shot("03-failed-instance")

	funded.Store(true) // the customer topped up the card: the cause is fixed
	s.run("rewind",
		chromedp.Click(chromedp.CSS("#action-rewind")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
		chromedp.SetValue(chromedp.CSS("#reason"), "card topped up, ticket #4711"),
	)
	s.shot("04-confirm-rewind")
	s.run("confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#flash")))

	// Watch it complete: the page refreshes itself while it runs.
	s.run("wait for completion", chromedp.WaitVisible(chromedp.Search(`//span[@id="state" and text()="Completed"]`)))
	if got := s.text("output", "#output"); got != "shipped: charged visa-declined" {
		t.Fatalf("output: %q", got)
	}
	// The failed execution is kept; the new one ran the charge again.
	first, second := s.text("execution 1", "#execution-1 h3"), s.text("execution 2", "#execution-2 h3")
	if !strings.Contains(first, "Failed") || !strings.Contains(second, "Completed") {
		t.Fatalf("executions: %q, %q", first, second)
	}
	if got := s.text("rerun", "#execution-2 tr.ActivityCompleted"); !strings.Contains(got, "charged visa-declined") {
		t.Fatalf("the rewound execution's charge: %q", got)
	}
	s.shot("05-rewound")
}

// TestRaiseTheEventAStuckOrderWaitsFor: find the order waiting for
// approval, raise the event behind the confirmation, and watch it
// complete.
func TestRaiseTheEventAStuckOrderWaitsFor(t *testing.T) {
	_, _, base := orders(t)
	s := newSession(t, base)
	s.run("find the waiting order",
		chromedp.Navigate(base+"/?status=running"),
		chromedp.WaitVisible(chromedp.CSS(`#instances`)),
		chromedp.Click(chromedp.Search(`//a[@class="inst" and text()="order-1001"]`)),
		chromedp.WaitVisible(chromedp.CSS("#action-raise")),
	)
	if got := s.text("custom status", "#custom-status"); !strings.Contains(got, "awaiting approval") {
		t.Fatalf("custom status: %q", got)
	}
	s.shot("06-running-instance")
	s.run("raise the approval",
		chromedp.Click(chromedp.CSS("#action-raise")),
		chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
		chromedp.SendKeys(chromedp.CSS("#name"), "approval"),
		chromedp.SendKeys(chromedp.CSS("#data"), "approved by the on-call operator"),
	)
	s.shot("07-confirm-raise")
	s.run("confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	s.run("wait for completion", chromedp.WaitVisible(chromedp.Search(`//span[@id="state" and text()="Completed"]`)))
	if got := s.text("output", "#output"); got != "approved by the on-call operator" {
		t.Fatalf("output: %q", got)
	}
	s.shot("08-completed")
}

func waitFor(t *testing.T, c *durable.Client, id string, ok func(*durable.OrchestrationStatus) bool) {
	t.Helper()
	for {
		st, err := c.Status(t.Context(), id)
		must(t, err)
		if ok(st) {
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: condition never held: %v", id, st.State)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
