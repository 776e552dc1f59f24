package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

// Register adds the schedule orchestration and its activity to reg. Every
// runtime that may run schedules registers them (and the orchestrations
// the schedules start).
func Register(reg *durable.Registry) error {
	if err := durable.RegisterOrchestration(reg, OrchestrationName, runSchedule); err != nil {
		return err
	}
	return durable.RegisterActivity(reg, runsActivity, checkRuns)
}

// The schedule is one orchestration: each step reads the time (a system
// call, so replays see the same value), handles the fires due by then,
// publishes its state to its KV store, and waits for the next fire's
// timer or a client request from its persistent queue, whichever comes
// first. A run is a detached orchestration whose id is derived from the
// nominal fire time, so a fire started again (a request retried, a
// backfill over fired times) names the same instance and the start is a
// no-op. Whether earlier runs still run is asked of the store by an
// activity, whose answer is recorded in history: replays decide overlap
// alike.
func runSchedule(ctx *durable.OrchestrationContext, st state) (string, error) {
	r := &runner{ctx: ctx, st: st}
	for step := 0; ; step++ {
		now, err := ctx.UTCNow().Await()
		if err != nil {
			return "", err
		}
		// A continue-as-new turn dispatches no detached start, so the
		// schedule continues as new only here: right after an await,
		// before this turn has started any run.
		if step >= stepsPerExecution || step > 0 && ctx.ContinueAsNewSuggested() {
			return "", durable.ContinueAsNew(ctx, r.st)
		}
		if r.st.Last.IsZero() {
			// The first fire is the first after creation, or the first
			// from StartAt when that is earlier (a schedule taken late
			// still fires from its start, within the catch-up window).
			r.st.Last = now
			if s := r.st.Options.Spec.StartAt; !s.IsZero() && s.Before(now) {
				r.st.Last = s.Add(-time.Nanosecond)
			}
		}
		if err := r.catchUp(now); err != nil {
			return "", err
		}
		if err := r.drainBuffer(now); err != nil {
			return "", err
		}
		r.publish(now)
		req, ok, err := r.wait(now)
		if err != nil {
			return "", err
		}
		if ok {
			if err := r.handle(req); err != nil {
				return "", err
			}
		}
	}
}

type runner struct {
	ctx *durable.OrchestrationContext
	st  state
	// checkedAt is the time the running runs were last asked for.
	checkedAt time.Time
	now       time.Time
}

// wait sleeps until the next fire (or the next look at a buffered fire's
// blocker) or a request; ok reports a request.
func (r *runner) wait(now time.Time) (request, bool, error) {
	control := durable.DequeueEvent[string](r.ctx, controlQueue)
	wake, timed := r.nextWake(now)
	if timed {
		timer := durable.NewTimer(r.ctx, max(wake.Sub(now), 0))
		if r.ctx.Select(timer, control) == 0 {
			_, err := timer.Await()
			return request{}, false, err
		}
	}
	raw, err := control.Await()
	if err != nil {
		return request{}, false, err
	}
	var req request
	if err := json.Unmarshal([]byte(raw), &req); err != nil || req.ID == "" {
		r.ctx.TraceWarn("schedule: dropped a malformed request")
		return request{}, false, nil
	}
	return req, true, nil
}

// nextWake is when the schedule next has something to do.
func (r *runner) nextWake(now time.Time) (time.Time, bool) {
	var wake time.Time
	if !r.st.Options.Paused {
		if n, err := r.st.Options.Spec.Next(r.st.Last); err == nil && !n.IsZero() {
			wake = n.Add(fireDelay(r.st.Options.Spec, r.st.ID, n))
		}
	}
	if len(r.st.Buffered) > 0 {
		poll := now.Add(runPollInterval)
		if wake.IsZero() || poll.Before(wake) {
			wake = poll
		}
	}
	return wake, !wake.IsZero()
}

// catchUp handles the fires due by now: those within the catch-up window
// fire, older ones are recorded as missed. A paused schedule lets them
// pass.
func (r *runner) catchUp(now time.Time) error {
	r.now = now
	o := r.st.Options
	if o.Paused {
		if now.After(r.st.Last) {
			r.st.Last = now
		}
		return nil
	}
	cutoff := now.Add(-o.catchupWindow() - o.Spec.Jitter)
	if missed := firesIn(o.Spec, r.st.Last, cutoff, 1); len(missed) > 0 {
		r.st.record(Record{Kind: ActionMissed, Nominal: missed[0], At: now, Reason: "catch-up window"})
		r.st.Last = cutoff
	}
	for _, t := range firesIn(o.Spec, r.st.Last, now, maxFiresPerTurn) {
		due := t.Add(fireDelay(o.Spec, r.st.ID, t))
		if due.Truncate(time.Millisecond).After(now) {
			break // timers and the clock are whole milliseconds
		}
		if now.Sub(due) > o.catchupWindow() {
			r.st.record(Record{Kind: ActionMissed, Nominal: t, At: now, Reason: "catch-up window"})
		} else if err := r.fire(t, o.Overlap, "scheduled"); err != nil {
			return err
		}
		r.st.Last = t
	}
	return nil
}

