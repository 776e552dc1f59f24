package browsertest

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
	"github.com/duroxide-go/cdb/schedule"
)

// reports runs the schedule engine on a memprovider with two schedules:
// nightly-report (03:00 Berlin time, from a day a month ahead, so its
// next fire times do not depend on when the test runs; triggered once)
// and hourly-sync; it serves the dashboard over them and returns
// nightly-report's description.
func reports(t *testing.T) (*schedule.Description, string) {
	t.Helper()
	p := memprovider.New()
	reg := durable.NewRegistry()
	must(t, schedule.Register(reg))
	must(t, reg.AddOrchestration("Report", func(_ *durable.OrchestrationContext, in string) (string, error) { return "report " + in, nil }))
	rt, err := durable.Start(t.Context(), p, reg, nil)
	must(t, err)
	t.Cleanup(func() { must(t, rt.Shutdown(context.Background())) })
	sc := schedule.NewClient(durable.NewClient(p))
	ctx := t.Context()
	start := time.Now().UTC().Add(30 * 24 * time.Hour).Truncate(24 * time.Hour)
	must(t, sc.Create(ctx, "nightly-report", schedule.Options{
		Spec:   schedule.Spec{Cron: []string{"0 3 * * *"}, TimeZone: "Europe/Berlin", StartAt: start},
		Action: schedule.Action{Orchestration: "Report", Input: "sales"}, Overlap: schedule.OverlapBufferOne,
	}))
	must(t, sc.Create(ctx, "hourly-sync", schedule.Options{
		Spec: schedule.Spec{Cron: []string{"@hourly"}}, Action: schedule.Action{Orchestration: "Report", Input: "sync"},
	}))
	must(t, sc.Trigger(ctx, "nightly-report"))
	d, err := sc.Describe(ctx, "nightly-report", schedule.DescribeOptions{NextFires: 10})
	must(t, err)
	if len(d.Next) != 10 || len(d.Recent) != 1 {
		t.Fatalf("nightly-report: %+v", d)
	}
	srv := httptest.NewServer(dashboard.New(durable.NewClient(p), dashboard.Options{Title: "reports · duroxide"}))
	t.Cleanup(srv.Close)
	return d, srv.URL
}

// stamp is t as the pages print an absolute time.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000Z") }

// TestPauseASchedule: open the schedules page from the navigation, see
// the schedule and its next fire times, open it, follow its triggered run
// to the run's page and back, pause it behind the confirmation, and see
// its state change to paused with no next fire times, on its page and on
// the list.
func TestPauseASchedule(t *testing.T) {
	d, base := reports(t)
	s := newSession(t, base)

	s.run("open the schedules page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#nav-schedules")),
		chromedp.Click(chromedp.CSS("#nav-schedules")), chromedp.WaitVisible(chromedp.CSS("#schedules")))
	row := s.text("the nightly row", "#schedule-nightly-report")
	for _, want := range []string{"nightly-report", "cron 0 3 * * *, in Europe/Berlin", "running", stamp(d.Next[0]), stamp(d.Next[1]), "buffer_one", d.Recent[0].RunID} {
		if !strings.Contains(row, want) {
			t.Fatalf("the nightly row lacks %q: %q", want, row)
		}
	}
	if row := s.text("the hourly row", "#schedule-hourly-sync"); !strings.Contains(row, "cron @hourly") || !strings.Contains(row, "running") {
		t.Fatalf("the hourly row: %q", row)
	}
	s.viewShot("14-schedules")

	s.run("open the schedule", chromedp.Click(chromedp.Search(`//a[@class="sched" and text()="nightly-report"]`)),
		chromedp.WaitVisible(chromedp.CSS("#next-table")))
	if n := js[int](s, "next fires", `document.querySelectorAll("tr.next-fire").length`); n != 10 {
		t.Fatalf("%d next fires, want 10", n)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	must(t, err)
	first := s.text("the first next fire", "tr.next-fire")
	if !strings.Contains(first, stamp(d.Next[0])) || !strings.Contains(first, d.Next[0].In(berlin).Format("2006-01-02 15:04:05 MST")) ||
		!strings.Contains(first, " 03:00:00 CE") {
		t.Fatalf("the first next fire: %q", first)
	}
	if got := s.text("state", "#state"); got != "running" {
		t.Fatalf("state: %q", got)
	}
	s.shot("15-schedule")

	run := d.Recent[0].RunID
	s.run("follow the run", chromedp.Click(chromedp.Search(`//a[@class="run" and text()="`+run+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#instance-id")))
	if got := s.text("run id", "#instance-id"); got != run {
		t.Fatalf("the run's page: %q", got)
	}
	s.run("back", chromedp.NavigateBack(), chromedp.WaitVisible(chromedp.CSS("#action-pause")))

	s.run("pause", chromedp.Click(chromedp.CSS("#action-pause")), chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
		chromedp.SetValue(chromedp.CSS("#note"), "quarter-end freeze"))
	s.viewShot("16-confirm-pause")
	s.run("confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#flash")))
	if got := s.text("state", "#state"); got != "paused" {
		t.Fatalf("after the pause: %q", got)
	}
	if got := s.text("note", "#note"); got != "quarter-end freeze" {
		t.Fatalf("note: %q", got)
	}
	if got := s.text("next fires", "#no-next"); !strings.Contains(got, "paused") {
		t.Fatalf("next fires when paused: %q", got)
	}
	if n := js[int](s, "actions", `document.querySelectorAll("#action-unpause").length + 10*document.querySelectorAll("#action-pause").length`); n != 1 {
		t.Fatal("the paused schedule does not offer unpause (and only it)")
	}
	s.shot("17-schedule-paused")

	s.run("back to the list", chromedp.Click(chromedp.CSS("#nav-schedules")), chromedp.WaitVisible(chromedp.CSS("#schedules")))
	if row := s.text("the nightly row", "#schedule-nightly-report"); !strings.Contains(row, "paused") || strings.Contains(row, stamp(d.Next[0])) {
		t.Fatalf("the paused row: %q", row)
	}
}
