package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
)

// fulfilment registers Fulfil: execution 1 reserves the stock (activity
// Reserve) and continues as new; execution 2 packs the parcel in the
// sub-orchestration Pack (which labels it in its own child, Label), ships
// it with the activity Ship under a retry policy (the carrier times out
// twice per order, then accepts: attempt 3 of 3), waits 300 ms for the
// courier, and, for an input starting "manual:", waits for the event
// "delivered" raced against a one-hour timer. Quick completes at once (the
// throughput chart's load).
func fulfilment(t *testing.T) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	var shipped sync.Map // order -> *atomic.Int32
	must(t, reg.AddActivity("Reserve", func(_ durable.ActivityContext, in string) (string, error) {
		time.Sleep(30 * time.Millisecond)
		return "reserved " + in, nil
	}))
	must(t, reg.AddActivity("Ship", func(_ durable.ActivityContext, in string) (string, error) {
		time.Sleep(60 * time.Millisecond)
		n, _ := shipped.LoadOrStore(in, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) <= 2 {
			return "", errors.New("carrier timeout for " + in)
		}
		return "tracking 1Z999 for " + in, nil
	}))
	must(t, reg.AddActivity("PrintLabel", func(_ durable.ActivityContext, in string) (string, error) {
		time.Sleep(40 * time.Millisecond)
		return "label " + in, nil
	}))
	must(t, reg.AddOrchestration("Label", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "PrintLabel", in).Await()
	}))
	must(t, reg.AddOrchestration("Pack", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Label", in).Await()
	}))
	must(t, reg.AddOrchestration("Quick", func(ctx *durable.OrchestrationContext, in string) (string, error) { return in, nil }))
	must(t, reg.AddOrchestration("Fulfil", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if ctx.ExecutionID() == 1 {
			if _, err := durable.CallActivity[string](ctx, "Reserve", in).Await(); err != nil {
				return "", err
			}
			return "", durable.ContinueAsNew(ctx, in)
		}
		if _, err := durable.CallSubOrchestration[string](ctx, "Pack", in).Await(); err != nil {
			return "", err
		}
		retry := durable.NewRetryPolicy(3).WithBackoff(durable.FixedBackoff(100 * time.Millisecond))
		tracking, err := durable.CallActivity[string](ctx, "Ship", in, durable.ActivityOptions{Retry: retry}).Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.NewTimer(ctx, 300*time.Millisecond).Await(); err != nil {
			return "", err
		}
		if strings.HasPrefix(in, "manual:") {
			timer, ev := durable.NewTimer(ctx, time.Hour), durable.WaitEvent[string](ctx, "delivered")
			if ctx.Select(timer, ev) == 0 {
				return "", errors.New("not delivered within the hour")
			}
			return ev.Await()
		}
		return fmt.Sprintf(`{"order":%q,"tracking":%q,"items":[{"sku":"A-1","qty":2}]}`, in, tracking), nil
	}))
	return reg
}

// hostileID and hostileInput would run script if written unescaped: each
// sets window.__xss.
const (
	hostileID    = `<img src=x onerror="window.__xss=1">/../"'`
	hostileInput = `<script>window.__xss=2</script>"><svg onload="window.__xss=3">`
)

// fulfil runs fulfilment on a memprovider: fulfil-2001 shipped,
// fulfil-2002 waits for delivery, and one order with a hostile id and
// input shipped; it serves the dashboard over them.
func fulfil(t *testing.T) (*durable.Client, string) {
	t.Helper()
	p := memprovider.New()
	rt, err := durable.Start(t.Context(), p, fulfilment(t), nil)
	must(t, err)
	t.Cleanup(func() { must(t, rt.Shutdown(context.Background())) })
	c := durable.NewClient(p)
	for id, in := range map[string]string{"fulfil-2001": "order-2001", "fulfil-2002": "manual:order-2002", hostileID: hostileInput} {
		must(t, c.StartOrchestration(t.Context(), id, "Fulfil", in))
	}
	for _, id := range []string{"fulfil-2001", hostileID} {
		waitFor(t, c, id, (*durable.OrchestrationStatus).IsTerminal)
	}
	srv := httptest.NewServer(dashboard.New(c, dashboard.Options{Title: "fulfilment · duroxide"}))
	t.Cleanup(srv.Close)
	return c, srv.URL
}

