package durable

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// Shutdown waits for an activity in flight, commits its result, and
// leaves no runtime goroutine behind.
func TestShutdownWaitsForInflightActivityAndLeaksNothing(t *testing.T) {
	p := newMemProvider()
	release := make(chan struct{})
	started := make(chan struct{})
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Block", func(ActivityContext, string) (string, error) {
		close(started)
		<-release
		return "finished", nil
	}))
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Block", "").Await()
	}))
	rt, err := Start(t.Context(), p, reg, fastOptions(Options{}))
	require.NoError(t, err)
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "O", ""))
	<-started
	done := make(chan error, 1)
	go func() { done <- rt.Shutdown(t.Context()) }()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while an activity was running", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	require.NoError(t, <-done)
	// A goroutine that has signalled the WaitGroup may still be unwinding:
	// wait for it, as goleak does.
	requireEventually(t, func() bool { return runtimeGoroutines() == 0 }, "runtime goroutines left after Shutdown")

	// The activity's completion was committed: a new runtime finishes the
	// orchestration from it.
	startRuntime(t, p, reg, Options{})
	st := waitDone(t, c, "i")
	require.Equal(t, StateCompleted, st.State, st.FailureMessage())
	require.Equal(t, "finished", st.Output)
	require.NoError(t, rt.Shutdown(t.Context()), "Shutdown is idempotent")
}

// A Shutdown whose context ends cancels the activities' contexts and
// returns the context's error.
func TestShutdownBoundedByContextCancelsActivities(t *testing.T) {
	p := newMemProvider()
	started := make(chan struct{})
	sawCancel := make(chan struct{})
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Wait", func(ctx ActivityContext, _ string) (string, error) {
		close(started)
		<-ctx.Done()
		close(sawCancel)
		return "", ctx.Err()
	}))
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Wait", "").Await()
	}))
	rt, err := Start(t.Context(), p, reg, fastOptions(Options{}))
	require.NoError(t, err)
	require.NoError(t, NewClient(p).StartOrchestration(t.Context(), "i", "O", ""))
	<-started
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, rt.Shutdown(ctx), context.DeadlineExceeded)
	<-sawCancel
}

// An orchestration nobody registered is abandoned with backoff until its
// attempts exceed MaxAttempts, then failed as poison.
func TestUnregisteredOrchestrationBecomesPoison(t *testing.T) {
	p := newMemProvider()
	startRuntime(t, p, NewRegistry(), Options{MaxAttempts: 2, UnregisteredBackoff: Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "ghost", "Nobody", "in"))
	st := waitDone(t, c, "ghost")
	require.Equal(t, StateFailed, st.State)
	pe, ok := st.Details.(duroxide.PoisonError)
	require.True(t, ok, "details %#v", st.Details)
	require.Equal(t, uint32(3), pe.AttemptCount)
	require.Equal(t, uint32(2), pe.MaxAttempts)
	require.Equal(t, duroxide.PoisonOrchestration, pe.MessageType.Kind)
	require.Equal(t, "poison: orchestration ghost exceeded 3 attempts (max 2)", st.FailureMessage())
	require.Contains(t, pe.Message, `"StartOrchestration"`)
	hist, err := p.Read(t.Context(), "ghost")
	require.NoError(t, err)
	require.Len(t, hist, 2)
	started, ok := hist[0].Kind.(duroxide.OrchestrationStarted)
	require.True(t, ok)
	require.Equal(t, "Nobody", started.Name)
	require.Equal(t, "in", started.Input)
}

// An activity nobody registered is poisoned the same way; the
// orchestration sees the failure.
func TestUnregisteredActivityBecomesPoison(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Missing", "x").Await()
	}))
	startRuntime(t, p, reg, Options{MaxAttempts: 2, UnregisteredBackoff: Backoff{Base: time.Millisecond, Max: 5 * time.Millisecond}})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "O", ""))
	st := waitDone(t, c, "i")
	require.Equal(t, StateFailed, st.State)
	require.Equal(t, "poison: activity Missing#2 exceeded 3 attempts (max 2)", st.FailureMessage())
}

