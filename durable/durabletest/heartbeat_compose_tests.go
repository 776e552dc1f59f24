package durabletest

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Heartbeats composed with the lifecycle: a child orchestration's
// activity, a deleted instance, continue-as-new with the same activity,
// and a runtime killed mid-activity.

// waitHeartbeats waits until instance lists n stored heartbeats and
// returns them.
func (e *env) waitHeartbeats(instance string, n int) []durable.ActivityHeartbeat {
	e.t.Helper()
	var hs []durable.ActivityHeartbeat
	e.waitFor(fmt.Sprintf("%d stored heartbeats of %s", n, instance), func() bool {
		var err error
		hs, err = e.client().ActivityHeartbeats(e.ctx, instance)
		require.NoError(e.t, err)
		return len(hs) == n
	})
	return hs
}

// A child orchestration's activity stores its heartbeat under the child
// (the parent lists none) and, after a lost lock, resumes from it; the
// parent gets the child's result.
func heartbeatInChildOrchestration(e *env) {
	fp := NewFaultyProvider(e.p)
	var attempts atomic.Int32
	var release atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "Pages", resumable(&attempts, func(ctx durable.ActivityContext) {
		for !release.Load() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		fp.FailNext(RenewWorkItemLock)
		sleepCtx(ctx, 30*time.Second)
	}))
	orch(e.t, r, "Resume", callOnce)
	orch(e.t, r, "Parent", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		v, err := durable.CallSubOrchestration[string](ctx, "Resume", "").Await()
		return "child: " + v, err
	})
	e.startOn(fp, r, heartbeatLocks(nil))
	e.startOrch("hb-parent", "Parent", "")
	e.waitHist("hb-parent", "the child scheduled", func(h []duroxide.Event) bool {
		_, _, ok := findKind[duroxide.SubOrchestrationScheduled](h)
		return ok
	})
	child := "hb-parent::" + e.childInstanceOf("hb-parent")
	hs := e.waitHeartbeats(child, 1)
	require.Equal(e.t, "Pages", hs[0].Name)
	require.Equal(e.t, "3", hs[0].Details)
	parent, err := e.client().ActivityHeartbeats(e.ctx, "hb-parent")
	require.NoError(e.t, err)
	require.Empty(e.t, parent, "the child's activity heartbeats under the child")
	release.Store(true)
	require.Equal(e.t, "child: resumed after page 3", e.completed("hb-parent"))
	require.Equal(e.t, int32(2), attempts.Load())
}

// An instance deleted (forced) while its activity heartbeats: the item
// goes with it, so the next renewal finds the lock gone; the attempt's
// context is cancelled and its next Heartbeat fails, both with an error
// matching duroxide.ErrLockLost; nothing of the instance is left (no
// heartbeat, no work item, no message) and no completion comes back.
func heartbeatDeletedInstance(e *env) {
	var beatErr, cause atomic.Value
	var ended atomic.Bool
	r := durable.NewRegistry()
	act(e.t, r, "Beating", func(ctx durable.ActivityContext, _ string) (string, error) {
		defer ended.Store(true)
		for i := 0; i < 600; i++ {
			if err := ctx.Heartbeat(i); err != nil {
				beatErr.Store(err)
				cause.Store(context.Cause(ctx))
				return "", err
			}
			time.Sleep(50 * time.Millisecond)
		}
		return "never stopped", nil
	})
	orch(e.t, r, "Waits", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "Beating", "").Await()
	})
	e.start(r, heartbeatLocks(nil))
	e.startOrch("hb-deleted", "Waits", "")
	e.waitHeartbeats("hb-deleted", 1)
	_, err := e.client().DeleteInstance(e.ctx, "hb-deleted", durable.DeleteOptions{Force: true})
	require.NoError(e.t, err)

	e.waitFlag("the attempt ended", &ended)
	err, _ = beatErr.Load().(error)
	require.ErrorIs(e.t, err, duroxide.ErrLockLost, "Heartbeat after the deletion")
	c, _ := cause.Load().(error)
	require.ErrorIs(e.t, c, duroxide.ErrLockLost, "the cancelled attempt's cause")

	hs, err := e.client().ActivityHeartbeats(e.ctx, "hb-deleted")
	require.NoError(e.t, err)
	require.Empty(e.t, hs, "no heartbeat outlives the instance")
	time.Sleep(500 * time.Millisecond) // a dropped result would have been acked by now
	info, err := e.admin().InstanceInfo(e.ctx, "hb-deleted")
	require.True(e.t, err != nil || info == nil, "the deleted instance came back: %+v", info)
	e.requireNothingQueued("after the deletion")
	w, err := e.p.FetchWorkItem(e.ctx, time.Minute, 0, nil, duroxide.TagFilter{})
	require.NoError(e.t, err)
	require.Nil(e.t, w, "a work item outlived the deletion")
}