func js[T any](s *session, step, expr string) T {
	s.t.Helper()
	return value(s, step, chromedp.Evaluate[T](expr))
}

// TestInstanceViews: the list's counts; a shipped order's timeline chart
// (the retried shipment on one row, attempt 3 of 3 with the last error,
// failed and backoff bars; the child; the timer), its tree with the
// grandchild, the folded earlier execution, relative times, the JSON
// output indented and copied; the waiting order's pending work; the
// queues page's throughput chart drawing live; and the hostile order's
// pages, on which no injected script runs.
func TestInstanceViews(t *testing.T) {
	c, base := fulfil(t)
	s := newSession(t, base)
	waitForEvent(t, c, "fulfil-2002", "ExternalSubscribed") // only it runs now

	s.run("open the list", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#counts")))
	if got := s.text("completed count", "#count-completed"); !regexp.MustCompile(`^completed [0-9]+$`).MatchString(got) || got == "completed 0" {
		t.Fatalf("completed count: %q", got)
	}
	if got := s.text("running count", "#count-running"); got != "running 1" {
		t.Fatalf("running count: %q", got)
	}
	s.shot("09-list-counts")

	s.run("open the shipped order", chromedp.Navigate(base+"/instances/fulfil-2001"),
		chromedp.WaitVisible(chromedp.CSS("#execution-2 svg.timeline-chart")))
	if n := js[int](s, "failed bars", `document.querySelectorAll("#execution-2 g.row.activity rect.bar.failed").length`); n != 2 {
		t.Fatalf("%d failed Ship bars, want 2", n)
	}
	if n := js[int](s, "backoff bars", `document.querySelectorAll("#execution-2 g.row.activity rect.bar.backoff").length`); n != 2 {
		t.Fatalf("%d backoff bars, want 2", n)
	}
	if n := js[int](s, "ship rows", `[...document.querySelectorAll("#execution-2 g.row text.label")].filter(e => e.textContent === "Ship").length`); n != 1 {
		t.Fatalf("%d Ship rows, want 1 (the attempts grouped)", n)
	}
	// The bars sit on the time axis: a later attempt starts to the right.
	if ok := js[bool](s, "bar order", `(() => { const r = [...document.querySelectorAll("#execution-2 g.row.activity rect.bar")].map(e => +e.getAttribute("x")); return r.length === 5 && r.every((x, i) => i === 0 || x > r[i-1]); })()`); !ok {
		t.Fatal("the Ship row's bars are not in time order")
	}
	ship := s.text("ship note", "#execution-2 tr.bar-row.activity")
	if !strings.Contains(ship, "attempt 3 of 3, completed") || !strings.Contains(ship, "last error: carrier timeout for order-2001") {
		t.Fatalf("the Ship row: %q", ship)
	}
	if got := s.text("child row", "#execution-2 tr.bar-row.child"); !strings.Contains(got, "Pack") || !strings.Contains(got, "completed") {
		t.Fatalf("the child row: %q", got)
	}
	if got := s.text("timer row", "#execution-2 tr.bar-row.timer"); !strings.Contains(got, "fired") {
		t.Fatalf("the timer row: %q", got)
	}
	tree := s.text("tree", "#tree")
	if !strings.Contains(tree, "fulfil-2001::sub::2::2 Pack") || !strings.Contains(tree, "fulfil-2001::sub::2::2::sub::2 Label") {
		t.Fatalf("the tree: %q", tree)
	}
	if js[int](s, "grandchild depth", `document.querySelectorAll("#tree ul ul li").length`) != 1 {
		t.Fatal("the grandchild is not nested two levels down")
	}
	if open := js[bool](s, "folded", `document.getElementById("execution-1").open`); open {
		t.Fatal("the earlier execution is not folded")
	}
	if got := js[string](s, "a relative time", `document.querySelector("#execution-2 td.at time").textContent`); !regexp.MustCompile(`^(just now|[0-9]+ s ago)$`).MatchString(got) {
		t.Fatalf("relative time: %q", got)
	}
	if got := js[string](s, "its title", `document.querySelector("#execution-2 td.at time").title`); !regexp.MustCompile(`^20[0-9-]+ [0-9:.]+Z$`).MatchString(got) {
		t.Fatalf("absolute title: %q", got)
	}
	out := s.text("output", "#output")
	if !strings.Contains(out, "{\n  \"order\": \"order-2001\",\n") || !strings.Contains(out, "\"items\": [\n    {\n      \"sku\": \"A-1\",") {
		t.Fatalf("the output is not indented: %q", out)
	}
	s.shot("10-instance-timeline")
	s.run("copy the output", chromedp.Click(chromedp.CSS("#copy-output")),
		chromedp.WaitVisible(chromedp.Search(`//button[@id="copy-output" and text()="copied"]`)))
	s.run("unfold execution 1", chromedp.Click(chromedp.CSS("#execution-1 summary")),
		chromedp.WaitVisible(chromedp.CSS("#execution-1 svg.timeline-chart")))
	if got := s.text("execution 1's row", "#execution-1 tr.bar-row.activity"); !strings.Contains(got, "Reserve") || !strings.Contains(got, "completed") {
		t.Fatalf("execution 1's row: %q", got)
	}

	s.run("open the waiting order", chromedp.Navigate(base+"/instances/fulfil-2002"), chromedp.WaitVisible(chromedp.CSS("tr.work-event")))
	work := s.text("pending work", "#work")
	if !strings.Contains(work, "awaited event\tdelivered") || !strings.Contains(work, "due in 59 min") {
		t.Fatalf("pending work: %q", work)
	}
	s.viewShot("11-pending-work")

	s.run("open the queues page", chromedp.Navigate(base+"/queues"), chromedp.WaitVisible(chromedp.CSS("#throughput-chart")))
	for i := range 40 { // load while the chart polls
		must(t, c.StartOrchestration(t.Context(), fmt.Sprintf("quick-%d", i), "Quick", "x"))
		time.Sleep(50 * time.Millisecond)
	}
	s.run("the chart draws live", chromedp.Poll[chromedp.Void](`+document.getElementById("throughput").dataset.samples >= 4 && document.querySelectorAll("#throughput-chart rect.tput[height]:not([height='0.0'])").length > 0`))
	if n := js[int](s, "queue lines", `document.querySelectorAll("#throughput-chart polyline").length`); n != 2 {
		t.Fatalf("%d queue depth lines, want 2", n)
	}
	s.shot("12-queues")

	hostilePath := "/instances/" + url.PathEscape(hostileID)
	s.run("open the hostile order", chromedp.Navigate(base+hostilePath), chromedp.WaitVisible(chromedp.CSS("#execution-2 svg.timeline-chart")))
	if got := s.text("hostile id", "#instance-id"); got != hostileID {
		t.Fatalf("the id shown: %q", got)
	}
	if got := s.text("hostile error", "#execution-2 tr.bar-row.activity"); !strings.Contains(got, "carrier timeout for "+hostileInput) {
		t.Fatalf("the hostile last error: %q", got)
	}
	if !strings.Contains(s.text("hostile tree", "#tree"), hostileID+"::sub::2::2") {
		t.Fatal("the hostile tree")
	}
	s.viewShot("13-hostile")
	for _, path := range []string{hostilePath, "/", "/?prefix=" + url.QueryEscape(hostileID), "/queues"} {
		s.run("open "+path, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS("main")), chromedp.Sleep(200*time.Millisecond))
		if got := js[string](s, "xss flag on "+path, `String(window.__xss)`); got != "undefined" {
			t.Fatalf("%s: injected script ran: window.__xss = %s", path, got)
		}
		if n := js[int](s, "injected elements on "+path, `document.querySelectorAll("main img, main script, main svg[onload]").length`); n != 0 {
			t.Fatalf("%s: %d injected elements", path, n)
		}
	}
}

// waitForEvent waits until instance's latest execution holds an event of
// kind.
func waitForEvent(t *testing.T, c *durable.Client, instance, kind string) {
	t.Helper()
	for {
		if ids, err := c.ListExecutions(t.Context(), instance); err == nil && len(ids) > 0 {
			hist, err := c.ExecutionHistory(t.Context(), instance, ids[len(ids)-1])
			must(t, err)
			for _, ev := range hist {
				if ev.Kind.EventType() == kind {
					return
				}
			}
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: no %s in its history", instance, kind)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// viewShot saves a screenshot of the window (1280×900) as name.png: the
// top of a long page, small enough for the docs.
func (s *session) viewShot(name string) {
	s.t.Helper()
	png := value(s, "screenshot "+name, chromedp.CaptureScreenshot())
	must(s.t, os.WriteFile(filepath.Join(s.dir, name+".png"), png, 0o644))
}
