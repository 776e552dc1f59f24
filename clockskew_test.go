package cdb_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// Clock skew (issue 19 item 4). Every lock and lease expiry is written
// with the holder's clock and judged by whoever wants to take it, with
// its own. These tests run a holder and a "thief" on one container, each
// with a fake clock; the thief's reads the holder's plus a skew. The
// holder keeps its lock or lease alive on the runtime's default schedule
// while the thief tries to take it after every simulated second; the
// measured tolerance is the largest skew (to the second) at which the
// thief never does.

// skewStep is the simulated time between the thief's attempts.
const skewStep = time.Second

// Lock schedule of the runtime's defaults for activities and sessions
// (durable: WorkerLockTimeout 30s renewed 5s before expiry).
const (
	skewLock  = 30 * time.Second
	skewRenew = 25 * time.Second
)

// minSkewTolerance is what the issue requires between any two processes.
const minSkewTolerance = 30 * time.Second

// skewEnv is a holder and a thief on one cosmostest container.
type skewEnv struct {
	h      *harness
	clock  *manualClock
	skew   atomic.Int64 // the thief's clock minus the holder's (ns)
	holder *cdb.Provider
	thief  *cdb.Provider
	round  atomic.Int64
	// crashed stops the holder's renewals: it died holding the lock.
	crashed bool
}

// renews reports whether the holder renews at elapsed.
func (e *skewEnv) renews(elapsed, every time.Duration) bool {
	return !e.crashed && elapsed > 0 && elapsed%every == 0
}

func newSkewEnv(t *testing.T, o cdb.Options) *skewEnv {
	t.Helper()
	e := &skewEnv{clock: newManualClock()}
	o.MaxClockSkew = cdb.DefaultMaxClockSkew // the harness turns it off
	e.h = newHarness(t, o, withSeam(testhooks.Seam{Now: e.clock.now}), withoutLag())
	e.holder = e.h.p
	e.thief = e.h.openWith(testhooks.Seam{Now: e.thiefNow}, o)
	return e
}

func (e *skewEnv) thiefNow() time.Time { return e.clock.now().Add(time.Duration(e.skew.Load())) }

// nextTag isolates one round from the others: its items carry a tag only
// that round's fetches ask for.
func (e *skewEnv) nextTag(t *testing.T) (string, duroxide.TagFilter) {
	tag := fmt.Sprintf("r%d", e.round.Add(1))
	f, err := duroxide.Tags(tag)
	require.NoError(t, err)
	return tag, f
}

// stolen adapts a round to measureTolerance.
func stolen(round func(*testing.T, time.Duration) (time.Duration, bool), t *testing.T) func(time.Duration) bool {
	return func(skew time.Duration) bool {
		_, ok := round(t, skew)
		return ok
	}
}

