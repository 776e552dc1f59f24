package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestKSDrawIsAFunctionOfSeedAndIndex: any process that has the seed
// draws the same plan and program for an instance; the plans that need a
// step get it.
func TestKSDrawIsAFunctionOfSeedAndIndex(t *testing.T) {
	plans := map[string]int{}
	ops := map[string]int{}
	for i := range 400 {
		plan, steps := ksDraw(29, i, ksPlans)
		plan2, steps2 := ksDraw(29, i, ksPlans)
		require.Equal(t, plan, plan2)
		require.Equal(t, steps, steps2)
		plans[plan]++
		cans := 0
		for _, s := range steps {
			ops[s.Op]++
			if s.Op == opCAN {
				cans++
			}
		}
		require.LessOrEqual(t, cans, 2, "instance %d", i)
		switch plan {
		case planRewind, planRewindRestart:
			require.True(t, hasOp(steps, opFault), "instance %d: a rewind plan plants a fault", i)
		case planBurst:
			require.GreaterOrEqual(t, ksBurstPos(steps), 0, "instance %d: a burst plan has a burst", i)
		default:
			require.False(t, hasOp(steps, opFault), "instance %d: only rewind plans fail", i)
		}
	}
	for _, p := range ksPlans {
		require.Positive(t, plans[p], "plan %s drawn", p)
	}
	for _, op := range []string{opActivity, opTimer, opEvent, opQueue, opKV, opSession, opChild, opFork, opJoin, opCAN, opFault, opHeartbeat, opHeartbeatStall} {
		require.Positive(t, ops[op], "op %s drawn", op)
	}
	_, a := ksDraw(29, 1, ksPlans)
	_, b := ksDraw(30, 1, ksPlans)
	require.NotEqual(t, a, b, "another seed, another program")
}

func TestParseKSStatus(t *testing.T) {
	p, ok := parseKSStatus(ksStatusAt(2, 5))
	require.True(t, ok)
	require.Equal(t, ksProgress{Run: 2, Pos: 5}, p)
	p, ok = parseKSStatus(ksStatusWaiting(1, 3, ksStep{Op: opEvent}))
	require.True(t, ok)
	require.Equal(t, ksProgress{Run: 1, Pos: 3, Waiting: true, Event: true}, p)
	p, ok = parseKSStatus(ksStatusWaiting(4, 0, ksStep{Op: opQueue, N: 130}))
	require.True(t, ok)
	require.Equal(t, ksProgress{Run: 4, Pos: 0, Waiting: true, Messages: 130}, p)
	p, ok = parseKSStatus(ksStatusWaiting(2, 1, ksStep{Op: opUpdate}))
	require.True(t, ok)
	require.Equal(t, ksProgress{Run: 2, Pos: 1, Waiting: true, Update: true}, p)
	for _, bad := range []string{"", "waiting", "p:1", "p:x:1", "w:1:2", "w:1:2:z", "w:1:2:q0", "p:1:2:e"} {
		_, ok := parseKSStatus(bad)
		require.False(t, ok, "%q", bad)
	}
}

// TestKSProgramsCompleteWithTheExpectedOutput runs drawn programs on the
// real runtime (in memory), serving their waits as the driver does, and
// compares each output with ksExpected: the model's output is the
// orchestration's.
func TestKSProgramsCompleteWithTheExpectedOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped with -short, which asks for quick tests: this one runs programs with timers of up to 1.5 s; `go test ./...` (the README command) and .ci/run run it")
	}
	dir := t.TempDir()
	reg, err := newRegistry(nil, dir)
	require.NoError(t, err)
	p := memprovider.New()
	rt, err := durable.Start(t.Context(), p, reg, &durable.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	c := durable.NewClient(p)
	const n = 12
	for i := range n {
		_, steps := ksDraw(31, i, ksPlans)
		inst := fmt.Sprintf("ks-test-%d", i)
		require.NoError(t, c.StartOrchestration(t.Context(), inst, ksOrchName, ksInput{Index: i, Run: 1, Steps: steps}))
	}
	for i := range n {
		_, steps := ksDraw(31, i, ksPlans)
		inst := fmt.Sprintf("ks-test-%d", i)
		st := serveUntilDone(t, c, inst)
		require.Equal(t, durable.StateCompleted, st.State, "%s: %s", inst, st.FailureMessage())
		out, err := durable.DecodeOutput[string](st)
		require.NoError(t, err)
		require.Equal(t, ksExpected(i, steps), out, inst)
	}
}

