package dashboard_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/demo"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/schedule"
)

// registry: Echo sets its input as custom status and KV value and returns
// it; Fail fails in an activity with its input as the message
// (demo.AddFail); Wait waits for the event named by its input and returns
// the event's data; Desk answers the update "ask" (refusing "bad") until
// a message on queue "close"; Parent runs Echo as a sub-orchestration; Fixable fails
// in the activity Flaky until fixed is set. The schedule engine is
// registered too (schedule.Register).
func registry(t *testing.T, fixed *atomic.Bool) *durable.Registry {
	t.Helper()
	reg := durable.NewRegistry()
	must(t, reg.AddActivity("Flaky", func(_ durable.ActivityContext, in string) (string, error) {
		if !fixed.Load() {
			return "", errors.New("bug #123")
		}
		return "fixed " + in, nil
	}))
	must(t, reg.AddOrchestration("Fixable", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallActivity[string](ctx, "Flaky", in).Await()
	}))
	must(t, reg.AddOrchestration("Echo", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus(in)
		ctx.SetKVValue(in, in)
		return in, nil
	}))
	must(t, reg.AddOrchestration("Wait", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		ctx.SetCustomStatus("waiting for " + in)
		return durable.WaitEvent[string](ctx, in).Await()
	}))
	must(t, reg.AddOrchestration("ParentWait", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Wait", in).Await()
	}))
	must(t, reg.AddOrchestration("Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Echo", in).Await()
	}))
	must(t, reg.AddOrchestration("Desk", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		durable.SetUpdateHandler(ctx, "ask", func(_ *durable.OrchestrationContext, q string) (string, error) {
			return "answer to " + q, nil
		}, durable.UpdateHandlerOptions[string]{Validator: func(_ *durable.OrchestrationContext, q string) error {
			if q == "bad" {
				return errors.New("bad question")
			}
			return nil
		}})
		return durable.DequeueEvent[string](ctx, "close").Await()
	}))
	addRich(t, reg)
	demo.AddFail(t, reg)
	must(t, schedule.Register(reg))
	return reg
}

// addRich registers Rich, whose history has what the instance page's
// views draw: its execution 1 runs the activity Quick and continues as
// new; execution 2 runs Parent as a child (so a grandchild Echo), the
// activity Twice with retries (it fails twice for an input, then
// succeeds: attempt 3 of 3), and a 5 ms timer; then, for an input
// starting "wait:", it waits for the event "go" raced against a 1 h
// timer, else returns a JSON object.
// heldRelease releases the activity Held's second attempts.
var heldRelease atomic.Bool

func addRich(t *testing.T, reg *durable.Registry) {
	t.Helper()
	var calls sync.Map // input -> *atomic.Int32
	must(t, reg.AddActivity("Quick", func(_ durable.ActivityContext, in string) (string, error) { return in, nil }))
	must(t, reg.AddActivity("Twice", func(_ durable.ActivityContext, in string) (string, error) {
		n, _ := calls.LoadOrStore(in, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) <= 2 {
			return "", errors.New("flaky: " + in)
		}
		return "ok " + in, nil
	}))
	// Held fails its first attempt, then holds its second until
	// heldRelease is set (at most a minute): an activity pending on its
	// attempt 2.
	must(t, reg.AddActivity("Held", func(_ durable.ActivityContext, in string) (string, error) {
		n, _ := calls.LoadOrStore("held:"+in, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 {
			return "", errors.New("first try failed: " + in)
		}
		for i := 0; i < 6000 && !heldRelease.Load(); i++ {
			time.Sleep(10 * time.Millisecond)
		}
		return "released " + in, nil
	}))
	must(t, reg.AddOrchestration("HeldRetry", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		retry := durable.NewRetryPolicy(3).WithBackoff(durable.FixedBackoff(time.Millisecond))
		return durable.CallActivity[string](ctx, "Held", in, durable.ActivityOptions{Retry: retry}).Await()
	}))
	must(t, reg.AddOrchestration("Rich", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if ctx.ExecutionID() == 1 {
			if _, err := durable.CallActivity[string](ctx, "Quick", in).Await(); err != nil {
				return "", err
			}
			return "", durable.ContinueAsNew(ctx, in)
		}
		if _, err := durable.CallSubOrchestration[string](ctx, "Parent", in).Await(); err != nil {
			return "", err
		}
		retry := durable.NewRetryPolicy(3).WithBackoff(durable.FixedBackoff(5 * time.Millisecond))
		if _, err := durable.CallActivity[string](ctx, "Twice", in, durable.ActivityOptions{Retry: retry}).Await(); err != nil {
			return "", err
		}
		if _, err := durable.NewTimer(ctx, 5*time.Millisecond).Await(); err != nil {
			return "", err
		}
		if strings.HasPrefix(in, "wait:") {
			timer, ev := durable.NewTimer(ctx, time.Hour), durable.WaitEvent[string](ctx, "go")
			if ctx.Select(timer, ev) == 0 {
				return "", errors.New("no go within the hour")
			}
			return ev.Await()
		}
		out, err := json.Marshal(map[string]any{"done": true, "in": in})
		return string(out), err
	}))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env is a runtime over a memprovider and a client.
