package dashboard_test

import (
	"bytes"
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
	"github.com/duroxide-go/cdb/payload"
	"github.com/duroxide-go/cdb/schedule"
)

// confirmSchedule opens the confirmation page of action on a schedule and
// returns its form token.
func (b *browser) confirmSchedule(id, action string) string {
	b.t.Helper()
	code, body := b.get("/schedules/" + url.PathEscape(id) + "/confirm/" + action)
	m := csrfField.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		b.t.Fatalf("confirm %s of schedule %s: %d\n%s", action, id, code, body)
	}
	return m[1]
}

// stamp is t as the pages print an absolute time.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") }

// nightlySpec fires at 03:00 Berlin time from a day a month ahead, so
// its next fire times do not depend on when the test runs.
func nightlySpec() schedule.Spec {
	start := time.Now().UTC().Add(30 * 24 * time.Hour).Truncate(24 * time.Hour)
	return schedule.Spec{Cron: []string{"0 3 * * *"}, TimeZone: "Europe/Berlin", StartAt: start}
}

func TestSchedulesPage(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testSchedulesPage(t, newEnv(t)) })
	t.Run("cosmostest", func(t *testing.T) { testSchedulesPage(t, newCosmosEnv(t)) })
}

// testSchedulesPage: the list shows each schedule's spec, state, next fire
// times and overlap policy; a schedule's page its next ten fire times (in
// UTC and in its zone) and its recent actions with links to the runs;
// pause, unpause and trigger go through the confirmation page; a
// cancelled schedule shows its error and offers no action.
func testSchedulesPage(t *testing.T, e *env) {
	ctx := t.Context()
	sc := schedule.NewClient(e.c)
	spec := nightlySpec()
	must(t, sc.Create(ctx, "nightly", schedule.Options{Spec: spec, Overlap: schedule.OverlapAllowAll,
		Action: schedule.Action{Orchestration: "Echo", Input: "report"}}))
	must(t, sc.Create(ctx, "hourly", schedule.Options{Spec: schedule.Spec{Cron: []string{"@hourly"}}, Paused: true, Note: "on hold",
		Action: schedule.Action{Orchestration: "Echo", Input: "tick"}}))
	must(t, sc.Trigger(ctx, "nightly"))
	d, err := sc.Describe(ctx, "nightly", schedule.DescribeOptions{NextFires: 10})
	must(t, err)
	if len(d.Recent) != 1 || d.Recent[0].RunID == "" || len(d.Next) != 10 {
		t.Fatalf("nightly after a trigger: %+v", d)
	}
	run := d.Recent[0].RunID
	b := newDashboard(t, e, dashboard.Options{})

	if _, body := b.get("/"); !strings.Contains(body, `id="nav-schedules" href="/schedules"`) {
		t.Fatalf("the navigation lacks the schedules page:\n%s", body)
	}
	code, body := b.get("/schedules")
	if code != http.StatusOK {
		t.Fatalf("schedules: %d\n%s", code, body)
	}
	list := section(t, body, "schedules", "table")
	for _, want := range []string{
		`href="/schedules/nightly">nightly</a>`, `<td class="spec">cron 0 3 * * *, in Europe/Berlin</td>`,
		`<span class="status running">running</span>`, stamp(d.Next[0]), stamp(d.Next[2]), "<td>allow_all</td>",
		`started <time datetime=`, `<a href="/instances/` + url.PathEscape(run) + `">` + run + `</a>`,
		`href="/schedules/hourly">hourly</a>`, `<td class="spec">cron @hourly</td>`, `<span class="status paused">paused</span>`,
		"<td>skip</td>",
	} {
		if !strings.Contains(list, want) {
			t.Errorf("the list lacks %q", want)
		}
	}
	if strings.Contains(list, stamp(d.Next[3])) {
		t.Error("the list shows more than three next fires")
	}
	if t.Failed() {
		t.Fatal(list)
	}

	_, body = b.get("/schedules/nightly")
	berlin, err := time.LoadLocation("Europe/Berlin")
	must(t, err)
	for _, want := range []string{
		`id="state">running</span>`, `id="instance" href="/instances/schedule:nightly"`, `id="overlap">allow_all`,
		`id="action">Echo with input <code>report</code>`, `id="started">1<`,
		"<tr class=\"next-fire\"><td>" + stamp(d.Next[0]) + "</td>", stamp(d.Next[9]),
		d.Next[0].In(berlin).Format("2006-01-02 15:04:05 MST"),
		`<tr class="record started"><td>started</td>`, `<a class="run" href="/instances/` + url.PathEscape(run) + `">` + run + `</a>`,
		"<td>trigger</td>", `data-refresh="5"`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("the schedule's page lacks %q:\n%s", want, body)
		}
	}
	if n := strings.Count(body, `class="next-fire"`); n != 10 {
		t.Fatalf("%d next fires, want 10", n)
	}
	if got := strings.Join(actionIDs(body), " "); got != "pause trigger" {
		t.Fatalf("a running schedule offers %q", got)
	}
	if code, body := b.get("/instances/" + url.PathEscape(run)); code != http.StatusOK || !strings.Contains(body, `id="output">report`) {
		t.Fatalf("the run's page: %d\n%s", code, body)
	}

	// Pause, through the confirmation page.
	token := b.confirmSchedule("nightly", "pause")
	code, loc := b.post("/schedules/nightly/pause", url.Values{"csrf": {token}, "note": {"maintenance <b>window</b>"}}, nil)
	if code != http.StatusSeeOther || loc != "/schedules/nightly?done=pause" {
		t.Fatalf("pause: %d %s", code, loc)
	}
	_, body = b.get(loc)
	for _, want := range []string{`id="flash">Done: pause.`, `id="state">paused</span>`, `id="note">maintenance &lt;b&gt;window&lt;/b&gt;`,
		`id="no-next">None: the schedule is paused.`} {
		if !strings.Contains(body, want) {
			t.Fatalf("the paused schedule's page lacks %q:\n%s", want, body)
		}
	}
	if got := strings.Join(actionIDs(body), " "); got != "unpause trigger" || strings.Contains(body, `class="next-fire"`) {
		t.Fatalf("a paused schedule offers %q:\n%s", got, body)
	}
	if _, body := b.get("/schedules"); !strings.Contains(section(t, body, "schedule-nightly", "tr"), `<span class="status paused">paused</span>`) {
		t.Fatalf("the list after the pause:\n%s", body)
	}
	if code, _ := b.post("/schedules/nightly/unpause", url.Values{"csrf": {token}}, nil); code != http.StatusSeeOther {
		t.Fatalf("unpause: %d", code)
	}
	if _, body := b.get("/schedules/nightly"); !strings.Contains(body, `id="state">running</span>`) || !strings.Contains(body, stamp(d.Next[0])) {
		t.Fatalf("the unpaused schedule's page:\n%s", body)
	}

	// Trigger fires a paused schedule too.
	if code, loc := b.post("/schedules/hourly/trigger", url.Values{"csrf": {b.confirmSchedule("hourly", "trigger")}, "overlap": {""}}, nil); code != http.StatusSeeOther ||
		loc != "/schedules/hourly?done=trigger" {
		t.Fatalf("trigger: %d %s", code, loc)
	}
	if _, body := b.get("/schedules/hourly"); !strings.Contains(body, `id="started">1<`) || !strings.Contains(body, `<tr class="record started">`) {
		t.Fatalf("the triggered schedule's page:\n%s", body)
	}

	// A cancelled schedule's instance fails: its error shows, and no
	// action is offered, since it would take none.
	must(t, e.c.CancelInstance(ctx, schedule.InstancePrefix+"hourly", "retired"))
	e.waitFor(schedule.InstancePrefix+"hourly", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateFailed })
	_, body = b.get("/schedules/hourly")
	if !strings.Contains(body, `id="state">failed</span>`) || !strings.Contains(body, `id="error">canceled: retired`) || len(actionIDs(body)) != 0 {
		t.Fatalf("the cancelled schedule's page:\n%s", body)
	}
	if _, body := b.get("/schedules"); !strings.Contains(section(t, body, "schedule-hourly", "tr"), `<span class="failure">canceled: retired</span>`) {
		t.Fatalf("the list lacks the cancelled schedule's error:\n%s", body)
	}

	if code, _ := b.get("/schedules/nope"); code != http.StatusNotFound {
		t.Fatalf("a missing schedule: %d", code)
	}
	if code, _ := b.post("/schedules/nope/pause", url.Values{"csrf": {token}}, nil); code != http.StatusNotFound {
		t.Fatalf("pausing a missing schedule: %d", code)
	}
	if code, _ := b.get("/schedules/nightly/confirm/delete"); code != http.StatusNotFound {
		t.Fatalf("an unknown schedule action: %d", code)
	}
}

