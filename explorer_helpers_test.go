package cdb_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/cosmostest"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// The interleaving explorer (issue #10, "the class, not just the
// instances"). A scenario sets up a container, then runs several actors —
// each its own provider, i.e. its own process — whose every Cosmos call is
// a scheduling point: before each call the actor stops and a scheduler
// lets exactly one actor go on until its next call (or its end). All
// actors' calls are therefore serialised in an order the scheduler
// chooses, and a schedule is just the sequence of choices.
//
// Schedules are enumerated systematically with a preemption bound (the
// CHESS approach: run each actor as long as it can, and explore every way
// to switch actors at most bound times), then drawn at random (each step
// switching to a random actor with some probability), seeded so a failing
// schedule can be replayed. After every schedule the scenario's
// invariants are checked on the quiescent container.

// scenario is one race setting.
type scenario struct {
	name   string
	setup  func(w *world)
	actors []actor
	// check returns the violated invariants; results[i] is actor i's
	// result.
	check func(w *world, results []error) []string
	// lagging runs the scenario on the explorer's server with lagging
	// replicas (cosmostest's Lag): a process's reads without a session
	// token for a partition may miss its latest writes.
	lagging bool
}

// actor is one process's part in a scenario. Its error is its result;
// a violation it observes itself (a reader that saw part of a turn) is
// reported through w.violate.
type actor struct {
	name string
	run  func(ctx context.Context, w *world, p *cdb.Provider) error
	// ownClock gives the actor's process a clock of its own, stopped at
	// the schedule's start (a process whose clock lags the others').
	ownClock bool
}

// replicate lets every replica catch up, so the checks read the
// container as it is (a lagging scenario's checks would otherwise see a
// replica's past).
func (w *world) replicate() {
	if err := w.srv.UpdateDocuments("db", w.container, func(map[string]any) bool { return true }); err != nil {
		w.tb.Fatalf("replicating: %v", err)
	}
}

// world is one schedule's container and shared state.
type world struct {
	tb         testing.TB
	srv        *cosmostest.Server
	container  string
	clock      *manualClock
	admin      *cdb.Provider // setup and checks: never scheduled
	vals       sync.Map      // setup → actors (tokens, ...)
	mu         sync.Mutex
	violations []string
}

func (w *world) violate(format string, args ...any) {
	w.mu.Lock()
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
	w.mu.Unlock()
}

func (w *world) val(k string) any { v, _ := w.vals.Load(k); return v }

func (w *world) docs(inst string) []map[string]any {
	all, err := w.srv.Documents("db", w.container)
	if err != nil {
		w.tb.Fatalf("reading the container: %v", err)
	}
	var out []map[string]any
	for _, d := range all {
		if d["instanceId"] == inst {
			out = append(out, d)
		}
	}
	return out
}

// openProvider opens a provider on the world's container.
func (w *world) openProvider(hooks *testhooks.Hooks) *cdb.Provider {
	return w.openProviderClock(hooks, w.clock.now)
}

func (w *world) openProviderClock(hooks *testhooks.Hooks, now func() time.Time) *cdb.Provider {
	ctx := testhooks.With(w.tb.Context(), &testhooks.Seam{Cosmos: hooks, Now: now})
	p, err := cdb.New(ctx, cdb.Config{Endpoint: w.srv.Endpoint(), Key: w.srv.Key(), Database: "db", Container: w.container,
		ClientOptions: &azcosmos.ClientOptions{ClientOptions: policy.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}}, &cdb.Options{MaintenanceInterval: -1})
	if err != nil {
		w.tb.Fatalf("opening a provider: %v", err)
	}
	return p
}

// traceSchedules logs every scheduled call (CDB_EXPLORE_TRACE=1), to
// read a failing schedule.
var traceSchedules = os.Getenv("CDB_EXPLORE_TRACE") != ""

// step is one scheduling decision: which actors could go on, and which
// one did.
type step struct {
	enabled []int
	chosen  int
}