// An execution pinned to a duroxide version outside the runtime's range is
// left for a runtime that supports it.
func TestCapabilityFilterSkipsIncompatiblePins(t *testing.T) {
	p := newMemProvider()
	ran := make(chan struct{}, 1)
	registry := func(result string) *Registry {
		reg := NewRegistry()
		require.NoError(t, reg.AddActivity("A", func(ActivityContext, string) (string, error) {
			ran <- struct{}{}
			return "", nil
		}))
		require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
			if _, err := CallActivity[string](ctx, "A", "").Await(); err != nil {
				return "", err
			}
			return result, nil
		}))
		return reg
	}
	old := duroxide.SemVerRange{Min: duroxide.SemVer{}, Max: duroxide.MustParseSemVer("0.1.0")}
	// The old runtime takes the unpinned start (pinning it to 0.1.29) but
	// may never replay it.
	startRuntime(t, p, registry("old"), Options{SupportedReplayVersions: &old})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "O", ""))
	<-ran
	startRuntime(t, p, registry("new"), Options{OrchestrationConcurrency: 1, WorkerConcurrency: NoSlots})
	st := waitDone(t, c, "i")
	require.Equal(t, "new", st.Output, "only a runtime supporting 0.1.29 may finish the execution")
	info, err := p.Admin().InstanceInfo(t.Context(), "i")
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusCompleted, info.Status)
}

// Cancelling an orchestration that waits on an activity ends with the
// failure, then a terminal cancel request for the activity; the activity's
// context is cancelled once its lock renewal finds the item gone.
func TestTerminalTurnCancelsInflightActivity(t *testing.T) {
	p := newMemProvider()
	started := make(chan struct{})
	cancelled := make(chan struct{})
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Long", func(ctx ActivityContext, _ string) (string, error) {
		close(started)
		select {
		case <-ctx.Done():
			close(cancelled)
			return "", ctx.Err()
		case <-time.After(testWait):
			return "too late", nil
		}
	}))
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Long", "").Await()
	}))
	startRuntime(t, p, reg, Options{WorkerLockTimeout: 2 * time.Second, ActivityCancellationGracePeriod: time.Second})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "O", ""))
	<-started
	require.NoError(t, c.CancelInstance(t.Context(), "i", "stop"))
	st := waitDone(t, c, "i")
	require.Equal(t, "canceled: stop", st.FailureMessage())
	hist, err := p.Read(t.Context(), "i")
	require.NoError(t, err)
	n := len(hist)
	require.IsType(t, duroxide.OrchestrationFailed{}, hist[n-2].Kind)
	req, ok := hist[n-1].Kind.(duroxide.ActivityCancelRequested)
	require.True(t, ok, "last event %T", hist[n-1].Kind)
	require.Equal(t, "orchestration_terminal_failed", req.Reason)
	require.Equal(t, uint64(2), *hist[n-1].SourceEventID)
	select {
	case <-cancelled:
	case <-time.After(testWait):
		t.Fatal("the activity's context was never cancelled")
	}
}

// A custom status over duroxide's limit fails the orchestration.
func TestLimitsFailTheOrchestration(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("Big", func(ctx *OrchestrationContext, _ string) (string, error) {
		ctx.SetCustomStatus(strings.Repeat("x", maxCustomStatusBytes+1))
		return "unreachable", nil
	}))
	startRuntime(t, p, reg, Options{})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "Big", ""))
	st := waitDone(t, c, "i")
	require.Equal(t, StateFailed, st.State)
	require.Equal(t, "Custom status size (262145 bytes) exceeds limit (262144 bytes)", st.FailureMessage())
}