// measureTolerance returns the largest whole-second forward skew of the
// thief at which stolen is false, searching up to limit (stolen must be
// monotonic in the skew: a clock further ahead sees every expiry sooner).
func measureTolerance(t *testing.T, limit time.Duration, stolen func(skew time.Duration) bool) time.Duration {
	t.Helper()
	require.False(t, stolen(0), "with agreeing clocks the live holder must keep its lock")
	if !stolen(limit) {
		return limit
	}
	lo, hi := time.Duration(0), limit // stolen(lo) false, stolen(hi) true
	for hi-lo > time.Second {
		mid := lo + (hi-lo)/2
		mid -= mid % time.Second
		if stolen(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}

// checkTolerance measures round's tolerance, requires at least
// minSkewTolerance, and checks both ways at one second past it: a clock
// that far ahead or behind takes nothing.
func checkTolerance(t *testing.T, what, schedule, victim string, round func(*testing.T, time.Duration) (time.Duration, bool)) {
	t.Helper()
	tol := measureTolerance(t, 2*time.Minute, stolen(round, t))
	t.Logf("measured %s skew tolerance: %v (%s)", what, tol, schedule)
	require.GreaterOrEqual(t, tol, minSkewTolerance, "a clock %v ahead took %s", tol+time.Second, victim)
	for _, skew := range []time.Duration{minSkewTolerance + time.Second, -minSkewTolerance - time.Second} {
		require.False(t, stolen(round, t)(skew), "a clock %v ahead took %s", skew, victim)
	}
}

// workRound: the holder locks an activity and renews on schedule for three
// renewal periods; it reports whether, and when, the thief fetched the
// item meanwhile.
func (e *skewEnv) workRound(t *testing.T, skew time.Duration) (time.Duration, bool) {
	t.Helper()
	ctx := t.Context()
	e.skew.Store(int64(skew))
	tag, filter := e.nextTag(t)
	item := hActivity("skew-"+tag, 1, nil)
	item.Tag = &tag
	require.NoError(t, e.holder.EnqueueForWorker(ctx, item))
	w, err := e.holder.FetchWorkItem(ctx, skewLock, 0, nil, filter)
	require.NoError(t, err)
	require.NotNil(t, w, "the holder must lock the round's item")
	for elapsed := time.Duration(0); elapsed <= 3*skewRenew; elapsed += skewStep {
		if e.renews(elapsed, skewRenew) {
			require.NoError(t, e.holder.RenewWorkItemLock(ctx, w.LockToken, skewLock), "the holder renews its live lock")
		}
		got, err := e.thief.FetchWorkItem(ctx, skewLock, 0, nil, filter)
		require.NoError(t, err)
		if got != nil {
			require.NoError(t, e.thief.AckWorkItem(ctx, got.LockToken, nil))
			return elapsed, true
		}
		e.clock.advance(skewStep)
	}
	require.False(t, e.crashed, "a dead holder's activity lock was never taken over")
	require.NoError(t, e.holder.AckWorkItem(ctx, w.LockToken, nil))
	return 0, false
}

// TestClockSkewActivityLock measures how far ahead a process's clock may
// run before it takes a live activity lock renewed on the runtime's
// default schedule, and checks that a slow clock never takes it either.
func TestClockSkewActivityLock(t *testing.T) {
	t.Parallel()
	e := newSkewEnv(t, cdb.Options{})
	checkTolerance(t, "activity-lock", fmt.Sprintf("lock %v renewed every %v", skewLock, skewRenew), "a live activity lock", e.workRound)
}

// Orchestration locks: the runtime's defaults (OrchestratorLockTimeout 5s,
// renewed every 3s).
const (
	skewOrchLock  = 5 * time.Second
	skewOrchRenew = 3 * time.Second
)

// orchRound: the holder locks a new instance's first turn and renews on
// schedule for thirteen renewal periods; it reports whether, and when,
// the thief locked the instance meanwhile. The round ends with the instance completed, so
// later rounds see only their own instance.
func (e *skewEnv) orchRound(t *testing.T, skew time.Duration) (time.Duration, bool) {
	t.Helper()
	ctx := t.Context()
	e.skew.Store(int64(skew))
	inst := fmt.Sprintf("skew-o%d", e.round.Add(1))
	require.NoError(t, e.holder.EnqueueForOrchestrator(ctx, hStart(inst), 0))
	item, err := e.holder.FetchOrchestrationItem(ctx, skewOrchLock, 0, nil)
	require.NoError(t, err)
	require.NotNil(t, item, "the holder must lock the round's instance")
	require.Equal(t, inst, item.Instance)
	owner, token := e.holder, item.LockToken
	var at time.Duration
	for elapsed := time.Duration(0); elapsed <= 13*skewOrchRenew && owner == e.holder; elapsed += skewStep {
		if e.renews(elapsed, skewOrchRenew) {
			require.NoError(t, e.holder.RenewOrchestrationItemLock(ctx, token, skewOrchLock), "the holder renews its live lock")
		}
		got, err := e.thief.FetchOrchestrationItem(ctx, skewOrchLock, 0, nil)
		require.NoError(t, err)
		if got != nil {
			owner, token, at = e.thief, got.LockToken, elapsed
		}
		e.clock.advance(skewStep)
	}
	require.False(t, e.crashed && owner == e.holder, "a dead holder's orchestration lock was never taken over")
	require.NoError(t, owner.AckOrchestrationItem(ctx, token, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted(inst, "HOrch")}, Metadata: hStatus("HOrch", duroxide.StatusCompleted, "done")}))
	return at, owner == e.thief
}

// TestClockSkewOrchestrationLock is TestClockSkewActivityLock for
// orchestration turns.
func TestClockSkewOrchestrationLock(t *testing.T) {
	t.Parallel()
	e := newSkewEnv(t, cdb.Options{})
	checkTolerance(t, "orchestration-lock", fmt.Sprintf("lock %v renewed every %v", skewOrchLock, skewOrchRenew), "a live orchestration lock", e.orchRound)
}

