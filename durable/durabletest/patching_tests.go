package durabletest

import (
	"sync"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// patchingTests (Go-only): ctx.Patched and ctx.DeprecatePatch across a
// code change, with instances the old code started: each test runs the old
// code first, so the histories are the ones it recorded, then swaps the
// runtime for the new code.
func patchingTests() []sample {
	return []sample{
		{"old_history_replays_old_branch", oldHistoryReplaysOldBranch},
		{"instance_before_the_point_takes_new_branch", instanceBeforeThePointTakesNewBranch},
		{"new_instance_takes_new_branch", newInstanceTakesNewBranch},
		{"passed_without_marker_keeps_old_branch_after_restart", passedWithoutMarkerKeepsOldBranchAfterRestart},
		{"deprecate_patch_replays_both_histories", deprecatePatchReplaysBothHistories},
		{"continue_as_new_takes_new_branch", patchContinueAsNewTakesNewBranch},
		{"patch_in_child", patchInChild},
		{"patch_across_suspend_resume", patchAcrossSuspendResume},
		{"patch_with_cancel", patchWithCancel},
		{"patch_after_calls_not_awaited_yet", patchAfterCallsNotAwaitedYet},
		{"deleted_old_instance_starts_again_on_the_new_branch", deletedOldInstanceStartsAgainOnTheNewBranch},
		{"patch_after_a_message_already_queued", patchAfterAMessageAlreadyQueued},
	}
}

// The code under change: "Ship" waits for "start", packs, sends, waits for
// "go" and "again", and returns its branch and what it sent. The change
// ("receipt") sends a receipt instead of the parcel.
type shipCode int

const (
	shipOld        shipCode = iota // before the change
	shipPatched                    // ctx.Patched("receipt")
	shipDeprecated                 // ctx.DeprecatePatch("receipt")
)

const receiptPatch = "receipt"

// shipRegistry registers code's "Ship" and its activities.
func (e *env) shipRegistry(code shipCode) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Pack", func(_ durable.ActivityContext, in string) (string, error) { return "parcel(" + in + ")", nil })
	act(e.t, r, "Receipt", func(_ durable.ActivityContext, in string) (string, error) { return "receipt(" + in + ")", nil })
	act(e.t, r, "Send", func(_ durable.ActivityContext, in string) (string, error) { return "sent " + in, nil })
	orch(e.t, r, "Ship", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return ship(ctx, code, in)
	})
	return r
}

func ship(ctx *durable.OrchestrationContext, code shipCode, in string) (string, error) {
	if _, err := durable.WaitEvent[string](ctx, "start").Await(); err != nil {
		return "", err
	}
	parcel, err := durable.CallActivity[string](ctx, "Pack", in).Await()
	if err != nil {
		return "", err
	}
	branch := "old"
	switch code {
	case shipPatched:
		if ctx.Patched(receiptPatch) {
			branch = "new"
		}
	case shipDeprecated:
		ctx.DeprecatePatch(receiptPatch)
		branch = "new"
	}
	if branch == "new" {
		if parcel, err = durable.CallActivity[string](ctx, "Receipt", parcel).Await(); err != nil {
			return "", err
		}
	}
	sent, err := durable.CallActivity[string](ctx, "Send", parcel).Await()
	if err != nil {
		return "", err
	}
	for _, ev := range []string{"go", "again"} {
		if _, err := durable.WaitEvent[string](ctx, ev).Await(); err != nil {
			return "", err
		}
	}
	return branch + ": " + sent, nil
}

// runShip starts code's runtime; stop shuts it down.
func (e *env) runShip(code shipCode) (stop func()) {
	return e.startStoppable(e.shipRegistry(code))
}

// startStoppable starts a runtime over reg that stop shuts down, or the
// test's cleanup if stop was not called.
func (e *env) startStoppable(reg *durable.Registry) (stop func()) {
	e.t.Helper()
	var once sync.Once
	shutdown := e.startManual(reg, fastOptions(nil))
	stop = func() { once.Do(shutdown) }
	e.t.Cleanup(stop)
	return stop
}

