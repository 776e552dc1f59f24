package dashboard_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/dashboard"
)

// pageUntil gets path until its body contains want.
func (b *browser) pageUntil(path, want string) string {
	b.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := b.get(path)
		if code == http.StatusOK && strings.Contains(body, want) {
			return body
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s never showed %q: %d\n%s", path, want, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// section is body from the element with id (its opening tag) to the
// next closing tag named end.
func section(t *testing.T, body, id, end string) string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no element %q in\n%s", id, body)
	}
	j := strings.Index(body[i:], "</"+end+">")
	if j < 0 {
		t.Fatalf("element %q is not closed by </%s>", id, end)
	}
	return body[i : i+j]
}

// TestInstanceViews: a finished Rich instance's page shows the latest
// execution first with the earlier one folded, a timeline chart whose
// retried activity is one row "attempt 3 of 3" with its last error and a
// backoff, the child's bar, the timer's bar, the tree with the grandchild,
// relative times with absolute titles, and its JSON output indented with
// a copy button.
func TestInstanceViews(t *testing.T) {
	e := newEnv(t)
	e.run("rich-1", "Rich", "r1")
	b := newDashboard(t, e, dashboard.Options{})
	code, body := b.get("/instances/rich-1")
	if code != http.StatusOK {
		t.Fatalf("%d\n%s", code, body)
	}
	latest, earlier := strings.Index(body, `<section class="execution latest" id="execution-2"`), strings.Index(body, `<details class="execution" id="execution-1"`)
	if latest < 0 || earlier < 0 || latest > earlier {
		t.Fatalf("want execution 2 first, execution 1 folded after it: %d %d\n%s", latest, earlier, body)
	}
	if strings.Contains(body, `<details class="execution" id="execution-1" open`) {
		t.Fatal("the earlier execution is not folded")
	}
	chart := section(t, body, "execution-2", "figure")
	for _, want := range []string{
		`<svg class="timeline-chart"`,
		`<g class="row activity">`, `<g class="row child">`, `<g class="row timer">`,
		`class="bar failed"`, `class="bar backoff"`, `class="bar ok"`, `class="bar fired"`,
		"Twice attempt 1 failed after", // a bar's tooltip
		`<td class="note">attempt 3 of 3, completed</td>`,
		"last error: flaky: r1",
	} {
		if !strings.Contains(chart, want) {
			t.Errorf("the chart lacks %q:\n%s", want, chart)
		}
	}
	// The retried activity is one row: Twice has one row, not three.
	if n := strings.Count(chart, `>Twice</text>`); n != 1 {
		t.Errorf("Twice has %d chart rows, want 1", n)
	}
	// The backoff timers are drawn on Twice's row, so one timer row is left:
	// the 5 ms timer after it.
	if n := strings.Count(chart, `<g class="row timer">`); n != 1 {
		t.Errorf("%d timer rows, want 1 (the backoffs belong to Twice)", n)
	}
	tree := section(t, body, "tree", "section")
	child := "rich-1::sub::2::2" // execution 2's sub-orchestration, event 2
	for _, want := range []string{
		`class="current" aria-current="page">rich-1</a>`,
		`href="/instances/` + url.PathEscape(child) + `">` + child + `</a> <span class="muted">Parent</span>`,
		`>` + child + `::sub::2</a> <span class="muted">Echo</span>`,
	} {
		if !strings.Contains(tree, want) {
			t.Errorf("the tree lacks %q:\n%s", want, tree)
		}
	}
	// The grandchild is nested under the child, not under the root.
	if i, j := strings.Index(tree, ">"+child+"</a>"), strings.Index(tree, ">"+child+"::sub::2</a>"); i < 0 || j < i ||
		!strings.Contains(tree[i:j], "<ul>") {
		t.Errorf("the grandchild is not nested under the child:\n%s", tree)
	}
	// A child's page shows the same tree with itself marked.
	_, cbody := b.get("/instances/" + url.PathEscape(child))
	if !strings.Contains(cbody, `class="current" aria-current="page">`+child+`</a>`) || !strings.Contains(cbody, `href="/instances/rich-1">rich-1</a>`) {
		t.Errorf("the child's tree:\n%s", section(t, cbody, "tree", "section"))
	}
	if !regexp.MustCompile(`<time datetime="20[0-9-]+T[0-9:.]+Z" title="20[0-9-]+ [0-9:.]+Z">(just now|[0-9]+ s ago)</time>`).MatchString(body) {
		t.Error("no relative time with an absolute title")
	}
	if !strings.Contains(body, "<pre id=\"output\">{\n  &#34;done&#34;: true,\n  &#34;in&#34;: &#34;r1&#34;\n}</pre><button type=\"button\" class=\"copy\" id=\"copy-output\"") {
		t.Errorf("the output is not indented JSON with a copy button:\n%s", body)
	}
	if strings.Contains(body, `id="work"`) {
		t.Error("a completed instance shows pending work")
	}
}