// The activity context carries the activity's identity and a client.
func TestActivityContextIdentity(t *testing.T) {
	p := newMemProvider()
	type seen struct {
		instance, orch, version, name, session, tag string
		exec, id                                    uint64
		hasSession, hasTag, hasClient               bool
	}
	got := make(chan seen, 1)
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Probe", func(ctx ActivityContext, _ string) (string, error) {
		s := seen{instance: ctx.InstanceID(), orch: ctx.OrchestrationName(), version: ctx.OrchestrationVersion(),
			name: ctx.ActivityName(), exec: ctx.ExecutionID(), id: ctx.ActivityID(), hasClient: ctx.Client() != nil}
		s.session, s.hasSession = ctx.SessionID()
		s.tag, s.hasTag = ctx.Tag()
		got <- s
		return "", nil
	}))
	require.NoError(t, reg.AddOrchestrationVersion("O", "1.2.3", func(ctx *OrchestrationContext, _ string) (string, error) {
		return CallActivity[string](ctx, "Probe", "", ActivityOptions{Session: "s1", Tag: "t1"}).Await()
	}))
	tags, err := duroxide.Tags("t1")
	require.NoError(t, err)
	startRuntime(t, p, reg, Options{WorkerTagFilter: tags})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "inst", "O", ""))
	require.Equal(t, StateCompleted, waitDone(t, c, "inst").State)
	require.Equal(t, seen{instance: "inst", orch: "O", version: "1.2.3", name: "Probe", session: "s1", tag: "t1",
		exec: 1, id: 2, hasSession: true, hasTag: true, hasClient: true}, <-got)
}

// Work enqueued by a client in the same process wakes an idle runtime at
// once, and a timer wakes it when it fires: with an idle backoff of an
// hour, nothing else could.
func TestLocalWakeUps(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("A", func(_ ActivityContext, in string) (string, error) { return in + "!", nil }))
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, in string) (string, error) {
		if _, err := NewTimer(ctx, 50*time.Millisecond).Await(); err != nil {
			return "", err
		}
		return CallActivity[string](ctx, "A", in).Await()
	}))
	counting := &fetchCountingProvider{Provider: p}
	startRuntime(t, counting, reg, Options{MinPollInterval: time.Hour, MaxIdlePollInterval: time.Hour})
	requireEventually(t, func() bool { return counting.orchFetches.Load() >= 2 && counting.workFetches.Load() >= 2 },
		"the slots never made their first fetch")
	// Every slot is now asleep for an hour unless woken. The counting
	// wrapper is a different provider value, so the client uses it too.
	c := NewClient(counting)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "O", "go"))
	st, err := c.WaitForOrchestration(t.Context(), "i", WaitOptions{Timeout: 30 * time.Second})
	require.NoError(t, err)
	require.Equal(t, "go!", st.Output)
}

// An idle runtime backs off: over a window, one slot per queue polls, at
// most once per MaxIdlePollInterval after the ramp, however slow the
// machine; the other slots sleep until woken.
func TestIdleRuntimeBacksOff(t *testing.T) {
	counting := &fetchCountingProvider{Provider: newMemProvider()}
	const maxIdle = 40 * time.Millisecond
	startRuntime(t, counting, NewRegistry(), Options{MinPollInterval: 5 * time.Millisecond, MaxIdlePollInterval: maxIdle,
		OrchestrationConcurrency: 4, WorkerConcurrency: 4})
	start := time.Now()
	time.Sleep(400 * time.Millisecond)
	elapsed := time.Since(start)
	// The poller: 3 fetches ramping 5+10+20 ms, then one per maxIdle, +2
	// for its first fetch and rounding; each other loop (4 slots and 4
	// fetching ahead, the default): its first fetch.
	bound := (3 + int64(elapsed/maxIdle) + 2) + 7
	require.LessOrEqual(t, counting.orchFetches.Load(), bound)
	require.LessOrEqual(t, counting.workFetches.Load(), bound)
	require.Positive(t, counting.orchFetches.Load())
}