// shipPassedThePoint starts instance under the old code and waits until
// it sent (past the patch point) and waits for "go".
func (e *env) shipPassedThePoint(instance string) {
	e.t.Helper()
	e.startOrch(instance, "Ship", "a")
	require.True(e.t, e.waitSubscription(instance, "start"))
	e.raise(instance, "start", "")
	require.True(e.t, e.waitSubscription(instance, "go"))
}

// finishShip raises "go" and "again" and returns the output.
func (e *env) finishShip(instance string) string {
	e.t.Helper()
	require.True(e.t, e.waitSubscription(instance, "go"))
	e.raise(instance, "go", "")
	require.True(e.t, e.waitSubscription(instance, "again"))
	e.raise(instance, "again", "")
	return e.completed(instance)
}

// patchMarkers counts instance's patch markers (scheduled) and their
// completions.
func (e *env) patchMarkers(instance string) (scheduled, completed int) {
	h := e.history(instance)
	ids := map[uint64]bool{}
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && k.Name == durable.SyscallPatch {
			require.Equal(e.t, receiptPatch, k.Input)
			ids[ev.EventID] = true
			scheduled++
		}
	}
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityCompleted); ok && ev.SourceEventID != nil && ids[*ev.SourceEventID] {
			require.Equal(e.t, receiptPatch, k.Result)
			completed++
		}
	}
	return scheduled, completed
}

// oldBranches replays instance's current execution through code.
func (e *env) oldBranches(instance string, code shipCode) []string {
	e.t.Helper()
	old, err := durable.OldPatchBranches(e.shipRegistry(code), durable.RecordedExecution{Instance: instance,
		ExecutionID: 1, History: e.history(instance)})
	require.NoError(e.t, err)
	return old
}

func oldHistoryReplaysOldBranch(e *env) {
	stop := e.runShip(shipOld)
	e.shipPassedThePoint("ship-old")
	stop()
	require.Equal(e.t, []string{receiptPatch}, e.oldBranches("ship-old", shipPatched),
		"the replayer reports the old branch before the new code runs")
	e.runShip(shipPatched)
	require.Equal(e.t, "old: sent parcel(a)", e.finishShip("ship-old"))
	s, _ := e.patchMarkers("ship-old")
	require.Zero(e.t, s, "the old branch records no marker: %s", kinds(e.history("ship-old")))
	require.Zero(e.t, countActivity(e.history("ship-old"), "Receipt"))
}

func instanceBeforeThePointTakesNewBranch(e *env) {
	stop := e.runShip(shipOld)
	e.startOrch("ship-early", "Ship", "b")
	require.True(e.t, e.waitSubscription("ship-early", "start"))
	stop()
	require.Empty(e.t, e.oldBranches("ship-early", shipPatched), "not at the point yet: nothing takes the old branch")
	e.runShip(shipPatched)
	e.raise("ship-early", "start", "")
	require.Equal(e.t, "new: sent receipt(parcel(b))", e.finishShip("ship-early"))
	s, c := e.patchMarkers("ship-early")
	require.Equal(e.t, [2]int{1, 1}, [2]int{s, c}, "one marker, completed: %s", kinds(e.history("ship-early")))
	require.Equal(e.t, []string{receiptPatch}, durable.PatchMarkers(e.history("ship-early")))
	require.Empty(e.t, e.oldBranches("ship-early", shipPatched))
}

func newInstanceTakesNewBranch(e *env) {
	e.runShip(shipPatched)
	e.startOrch("ship-new", "Ship", "c")
	require.True(e.t, e.waitSubscription("ship-new", "start"))
	e.raise("ship-new", "start", "")
	require.Equal(e.t, "new: sent receipt(parcel(c))", e.finishShip("ship-new"))
	h := e.history("ship-new")
	// The marker sits where the code called Patched: after Pack's
	// completion, before Receipt.
	pack, marker, receipt := -1, -1, -1
	for i, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok {
			switch k.Name {
			case "Pack":
				pack = i
			case durable.SyscallPatch:
				marker = i
			case "Receipt":
				receipt = i
			}
		}
	}
	require.True(e.t, pack >= 0 && pack < marker && marker < receipt, "order: %s", kinds(h))
}