// fire handles one fire of nominal time t under the overlap policy.
func (r *runner) fire(t time.Time, overlap Overlap, reason string) error {
	overlap = overlap.orDefault()
	// Every policy refreshes, allow_all too: Running is the schedule's
	// state, and it must shrink as runs end.
	if err := r.refresh(); err != nil {
		return err
	}
	busy := len(r.st.Running) > 0 || len(r.st.Buffered) > 0
	switch overlap {
	case OverlapSkip:
		if busy {
			r.st.record(Record{Kind: ActionSkipped, Nominal: t, At: r.now, RunID: RunID(r.st.prefix(), t), Reason: "overlap"})
			return nil
		}
	case OverlapBufferOne, OverlapBufferAll:
		if busy {
			if overlap == OverlapBufferOne && len(r.st.Buffered) > 0 || len(r.st.Buffered) >= maxBuffered {
				r.st.record(Record{Kind: ActionSkipped, Nominal: t, At: r.now, RunID: RunID(r.st.prefix(), t), Reason: "overlap"})
				return nil
			}
			r.st.Buffered = append(r.st.Buffered, t)
			r.st.record(Record{Kind: ActionBuffered, Nominal: t, At: r.now, RunID: RunID(r.st.prefix(), t), Reason: reason})
			return nil
		}
	case OverlapCancelOther:
		if len(r.st.Running) > 0 {
			cancel := r.st.Running
			if _, err := r.runs(runsQuery{Cancel: cancel, Reason: "schedule " + r.st.ID + ": overlap policy cancel_other"}); err != nil {
				r.st.record(Record{Kind: ActionSkipped, Nominal: t, At: r.now, RunID: RunID(r.st.prefix(), t), Reason: "cancelling the running runs failed"})
				return nil
			}
			for _, id := range cancel {
				r.st.record(Record{Kind: ActionCancelled, Nominal: t, At: r.now, RunID: id, Reason: "overlap"})
			}
			r.st.Running = nil
		}
	}
	r.start(t, reason)
	return nil
}

// start starts the run of nominal time t.
func (r *runner) start(t time.Time, reason string) {
	id := RunID(r.st.prefix(), t)
	a := r.st.Options.Action
	durable.StartOrchestration(r.ctx, a.Orchestration, id, a.Input, durable.StartOrchestrationOptions{Version: a.Version})
	r.st.Running = append(r.st.Running, id)
	if r.st.StartedAt == nil {
		r.st.StartedAt = map[string]time.Time{}
	}
	r.st.StartedAt[id] = r.now
	if n := len(r.st.Running) - maxRunning; n > 0 {
		r.st.Running = append([]string(nil), r.st.Running[n:]...) // the oldest are no longer watched
	}
	r.st.Started++
	r.st.record(Record{Kind: ActionStarted, Nominal: t, At: r.now, RunID: id, Reason: reason})
}

// refresh drops the runs that ended from Running, asking the store once
// per step.
func (r *runner) refresh() error {
	if len(r.st.Running) == 0 || r.checkedAt.Equal(r.now) {
		return nil
	}
	q := runsQuery{Check: r.st.Running}
	for _, id := range r.st.Running {
		if at, ok := r.st.StartedAt[id]; !ok || r.now.Sub(at) > startGrace {
			q.Settled = append(q.Settled, id)
		}
	}
	running, err := r.runs(q)
	if err != nil {
		return nil // Running stays as it was: the runs count as running
	}
	r.st.Running, r.checkedAt = running, r.now
	for id := range r.st.StartedAt {
		if !slices.Contains(running, id) {
			delete(r.st.StartedAt, id)
		}
	}
	return nil
}

// runs calls the runs activity, retried: the store it reads may fail for
// a while, and a schedule must outlive that. An error that outlasts the
// retries is the caller's to absorb, never the schedule's end.
func (r *runner) runs(q runsQuery) ([]string, error) {
	out, err := durable.CallActivity[[]string](r.ctx, runsActivity, q, durable.ActivityOptions{Retry: runsRetry}).Await()
	if err != nil {
		r.ctx.TraceWarn("schedule " + r.st.ID + ": the runs activity failed: " + err.Error())
	}
	return out, err
}

// runsRetry is the runs activity's retry policy.
var runsRetry = &durable.RetryPolicy{MaxAttempts: 6, Backoff: durable.ExponentialBackoff(time.Second, 2, 30*time.Second)}