func TestClientWaitTimesOutAndHonoursContext(t *testing.T) {
	c := NewClient(newMemProvider())
	_, err := c.WaitForOrchestration(t.Context(), "nobody", WaitOptions{Timeout: time.Hour})
	require.ErrorIs(t, err, ErrInstanceNotFound, "a missing instance is reported, not waited for")
	// A started instance that no runtime runs waits out the timeout.
	require.NoError(t, c.StartOrchestration(t.Context(), "queued", "O", ""))
	_, err = c.WaitForOrchestration(t.Context(), "queued", WaitOptions{Timeout: 30 * time.Millisecond})
	require.ErrorIs(t, err, ErrTimeout)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = c.WaitForOrchestration(ctx, "queued", WaitOptions{Timeout: time.Hour})
	require.ErrorIs(t, err, context.Canceled)
	_, err = c.WaitForKVValue(t.Context(), "nobody", "k", WaitOptions{Timeout: time.Hour})
	require.ErrorIs(t, err, ErrInstanceNotFound)
	_, err = c.WaitForKVValue(t.Context(), "queued", "k", WaitOptions{Timeout: 20 * time.Millisecond})
	require.ErrorIs(t, err, ErrTimeout)
	st, err := c.Status(t.Context(), "nobody")
	require.NoError(t, err)
	require.Equal(t, StateNotFound, st.State)
	var ie *InputError
	require.ErrorAs(t, c.StartOrchestration(t.Context(), "", "O", ""), &ie)
	require.ErrorAs(t, c.StartOrchestration(t.Context(), "i", "O", "", StartOptions{Version: "v1"}), &ie)
	_, err = DecodeOutput[string](st)
	require.Error(t, err)
}

// The client's admin calls reach ProviderAdmin; deleting a running
// instance without force is refused with a typed error.
func TestClientAdmin(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("Wait", func(ctx *OrchestrationContext, _ string) (string, error) {
		return WaitEvent[string](ctx, "go").Await()
	}))
	startRuntime(t, p, reg, Options{})
	c := NewClient(p)
	require.True(t, c.HasManagementCapability())
	require.NoError(t, c.StartOrchestration(t.Context(), "w", "Wait", ""))
	requireEventually(t, func() bool {
		st, err := c.Status(t.Context(), "w")
		return err == nil && st.State == StateRunning
	}, "never running")
	_, err := c.DeleteInstance(t.Context(), "w")
	require.ErrorIs(t, err, ErrInstanceStillRunning)
	_, err = c.DeleteInstance(t.Context(), "missing")
	require.ErrorIs(t, err, ErrInstanceNotFound)
	ids, err := c.ListInstances(t.Context())
	require.NoError(t, err)
	require.Equal(t, []string{"w"}, ids)
	require.NoError(t, c.RaiseEvent(t.Context(), "w", "go", "now"))
	require.Equal(t, "now", waitDone(t, c, "w").Output)
	info, err := c.InstanceInfo(t.Context(), "w")
	require.NoError(t, err)
	require.Equal(t, duroxide.StatusCompleted, info.Status)
	res, err := c.DeleteInstance(t.Context(), "w")
	require.NoError(t, err)
	require.Equal(t, uint64(1), res.InstancesDeleted)
}

// The session manager renews the sessions of every worker loop (2 slots
// and 2 fetching ahead by default; or of the stable node id) and cleans
// up orphans, on their intervals.
func TestSessionManagerRenewsAndCleansUp(t *testing.T) {
	for _, node := range []string{"", "node-7"} {
		s := &sessionCountingProvider{Provider: newMemProvider(), renews: make(chan []string, 1), cleanups: make(chan []string, 1)}
		rt := startRuntime(t, s, NewRegistry(), Options{WorkerNodeID: node, SessionLockTimeout: 2 * time.Second,
			SessionIdleTimeout: time.Minute, SessionCleanupInterval: 20 * time.Millisecond})
		owners := <-s.renews
		if node == "" {
			require.Equal(t, []string{"work-0-" + rt.id, "work-1-" + rt.id, "work-2-" + rt.id, "work-3-" + rt.id}, owners)
		} else {
			require.Equal(t, []string{node}, owners)
		}
		<-s.cleanups
	}
}