// serveUntilDone sends what the instance's waits ask for, as the
// driver's operator does, until it is terminal.
func serveUntilDone(t *testing.T, c *durable.Client, inst string) *durable.OrchestrationStatus {
	t.Helper()
	sent := map[ksProgress]bool{}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		st, err := c.Status(t.Context(), inst)
		require.NoError(t, err)
		if st.IsTerminal() {
			return st
		}
		if st.CustomStatus != nil {
			if p, ok := parseKSStatus(*st.CustomStatus); ok && p.Waiting && !sent[p] {
				sent[p] = true
				if p.Update {
					done, wrong := ksServeUpdate(t.Context(), c, inst, p)
					require.Empty(t, wrong, inst)
					sent[p] = done
				}
				if p.Event {
					require.NoError(t, c.RaiseEvent(t.Context(), inst, ksEventName(p.Run, p.Pos), ksEventData(inst, p.Run, p.Pos)))
				}
				for k := range p.Messages {
					require.NoError(t, c.EnqueueEvent(t.Context(), inst, ksQueueName(p.Run, p.Pos), ksMessageData(inst, p.Run, p.Pos, k)))
				}
			}
		}
		// Polling a status is what the driver does; the wait is bounded
		// by the deadline above, not asserted.
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s did not finish", inst)
	return nil
}

// TestKSFaultFailsUntilCleared: the planted fault fails the activity
// while its file exists, for its instance and run only.
func TestKSFaultFailsUntilCleared(t *testing.T) {
	dir := t.TempDir()
	d := &driver{dir: dir}
	require.NoError(t, d.plantFault("chaos-kitchensink-4", 1))
	act := flaky(dir)
	_, err := act(durable.ActivityContext{}, ksFaultInput{Instance: "chaos-kitchensink-4", Run: 1})
	require.ErrorIs(t, err, errPlantedFault)
	out, err := act(durable.ActivityContext{}, ksFaultInput{Instance: "chaos-kitchensink-4", Run: 2})
	require.NoError(t, err, "another run has no fault")
	require.Equal(t, "x", out)
	require.NoError(t, os.Remove(ksFaultPath(dir, "chaos-kitchensink-4", 1)))
	_, err = act(durable.ActivityContext{}, ksFaultInput{Instance: "chaos-kitchensink-4", Run: 1})
	require.NoError(t, err, "cleared")
}

func life(plan string, actions ...ksAction) *ksLife {
	return &ksLife{Index: 3, Instance: "chaos-kitchensink-3", Plan: plan, Steps: []ksStep{{Op: opActivity, N: 2}}, Actions: actions}
}

