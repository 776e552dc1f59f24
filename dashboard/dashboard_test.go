package dashboard_test

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

func TestListFiltersAndPages(t *testing.T) {
	e := newEnv(t)
	e.run("ok-1", "Echo", "one")
	e.run("ok-2", "Echo", "two")
	e.run("bad-1", "Fail", "disk on fire")
	b := newDashboard(t, e, dashboard.Options{})

	code, body := b.get("/?status=Failed")
	if code != http.StatusOK || !strings.Contains(body, `href="/instances/bad-1"`) || strings.Contains(body, "ok-1") ||
		!strings.Contains(body, "1 matching") {
		t.Fatalf("status filter: %d\n%s", code, body)
	}
	_, body = b.get("/?name=Echo&prefix=ok-")
	if !strings.Contains(body, "ok-1") || !strings.Contains(body, "ok-2") || strings.Contains(body, "bad-1") {
		t.Fatalf("name and prefix filters:\n%s", body)
	}
	_, body = b.get("/?after=2999-01-01T00:00")
	if !strings.Contains(body, "0 matching") {
		t.Fatalf("created-after filter:\n%s", body)
	}
	if code, body = b.get("/?after=yesterday"); code != http.StatusBadRequest || !strings.Contains(body, "RFC 3339") {
		t.Fatalf("bad time: %d\n%s", code, body)
	}

	// Paging: two pages of one and two, every instance seen once.
	seen := map[string]int{}
	next := "/?size=2"
	for pages := 0; next != ""; pages++ {
		if pages > 2 {
			t.Fatal("more pages than instances")
		}
		_, body = b.get(next)
		for _, id := range []string{"ok-1", "ok-2", "bad-1"} {
			if strings.Contains(body, `href="/instances/`+id+`"`) {
				seen[id]++
			}
		}
		next = ""
		if i := strings.Index(body, `id="next" href="`); i >= 0 {
			rest := body[i+len(`id="next" href="`):]
			next = strings.ReplaceAll(rest[:strings.IndexByte(rest, '"')], "&amp;", "&")
		}
	}
	if len(seen) != 3 || seen["ok-1"] != 1 || seen["ok-2"] != 1 || seen["bad-1"] != 1 {
		t.Fatalf("pages saw %v", seen)
	}
}

func TestInstancePage(t *testing.T) {
	e := newEnv(t)
	e.run("bad-1", "Fail", "disk on fire")
	e.run("parent", "Parent", "hello")
	b := newDashboard(t, e, dashboard.Options{})

	code, body := b.get("/instances/bad-1")
	for _, want := range []string{`id="state">Failed`, "disk on fire", `class="ev ActivityFailed failed"`, "Boom", `id="action-rewind"`} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("failed instance page lacks %q: %d\n%s", want, code, body)
		}
	}
	_, body = b.get("/instances/parent")
	child := "parent::sub::2"
	if !strings.Contains(body, `href="/instances/`+url.PathEscape(child)+`"`) || !strings.Contains(body, "SubOrchestrationCompleted") {
		t.Fatalf("parent page lacks the child link:\n%s", body)
	}
	_, body = b.get("/instances/" + url.PathEscape(child))
	for _, want := range []string{`id="parent" href="/instances/parent"`, `id="custom-status">hello`, "<code>hello</code>", `id="output">hello`} {
		if !strings.Contains(body, want) {
			t.Fatalf("child page lacks %q:\n%s", want, body)
		}
	}
	if code, _ := b.get("/instances/nope"); code != http.StatusNotFound {
		t.Fatalf("missing instance: %d", code)
	}
}