// TestScheduleActionsRefused: a read-only dashboard offers no schedule
// action and refuses them; a POST without the form token or from another
// site is refused; none of them pauses the schedule.
func TestScheduleActionsRefused(t *testing.T) {
	e := newEnv(t)
	sc := schedule.NewClient(e.c)
	must(t, sc.Create(t.Context(), "nightly", schedule.Options{Spec: nightlySpec(), Action: schedule.Action{Orchestration: "Echo"}}))

	ro := newDashboard(t, e, dashboard.Options{ReadOnly: true})
	if _, body := ro.get("/schedules/nightly"); strings.Contains(body, `id="actions"`) || strings.Contains(body, "confirm/") ||
		!strings.Contains(body, `id="state">running</span>`) {
		t.Fatalf("the read-only page offers actions:\n%s", body)
	}
	if code, _ := ro.get("/schedules/nightly/confirm/pause"); code != http.StatusForbidden {
		t.Fatalf("read-only confirm: %d", code)
	}
	if code, _ := ro.post("/schedules/nightly/pause", url.Values{}, nil); code != http.StatusForbidden {
		t.Fatalf("read-only POST: %d", code)
	}

	b := newDashboard(t, e, dashboard.Options{})
	token := b.confirmSchedule("nightly", "pause")
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
			if code, body := b.post("/schedules/nightly/pause", tc.form, tc.header); code != http.StatusForbidden {
				t.Fatalf("%d\n%s", code, body)
			}
		})
	}
	d, err := sc.Describe(t.Context(), "nightly")
	must(t, err)
	if d.Options.Paused {
		t.Fatal("a refused pause paused the schedule")
	}
}