// sessionRound: the holder (owner "A-<round>") claims a session with its
// first item and renews the session on schedule for three renewal
// periods; it reports whether, and when, the thief ("B-<round>") claimed
// the session (fetched its second item) meanwhile.
func (e *skewEnv) sessionRound(t *testing.T, skew time.Duration) (time.Duration, bool) {
	t.Helper()
	ctx := t.Context()
	e.skew.Store(int64(skew))
	tag, filter := e.nextTag(t)
	inst, sid := "skew-"+tag, "s-"+tag
	for id := uint64(1); id <= 2; id++ {
		item := hActivity(inst, id, &sid)
		item.Tag = &tag
		require.NoError(t, e.holder.EnqueueForWorker(ctx, item))
	}
	a := &duroxide.SessionFetchConfig{OwnerID: "A-" + tag, LockTimeout: skewLock}
	b := &duroxide.SessionFetchConfig{OwnerID: "B-" + tag, LockTimeout: skewLock}
	w, err := e.holder.FetchWorkItem(ctx, skewLock, 0, a, filter)
	require.NoError(t, err)
	require.NotNil(t, w, "the holder must claim the round's session")
	require.NoError(t, e.holder.AckWorkItem(ctx, w.LockToken, nil))
	for elapsed := time.Duration(0); elapsed <= 3*skewRenew; elapsed += skewStep {
		if e.renews(elapsed, skewRenew) {
			n, err := e.holder.RenewSessionLock(ctx, []string{a.OwnerID}, skewLock, time.Hour)
			require.NoError(t, err)
			require.Equal(t, 1, n, "the holder renews its live session")
		}
		got, err := e.thief.FetchWorkItem(ctx, skewLock, 0, b, filter)
		require.NoError(t, err)
		if got != nil {
			require.NoError(t, e.thief.AckWorkItem(ctx, got.LockToken, nil))
			return elapsed, true
		}
		e.clock.advance(skewStep)
	}
	require.False(t, e.crashed, "a dead holder's session was never taken over")
	w, err = e.holder.FetchWorkItem(ctx, skewLock, 0, a, filter)
	require.NoError(t, err)
	require.NotNil(t, w, "the holder still owns its session")
	require.NoError(t, e.holder.AckWorkItem(ctx, w.LockToken, nil))
	return 0, false
}

// TestClockSkewSessionLock is TestClockSkewActivityLock for session
// ownership.
func TestClockSkewSessionLock(t *testing.T) {
	t.Parallel()
	e := newSkewEnv(t, cdb.Options{})
	checkTolerance(t, "session-lock", fmt.Sprintf("lock %v renewed every %v", skewLock, skewRenew), "a live session", e.sessionRound)
}

// leaseRound: in a new lease group the holder and the thief share the
// slots; the holder renews every RenewInterval (the defaults: 30s lease,
// renewed every 10s) for three periods (seven for a crashed holder) while
// the thief renews every second. It reports whether, and when, the thief held more than its
// half, i.e. took a live holder's slots for a dead one's.
func (e *skewEnv) leaseRound(t *testing.T, skew time.Duration) (time.Duration, bool) {
	t.Helper()
	ctx := t.Context()
	e.skew.Store(int64(skew))
	group := fmt.Sprintf("g%d", e.round.Add(1))
	open := func(id string, now func() time.Time, hooks *testhooks.Hooks) *cdb.Leases {
		l, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id, Group: group})
		require.NoError(t, err)
		e.h.openWith(testhooks.Seam{Cosmos: hooks, Now: now}, cdb.Options{Leases: l, MaxClockSkew: cdb.DefaultMaxClockSkew})
		return l
	}
	// The holder's background renewal (every RenewInterval of real time)
	// must not renew out of schedule: its requests fail but for the
	// renewals below (and its start, at the round's first instant).
	var renewing atomic.Bool
	renewing.Store(true)
	holder := open("holder", e.clock.now, &testhooks.Hooks{Before: func(context.Context, testhooks.Call) error {
		if !renewing.Load() {
			return errors.New("the holder renews only on schedule")
		}
		return nil
	}})
	refresh := func() {
		renewing.Store(true)
		defer renewing.Store(false)
		require.NoError(t, holder.Refresh(ctx))
	}
	refresh() // all the slots are the holder's when the thief arrives
	thief := open("thief", e.thiefNow, nil)
	renew := holder.Options().RenewInterval
	periods := time.Duration(3)
	if e.crashed {
		periods = 7 // past the lease and the margin
	}
	for elapsed := time.Duration(0); elapsed <= periods*renew; elapsed += skewStep {
		if e.renews(elapsed, renew) {
			refresh()
		}
		require.NoError(t, thief.Refresh(ctx))
		if len(thief.Owned()) > cdb.NumSlots/2 {
			return elapsed, true
		}
		e.clock.advance(skewStep)
	}
	require.False(t, e.crashed, "a dead holder's slots were never taken over")
	return 0, false
}