func passedWithoutMarkerKeepsOldBranchAfterRestart(e *env) {
	stop := e.runShip(shipOld)
	e.shipPassedThePoint("ship-restart")
	stop()
	stop = e.runShip(shipPatched)
	e.raise("ship-restart", "go", "")
	require.True(e.t, e.waitSubscription("ship-restart", "again"), "a turn of the new code replayed the old history")
	stop()
	e.runShip(shipPatched)
	e.raise("ship-restart", "again", "")
	require.Equal(e.t, "old: sent parcel(a)", e.completed("ship-restart"))
	s, _ := e.patchMarkers("ship-restart")
	require.Zero(e.t, s)
}

func deprecatePatchReplaysBothHistories(e *env) {
	stop := e.runShip(shipOld)
	e.startOrch("ship-unmarked", "Ship", "d")
	require.True(e.t, e.waitSubscription("ship-unmarked", "start"))
	stop()
	stop = e.runShip(shipPatched)
	e.shipPassedThePoint("ship-marked")
	stop()
	require.Equal(e.t, []string{receiptPatch}, durable.PatchMarkers(e.history("ship-marked")))

	e.runShip(shipDeprecated)
	require.Equal(e.t, "new: sent receipt(parcel(a))", e.finishShip("ship-marked"), "history with the marker")
	e.raise("ship-unmarked", "start", "")
	require.Equal(e.t, "new: sent receipt(parcel(d))", e.finishShip("ship-unmarked"), "history without it")
	s, _ := e.patchMarkers("ship-unmarked")
	require.Zero(e.t, s, "DeprecatePatch records nothing")
	e.startOrch("ship-fresh", "Ship", "f")
	require.True(e.t, e.waitSubscription("ship-fresh", "start"))
	e.raise("ship-fresh", "start", "")
	require.Equal(e.t, "new: sent receipt(parcel(f))", e.finishShip("ship-fresh"))
	s, _ = e.patchMarkers("ship-fresh")
	require.Zero(e.t, s)
}

// countActivity counts h's schedules of activity name.
func countActivity(h []duroxide.Event, name string) int {
	n := 0
	for _, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && k.Name == name {
			n++
		}
	}
	return n
}

// loopRegistry registers "Loop": each execution takes the patch's branch,
// waits for "go", and continues as new with the branches so far until it
// has run three executions.
func (e *env) loopRegistry(patched bool) *durable.Registry {
	r := durable.NewRegistry()
	act(e.t, r, "Step", func(_ durable.ActivityContext, in string) (string, error) { return in, nil })
	orch(e.t, r, "Loop", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Step", in).Await(); err != nil {
			return "", err
		}
		branch := "old"
		if patched && ctx.Patched(receiptPatch) {
			branch = "new"
		}
		if _, err := durable.WaitEvent[string](ctx, "go").Await(); err != nil {
			return "", err
		}
		if in += branch; ctx.ExecutionID() < 3 {
			return "", durable.ContinueAsNew(ctx, in+",")
		}
		return in, nil
	})
	return r
}

func patchContinueAsNewTakesNewBranch(e *env) {
	stop := e.startStoppable(e.loopRegistry(false))
	e.startOrch("loop", "Loop", "")
	require.True(e.t, e.waitSubscription("loop", "go"))
	stop()
	e.startStoppable(e.loopRegistry(true))
	for exec := 1; exec <= 3; exec++ {
		e.waitExecutions("loop", exec)
		require.True(e.t, e.waitSubscription("loop", "go"))
		e.raise("loop", "go", "")
	}
	require.Equal(e.t, "old,new,new", e.completed("loop"), "the first execution replays its old branch; the next ones take the new")
	require.Empty(e.t, durable.PatchMarkers(e.executionHistory("loop", 1)))
	require.Equal(e.t, []string{receiptPatch}, durable.PatchMarkers(e.executionHistory("loop", 2)))
}

// parentRegistry registers "Parent", which runs "Ship" (code) as its
// child "<parent>-child" and returns the child's output.
func (e *env) parentRegistry(code shipCode) *durable.Registry {
	r := e.shipRegistry(code)
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		return durable.CallSubOrchestration[string](ctx, "Ship", in, durable.SubOrchestrationOptions{
			InstanceID: ctx.InstanceID() + "-child"}).Await()
	})
	return r
}