// The first execution's activity resumes from its details after a lost
// lock and the orchestration continues as new; the new execution calls
// the same activity, with the same activity id: it starts without the
// earlier execution's details, and its own are listed under execution 2.
func heartbeatResumedThenContinueAsNew(e *env) {
	fp := NewFaultyProvider(e.p)
	var attempts atomic.Int32
	var release atomic.Bool
	first := resumable(&attempts, func(ctx durable.ActivityContext) {
		time.Sleep(storedAfter)
		fp.FailNext(RenewWorkItemLock)
		sleepCtx(ctx, 30*time.Second)
	})
	r := durable.NewRegistry()
	act(e.t, r, "Pages", func(ctx durable.ActivityContext, in string) (string, error) {
		if in == "" {
			return first(ctx, in)
		}
		if _, ok, err := durable.HeartbeatDetails[int](ctx); ok || err != nil {
			return "", fmt.Errorf("the new execution's activity saw details (ok %v, err %v)", ok, err)
		}
		if err := ctx.Heartbeat(100); err != nil {
			return "", err
		}
		for !release.Load() && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		return "fresh", nil
	})
	orch(e.t, r, "Twice", func(ctx *durable.OrchestrationContext, in string) (string, error) {
		v, err := durable.CallActivity[string](ctx, "Pages", in).Await()
		if err != nil || in != "" {
			return in + "; " + v, err
		}
		return "", durable.ContinueAsNew(ctx, v)
	})
	e.startOn(fp, r, heartbeatLocks(nil))
	e.startOrch("hb-can", "Twice", "")
	hs := e.waitHeartbeats("hb-can", 1)
	e.waitFor("the second execution's heartbeat", func() bool {
		hs = e.waitHeartbeats("hb-can", 1)
		return hs[0].ExecutionID == 2
	})
	require.Equal(e.t, "100", hs[0].Details)
	release.Store(true)
	require.Equal(e.t, "resumed after page 3; fresh", e.completed("hb-can"))
	require.Equal(e.t, int32(2), attempts.Load())
	for _, x := range []uint64{1, 2} {
		_, k, ok := findKind[duroxide.ActivityScheduled](e.execHistory("hb-can", x))
		require.True(e.t, ok)
		require.Equal(e.t, "Pages", k.Name, "execution %d", x)
	}
}

// severable is a store a runtime "runs in another process" over: once
// cut, nothing that runtime sends reaches the store (as when its process
// is killed), while the store itself serves others.
type severable struct {
	duroxide.Provider
	cut atomic.Bool
}

func (s *severable) severed(op string) error {
	if s.cut.Load() {
		return duroxide.Retryable(op, "severed: the process is gone")
	}
	return nil
}

func (s *severable) FetchOrchestrationItem(ctx context.Context, lock, poll time.Duration, f *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	if err := s.severed("fetch_orchestration_item"); err != nil {
		return nil, err
	}
	return s.Provider.FetchOrchestrationItem(ctx, lock, poll, f)
}

func (s *severable) FetchWorkItem(ctx context.Context, lock, poll time.Duration, sc *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	if err := s.severed("fetch_work_item"); err != nil {
		return nil, err
	}
	return s.Provider.FetchWorkItem(ctx, lock, poll, sc, tags)
}

func (s *severable) AckWorkItem(ctx context.Context, token string, c duroxide.WorkItem) error {
	if err := s.severed("ack_work_item"); err != nil {
		return err
	}
	return s.Provider.AckWorkItem(ctx, token, c)
}

func (s *severable) AbandonWorkItem(ctx context.Context, token string, d time.Duration, ignore bool) error {
	if err := s.severed("abandon_work_item"); err != nil {
		return err
	}
	return s.Provider.AbandonWorkItem(ctx, token, d, ignore)
}