func TestInstancePageShowsUpdates(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	must(t, e.c.StartOrchestration(ctx, "desk-1", "Desk", ""))
	if _, err := durable.Update[string](ctx, e.c, "desk-1", "ask", "why", durable.UpdateOptions{ID: "q1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := durable.Update[string](ctx, e.c, "desk-1", "ask", "bad", durable.UpdateOptions{ID: "q2"}); !errors.Is(err, durable.ErrUpdateRejected) {
		t.Fatalf("the validator's refusal: %v", err)
	}
	b := newDashboard(t, e, dashboard.Options{})
	_, body := b.get("/instances/desk-1")
	for _, want := range []string{`id="updates"`, `<tr class="update completed"><td><code>q1</code></td><td>ask</td>`, "answer to why",
		`<tr class="update rejected"><td><code>q2</code>`, "bad question"} {
		if !strings.Contains(body, want) {
			t.Fatalf("page lacks %q:\n%s", want, body)
		}
	}
	e.run("echo-1", "Echo", "x")
	if code, body := b.get("/instances/echo-1"); code != http.StatusOK || strings.Contains(body, `id="updates"`) || !strings.Contains(body, `id="kv"`) {
		t.Fatalf("an instance with KV but no updates: %d\n%s", code, body)
	}
}

func TestCancelThroughConfirmation(t *testing.T) {
	e := newEnv(t)
	e.run("w-1", "Wait", "approval")
	b := newDashboard(t, e, dashboard.Options{})

	_, body := b.get("/instances/w-1")
	if !strings.Contains(body, `href="/instances/w-1/confirm/cancel"`) || !strings.Contains(body, `data-refresh="2"`) {
		t.Fatalf("running page lacks the cancel link or refresh:\n%s", body)
	}
	token := b.confirm("w-1", "cancel")
	code, loc := b.post("/instances/w-1/cancel", url.Values{"csrf": {token}, "reason": {"stuck"}}, nil)
	if code != http.StatusSeeOther || loc != "/instances/w-1?done=cancel" {
		t.Fatalf("cancel: %d %s", code, loc)
	}
	if _, body := b.get(loc); !strings.Contains(body, `id="flash">Done: cancel.`) {
		t.Fatalf("no confirmation after the redirect:\n%s", body)
	}
	// The flash names only a known action, never text from the URL.
	if _, body := b.get("/instances/w-1?done=your+account+was+hacked"); strings.Contains(body, "hacked") {
		t.Fatalf("arbitrary flash text shown:\n%s", body)
	}
	st := e.waitFor("w-1", (*durable.OrchestrationStatus).IsTerminal)
	if st.FailureMessage() != "canceled: stuck" {
		t.Fatalf("after cancel: %v %q", st.State, st.FailureMessage())
	}
}

func TestActionsAreLogged(t *testing.T) {
	e := newEnv(t)
	e.run("w-1", "Wait", "approval")
	var buf strings.Builder
	b := newDashboard(t, e, dashboard.Options{Log: slog.New(slog.NewTextHandler(&buf, nil))})
	token := b.confirm("w-1", "cancel")
	b.post("/instances/w-1/cancel", url.Values{"csrf": {token}}, nil)
	b.post("/instances/nope/cancel", url.Values{"csrf": {token}}, nil)
	log := buf.String()
	if !strings.Contains(log, "instance=w-1 action=cancel error=<nil>") ||
		!strings.Contains(log, `instance=nope action=cancel error="`) {
		t.Fatalf("log:\n%s", log)
	}
}

func TestRaiseThroughConfirmation(t *testing.T) {
	e := newEnv(t)
	e.run("w-1", "Wait", "approval")
	b := newDashboard(t, e, dashboard.Options{})
	token := b.confirm("w-1", "raise")
	code, _ := b.post("/instances/w-1/raise", url.Values{"csrf": {token}, "name": {"approval"}, "data": {"yes"}}, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("raise: %d", code)
	}
	if st := e.waitFor("w-1", (*durable.OrchestrationStatus).IsTerminal); st.Output != "yes" {
		t.Fatalf("after raise: %v %q", st.State, st.Output)
	}
}

func TestActionsRefusedWithoutToken(t *testing.T) {
	e := newEnv(t)
	e.run("w-1", "Wait", "approval")
	b := newDashboard(t, e, dashboard.Options{})
	token := b.confirm("w-1", "cancel")
	for name, tc := range map[string]struct {
		form   url.Values
		header map[string]string
	}{
		"no token":          {url.Values{}, nil},
		"forged token":      {url.Values{"csrf": {token + "x"}}, nil},
		"cross-site fetch":  {url.Values{"csrf": {token}}, map[string]string{"Sec-Fetch-Site": "cross-site"}},
		"cross-site origin": {url.Values{"csrf": {token}}, map[string]string{"Origin": "https://evil.example"}},
	} {
		t.Run(name, func(t *testing.T) {
			if code, body := b.post("/instances/w-1/cancel", tc.form, tc.header); code != http.StatusForbidden {
				t.Fatalf("%d\n%s", code, body)
			}
		})
	}
	if st := e.waitFor("w-1", func(*durable.OrchestrationStatus) bool { return true }); st.State != durable.StateRunning {
		t.Fatalf("a refused cancel changed the instance: %v", st.State)
	}
}

func TestReadOnlyRefusesActions(t *testing.T) {
	e := newEnv(t)
	e.run("w-1", "Wait", "approval")
	b := newDashboard(t, e, dashboard.Options{ReadOnly: true})
	_, body := b.get("/instances/w-1")
	if strings.Contains(body, "confirm/") || strings.Contains(body, `id="actions"`) || !strings.Contains(body, "read-only") {
		t.Fatalf("read-only page offers actions:\n%s", body)
	}
	if code, _ := b.get("/instances/w-1/confirm/cancel"); code != http.StatusForbidden {
		t.Fatalf("read-only confirm: %d", code)
	}
	if code, _ := b.post("/instances/w-1/cancel", url.Values{"reason": {"x"}}, nil); code != http.StatusForbidden {
		t.Fatalf("read-only POST: %d", code)
	}
	if st := e.waitFor("w-1", func(*durable.OrchestrationStatus) bool { return true }); st.State != durable.StateRunning {
		t.Fatalf("read-only POST changed the instance: %v", st.State)
	}
}

// TestSuspendOnAStoreThatCannotSuspend: a provider without suspension
// answers 501, and the instance is untouched.
func TestSuspendOnAStoreThatCannotSuspend(t *testing.T) {
	p := memprovider.New()
	e := newEnvOn(t, p)
	e.run("w-1", "Wait", "approval")
	// The client sees the store through the Provider interface alone, so
	// not as a duroxide.SuspensionReader.
	b := serve(t, dashboard.New(durable.NewClient(struct{ duroxide.Provider }{p}), dashboard.Options{}))
	token := b.confirm("w-1", "suspend")
	if code, body := b.post("/instances/w-1/suspend", url.Values{"csrf": {token}}, nil); code != http.StatusNotImplemented ||
		!strings.Contains(body, "does not support suspending") {
		t.Fatalf("suspend: %d\n%s", code, body)
	}
	if st := e.waitFor("w-1", func(*durable.OrchestrationStatus) bool { return true }); st.State != durable.StateRunning {
		t.Fatalf("w-1: %v", st.State)
	}
}

func TestPurge(t *testing.T) {
	e := newEnv(t)
	e.run("done-1", "Echo", "x")
	b := newDashboard(t, e, dashboard.Options{})
	token := b.confirm("done-1", "purge")
	code, loc := b.post("/instances/done-1/purge", url.Values{"csrf": {token}}, nil)
	if code != http.StatusSeeOther || !strings.Contains(loc, "done=purge") {
		t.Fatalf("purge: %d %s", code, loc)
	}
	if _, body := b.get(loc); !strings.Contains(body, "Purged <code>done-1</code>") {
		t.Fatalf("no confirmation after purging:\n%s", body)
	}
	if code, _ := b.get("/instances/done-1"); code != http.StatusNotFound {
		t.Fatalf("purged instance still served: %d", code)
	}
}

func TestBasePath(t *testing.T) {
	e := newEnv(t)
	e.run("ok-1", "Echo", "x")
	mux := http.NewServeMux()
	mux.Handle("/ops/", dashboard.New(e.c, dashboard.Options{BasePath: "/ops"}))
	b := serve(t, mux)
	code, body := b.get("/ops/")
	if code != http.StatusOK || !strings.Contains(body, `href="/ops/instances/ok-1"`) || !strings.Contains(body, `/ops/static/app.css`) {
		t.Fatalf("%d\n%s", code, body)
	}
	if code, _ := b.get("/ops/static/app.js"); code != http.StatusOK {
		t.Fatalf("static: %d", code)
	}
	if code, _ := b.get("/ops/instances/ok-1"); code != http.StatusOK {
		t.Fatalf("instance: %d", code)
	}
}
