package schedule

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/testenv"
	"github.com/duroxide-go/cdb/duroxide"
)

// world is a schedule test in virtual time: a runtime with the schedule
// engine, "Job" (sleeps its input, a duration, then returns it) and
// "Sleep" (moves the clock for the test).
type world struct {
	t     *testing.T
	env   *testenv.Env
	c     *Client
	start time.Time
	naps  int
}

func newWorld(t *testing.T, start time.Time) *world {
	t.Helper()
	reg := durable.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	sleep := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		d, err := time.ParseDuration(in)
		if err != nil {
			return "", err
		}
		if _, err := durable.NewTimer(ctx, d).Await(); err != nil {
			return "", err
		}
		return in, nil
	}
	for _, name := range []string{"Job", "Sleep"} {
		if err := durable.RegisterOrchestration(reg, name, sleep); err != nil {
			t.Fatal(err)
		}
	}
	parent := func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Job", in, durable.SubOrchestrationOptions{InstanceID: "child-" + ctx.InstanceID()}).Await()
	}
	if err := durable.RegisterOrchestration(reg, "Parent", parent); err != nil {
		t.Fatal(err)
	}
	env := testenv.New(t, reg, &testenv.Options{Start: start})
	return &world{t: t, env: env, c: NewClient(env.Client()), start: env.Now()}
}

// advance runs the virtual clock on by d, doing all that falls due.
func (w *world) advance(d time.Duration) {
	w.t.Helper()
	w.naps++
	id := fmt.Sprintf("nap-%d", w.naps)
	if err := w.env.StartOrchestration(id, "Sleep", d.String()); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.env.WaitForOrchestration(id); err != nil {
		w.t.Fatal(err)
	}
}

// at is the start plus d.
func (w *world) at(d time.Duration) time.Time { return w.start.Add(d) }

