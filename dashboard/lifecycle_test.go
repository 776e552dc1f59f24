package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/memprovider"
)

// actionIDs lists the action buttons of an instance page.
func actionIDs(body string) []string {
	var out []string
	for rest := body; ; {
		i := strings.Index(rest, `id="action-`)
		if i < 0 {
			return out
		}
		rest = rest[i+len(`id="action-`):]
		out = append(out, rest[:strings.IndexByte(rest, '"')])
	}
}

// TestActionsFollowTheState: each page offers the actions its state
// allows.
func TestActionsFollowTheState(t *testing.T) {
	e := newEnv(t)
	e.run("bad-1", "Fail", "x")
	e.run("ok-1", "Echo", "x")
	e.run("w-1", "Wait", "approval")
	b := newDashboard(t, e, dashboard.Options{})
	for id, want := range map[string]string{
		"bad-1": "rewind restart purge",
		"ok-1":  "restart purge",
		"w-1":   "cancel raise enqueue suspend purge",
	} {
		if _, body := b.get("/instances/" + id); strings.Join(actionIDs(body), " ") != want {
			t.Fatalf("%s offers %v, want %s", id, actionIDs(body), want)
		}
	}
	token := b.confirm("w-1", "suspend")
	if code, _ := b.post("/instances/w-1/suspend", url.Values{"csrf": {token}, "reason": {"vendor down"}}, nil); code != http.StatusSeeOther {
		t.Fatalf("suspend: %d", code)
	}
	e.waitFor("w-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateSuspended })
	_, body := b.get("/instances/w-1")
	if got := strings.Join(actionIDs(body), " "); got != "resume cancel raise enqueue purge" ||
		!strings.Contains(body, `id="state">Suspended`) || !strings.Contains(body, `id="suspended-reason">vendor down`) {
		t.Fatalf("suspended page offers %s:\n%s", got, body)
	}
	// What the state does not allow is refused with 409.
	if code, body := b.post("/instances/ok-1/rewind", url.Values{"csrf": {token}}, nil); code != http.StatusConflict ||
		!strings.Contains(body, "needs a failed instance") {
		t.Fatalf("rewinding a completed instance: %d\n%s", code, body)
	}
	b.post("/instances/w-1/resume", url.Values{"csrf": {token}}, nil)
	e.waitFor("w-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateRunning })
}

// TestRewindThroughConfirmation: after the fix, rewinding the failed
// instance from its page completes it, and its page shows both
// executions.
func TestRewindThroughConfirmation(t *testing.T) {
	e := newEnv(t)
	e.run("fx-1", "Fixable", "order")
	b := newDashboard(t, e, dashboard.Options{})
	e.fixed.Store(true)
	token := b.confirm("fx-1", "rewind")
	code, loc := b.post("/instances/fx-1/rewind", url.Values{"csrf": {token}, "reason": {"fixed #123"}}, nil)
	if code != http.StatusSeeOther || loc != "/instances/fx-1?done=rewind" {
		t.Fatalf("rewind: %d %s", code, loc)
	}
	st := e.waitFor("fx-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateCompleted })
	if st.Output != "fixed order" {
		t.Fatalf("after rewind: %q", st.Output)
	}
	_, body := b.get("/instances/fx-1")
	for _, want := range []string{`id="execution-1"`, `id="execution-2"`, `class="ev ActivityFailed failed"`, `id="output">fixed order`} {
		if !strings.Contains(body, want) {
			t.Fatalf("page lacks %q:\n%s", want, body)
		}
	}
}

// TestRestartWithANewInput: restart from the page, replacing the input.
func TestRestartWithANewInput(t *testing.T) {
	e := newEnv(t)
	e.run("ok-1", "Echo", "first")
	b := newDashboard(t, e, dashboard.Options{})
	token := b.confirm("ok-1", "restart")
	form := url.Values{"csrf": {token}, "replace_input": {"on"}, "input": {"second"}, "version": {"1.0.0"}}
	if code, _ := b.post("/instances/ok-1/restart", form, nil); code != http.StatusSeeOther {
		t.Fatalf("restart: %d", code)
	}
	e.waitFor("ok-1", func(st *durable.OrchestrationStatus) bool { return st.Output == "second" })
	// Without the box ticked, the input stays.
	b.post("/instances/ok-1/restart", url.Values{"csrf": {token}, "input": {"ignored"}}, nil)
	for {
		_, body := b.get("/instances/ok-1")
		if strings.Contains(body, `id="execution-3"`) && strings.Contains(body, `id="state">Completed`) {
			if !strings.Contains(body, `id="output">second`) {
				t.Fatalf("the restart without a new input:\n%s", body)
			}
			return
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("the second restart never ended:\n%s", body)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestInstancePageShowsPendingRequests: a suspend asked while no runtime
// runs is shown as pending (escaped like every value) until a runtime
// takes it.
func TestInstancePageShowsPendingRequests(t *testing.T) {
	p := memprovider.New()
	fixed := new(atomic.Bool)
	rt, err := durable.Start(t.Context(), p, registry(t, fixed), nil)
	must(t, err)
	e := &env{t: t, c: durable.NewClient(p), fixed: fixed}
	e.run("w-p", "Wait", "approval")
	must(t, rt.Shutdown(context.Background())) // the service is down
	b := newDashboard(t, e, dashboard.Options{})
	token := b.confirm("w-p", "suspend")
	if code, _ := b.post("/instances/w-p/suspend", url.Values{"csrf": {token}, "reason": {"<b>vendor</b> down"}}, nil); code != http.StatusSeeOther {
		t.Fatalf("suspend: %d", code)
	}
	_, body := b.get("/instances/w-p")
	if !strings.Contains(body, `id="state">Running`) || !strings.Contains(body, `id="pending"`) ||
		!strings.Contains(body, "suspend: &lt;b&gt;vendor&lt;/b&gt; down") {
		t.Fatalf("the page does not show the pending suspend:\n%s", body)
	}
	demo.StartRuntime(t, p, registry(t, fixed), nil)
	e.waitFor("w-p", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateSuspended })
	if _, body := b.get("/instances/w-p"); strings.Contains(body, `id="pending"`) {
		t.Fatalf("taken, the request is still shown pending:\n%s", body)
	}
}