// TestScheduleActionWithoutARuntime: with no runtime running, a pause is
// answered 504 after ScheduleTimeout, and stays queued: the next runtime
// takes it.
func TestScheduleActionWithoutARuntime(t *testing.T) {
	p := memprovider.New()
	fixed := new(atomic.Bool)
	rt, err := durable.Start(t.Context(), p, registry(t, fixed), nil)
	must(t, err)
	c := durable.NewClient(p)
	sc := schedule.NewClient(c)
	must(t, sc.Create(t.Context(), "nightly", schedule.Options{Spec: nightlySpec(), Action: schedule.Action{Orchestration: "Echo"}}))
	must(t, rt.Shutdown(context.Background())) // the service is down

	b := serve(t, dashboard.New(c, dashboard.Options{ScheduleTimeout: 200 * time.Millisecond}))
	token := b.confirmSchedule("nightly", "pause")
	code, body := b.post("/schedules/nightly/pause", url.Values{"csrf": {token}, "note": {"queued"}}, nil)
	if code != http.StatusGatewayTimeout || !strings.Contains(body, "schedule.Register") || !strings.Contains(body, "stays queued") {
		t.Fatalf("pause with no runtime: %d\n%s", code, body)
	}
	demo.StartRuntime(t, p, registry(t, fixed), nil)
	b.pageUntil("/schedules/nightly", `id="state">paused</span>`)
}