// runs returns the nominal times of the runs with the prefix, sorted.
func (w *world) runs(prefix string) []time.Time {
	w.t.Helper()
	var out []time.Time
	q := duroxide.InstanceQuery{IDPrefix: prefix + "@"}
	for {
		page, err := w.env.Client().Search(w.t.Context(), q)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, in := range page.Instances {
			at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(in.InstanceID, prefix+"@"))
			if err != nil {
				w.t.Fatalf("run id %q: %v", in.InstanceID, err)
			}
			out = append(out, at)
		}
		if page.ContinuationToken == "" {
			break
		}
		q.ContinuationToken = page.ContinuationToken
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

func (w *world) status(id string) *durable.OrchestrationStatus {
	w.t.Helper()
	st, err := w.env.Client().Status(w.t.Context(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

// span is when run id started and ended (virtual time), from its history.
func (w *world) span(id string) (time.Time, time.Time) {
	w.t.Helper()
	h, err := w.env.History(id)
	if err != nil || len(h) == 0 {
		w.t.Fatalf("history of %s: %v", id, err)
	}
	return time.UnixMilli(int64(h[0].TimestampMs)).UTC(), time.UnixMilli(int64(h[len(h)-1].TimestampMs)).UTC()
}

func (w *world) describe(id string) *Description {
	w.t.Helper()
	d, err := w.c.Describe(w.t.Context(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return d
}

// nominals returns the nominal times of the records of kind k, sorted.
func nominals(rs []Record, k ActionKind) []time.Time {
	var out []time.Time
	for _, r := range rs {
		if r.Kind == k {
			out = append(out, r.Nominal)
		}
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

func minutes(w *world, ms ...int) []time.Time {
	var out []time.Time
	for _, m := range ms {
		out = append(out, w.at(time.Duration(m)*time.Minute))
	}
	return out
}

func sameTimes(a, b []time.Time) bool { return slices.EqualFunc(a, b, time.Time.Equal) }

func TestIntervalFiresOncePerDueTime(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(10 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s", IDPrefix: "job"}}
	if err := w.c.Create(t.Context(), "s1", o); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Create(t.Context(), "s1", o); !errors.Is(err, ErrExists) {
		t.Fatalf("second create: %v", err)
	}
	if _, err := w.env.WaitForOrchestration(instanceID("s1")); !errors.Is(err, testenv.ErrStalled) {
		t.Fatalf("wait: %v", err)
	}
	if got := w.runs("job"); !sameTimes(got, minutes(w, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)) {
		t.Fatalf("runs: %v", got)
	}
	for _, at := range w.runs("job") {
		if st := w.status(RunID("job", at)); st.State != durable.StateCompleted {
			t.Fatalf("%v: %v", at, st.State)
		}
		if start, _ := w.span(RunID("job", at)); !start.Equal(at) {
			t.Fatalf("run %v started at %v", at, start)
		}
	}
	d := w.describe("s1")
	if d.Started != 10 || len(d.Next) != 0 {
		t.Fatalf("describe: started %d next %v", d.Started, d.Next)
	}
	if err := w.c.Delete(t.Context(), "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.c.Describe(t.Context(), "s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("describe deleted: %v", err)
	}
}

// Each overlap policy, with runs (90 s) longer than the interval (60 s)
// over six fires.
func TestOverlapPolicies(t *testing.T) {
	cases := []struct {
		overlap  Overlap
		started  []int
		skipped  []int
		cancels  int
		parallel bool
	}{
		{OverlapSkip, []int{1, 3, 5}, []int{2, 4, 6}, 0, false},
		{OverlapBufferOne, []int{1, 2, 3, 5, 6}, []int{4}, 0, false},
		{OverlapBufferAll, []int{1, 2, 3, 4, 5, 6}, nil, 0, false},
		{OverlapCancelOther, []int{1, 2, 3, 4, 5, 6}, nil, 5, false},
		{OverlapAllowAll, []int{1, 2, 3, 4, 5, 6}, nil, 0, true},
	}
	for _, c := range cases {
		t.Run(string(c.overlap), func(t *testing.T) {
			w := newWorld(t, time.Time{})
			o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(6 * time.Minute)},
				Action: Action{Orchestration: "Job", Input: "90s"}, Overlap: c.overlap}
			if err := w.c.Create(t.Context(), "ov", o); err != nil {
				t.Fatal(err)
			}
			w.advance(20 * time.Minute)
			runs := w.runs("ov")
			if !sameTimes(runs, minutes(w, c.started...)) {
				t.Fatalf("runs: %v, want minutes %v", runs, c.started)
			}
			d := w.describe("ov")
			if got := nominals(d.Recent, ActionSkipped); !sameTimes(got, minutes(w, c.skipped...)) {
				t.Fatalf("skipped: %v, want minutes %v", got, c.skipped)
			}
			cancelled, overlapped := 0, false
			var prevEnd time.Time
			for _, at := range runs {
				id := RunID("ov", at)
				st := w.status(id)
				if st.State == durable.StateFailed {
					cancelled++
				} else if st.State != durable.StateCompleted {
					t.Fatalf("%s: %v", id, st.State)
				}
				start, end := w.span(id)
				if start.Before(prevEnd) {
					overlapped = true
				}
				prevEnd = end
			}
			if cancelled != c.cancels || overlapped != c.parallel {
				t.Fatalf("cancelled %d (want %d), overlapped %v (want %v)", cancelled, c.cancels, overlapped, c.parallel)
			}
			if got := len(nominals(d.Recent, ActionCancelled)); got != c.cancels {
				t.Fatalf("cancelled records: %d", got)
			}
		})
	}
}

// No fire runs while paused; unpaused, the schedule goes on from its next
// fire time (the fires due while paused are not caught up).
func TestPauseAcrossFireTimes(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(8 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s"}, CatchupWindow: time.Hour}
	if err := w.c.Create(t.Context(), "p", o); err != nil {
		t.Fatal(err)
	}
	w.advance(150 * time.Second)
	if err := w.c.Pause(t.Context(), "p", "maintenance"); err != nil {
		t.Fatal(err)
	}
	d := w.describe("p")
	if !d.Options.Paused || d.Options.Note != "maintenance" || len(d.Next) != 0 {
		t.Fatalf("paused: %+v", d)
	}
	w.advance(3 * time.Minute) // past 3, 4 and 5
	if got := w.runs("p"); !sameTimes(got, minutes(w, 1, 2)) {
		t.Fatalf("runs while paused: %v", got)
	}
	if err := w.c.Unpause(t.Context(), "p", ""); err != nil {
		t.Fatal(err)
	}
	if d := w.describe("p"); d.Options.Paused || len(d.Next) == 0 || !d.Next[0].Equal(w.at(6*time.Minute)) {
		t.Fatalf("unpaused: next %v", d.Next)
	}
	w.advance(5 * time.Minute)
	if got := w.runs("p"); !sameTimes(got, minutes(w, 1, 2, 6, 7, 8)) {
		t.Fatalf("runs: %v", got)
	}
}

// A schedule created paused fires only once unpaused.
func TestCreatePaused(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(4 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s"}, Paused: true}
	if err := w.c.Create(t.Context(), "cp", o); err != nil {
		t.Fatal(err)
	}
	w.advance(150 * time.Second)
	if got := w.runs("cp"); len(got) != 0 {
		t.Fatalf("runs while paused: %v", got)
	}
	if err := w.c.Unpause(t.Context(), "cp", "go"); err != nil {
		t.Fatal(err)
	}
	w.advance(5 * time.Minute)
	if got := w.runs("cp"); !sameTimes(got, minutes(w, 3, 4)) {
		t.Fatalf("runs: %v", got)
	}
}

// A schedule held up past its fire times (here suspended, as every
// process being down holds it) runs, when it wakes, the fires still
// inside the catch-up window and records the older ones as missed.
func TestCatchupWindowAfterAnOutage(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(20 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s"}, CatchupWindow: 150 * time.Second, Overlap: OverlapAllowAll}
	if err := w.c.Create(t.Context(), "cu", o); err != nil {
		t.Fatal(err)
	}
	w.advance(90 * time.Second)
	if err := w.env.Client().Suspend(t.Context(), instanceID("cu"), "outage"); err != nil {
		t.Fatal(err)
	}
	w.advance(10*time.Minute + 10*time.Second) // to 11:40
	if got := w.runs("cu"); !sameTimes(got, minutes(w, 1)) {
		t.Fatalf("runs during the outage: %v", got)
	}
	if err := w.env.Client().Resume(t.Context(), instanceID("cu"), "back"); err != nil {
		t.Fatal(err)
	}
	w.advance(30 * time.Second) // to 12:10
	if got := w.runs("cu"); !sameTimes(got, minutes(w, 1, 10, 11, 12)) {
		t.Fatalf("runs: %v, want 1, then 10 and 11 (within 150 s of 11:40) and 12", got)
	}
	d := w.describe("cu")
	if missed := nominals(d.Recent, ActionMissed); !sameTimes(missed, minutes(w, 2)) {
		t.Fatalf("missed records: %v (one, naming the first missed fire)", missed)
	}
}

// Trigger fires now; Backfill fires each spec time of a past range, and
// a second backfill of the same range starts nothing again.
func TestTriggerAndBackfill(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Cron: []string{"0 * * * *"}}, Action: Action{Orchestration: "Job", Input: "1s"}}
	if err := w.c.Create(t.Context(), "tb", o); err != nil {
		t.Fatal(err)
	}
	w.advance(10 * time.Minute)
	if err := w.c.Trigger(t.Context(), "tb"); err != nil {
		t.Fatal(err)
	}
	from, to := w.at(-5*time.Hour), w.at(-2*time.Hour)
	for range 2 {
		if err := w.c.Backfill(t.Context(), "tb", from, to, TriggerOptions{Overlap: OverlapAllowAll}); err != nil {
			t.Fatal(err)
		}
	}
	w.advance(10 * time.Minute)
	want := []time.Time{w.at(-5 * time.Hour), w.at(-4 * time.Hour), w.at(-3 * time.Hour), w.at(10 * time.Minute)}
	if got := w.runs("tb"); !sameTimes(got, want) {
		t.Fatalf("runs: %v, want %v", got, want)
	}
	for _, at := range want {
		h, err := w.env.History(RunID("tb", at))
		if err != nil {
			t.Fatal(err)
		}
		if n := countStarted(h); n != 1 || w.status(RunID("tb", at)).State != durable.StateCompleted {
			t.Fatalf("run %v: %d starts, %v", at, n, w.status(RunID("tb", at)).State)
		}
	}
	d := w.describe("tb")
	if !d.Next[0].Equal(w.at(time.Hour)) {
		t.Fatalf("next: %v", d.Next)
	}
	reasons := map[string]int{}
	for _, r := range d.Recent {
		reasons[r.Reason]++
	}
	if reasons["trigger"] != 1 || reasons["backfill"] < 3 {
		t.Fatalf("recent: %+v", d.Recent)
	}
	if err := w.c.Backfill(t.Context(), "tb", to, from); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("empty range: %v", err)
	}
}

func countStarted(h []duroxide.Event) int {
	n := 0
	for _, ev := range h {
		if _, ok := ev.Kind.(duroxide.OrchestrationStarted); ok {
			n++
		}
	}
	return n
}

// Update replaces the spec: the next fires follow the new one.
func TestUpdateChangesTheSpec(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}}, Action: Action{Orchestration: "Job", Input: "1s"}}
	if err := w.c.Create(t.Context(), "up", o); err != nil {
		t.Fatal(err)
	}
	w.advance(150 * time.Second)
	o.Spec = Spec{Intervals: []Interval{{Every: 10 * time.Minute, Offset: 5 * time.Minute}}, EndAt: w.at(30 * time.Minute)}
	if err := w.c.Update(t.Context(), "up", o); err != nil {
		t.Fatal(err)
	}
	if d := w.describe("up"); !sameTimes(d.Next, minutes(w, 5, 15, 25)) {
		t.Fatalf("next after update: %v", d.Next)
	}
	w.advance(40 * time.Minute)
	if got := w.runs("up"); !sameTimes(got, minutes(w, 1, 2, 5, 15, 25)) {
		t.Fatalf("runs: %v", got)
	}
	bad := o
	bad.Spec = Spec{Cron: []string{"61 * * * *"}}
	if err := w.c.Update(t.Context(), "up", bad); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("bad update: %v", err)
	}
	if err := w.c.Pause(t.Context(), "nope", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pause of a missing schedule: %v", err)
	}
}

// Deleted, a schedule fires no more; its id can be created again.
func TestDeleteStopsFiring(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(10 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s", IDPrefix: "del"}}
	if err := w.c.Create(t.Context(), "d", o); err != nil {
		t.Fatal(err)
	}
	w.advance(150 * time.Second)
	if err := w.c.Delete(t.Context(), "d"); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(t.Context(), "d"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	w.advance(3 * time.Minute)
	if got := w.runs("del"); !sameTimes(got, minutes(w, 1, 2)) {
		t.Fatalf("runs: %v", got)
	}
	if l, err := w.c.List(t.Context()); err != nil || len(l) != 0 {
		t.Fatalf("list: %v %v", l, err)
	}
	o.Action.IDPrefix = "del2"
	if err := w.c.Create(t.Context(), "d", o); err != nil {
		t.Fatal(err)
	}
	w.advance(2 * time.Minute)
	if got := w.runs("del2"); !sameTimes(got, minutes(w, 6, 7)) {
		t.Fatalf("runs of the new schedule: %v", got)
	}
}

// Cron in a DST zone, in virtual time: the skipped 02:30 of the
// spring-forward day runs once at 03:00 EDT, the repeated 01:30 of the
// fall-back day once, at its first occurrence.
func TestCronDSTInVirtualTime(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	cases := []struct {
		name, cron string
		start      time.Time
		want       []time.Time
	}{
		{"spring forward", "30 2 * * *", time.Date(2025, 3, 8, 12, 0, 0, 0, ny),
			[]time.Time{time.Date(2025, 3, 9, 3, 0, 0, 0, ny), time.Date(2025, 3, 10, 2, 30, 0, 0, ny)}},
		{"fall back", "30 1 * * *", time.Date(2025, 11, 1, 12, 0, 0, 0, ny),
			[]time.Time{utc("2025-11-02T05:30:00Z"), time.Date(2025, 11, 3, 1, 30, 0, 0, ny)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, c.start.UTC())
			o := Options{Spec: Spec{Cron: []string{c.cron}, TimeZone: "America/New_York"}, Action: Action{Orchestration: "Job", Input: "1s"}}
			if err := w.c.Create(t.Context(), "dst", o); err != nil {
				t.Fatal(err)
			}
			w.advance(48 * time.Hour)
			got := w.runs("dst")
			if !sameTimes(got, c.want) {
				t.Fatalf("runs: %v, want %v", got, c.want)
			}
			for _, at := range got {
				if start, _ := w.span(RunID("dst", at)); !start.Equal(at) {
					t.Fatalf("run %v started at %v", at, start)
				}
			}
		})
	}
}

// Jitter delays each run by the same deterministic amount the spec
// computes, under the nominal time's id.
func TestJitterDelaysRuns(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Cron: []string{"@hourly"}, Jitter: 10 * time.Minute, EndAt: w.at(3 * time.Hour)},
		Action: Action{Orchestration: "Job", Input: "1s"}}
	if err := w.c.Create(t.Context(), "j", o); err != nil {
		t.Fatal(err)
	}
	w.advance(4 * time.Hour)
	runs := w.runs("j")
	if !sameTimes(runs, []time.Time{w.at(time.Hour), w.at(2 * time.Hour), w.at(3 * time.Hour)}) {
		t.Fatalf("runs: %v", runs)
	}
	delayed := 0
	for _, at := range runs {
		start, _ := w.span(RunID("j", at))
		want := at.Add(fireDelay(o.Spec, "j", at)).Truncate(time.Millisecond)
		if !start.Equal(want) {
			t.Fatalf("run %v started at %v, want %v", at, start, want)
		}
		if start.After(at) {
			delayed++
		}
	}
	if delayed == 0 {
		t.Fatal("no run was delayed")
	}
}

// Many fires cross continue-as-new (history stays bounded) and each due
// time still runs exactly once.
func TestManyFiresContinueAsNew(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(150 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s"}}
	if err := w.c.Create(t.Context(), "many", o); err != nil {
		t.Fatal(err)
	}
	w.advance(160 * time.Minute)
	runs := w.runs("many")
	if len(runs) != 150 || !runs[0].Equal(w.at(time.Minute)) || !runs[149].Equal(w.at(150*time.Minute)) {
		t.Fatalf("%d runs, %v .. %v", len(runs), runs[0], runs[len(runs)-1])
	}
	execs, err := w.env.Client().ListExecutions(t.Context(), instanceID("many"))
	if err != nil || len(execs) < 3 {
		t.Fatalf("executions: %v %v", execs, err)
	}
	h, err := w.env.History(instanceID("many"))
	if err != nil || len(h) > 1000 {
		t.Fatalf("history of the current execution: %d events, %v", len(h), err)
	}
	if d := w.describe("many"); d.Started != 150 {
		t.Fatalf("started: %d", d.Started)
	}
}

// Cancelling the schedule's instance stops it: no more fires, Describe
// says so, requests find no schedule, Delete removes it. Its runs may
// call children like any orchestration.
func TestCancelledScheduleFiresNoMore(t *testing.T) {
	w := newWorld(t, time.Time{})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(10 * time.Minute)},
		Action: Action{Orchestration: "Parent", Input: "1s"}}
	must(w.c.Create(t.Context(), "cx", o))
	w.advance(150 * time.Second)
	must(w.env.Client().CancelInstance(t.Context(), instanceID("cx"), "stop"))
	w.advance(3 * time.Minute)
	if got := w.runs("cx"); !sameTimes(got, minutes(w, 1, 2)) {
		t.Fatalf("runs: %v", got)
	}
	for _, at := range w.runs("cx") {
		if st := w.status("child-" + RunID("cx", at)); st.State != durable.StateCompleted {
			t.Fatalf("child of %v: %v", at, st.State)
		}
	}
	d := w.describe("cx")
	if d.State != durable.StateFailed.String() || len(d.Next) != 0 || d.Error != "canceled: stop" {
		t.Fatalf("cancelled: state %s next %v error %q", d.State, d.Next, d.Error)
	}
	if err := w.c.Trigger(t.Context(), "cx"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("trigger of a cancelled schedule: %v", err)
	}
	must(w.c.Delete(t.Context(), "cx"))
}

// A StartAt before the schedule was taken fires from StartAt, inside the
// catch-up window; without one the first fire is the first after
// creation.
func TestStartAtInThePastFiresFromIt(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, StartAt: w.at(-3 * time.Minute), EndAt: w.at(2 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s"}, CatchupWindow: 150 * time.Second, Overlap: OverlapAllowAll}
	if err := w.c.Create(t.Context(), "past", o); err != nil {
		t.Fatal(err)
	}
	w.advance(3 * time.Minute)
	if got := w.runs("past"); !sameTimes(got, minutes(w, -2, -1, 0, 1, 2)) {
		t.Fatalf("runs: %v, want -2 .. 2 (-3 is outside the window)", got)
	}
	if d := w.describe("past"); len(nominals(d.Recent, ActionMissed)) != 1 {
		t.Fatalf("recent: %+v", d.Recent)
	}
}

// A run deleted by hand while the schedule counts it as running does not
// hold the overlap policy for ever: once its start is long past, not
// found means ended.
func TestDeletedRunDoesNotBlockSkip(t *testing.T) {
	w := newWorld(t, time.Time{})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(6 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1h"}}
	if err := w.c.Create(t.Context(), "del", o); err != nil {
		t.Fatal(err)
	}
	w.advance(150 * time.Second)
	if _, err := w.env.Client().DeleteInstance(t.Context(), RunID("del", w.at(time.Minute)), durable.DeleteOptions{Force: true}); err != nil {
		t.Fatal(err)
	}
	w.advance(5 * time.Minute)
	if got := w.runs("del"); !sameTimes(got, minutes(w, 3)) {
		t.Fatalf("runs: %v, want the 3-minute run once the deleted one is seen gone", got)
	}
}

// A store that fails the runs activity (every attempt) does not end the
// schedule: the runs it cannot see count as running, so the overlap
// policy skips, and the schedule goes on.
func TestFailingRunsActivityDoesNotEndTheSchedule(t *testing.T) {
	w := newWorld(t, time.Time{})
	testenv.ReplaceActivity(w.env, runsActivity, func(durable.ActivityContext, runsQuery) ([]string, error) {
		return nil, errors.New("store unavailable")
	})
	o := Options{Spec: Spec{Intervals: []Interval{{Every: time.Minute}}, EndAt: w.at(4 * time.Minute)},
		Action: Action{Orchestration: "Job", Input: "1s"}}
	if err := w.c.Create(t.Context(), "flaky", o); err != nil {
		t.Fatal(err)
	}
	w.advance(10 * time.Minute)
	if st := w.status(instanceID("flaky")); st.State != durable.StateRunning {
		t.Fatalf("schedule: %v %s", st.State, st.FailureMessage())
	}
	if got := w.runs("flaky"); !sameTimes(got, minutes(w, 1)) {
		t.Fatalf("runs: %v", got)
	}
	if got := nominals(w.describe("flaky").Recent, ActionSkipped); !sameTimes(got, minutes(w, 2, 3, 4)) {
		t.Fatalf("skipped: %v", got)
	}
}
