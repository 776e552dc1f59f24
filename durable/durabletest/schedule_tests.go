package durabletest

import (
	"slices"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/schedule"
)

// scheduleTests are Go-only: schedules (issue 33) on the real clock. The
// overlap policies, pauses, DST and the rest run in virtual time in the
// schedule package (memprovider only); these show what needs a real
// store and real processes: fires counted exactly once per due time with
// two runtimes on one store, and the catch-up window after every runtime
// was down.
func scheduleTests() []sample {
	return []sample{
		{"two_runtimes_fire_exactly_once_per_due_time", twoRuntimesFireExactlyOncePerDueTime},
		{"schedule_catches_up_within_its_window_after_downtime", scheduleCatchesUpWithinItsWindowAfterDowntime},
	}
}

// scheduleRegistry registers the schedule engine and "Tick", a run that
// returns its input at once.
func scheduleRegistry(e *env) *durable.Registry {
	r := durable.NewRegistry()
	require.NoError(e.t, schedule.Register(r))
	orch(e.t, r, "Tick", func(ctx *durable.OrchestrationContext, in string) (string, error) { return in, nil })
	return r
}

// scheduledRuns returns the nominal fire times of the runs with prefix,
// sorted, and requires each to have started exactly once and completed.
func (e *env) scheduledRuns(prefix string) []time.Time {
	e.t.Helper()
	var out []time.Time
	for _, id := range e.instancesWithPrefix(prefix + "@") {
		at, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(id, prefix+"@"))
		require.NoError(e.t, err, "run id %q", id)
		st := e.wait(id)
		require.Equal(e.t, durable.StateCompleted, st.State, "%s: %s", id, st.FailureMessage())
		require.Equal(e.t, 1, countKind[duroxide.OrchestrationStarted](e.history(id)), "%s ran more than once: %s", id, kinds(e.history(id)))
		out = append(out, at)
	}
	slices.SortFunc(out, time.Time.Compare)
	return out
}

// Two runtimes on one store: every due time of a one-second interval
// over a few seconds has exactly one run, each started once.
func twoRuntimesFireExactlyOncePerDueTime(e *env) {
	reg := scheduleRegistry(e)
	e.start(reg, fastOptions(nil))
	e.start(reg, fastOptions(nil))
	c := schedule.NewClient(e.client())
	// StartAt fixes the first due time: a schedule taken later (a loaded
	// machine) still fires from it, within the catch-up window.
	start := time.Now().Truncate(time.Second).Add(time.Second)
	end := start.Add(3 * time.Second)
	require.NoError(e.t, c.Create(e.ctx, "twice", schedule.Options{
		Spec:    schedule.Spec{Intervals: []schedule.Interval{{Every: time.Second}}, StartAt: start, EndAt: end},
		Action:  schedule.Action{Orchestration: "Tick", Input: "x", IDPrefix: "tick"},
		Overlap: schedule.OverlapAllowAll,
	}))
	e.waitFor("the schedule's last fire", func() bool {
		d, err := c.Describe(e.ctx, "twice")
		return err == nil && len(d.Next) == 0
	})
	// The turn that starts the last run publishes the empty Next; the run
	// is an instance only once a runtime takes its start, so wait for as
	// many runs as the schedule started (a missed fire still fails below).
	d, err := c.Describe(e.ctx, "twice")
	require.NoError(e.t, err)
	e.waitFor("every started run", func() bool { return uint64(len(e.instancesWithPrefix("tick@"))) >= d.Started })
	runs := e.scheduledRuns("tick")
	var want []time.Time
	for t := start; !t.After(end); t = t.Add(time.Second) {
		want = append(want, t.UTC())
	}
	require.Equal(e.t, want, runs, "one run per due time")
	d, err = c.Describe(e.ctx, "twice")
	require.NoError(e.t, err)
	require.Equal(e.t, uint64(len(want)), d.Started)
	require.NoError(e.t, c.Delete(e.ctx, "twice"))
}

// With every runtime down over several fire times, the restarted one
// runs the fires still inside the catch-up window, records the older
// ones as missed, and goes on firing.
func scheduleCatchesUpWithinItsWindowAfterDowntime(e *env) {
	reg := scheduleRegistry(e)
	rt := e.start(reg, fastOptions(nil))
	c := schedule.NewClient(e.client())
	require.NoError(e.t, c.Create(e.ctx, "down", schedule.Options{
		Spec:          schedule.Spec{Intervals: []schedule.Interval{{Every: time.Second}}},
		Action:        schedule.Action{Orchestration: "Tick", Input: "x", IDPrefix: "down"},
		Overlap:       schedule.OverlapAllowAll,
		CatchupWindow: 2 * time.Second,
	}))
	e.waitFor("a first run", func() bool { return len(e.instancesWithPrefix("down@")) > 0 })
	shutdownRuntime(e, rt)
	stopped := time.Now()
	time.Sleep(8 * time.Second)
	restarted := time.Now()
	e.start(reg, fastOptions(nil))
	e.waitFor("runs after the restart", func() bool {
		d, err := c.Describe(e.ctx, "down")
		return err == nil && len(d.Recent) > 0 && d.Recent[len(d.Recent)-1].Nominal.After(restarted.Add(time.Second))
	})
	require.NoError(e.t, c.Pause(e.ctx, "down", "stop for the count"))
	runs := e.scheduledRuns("down")
	for _, at := range runs {
		require.False(e.t, at.After(stopped.Add(time.Second)) && at.Before(restarted.Add(-3*time.Second)),
			"run %v: fired while every runtime was down and older than the window (down %v to %v)", at, stopped, restarted)
	}
	require.True(e.t, slices.ContainsFunc(runs, func(t time.Time) bool { return t.After(restarted) }), "no run after the restart: %v", runs)
	d, err := c.Describe(e.ctx, "down")
	require.NoError(e.t, err)
	missed := slices.IndexFunc(d.Recent, func(r schedule.Record) bool { return r.Kind == schedule.ActionMissed })
	require.GreaterOrEqual(e.t, missed, 0, "no missed record: %+v", d.Recent)
	require.True(e.t, d.Recent[missed].Nominal.After(stopped.Add(-time.Second)), "missed %v", d.Recent[missed])
}