type env struct {
	t *testing.T
	c *durable.Client
	// fixed fixes Fixable.
	fixed *atomic.Bool
}

// newEnv runs on a memprovider.
func newEnv(t *testing.T) *env { return newEnvOn(t, memprovider.New()) }

// newCosmosEnv runs on the Cosmos DB provider over an in-memory
// in-process localcosmos server (embedded.Open with InMemory).
func newCosmosEnv(t *testing.T) *env { return newEnvOn(t, demo.CosmosProvider(t)) }

func newEnvOn(t *testing.T, p duroxide.Provider) *env {
	t.Helper()
	fixed := new(atomic.Bool)
	demo.StartRuntime(t, p, registry(t, fixed), nil)
	return &env{t: t, c: durable.NewClient(p), fixed: fixed}
}

// run starts instance and, unless it is a Wait, waits for it to finish.
func (e *env) run(instance, orchestration, input string) {
	e.t.Helper()
	must(e.t, e.c.StartOrchestration(e.t.Context(), instance, orchestration, input))
	if orchestration == "Wait" {
		e.waitFor(instance, func(st *durable.OrchestrationStatus) bool { return st.CustomStatus != nil })
		return
	}
	_, err := e.c.WaitForOrchestration(e.t.Context(), instance, durable.WaitOptions{Timeout: time.Minute})
	must(e.t, err)
}

// waitFor polls instance's status until ok holds.
func (e *env) waitFor(instance string, ok func(*durable.OrchestrationStatus) bool) *durable.OrchestrationStatus {
	e.t.Helper()
	return demo.Until(e.t, e.c, instance, ok)
}

// browser is a cookie-keeping client of a served dashboard.
type browser struct {
	t    *testing.T
	srv  *httptest.Server
	http *http.Client
}

func serve(t *testing.T, h http.Handler) *browser {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	must(t, err)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(hc.CloseIdleConnections)
	return &browser{t: t, srv: srv, http: hc}
}

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodGet, b.srv.URL+path, nil)
	must(b.t, err)
	return b.do(req)
}

// post sends form to path as a same-origin browser form would.
func (b *browser) post(path string, form url.Values, header map[string]string) (int, string) {
	b.t.Helper()
	req, err := http.NewRequestWithContext(b.t.Context(), http.MethodPost, b.srv.URL+path, strings.NewReader(form.Encode()))
	must(b.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.srv.URL)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return b.do(req)
}

func (b *browser) do(req *http.Request) (int, string) {
	b.t.Helper()
	resp, err := b.http.Do(req)
	must(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(b.t, err)
	if loc := resp.Header.Get("Location"); loc != "" {
		return resp.StatusCode, loc
	}
	return resp.StatusCode, string(body)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// confirm opens the confirmation page of action on instance and returns
// its form token.
func (b *browser) confirm(instance, action string) string {
	b.t.Helper()
	code, body := b.get("/instances/" + url.PathEscape(instance) + "/confirm/" + action)
	m := csrfField.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		b.t.Fatalf("confirm %s: %d\n%s", action, code, body)
	}
	return m[1]
}

func newDashboard(t *testing.T, e *env, o dashboard.Options) *browser {
	return serve(t, dashboard.New(e.c, o))
}