// TestKSExpect: the model's expectation after each kind of operator
// record.
func TestKSExpect(t *testing.T) {
	start := ksAction{Op: actStart, Run: 1, Observed: "NotFound"}
	refused := func(a ksAction, err error) ksAction { a.Err = err.Error(); return a }
	for _, tc := range []struct {
		name string
		l    *ksLife
		want ksExpectation
	}{
		{"untouched", life(planNone, start), ksExpectation{Runs: map[int]bool{1: true}}},
		{"suspended and resumed", life(planSuspend, start, ksAction{Op: actSuspend, Run: 1}, ksAction{Op: actResume, Run: 1}),
			ksExpectation{Runs: map[int]bool{1: true}}},
		{"resume refused while suspended", life(planSuspend, start, ksAction{Op: actSuspend, Run: 1},
			refused(ksAction{Op: actResume, Run: 1, Observed: "Suspended"}, errResumeRefused)),
			ksExpectation{Runs: map[int]bool{1: true}, Refusals: map[string]int{ksResumeRefused: 1}}},
		{"cancelled while running", life(planCancel, start, ksAction{Op: actCancel, Run: 1, Observed: "Running"}),
			ksExpectation{Runs: map[int]bool{1: true}, MayCancel: true}},
		{"late cancel, then restarted", life(planLateCancel, start, ksAction{Op: actCancel, Run: 1, Observed: "Completed"}, ksAction{Op: actRestart, Run: 2, Observed: "Completed"}),
			ksExpectation{Runs: map[int]bool{2: true}}},
		{"rewound", life(planRewind, start, ksAction{Op: actClear, Run: 1}, ksAction{Op: actRewind, Run: 1, Observed: "Failed"}),
			ksExpectation{Runs: map[int]bool{1: true}, Rewound: true}},
		{"restart raced with the rewind", life(planRewindRestart, start, ksAction{Op: actRewind, Run: 1, Observed: "Failed"}, ksAction{Op: actRestart, Run: 2, Observed: "Rewinding"}),
			ksExpectation{Runs: map[int]bool{1: true, 2: true}, Rewound: true}},
		{"restart refused after the rewind", life(planRewindRestart, start, ksAction{Op: actRewind, Run: 1, Observed: "Failed"},
			refused(ksAction{Op: actRestart, Run: 2, Observed: "Rewinding"}, durable.ErrInvalidState)),
			ksExpectation{Runs: map[int]bool{1: true}, Rewound: true}},
		{"deleted", life(planRecreate, start, ksAction{Op: actDelete, Run: 1}), ksExpectation{Gone: true, Runs: map[int]bool{}}},
		{"deleted and re-created", life(planRecreate, start, ksAction{Op: actDelete, Run: 1}, ksAction{Op: actRecreate, Run: 2}),
			ksExpectation{Runs: map[int]bool{2: true}}},
		{"re-creation refused", life(planRecreate, start, ksAction{Op: actDelete, Run: 1}, refused(ksAction{Op: actRecreate, Run: 2}, durable.ErrInstanceExists)),
			ksExpectation{Gone: true, Runs: map[int]bool{}, Refusals: map[string]int{ksRecreateRefused: 1}}},
		{"one reuse start refused", life(planReuse, start, ksAction{Op: actReuse, Run: 2}, refused(ksAction{Op: actReuse, Run: 3}, durable.ErrInstanceExists)),
			ksExpectation{Runs: map[int]bool{2: true}}},
		{"both reuse starts accepted", life(planReuse, start, ksAction{Op: actReuse, Run: 2}, ksAction{Op: actReuse, Run: 3}),
			ksExpectation{Runs: map[int]bool{2: true, 3: true}, Refusals: map[string]int{ksDoubleStart: 1}}},
		{"an ambiguous refusal may have been applied", life(planReuse, start, ksAction{Op: actReuse, Run: 2},
			ksAction{Op: actReuse, Run: 3, Err: durable.ErrInstanceExists.Error(), Ambiguous: true}),
			ksExpectation{Runs: map[int]bool{2: true, 3: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ksExpect(tc.l)
			tc.want.Output = ksExpected(3, tc.l.Steps)
			if tc.want.Refusals == nil {
				tc.want.Refusals = map[string]int{}
			}
			require.Equal(t, tc.want, got)
		})
	}
}

// TestKSJudge: each way an instance can differ from the model is found,
// under its category; an instance that ends as the model says is clean.
func TestKSJudge(t *testing.T) {
	l := life(planNone)
	out := ksExpected(3, l.Steps)
	run1 := ksExpectation{Runs: map[int]bool{1: true}, Output: out}
	cancellable := ksExpectation{Runs: map[int]bool{1: true}, MayCancel: true, Output: out}
	gone := ksExpectation{Gone: true, Runs: map[int]bool{}, Output: out}
	for _, tc := range []struct {
		name string
		exp  ksExpectation
		act  ksActual
		want string // "" = clean
	}{
		{"completed as expected", run1, ksActual{State: "Completed", Output: out, Run: 1}, ""},
		{"cancelled as allowed", cancellable, ksActual{State: "Failed", Failure: "canceled: kitchen-sink operator", Run: 1}, ""},
		{"completed before the cancel landed", cancellable, ksActual{State: "Completed", Output: out, Run: 1}, ""},
		{"gone as expected", gone, ksActual{State: "NotFound"}, ""},
		{"lost", run1, ksActual{State: "NotFound"}, ksLost},
		{"stuck", run1, ksActual{State: "Running", Run: 1}, ksStuck},
		{"suspended for good", run1, ksActual{State: "Suspended", Run: 1}, ksStuck},
		{"wrong output", run1, ksActual{State: "Completed", Output: "ks:a1", Run: 1}, ksWrongOutput},
		{"the restart did not take", ksExpectation{Runs: map[int]bool{2: true}, Output: out}, ksActual{State: "Completed", Output: out, Run: 1}, ksWrongRun},
		{"deleted, yet there", gone, ksActual{State: "Completed", Output: out, Run: 1}, ksResurrected},
		{"a cancel nobody sent to this run", run1, ksActual{State: "Failed", Failure: "canceled: kitchen-sink operator, late", Run: 1}, ksStrayCancel},
		{"a dropped child's failure", run1, ksActual{State: "Failed", Failure: "canceled: parent dropped sub-orchestration future", Run: 1}, ksStaleChild},
		{"a cancelled child's failure", run1, ksActual{State: "Failed", Failure: "canceled: parent canceled", Run: 1}, ksStaleChild},
		{"a message of another run", run1, ksActual{State: "Failed", Failure: "nondeterministic: no matching schedule for sub-orchestration id=6", Run: 2}, ksNondeterminism},
		{"the fault outlived the rewind", run1, ksActual{State: "Failed", Failure: ksFaultMessage, Run: 1}, ksFaultPersisted},
		{"another failure", run1, ksActual{State: "Failed", Failure: "boom", Run: 1}, ksUnexpectedFail},
		{"kv", run1, ksActual{State: "Completed", Output: out, Run: 1, KVWrong: []string{"k1"}}, ksKVMismatch},
		{"execution on top of another", run1, ksActual{State: "Completed", Output: out, Run: 1, Overlaps: 1}, ksOverlap},
		{"a delivery twice", run1, ksActual{State: "Completed", Output: out, Run: 1, Duplicates: 2}, ksDupDelivery},
		{"a refusal the model did not allow", ksExpectation{Runs: map[int]bool{1: true}, Output: out, Refusals: map[string]int{ksResumeRefused: 1}},
			ksActual{State: "Completed", Output: out, Run: 1}, ksResumeRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, lines := ksJudge(l, tc.exp, tc.act)
			if tc.want == "" {
				require.Empty(t, found)
				require.Empty(t, lines)
				return
			}
			require.Len(t, found, 1, "%v", found)
			require.Positive(t, found[tc.want], "%v", found)
			require.Contains(t, lines[0], tc.want)
		})
	}
	refusedLife := life(planSuspend, ksAction{Op: actStart, Run: 1}, ksAction{Op: actSuspend, Run: 1},
		ksAction{Op: actResume, Run: 1, Observed: "Suspended", Err: "resume needs a running instance"})
	found, _ := ksJudge(refusedLife, run1, ksActual{State: "Suspended", Run: 1})
	require.Equal(t, map[string]int{ksResumeRefused: 1}, found, "left Suspended by refused resumes")
	found, _ = ksJudge(l, run1, ksActual{State: "Completed", Output: out, Run: 1, Duplicates: 2, Overlaps: 3})
	require.Equal(t, map[string]int{ksDupDelivery: 2, ksOverlap: 3}, found, "counted, not only flagged")
}