// TestSchedulesThroughTheCodec: over payload.WrapForDisplay with the
// codec the pages read the schedule; without it they show the codec's
// placeholder for its state instead of failing.
func TestSchedulesThroughTheCodec(t *testing.T) {
	aes, err := payload.AESGCM(payload.Key{ID: "k1", Secret: bytes.Repeat([]byte{5}, 32)})
	must(t, err)
	store := memprovider.New()
	p, err := payload.Wrap(store, aes)
	must(t, err)
	e := newEnvOn(t, p)
	must(t, schedule.NewClient(e.c).Create(t.Context(), "secret", schedule.Options{Spec: nightlySpec(),
		Action: schedule.Action{Orchestration: "Echo", Input: "classified"}}))

	served := func(codecs ...payload.Codec) *browser {
		view, err := payload.WrapForDisplay(store, codecs...)
		must(t, err)
		return serve(t, dashboard.New(durable.NewClient(view), dashboard.Options{}))
	}
	with := served(aes)
	if code, body := with.get("/schedules/secret"); code != http.StatusOK || !strings.Contains(body, "with input <code>classified</code>") {
		t.Fatalf("with the codec: %d\n%s", code, body)
	}
	without := served()
	placeholder := "&lt;encoded payload (aesgcm): codec not configured: set DUROXIDE_CODEC&gt;"
	code, body := without.get("/schedules")
	if row := section(t, body, "schedule-secret", "tr"); code != http.StatusOK || !strings.Contains(row, "status unreadable") ||
		!strings.Contains(row, placeholder) {
		t.Fatalf("the list without the codec: %d\n%s", code, body)
	}
	code, body = without.get("/schedules/secret")
	if code != http.StatusOK || !strings.Contains(body, placeholder) || strings.Contains(body, "classified") || strings.Contains(body, payload.Prefix) {
		t.Fatalf("the schedule's page without the codec: %d\n%s", code, body)
	}
}

// TestHostileSchedulesAreEscaped: schedule ids, notes and inputs of
// hostile markup are shown as text on the list, each schedule's page and
// its confirmation pages, and the ids, path-escaped, reach their pages
// and their runs'.
func TestHostileSchedulesAreEscaped(t *testing.T) {
	e := newEnv(t)
	sc := schedule.NewClient(e.c)
	var ids []string
	for i, h := range hostile {
		id := h + "/" + string(rune('a'+i)) + "?q=1#frag%41"
		must(t, sc.Create(t.Context(), id, schedule.Options{Spec: nightlySpec(), Note: h, Overlap: schedule.OverlapAllowAll,
			Action: schedule.Action{Orchestration: "Echo", Input: h}}))
		must(t, sc.Trigger(t.Context(), id))
		ids = append(ids, id)
	}
	b := newDashboard(t, e, dashboard.Options{})
	code, body := b.get("/schedules")
	if code != http.StatusOK || strings.Count(body, `class="schedule"`) != len(hostile) {
		t.Fatalf("schedules: %d\n%s", code, body)
	}
	assertEscaped(t, "schedules", body)
	for _, id := range ids {
		path := "/schedules/" + url.PathEscape(id)
		code, body := b.get(path)
		if code != http.StatusOK || !strings.Contains(body, `class="record started"`) {
			t.Fatalf("%q: %d\n%s", id, code, body)
		}
		assertEscaped(t, "schedule "+id, body)
		for _, a := range []string{"pause", "unpause", "trigger"} {
			_, body := b.get(path + "/confirm/" + a)
			assertEscaped(t, a+" confirm "+id, body)
		}
		d, err := sc.Describe(t.Context(), id)
		must(t, err)
		if code, _ := b.get("/instances/" + url.PathEscape(d.Recent[0].RunID)); code != http.StatusOK {
			t.Fatalf("the run of %q: %d", id, code)
		}
	}
	_, body = b.get("/schedules/" + url.PathEscape(ids[0]))
	esc := "&lt;script&gt;alert(&#34;xss&#34;)&lt;/script&gt;"
	for _, want := range []string{`id="schedule-id">` + esc + "/a?q=1#frag%41", `id="note">` + esc, "with input <code>" + esc + "</code>"} {
		if !strings.Contains(body, want) {
			t.Fatalf("the page lacks %q:\n%s", want, body)
		}
	}
}