// schedPolicy picks the next actor once the replayed prefix is used up.
type schedPolicy func(enabled []int, last int) int

// keepGoing runs the last actor as long as it can, then the lowest.
func keepGoing(enabled []int, last int) int {
	for _, a := range enabled {
		if a == last {
			return a
		}
	}
	return enabled[0]
}

// randomPolicy switches to a random actor with probability 1/3.
func randomPolicy(r *rand.Rand) schedPolicy {
	return func(enabled []int, last int) int {
		if r.Intn(3) == 0 {
			return enabled[r.Intn(len(enabled))]
		}
		return keepGoing(enabled, last)
	}
}

// actorState is the scheduler's side of one actor.
type actorState struct {
	grant chan struct{}
	armed atomic.Bool
}

// runSchedule runs sc once: the choices in prefix first, then pol. It
// returns the steps taken and the violations found.
func runSchedule(tb testing.TB, srv *cosmostest.Server, sc scenario, n int, prefix []int, pol schedPolicy) ([]step, []string) {
	w := &world{tb: tb, srv: srv, container: fmt.Sprintf("%s-%d", sc.name, n), clock: newManualClock()}
	w.admin = w.openProvider(nil)
	defer func() { _ = w.admin.Close() }()
	sc.setup(w)

	type event struct {
		actor int
		done  bool
		err   error
	}
	events := make(chan event)
	states := make([]*actorState, len(sc.actors))
	provs := make([]*cdb.Provider, len(sc.actors))
	for i := range sc.actors {
		st := &actorState{grant: make(chan struct{})}
		states[i] = st
		i := i
		now := w.clock.now
		if sc.actors[i].ownClock {
			frozen := w.clock.now()
			now = func() time.Time { return frozen }
		}
		provs[i] = w.openProviderClock(&testhooks.Hooks{Before: func(ctx context.Context, c testhooks.Call) error {
			if st.armed.Load() {
				if traceSchedules {
					tb.Logf("%s: %s %s (%d ops)", sc.actors[i].name, c.Op, c.ID, c.Operations)
				}
				events <- event{actor: i}
				<-st.grant
			}
			return nil
		}}, now)
	}
	defer func() {
		for _, p := range provs {
			_ = p.Close()
		}
	}()
	ctx := tb.Context()
	for i, a := range sc.actors {
		st, a, p := states[i], a, provs[i]
		st.armed.Store(true)
		go func(i int) {
			<-st.grant // the first step starts the actor
			err := a.run(ctx, w, p)
			st.armed.Store(false)
			events <- event{actor: i, done: true, err: err}
		}(i)
	}

	results := make([]error, len(sc.actors))
	done := make([]bool, len(sc.actors))
	var steps []step
	last := -1
	for {
		var enabled []int
		for i := range done {
			if !done[i] {
				enabled = append(enabled, i)
			}
		}
		if len(enabled) == 0 {
			break
		}
		var c int
		if len(steps) < len(prefix) {
			c = prefix[len(steps)]
			if done[c] {
				tb.Fatalf("schedule %v is not replayable: actor %d already finished at step %d", prefix, c, len(steps))
			}
		} else {
			c = pol(enabled, last)
		}
		steps = append(steps, step{enabled: enabled, chosen: c})
		last = c
		states[c].grant <- struct{}{}
		select {
		case ev := <-events:
			if ev.actor != c {
				tb.Fatalf("actor %d ran while actor %d held the turn", ev.actor, c)
			}
			if ev.done {
				done[c], results[c] = true, ev.err
			}
		case <-time.After(time.Minute):
			tb.Fatalf("%s: actor %s neither reached a Cosmos call nor finished", sc.name, sc.actors[c].name)
		}
	}
	v := append(w.violations, sc.check(w, results)...)
	return steps, v
}

// preemptions counts the switches away from an actor that could have
// gone on.
func preemptions(steps []step) int {
	n := 0
	for i := 1; i < len(steps); i++ {
		prev := steps[i-1].chosen
		if steps[i].chosen == prev {
			continue
		}
		for _, a := range steps[i].enabled {
			if a == prev {
				n++
				break
			}
		}
	}
	return n
}