// TestClockSkewDispatchLease is TestClockSkewActivityLock for the Cosmos
// dispatch-slot leases.
func TestClockSkewDispatchLease(t *testing.T) {
	t.Parallel()
	e := newSkewEnv(t, cdb.Options{})
	checkTolerance(t, "dispatch-lease", fmt.Sprintf("lease %v renewed every %v", cdb.DefaultLeaseDuration, cdb.DefaultLeaseDuration/3), "a live process's slots", e.leaseRound)
}

// TestClockSkewCrashedHolderRecovered: the margin delays, never prevents,
// recovery. A holder that dies holding a lock, session or lease (no
// renewal, no release) loses it MaxClockSkew after it expired: a process
// with an agreeing clock takes it over then and not before, and one whose
// clock is MaxClockSkew+1s ahead (beyond the tolerance) takes it at expiry.
func TestClockSkewCrashedHolderRecovered(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		round func(*skewEnv) func(*testing.T, time.Duration) (time.Duration, bool)
		lock  time.Duration
	}{
		{"activity", func(e *skewEnv) func(*testing.T, time.Duration) (time.Duration, bool) { return e.workRound }, skewLock},
		{"orchestration", func(e *skewEnv) func(*testing.T, time.Duration) (time.Duration, bool) { return e.orchRound }, skewOrchLock},
		{"session", func(e *skewEnv) func(*testing.T, time.Duration) (time.Duration, bool) { return e.sessionRound }, skewLock},
		{"lease", func(e *skewEnv) func(*testing.T, time.Duration) (time.Duration, bool) { return e.leaseRound }, cdb.DefaultLeaseDuration},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newSkewEnv(t, cdb.Options{})
			e.crashed = true
			round := c.round(e)
			at, ok := round(t, 0)
			require.True(t, ok)
			t.Logf("%s: a dead holder's %v lock was taken over after %v", c.name, c.lock, at)
			require.Equal(t, c.lock+cdb.DefaultMaxClockSkew, at, "taken over MaxClockSkew after expiry")
			at, ok = round(t, cdb.DefaultMaxClockSkew+time.Second)
			require.True(t, ok)
			require.LessOrEqual(t, at, c.lock, "a clock past the tolerance takes it by expiry")
		})
	}
}

// TestClockSkewMaintenanceLeavesARunningDeletionAlone is
// TestMaintenanceLoopLeavesARunningDeletionAlone with the maintenance
// loop's clock ahead by more than the tolerance of the deleter's: the
// tombstone's age is judged with the loop's clock, so without the margin
// the loop takes the running deletion for an interrupted one.
func TestClockSkewMaintenanceLeavesARunningDeletionAlone(t *testing.T) {
	t.Parallel()
	e := newHarness(t, cdb.Options{}, withoutLag(), withManualClock())
	ctx := t.Context()
	p := e.actor(nil)
	require.NoError(t, p.EnqueueForOrchestrator(ctx, hStart("cnt"), 0))
	it := mustFetchOrch(t, p, "cnt")
	require.NoError(t, p.AckOrchestrationItem(ctx, it.LockToken, duroxide.OrchestrationCommit{ExecutionID: 1,
		HistoryDelta: []duroxide.Event{hStarted("cnt", "HOrch"), hEvent("cnt", 1, 2, duroxide.OrchestrationCompleted{Output: "ok"})},
		Metadata:     hStatus("HOrch", duroxide.StatusCompleted, "ok")}))

	gD := newGate(t)
	pD := e.actor(gD)
	stallD := gD.at(true, func(c testhooks.Call) bool { return c.Op == cdb.OpPatch }) // the tombstone is written
	type result struct {
		res *duroxide.DeleteInstanceResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := pD.DeleteInstance(ctx, "cnt", false)
		done <- result{res, err}
	}()
	stallD.wait(t)

	ahead := func() time.Time { return e.clock.now().Add(minSkewTolerance + time.Second) }
	loop := e.openWith(testhooks.Seam{Now: ahead}, cdb.Options{MaintenanceInterval: 5 * time.Millisecond, MaxClockSkew: cdb.DefaultMaxClockSkew})
	// Several rounds of the loop, each of which scans for tombstones.
	eventually(t, time.Minute, func() bool { return loop.RequestStats()[cdb.OpQuery].Requests >= 12 }, "the maintenance loop did not run")

	stallD.open()
	r := <-done
	require.NoError(t, r.err)
	require.Equal(t, uint64(2), r.res.EventsDeleted, "the deletion counts every event it removed")
	require.Empty(t, e.leftovers("cnt"))
}