func patchInChild(e *env) {
	stop := e.startStoppable(e.parentRegistry(shipOld))
	e.startOrch("parent-old", "Parent", "p")
	require.True(e.t, e.waitSubscription("parent-old-child", "start"))
	e.raise("parent-old-child", "start", "")
	require.True(e.t, e.waitSubscription("parent-old-child", "go"))
	stop()
	e.startStoppable(e.parentRegistry(shipPatched))
	e.raise("parent-old-child", "go", "")
	require.True(e.t, e.waitSubscription("parent-old-child", "again"))
	e.raise("parent-old-child", "again", "")
	require.Equal(e.t, "old: sent parcel(p)", e.completed("parent-old"))

	e.startOrch("parent-new", "Parent", "q")
	require.True(e.t, e.waitSubscription("parent-new-child", "start"))
	e.raise("parent-new-child", "start", "")
	require.True(e.t, e.waitSubscription("parent-new-child", "go"))
	e.raise("parent-new-child", "go", "")
	require.True(e.t, e.waitSubscription("parent-new-child", "again"))
	e.raise("parent-new-child", "again", "")
	require.Equal(e.t, "new: sent receipt(parcel(q))", e.completed("parent-new"))
	require.Equal(e.t, []string{receiptPatch}, durable.PatchMarkers(e.history("parent-new-child")))
	require.Empty(e.t, durable.PatchMarkers(e.history("parent-new")), "the marker is the child's")
}

func patchAcrossSuspendResume(e *env) {
	stop := e.runShip(shipOld)
	e.shipPassedThePoint("ship-susp-old")
	e.startOrch("ship-susp-early", "Ship", "e")
	require.True(e.t, e.waitSubscription("ship-susp-early", "start"))
	e.suspend("ship-susp-old", "deploy")
	e.suspend("ship-susp-early", "deploy")
	stop()
	e.runShip(shipPatched)
	e.raise("ship-susp-early", "start", "") // held while suspended
	require.NoError(e.t, e.client().Resume(e.ctx, "ship-susp-early", ""))
	require.NoError(e.t, e.client().Resume(e.ctx, "ship-susp-old", ""))
	require.Equal(e.t, "new: sent receipt(parcel(e))", e.finishShip("ship-susp-early"))
	require.Equal(e.t, "old: sent parcel(a)", e.finishShip("ship-susp-old"))
}

func patchWithCancel(e *env) {
	e.runShip(shipPatched)
	e.startOrch("ship-cancel", "Ship", "g")
	require.True(e.t, e.waitSubscription("ship-cancel", "start"))
	e.raise("ship-cancel", "start", "")
	require.True(e.t, e.waitSubscription("ship-cancel", "go"))
	e.cancel("ship-cancel", "no longer needed")
	e.waitStatusCancelled("ship-cancel")
	s, c := e.patchMarkers("ship-cancel")
	require.Equal(e.t, [2]int{1, 1}, [2]int{s, c})
	require.Empty(e.t, e.oldBranches("ship-cancel", shipPatched), "a cancelled history still replays")
}

// fanOutRegistry registers "FanOut": it schedules Pack and, in a Go
// block, Send, without awaiting them, then decides the patch, then waits
// for "go". Pack is emitted and not yet matched when Patched looks for
// its marker, so replay must find the marker past it; the Go block runs
// once the main block waits, so Send comes after the marker.
func (e *env) fanOutRegistry(patched bool) *durable.Registry {
	r := e.shipRegistry(shipOld)
	orch(e.t, r, "FanOut", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		pack := durable.CallActivity[string](ctx, "Pack", in)
		send := durable.Go(ctx, func(ctx *durable.OrchestrationContext) (string, error) {
			return durable.CallActivity[string](ctx, "Send", in).Await()
		})
		branch := "old"
		if patched && ctx.Patched(receiptPatch) {
			branch = "new"
			if _, err := durable.CallActivity[string](ctx, "Receipt", in).Await(); err != nil {
				return "", err
			}
		}
		p, err := pack.Await()
		if err != nil {
			return "", err
		}
		s, err := send.Await()
		if err != nil {
			return "", err
		}
		if _, err := durable.WaitEvent[string](ctx, "go").Await(); err != nil {
			return "", err
		}
		return branch + ": " + p + ", " + s, nil
	})
	return r
}