// drainBuffer starts buffered fires while nothing runs.
func (r *runner) drainBuffer(now time.Time) error {
	r.now = now
	for len(r.st.Buffered) > 0 {
		if err := r.refresh(); err != nil {
			return err
		}
		if len(r.st.Running) > 0 {
			return nil
		}
		t := r.st.Buffered[0]
		r.st.Buffered = r.st.Buffered[1:]
		r.start(t, "buffered")
	}
	return nil
}

// publish writes the state to the KV store when it changed.
func (r *runner) publish(now time.Time) {
	b, err := json.Marshal(r.st)
	if err != nil {
		panic(err) // plain data
	}
	if old, ok := r.ctx.KVValue(stateKey); ok && sameState(old, b) {
		return
	}
	r.st.Updated = now
	b, _ = json.Marshal(r.st)
	r.ctx.SetKVValue(stateKey, string(b))
}

// sameState compares states but for their Updated time.
func sameState(old string, b []byte) bool {
	var a, c state
	if json.Unmarshal([]byte(old), &a) != nil || json.Unmarshal(b, &c) != nil {
		return false
	}
	a.Updated, c.Updated = time.Time{}, time.Time{}
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(c)
	return string(x) == string(y)
}

// handle applies one client request and records its answer.
func (r *runner) handle(req request) error {
	key := replyKeyPrefix + req.ID
	if _, seen := r.ctx.KVValue(key); seen {
		return nil // a retried request, answered before
	}
	now, err := r.ctx.UTCNow().Await()
	if err != nil {
		return err
	}
	r.now = now
	var rerr error
	switch req.Op {
	case opUpdate:
		if req.Options == nil {
			rerr = fmt.Errorf("%w: update without options", ErrInvalidOptions)
		} else if rerr = req.Options.validate(); rerr == nil {
			o := *req.Options
			o.Paused, o.Note = r.st.Options.Paused, r.st.Options.Note
			r.st.Options = o
		}
	case opPause, opUnpause:
		r.st.Options.Paused = req.Op == opPause
		r.st.Options.Note = req.Note
		if now.After(r.st.Last) {
			r.st.Last = now // fires while paused are not caught up
		}
	case opTrigger:
		rerr = r.fire(now, overlapOr(req.Overlap, r.st.Options.Overlap), "trigger")
	case opBackfill:
		for _, t := range firesIn(r.st.Options.Spec, req.From.Add(-time.Nanosecond), req.To.Add(-time.Nanosecond), maxFiresPerTurn) {
			if rerr = r.fire(t, overlapOr(req.Overlap, r.st.Options.Overlap), "backfill"); rerr != nil {
				break
			}
		}
	default:
		rerr = fmt.Errorf("%w: unknown request %q", ErrInvalidOptions, req.Op)
	}
	var rep reply
	if rerr != nil {
		var failed *durable.TaskFailedError
		if !errors.Is(rerr, ErrInvalidOptions) && !errors.Is(rerr, ErrInvalidSpec) && !errors.As(rerr, &failed) {
			return rerr
		}
		rep.Error = rerr.Error()
	}
	// The state goes out in the reply's turn: a client that saw the
	// reply reads the state the request made.
	r.publish(now)
	r.answer(key, rep)
	return nil
}

func overlapOr(o, def Overlap) Overlap {
	if o != "" {
		return o
	}
	return def
}

// answer records a reply, clearing the oldest past maxReplies.
func (r *runner) answer(key string, rep reply) {
	b, _ := json.Marshal(rep)
	r.ctx.SetKVValue(key, string(b))
	r.st.Replies = append(r.st.Replies, key)
	for len(r.st.Replies) > maxReplies {
		r.ctx.ClearKVValue(r.st.Replies[0])
		r.st.Replies = r.st.Replies[1:]
	}
}

// checkRuns is the runs activity: it cancels the runs named to cancel and
// returns those of Check that have not ended. A run not found is taken as
// running while its start may still be on its way, and as ended once it
// is Settled (started long enough ago: deleted by hand).
func checkRuns(actx durable.ActivityContext, q runsQuery) ([]string, error) {
	c := actx.Client()
	for _, id := range q.Cancel {
		if err := c.CancelInstance(actx, id, q.Reason); err != nil && !errors.Is(err, durable.ErrInstanceNotFound) {
			return nil, err
		}
	}
	running := []string{}
	for _, id := range q.Check {
		st, err := c.Status(actx, id)
		if err != nil {
			return nil, err
		}
		if !st.IsTerminal() && (st.State != durable.StateNotFound || !slices.Contains(q.Settled, id)) {
			running = append(running, id)
		}
	}
	return running, nil
}