// TestKSHistoryFacts: the latest execution's run, executions a later one
// started on top of, and deliveries recorded twice in one execution.
func TestKSHistoryFacts(t *testing.T) {
	started := func(run int) duroxide.Event {
		return duroxide.Event{Kind: duroxide.OrchestrationStarted{Name: ksOrchName, Input: fmt.Sprintf(`{"index":1,"run":%d,"steps":[]}`, run)}}
	}
	ev := duroxide.Event{Kind: duroxide.ExternalEvent{Name: "ev-1-0", Data: "d"}}
	msg := duroxide.Event{Kind: duroxide.ExternalEventPersistent{Name: "q-1-1", Data: "m"}}
	done := duroxide.Event{Kind: duroxide.OrchestrationCompleted{Output: "x"}}
	can := duroxide.Event{Kind: duroxide.OrchestrationContinuedAsNew{Input: "{}"}}
	run, overlaps, dups := ksHistoryFacts([][]duroxide.Event{{started(1), ev, can}, {started(1), msg, done}, {started(2), msg}})
	require.Equal(t, 2, run)
	require.Zero(t, overlaps)
	require.Zero(t, dups, "the same message in two executions is carried, not duplicated")

	run, overlaps, dups = ksHistoryFacts([][]duroxide.Event{{started(1), ev, ev}, {started(2), msg, msg, msg, done}})
	require.Equal(t, 2, run)
	require.Equal(t, 1, overlaps, "execution 1 has no terminal event, yet execution 2 started")
	require.Equal(t, 3, dups)

	run, _, _ = ksHistoryFacts(nil)
	require.Zero(t, run)
}

// TestKSObservationOfARestartedInstance: the operator reads the status,
// then the latest execution; a restart's first turn can commit between
// the two. The status then still says run 1 Completed while the
// execution read is run 2, running: that is no terminal observation of
// run 2 (settle took it for one and stopped serving run 2, which then
// waited for its queue messages for ever).
func TestKSObservationOfARestartedInstance(t *testing.T) {
	started := func(run int) duroxide.Event {
		return duroxide.Event{Kind: duroxide.OrchestrationStarted{Name: ksOrchName, Input: fmt.Sprintf(`{"index":1,"run":%d,"steps":[]}`, run)}}
	}
	done := duroxide.Event{Kind: duroxide.OrchestrationCompleted{Output: "x"}}
	status := "run 1 step 5"
	completed := &durable.OrchestrationStatus{State: durable.StateCompleted, CustomStatus: &status}

	obs := ksObserved(completed, []duroxide.Event{started(2), {Kind: duroxide.TimerCreated{FireAtMs: 1}}})
	require.False(t, obs.Err == nil && obs.terminal() && obs.Run == 2,
		"run 2 is running: the Completed status is run 1's, read before the restart's turn (%+v)", obs)

	obs = ksObserved(completed, []duroxide.Event{started(2), done})
	require.NoError(t, obs.Err)
	require.True(t, obs.terminal())
	require.Equal(t, 2, obs.Run)

	running := &durable.OrchestrationStatus{State: durable.StateRunning}
	require.NoError(t, ksObserved(running, nil).Err)
}