func (s *severable) RenewWorkItemLock(ctx context.Context, token string, d time.Duration) error {
	if err := s.severed("renew_work_item_lock"); err != nil {
		return err
	}
	return s.Provider.RenewWorkItemLock(ctx, token, d)
}

// RenewWorkItemLockWithDetails implements duroxide.HeartbeatRecorder over
// a store that is one.
func (s *severable) RenewWorkItemLockWithDetails(ctx context.Context, token string, d time.Duration, details string) error {
	if err := s.severed("renew_work_item_lock_with_details"); err != nil {
		return err
	}
	return s.Provider.(duroxide.HeartbeatRecorder).RenewWorkItemLockWithDetails(ctx, token, d, details)
}

func (s *severable) AckOrchestrationItem(ctx context.Context, token string, c duroxide.OrchestrationCommit) error {
	if err := s.severed("ack_orchestration_item"); err != nil {
		return err
	}
	return s.Provider.AckOrchestrationItem(ctx, token, c)
}

func (s *severable) AbandonOrchestrationItem(ctx context.Context, token string, d time.Duration, ignore bool) error {
	if err := s.severed("abandon_orchestration_item"); err != nil {
		return err
	}
	return s.Provider.AbandonOrchestrationItem(ctx, token, d, ignore)
}

func (s *severable) RenewOrchestrationItemLock(ctx context.Context, token string, d time.Duration) error {
	if err := s.severed("renew_orchestration_item_lock"); err != nil {
		return err
	}
	return s.Provider.RenewOrchestrationItemLock(ctx, token, d)
}

// The first runtime is killed while its activity heartbeats a page every
// 50 ms: from then on nothing it writes lands, and it never gives the
// item back. Once the lock expires, a second runtime runs the item's next
// attempt, which reads exactly the last details the store got; the first
// attempt, its renewals failing until the lock expired, is cancelled with
// a cause matching duroxide.ErrLockLost.
func heartbeatKilledRuntime(e *env) {
	var attempts atomic.Int32
	var cause atomic.Value
	r := durable.NewRegistry()
	act(e.t, r, "Counting", func(ctx durable.ActivityContext, _ string) (string, error) {
		if attempts.Add(1) > 1 {
			page, ok, err := durable.HeartbeatDetails[int](ctx)
			if err != nil || !ok {
				return "", fmt.Errorf("no details to resume from (ok %v, err %v)", ok, err)
			}
			return fmt.Sprintf("resumed after page %d", page), nil
		}
		for page := 1; ctx.Err() == nil; page++ {
			_ = ctx.Heartbeat(page) // a killed process's heartbeats go nowhere
			time.Sleep(50 * time.Millisecond)
		}
		cause.Store(context.Cause(ctx))
		return "", ctx.Err()
	})
	orch(e.t, r, "Resume", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		return durable.CallActivity[string](ctx, "Counting", "").Await()
	})
	sv := &severable{Provider: e.p}
	_, recorder := e.p.(duroxide.HeartbeatRecorder)
	require.True(e.t, recorder, "the store records heartbeats")
	rt1, err := durable.Start(e.ctx, sv, r, testOptions(heartbeatLocks(nil)))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = rt1.Shutdown(context.Background()) })
	e.startOrch("hb-killed", "Resume", "")
	e.waitFor("a few stored pages", func() bool {
		page, err := strconv.Atoi(e.waitHeartbeats("hb-killed", 1)[0].Details)
		return err == nil && page >= 3
	})
	sv.cut.Store(true)
	time.Sleep(300 * time.Millisecond) // a renewal sent before the cut has landed
	last := e.waitHeartbeats("hb-killed", 1)[0].Details

	e.start(r, heartbeatLocks(nil))
	require.Equal(e.t, "resumed after page "+last, e.completed("hb-killed"))
	require.Equal(e.t, int32(2), attempts.Load())
	// The "killed" runtime's renewals failed until its lock expired: its
	// attempt was cancelled with the lock lost.
	e.waitFor("the first attempt's end", func() bool { return cause.Load() != nil })
	err, _ = cause.Load().(error)
	require.ErrorIs(e.t, err, duroxide.ErrLockLost)
}