func patchAfterCallsNotAwaitedYet(e *env) {
	stop := e.startStoppable(e.fanOutRegistry(false))
	e.startOrch("fan-old", "FanOut", "h")
	require.True(e.t, e.waitSubscription("fan-old", "go"))
	stop()
	e.startStoppable(e.fanOutRegistry(true))
	e.raise("fan-old", "go", "")
	require.Equal(e.t, "old: parcel(h), sent h", e.completed("fan-old"))
	e.startOrch("fan-new", "FanOut", "i")
	require.True(e.t, e.waitSubscription("fan-new", "go"))
	e.raise("fan-new", "go", "")
	require.Equal(e.t, "new: parcel(i), sent i", e.completed("fan-new"), "the replays of later turns find the marker")
	h := e.history("fan-new")
	pack, marker, send := indexOfActivity(h, "Pack"), indexOfActivity(h, durable.SyscallPatch), indexOfActivity(h, "Send")
	require.Equal(e.t, [3]int{1, 2, 3}, [3]int{pack, marker, send}, "Pack, marker, Send: %s", kinds(h))
}

// indexOfActivity is the index of h's first schedule of activity name.
func indexOfActivity(h []duroxide.Event, name string) int {
	for i, ev := range h {
		if k, ok := ev.Kind.(duroxide.ActivityScheduled); ok && k.Name == name {
			return i
		}
	}
	return -1
}

// An instance on the old branch, force-deleted and started again with its
// id, begins a new history: the new life takes the new branch.
func deletedOldInstanceStartsAgainOnTheNewBranch(e *env) {
	stop := e.runShip(shipOld)
	e.shipPassedThePoint("ship-del")
	stop()
	e.runShip(shipPatched)
	_, err := e.client().DeleteInstance(e.ctx, "ship-del", durable.DeleteOptions{Force: true})
	require.NoError(e.t, err)
	e.waitFor("the deletion", func() bool {
		st, err := e.client().Status(e.ctx, "ship-del")
		return err == nil && st.State == durable.StateNotFound
	})
	e.startOrch("ship-del", "Ship", "j")
	require.True(e.t, e.waitSubscription("ship-del", "start"))
	e.raise("ship-del", "start", "")
	require.Equal(e.t, "new: sent receipt(parcel(j))", e.finishShip("ship-del"))
	require.Equal(e.t, []string{receiptPatch}, durable.PatchMarkers(e.history("ship-del")))
}

// A dequeue whose message arrived before it resolves in the turn that
// subscribes, after the turn's schedules are written; the patch decided
// there is found again by the replays of later turns, which resolve the
// dequeue before those schedules are applied.
func patchAfterAMessageAlreadyQueued(e *env) {
	release := make(chan struct{})
	r := e.shipRegistry(shipOld)
	act(e.t, r, "Hold", func(ctx durable.ActivityContext, in string) (string, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return in, nil
	})
	orch(e.t, r, "Queued", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		if _, err := durable.CallActivity[string](ctx, "Hold", "").Await(); err != nil {
			return "", err
		}
		// Pack is scheduled with the dequeue, so the turn writes a
		// schedule after the subscription before the dequeue resolves.
		msg := durable.DequeueEvent[string](ctx, "q")
		pack := durable.CallActivity[string](ctx, "Pack", "k")
		m, err := msg.Await()
		if err != nil {
			return "", err
		}
		branch := "old"
		if ctx.Patched(receiptPatch) {
			branch = "new"
		}
		if _, err := pack.Await(); err != nil {
			return "", err
		}
		if _, err := durable.WaitEvent[string](ctx, "go").Await(); err != nil {
			return "", err
		}
		return branch + " " + m, nil
	})
	e.startStoppable(r)
	e.startOrch("queued-patch", "Queued", "")
	e.waitHist("queued-patch", "Hold scheduled", func(h []duroxide.Event) bool { return countActivity(h, "Hold") == 1 })
	e.enqueue("queued-patch", "q", "m")
	e.waitHist("queued-patch", "the message", anyKind[duroxide.ExternalEventPersistent])
	close(release)
	require.True(e.t, e.waitSubscription("queued-patch", "go"))
	e.raise("queued-patch", "go", "")
	require.Equal(e.t, "new m", e.completed("queued-patch"))
	s, c := e.patchMarkers("queued-patch")
	require.Equal(e.t, [2]int{1, 1}, [2]int{s, c})
}