// TestPendingWork: a Rich instance waiting for its event shows, in the
// pending work panel, the awaited event and the open 1 h timer; once the
// event is raised the panel goes.
func TestPendingWork(t *testing.T) {
	e := newEnv(t)
	must(t, e.c.StartOrchestration(t.Context(), "rich-w", "Rich", "wait:1"))
	b := newDashboard(t, e, dashboard.Options{})
	body := b.pageUntil("/instances/rich-w", `class="work-event"`)
	work := section(t, body, "work", "section")
	for _, want := range []string{
		`<tr class="work-event"><td>awaited event</td><td>go</td>`,
		`<tr class="work-timer"><td>timer</td><td>due <time datetime=`, ">in 59 min</time>",
	} {
		if !strings.Contains(work, want) {
			t.Errorf("the pending work lacks %q:\n%s", want, work)
		}
	}
	if strings.Contains(work, "work-activity") {
		t.Errorf("no activity is pending:\n%s", work)
	}
	// The open timer's bar is drawn to now, in the running execution.
	if !strings.Contains(section(t, body, "execution-2", "figure"), `<td class="note">due `) {
		t.Error("the open timer's row is not in the chart")
	}
	must(t, e.c.RaiseEvent(t.Context(), "rich-w", "go", "yes"))
	body = b.pageUntil("/instances/rich-w", `id="state">Completed`)
	if strings.Contains(body, `id="work"`) {
		t.Error("the pending work stays after completion")
	}
}

// TestPendingChild: a parent waiting for its running child lists the
// child as pending work, linked.
func TestPendingChild(t *testing.T) {
	e := newEnv(t)
	must(t, e.c.StartOrchestration(t.Context(), "pw-1", "ParentWait", "never"))
	b := newDashboard(t, e, dashboard.Options{})
	body := b.pageUntil("/instances/pw-1", `class="work-child"`)
	if work := section(t, body, "work", "section"); !strings.Contains(work,
		`<tr class="work-child"><td>sub-orchestration</td><td><a href="/instances/pw-1::sub::2">pw-1::sub::2</a></td>`) {
		t.Errorf("the pending child:\n%s", work)
	}
}

// TestPendingActivityAttempt: an activity on its second attempt (the
// first failed) is pending work with its attempt and last failure.
func TestPendingActivityAttempt(t *testing.T) {
	heldRelease.Store(false) // a run before this one (-count) released it
	e := newEnv(t)
	t.Cleanup(func() { heldRelease.Store(true) }) // before the runtime stops
	must(t, e.c.StartOrchestration(t.Context(), "held-1", "HeldRetry", "h1"))
	b := newDashboard(t, e, dashboard.Options{})
	body := b.pageUntil("/instances/held-1", `class="work-activity"`)
	work := section(t, body, "work", "section")
	if !strings.Contains(work, `<tr class="work-activity"><td>activity</td><td>Held</td>`) ||
		!strings.Contains(work, `attempt 2; last failure: <span class="failure">first try failed: h1</span>`) {
		t.Errorf("the pending activity:\n%s", work)
	}
	if !strings.Contains(section(t, body, "execution-1", "figure"), `<td class="note">attempt 2, running</td>`) {
		t.Error("the chart's row does not say attempt 2, running")
	}
	heldRelease.Store(true)
	body = b.pageUntil("/instances/held-1", `id="state">Completed`)
	if !strings.Contains(section(t, body, "execution-1", "figure"), `<td class="note">attempt 2 of 2, completed</td>`) {
		t.Error("the chart's row does not say attempt 2 of 2, completed")
	}
}

// TestListCounts: the list page counts instances per state, each count a
// link to that state's filter, and the counts follow the other filters.
func TestListCounts(t *testing.T) {
	e := newEnv(t)
	e.run("ok-1", "Echo", "one")
	e.run("ok-2", "Echo", "two")
	e.run("bad-1", "Fail", "disk on fire")
	e.run("w-1", "Wait", "approval")
	b := newDashboard(t, e, dashboard.Options{})
	_, body := b.get("/")
	counts := section(t, body, "counts", "ul")
	for _, want := range []string{
		`id="count-running" href="/?status=running">running <b>1</b>`,
		`id="count-completed" href="/?status=completed">completed <b>2</b>`,
		`id="count-failed" href="/?status=failed">failed <b>1</b>`,
		`id="count-suspended" href="/?status=suspended">suspended <b>0</b>`,
	} {
		if !strings.Contains(counts, want) {
			t.Errorf("the counts lack %q:\n%s", want, counts)
		}
	}
	_, body = b.get("/?prefix=ok-")
	if c := section(t, body, "counts", "ul"); !strings.Contains(c, `href="/?prefix=ok-&amp;status=completed">completed <b>2</b>`) ||
		!strings.Contains(c, `failed <b>0</b>`) {
		t.Errorf("the counts ignore the prefix filter:\n%s", c)
	}
}

// TestQueuesPage: the queues page shows the depths and the store's
// counts, and the sample endpoint its chart polls answers JSON with them.
func TestQueuesPage(t *testing.T) {
	e := newEnv(t)
	e.run("ok-1", "Echo", "one")
	e.run("bad-1", "Fail", "x")
	b := newDashboard(t, e, dashboard.Options{})
	code, body := b.get("/queues")
	if code != http.StatusOK {
		t.Fatalf("%d\n%s", code, body)
	}
	for _, want := range []string{
		`id="depth-orchestrator">0<`, `id="depth-worker">0<`, `id="m-completed">1<`, `id="m-failed">1<`,
		`<figure class="chart" id="throughput" data-url="/api/sample">`, `<svg id="throughput-chart"`,
		`id="nav-queues" href="/queues" class="here"`,
		"nor the dispatch slots", // says what it cannot show
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the queues page lacks %q:\n%s", want, body)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.srv.URL+"/api/sample", nil)
	must(t, err)
	resp, err := b.http.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var s map[string]any
	must(t, json.NewDecoder(resp.Body).Decode(&s))
	if resp.Header.Get("Content-Type") != "application/json" || s["completed_instances"] != 1.0 || s["failed_instances"] != 1.0 ||
		s["orchestrator_queue"] != 0.0 {
		t.Fatalf("sample: %s %v", resp.Header.Get("Content-Type"), s)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self'") {
		t.Fatalf("the CSP does not let the chart poll: %s", csp)
	}
}