// With MaxSessionsPerRuntime 1 a runtime serves one session at a time,
// even with idle worker slots.
func TestMaxSessionsPerRuntime(t *testing.T) {
	p := newMemProvider()
	var running, maxRunning atomic.Int32
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Work", func(ActivityContext, string) (string, error) {
		n := running.Add(1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
		running.Add(-1)
		return "ok", nil
	}))
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
		a := CallActivity[string](ctx, "Work", "", ActivityOptions{Session: "s1"})
		b := CallActivity[string](ctx, "Work", "", ActivityOptions{Session: "s2"})
		for _, r := range Join(ctx, a, b) {
			if r.Err != nil {
				return "", r.Err
			}
		}
		return "both", nil
	}))
	startRuntime(t, p, reg, Options{MaxSessionsPerRuntime: 1, WorkerConcurrency: 2})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "O", ""))
	require.Equal(t, "both", waitDone(t, c, "i").Output)
	require.Equal(t, int32(1), maxRunning.Load(), "two sessions ran at once")
}

// The orchestration lock is renewed while a turn runs, so a turn longer
// than the lock timeout is not taken over by another runtime.
func TestOrchestrationLockRenewedDuringLongTurn(t *testing.T) {
	p := newMemProvider()
	var firstTurns atomic.Int32
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("Slow", func(ctx *OrchestrationContext, _ string) (string, error) {
		if !ctx.IsReplaying() {
			firstTurns.Add(1)
			time.Sleep(2500 * time.Millisecond) // longer than the 2 s lock: only renewal keeps it
		}
		return "done", nil
	}))
	o := Options{OrchestratorLockTimeout: 2 * time.Second}
	startRuntime(t, p, reg, o)
	startRuntime(t, p, reg, o)
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "Slow", ""))
	require.Equal(t, "done", waitDone(t, c, "i").Output)
	require.Equal(t, int32(1), firstTurns.Load(), "another runtime ran the turn while the lock was held")
}

// Shutdown interrupts a long-polling fetch instead of waiting out its
// poll timeout (30 s by default).
func TestShutdownInterruptsLongPolls(t *testing.T) {
	p := memprovider.New(memprovider.WithLongPolling())
	rt, err := Start(t.Context(), p, NewRegistry(), fastOptions(Options{}))
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond) // let the slots enter their polls
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx))
}

// The history the runtime commits for two sequential activities is the
// one Rust writes: ids in order, completions pointing at their schedules,
// every event stamped with the instance, execution and duroxide version.
func TestRuntimeHistoryIsRusts(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Hello", func(_ ActivityContext, in string) (string, error) { return "Hello, " + in + "!", nil }))
	require.NoError(t, reg.AddOrchestration("HelloWorld", func(ctx *OrchestrationContext, in string) (string, error) {
		if _, err := CallActivity[string](ctx, "Hello", "Rust").Await(); err != nil {
			return "", err
		}
		return CallActivity[string](ctx, "Hello", in).Await()
	}))
	startRuntime(t, p, reg, Options{})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "h", "HelloWorld", "World"))
	require.Equal(t, "Hello, World!", waitDone(t, c, "h").Output)
	hist, err := p.Read(t.Context(), "h")
	require.NoError(t, err)
	src := func(id uint64) *uint64 { return &id }
	want := []struct {
		kind   duroxide.EventKind
		source *uint64
	}{
		{duroxide.OrchestrationStarted{Name: "HelloWorld", Version: "1.0.0", Input: "World"}, nil},
		{duroxide.ActivityScheduled{Name: "Hello", Input: "Rust"}, nil},
		{duroxide.ActivityCompleted{Result: "Hello, Rust!"}, src(2)},
		{duroxide.ActivityScheduled{Name: "Hello", Input: "World"}, nil},
		{duroxide.ActivityCompleted{Result: "Hello, World!"}, src(4)},
		{duroxide.OrchestrationCompleted{Output: "Hello, World!"}, nil},
	}
	require.Len(t, hist, len(want))
	for i, e := range hist {
		require.Equal(t, uint64(i+1), e.EventID)
		require.Equal(t, want[i].kind, e.Kind, "event %d", i+1)
		require.Equal(t, want[i].source, e.SourceEventID, "event %d", i+1)
		require.Equal(t, "h", e.InstanceID)
		require.Equal(t, uint64(1), e.ExecutionID)
		require.Equal(t, "0.1.29", e.DuroxideVersion)
		require.NotZero(t, e.TimestampMs)
	}
}