// explorer runs scenarios and counts schedules.
type explorer struct {
	tb        testing.TB
	srv       *cosmostest.Server
	schedules int
	n         int
}

// server is the server one schedule of sc runs on, and what to do when it
// ended. A lagging scenario gets a server of its own, seeded alike every
// time: the replica serving each read is drawn from the server's random
// source, so a schedule replays only if the draws restart with it.
func (e *explorer) server(sc scenario) (*cosmostest.Server, func()) {
	if !sc.lagging {
		return e.srv, func() {}
	}
	// A long window: a schedule's writes stay missable by reads without
	// a session token for as long as the schedule runs.
	srv := cosmostest.New(e.tb, &cosmostest.Options{Lag: &cosmostest.LagOptions{Versions: 3, Window: time.Minute, Seed: 1}})
	return srv, srv.Close
}

func (e *explorer) fail(sc scenario, how string, steps []step, v []string) {
	choices := make([]string, len(steps))
	for i, s := range steps {
		choices[i] = fmt.Sprint(s.chosen)
	}
	e.tb.Errorf("%s: invariant violated after schedule %s [%s] (actors %v):\n  %s", sc.name, how, strings.Join(choices, " "), actorNames(sc), strings.Join(v, "\n  "))
}

func actorNames(sc scenario) []string {
	var out []string
	for _, a := range sc.actors {
		out = append(out, a.name)
	}
	return out
}

// systematic explores the schedules of sc with at most bound
// preemptions, up to limit schedules (0 = no limit). When the limit cuts
// the space short, the pending schedules are taken in an order drawn
// from a fixed seed, so a short run still spreads its switch points over
// the whole run rather than only the last calls. It reports whether the
// space was exhausted (false also when it stopped at a violation or the
// deadline).
func (e *explorer) systematic(sc scenario, bound, limit int, deadline time.Time) bool {
	work := [][]int{nil}
	count := 0
	pick := rand.New(rand.NewSource(1))
	for len(work) > 0 {
		if (limit > 0 && count >= limit) || time.Now().After(deadline) {
			return false
		}
		k := len(work) - 1
		if limit > 0 {
			k = pick.Intn(len(work))
		}
		prefix := work[k]
		work[k] = work[len(work)-1]
		work = work[:len(work)-1]
		e.n++
		srv, done := e.server(sc)
		steps, v := runSchedule(e.tb, srv, sc, e.n, prefix, keepGoing)
		done()
		count++
		e.schedules++
		if len(v) > 0 {
			e.fail(sc, "systematic", steps, v)
			return false
		}
		for i := len(prefix); i < len(steps); i++ {
			for _, alt := range steps[i].enabled {
				if alt == steps[i].chosen {
					continue
				}
				next := make([]int, 0, i+1)
				for _, s := range steps[:i] {
					next = append(next, s.chosen)
				}
				next = append(next, alt)
				cand := append(append([]step(nil), steps[:i]...), step{enabled: steps[i].enabled, chosen: alt})
				if preemptions(cand) <= bound {
					work = append(work, next)
				}
			}
		}
	}
	return true
}

// random runs schedules of sc drawn from seed until deadline or limit.
func (e *explorer) random(sc scenario, seed int64, limit int, deadline time.Time) {
	for i := 0; (limit == 0 || i < limit) && time.Now().Before(deadline); i++ {
		s := seed + int64(i)
		e.n++
		srv, done := e.server(sc)
		steps, v := runSchedule(e.tb, srv, sc, e.n, nil, randomPolicy(rand.New(rand.NewSource(s))))
		done()
		e.schedules++
		if len(v) > 0 {
			e.fail(sc, fmt.Sprintf("random (seed %d; replay with CDB_EXPLORE_SEED=%d)", s, s), steps, v)
			return
		}
	}
}