// An activity result the store refuses as too large (memprovider keeps
// Cosmos DB's 2 MiB document limit by default) fails that activity at once with
// a message naming the size and the limit; the orchestration sees an
// activity failure and decides, and the activity is not run again.
func TestOversizeActivityResultFailsTheActivity(t *testing.T) {
	p := memprovider.New()
	var runs atomic.Int32
	reg := NewRegistry()
	require.NoError(t, reg.AddActivity("Big", func(_ ActivityContext, _ string) (string, error) {
		runs.Add(1)
		return strings.Repeat("x", 5_000_000), nil
	}))
	require.NoError(t, reg.AddOrchestration("O", func(ctx *OrchestrationContext, _ string) (string, error) {
		if _, err := CallActivity[string](ctx, "Big", "").Await(); err != nil {
			return "handled: " + err.Error(), nil
		}
		return "stored", nil
	}))
	startRuntime(t, p, reg, Options{})
	c := NewClient(p)
	require.NoError(t, c.StartOrchestration(t.Context(), "i", "O", ""))
	st := waitDone(t, c, "i")
	require.Equal(t, StateCompleted, st.State, st.FailureMessage())
	require.Contains(t, st.Output, "handled: ")
	require.Regexp(t, `ActivityCompleted too large: 50[0-9]{5} bytes`, st.Output)
	require.Contains(t, st.Output, "the limit is 2097152 bytes")
	require.Equal(t, int32(1), runs.Load(), "a re-run would produce the same result")
}

// statusCountingProvider counts the full status reads a client makes.
type statusCountingProvider struct {
	duroxide.Provider
	reads atomic.Int64
}

func (c *statusCountingProvider) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	c.reads.Add(1)
	return c.Provider.Read(ctx, instance)
}

// A wait polls the instance's summary (one point read on Cosmos) while
// it runs and reads the full status (the history) once it ended, not on
// every poll: before, each poll read the instance and queried its
// history.
func TestWaitPollsTheSummaryWhileRunning(t *testing.T) {
	p := newMemProvider()
	reg := NewRegistry()
	require.NoError(t, reg.AddOrchestration("W", func(ctx *OrchestrationContext, _ string) (string, error) {
		return WaitEvent[string](ctx, "go").Await()
	}))
	startRuntime(t, p, reg, Options{})
	counting := &statusCountingProvider{Provider: p}
	c := NewClient(counting)
	require.NoError(t, c.StartOrchestration(t.Context(), "w", "W", ""))
	requireEventually(t, func() bool {
		st, err := NewClient(p).Status(t.Context(), "w")
		return err == nil && st.State == StateRunning
	}, "never running")
	done := make(chan *OrchestrationStatus, 1)
	go func() {
		st, err := c.WaitForOrchestration(t.Context(), "w", WaitOptions{PollInterval: time.Millisecond, Timeout: 30 * time.Second})
		if err != nil {
			t.Errorf("wait: %v", err)
		}
		done <- st
	}()
	time.Sleep(100 * time.Millisecond) // many polls while it runs
	require.NoError(t, NewClient(p).RaiseEvent(t.Context(), "w", "go", "now"))
	st := <-done
	require.Equal(t, StateCompleted, st.State)
	require.Equal(t, "now", st.Output)
	require.LessOrEqual(t, counting.reads.Load(), int64(2), "full status reads: the ended one, and one if the summary was read first")
}
