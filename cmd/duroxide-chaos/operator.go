package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// The kitchen sink's operator: one goroutine per instance (its life)
// starts it, sends what its waits ask for, and carries out its plan
// while the chaos runs, recording every action as intended before the
// call and its answer after. The reference model (model.go) reads the
// record.

// ksLife is one kitchen-sink instance: its program, its plan and what the
// operator did to it. Its goroutine owns it until d.senders is done.
type ksLife struct {
	Index    int
	Instance string
	Plan     string
	Steps    []ksStep
	// Actions is every operator action in the order made.
	Actions []ksAction
	// Intents counts the events and messages sent to it.
	Intents int
	// Last is the operator's last observation, for problem lines.
	Last ksObs
	// UpdateWrong lists the answers to its updates that broke the
	// update contract.
	UpdateWrong []string

	rng  *rand.Rand
	sent map[string]bool // waits served, by "run:pos"
	run  int             // the run the operator last started
}

// ksAction is one operator action: what, on which run, what the operator
// saw before calling, and the answer.
type ksAction struct {
	Op string
	// Run is the run a start (start, restart, recreate, reuse) asks for,
	// or the run the action meant.
	Run int
	// Observed is the instance's state when the operator called.
	Observed string
	// Err is the call's final error ("" for success).
	Err string
	// Ambiguous is set when an attempt failed and a later one was
	// refused: the first may have been applied.
	Ambiguous bool
}

// accepted reports whether the action took (or may have taken) effect.
func (a ksAction) accepted() bool { return a.Err == "" || a.Ambiguous }

// Operator action names.
const (
	actStart    = "start"
	actSuspend  = "suspend"
	actResume   = "resume"
	actCancel   = "cancel"
	actClear    = "clear-fault"
	actRewind   = "rewind"
	actRestart  = "restart"
	actDelete   = "delete"
	actRecreate = "recreate"
	actReuse    = "reuse-start"
)

// ksObs is one observation of an instance.
type ksObs struct {
	State string // Completed, Failed, Running, Suspended, Blocked, NotFound
	// Failure is a failed instance's message.
	Failure string
	// Progress is its custom status, parsed (Run 0: none).
	Progress ksProgress
	// Run is the run of the latest execution, read for a terminal
	// instance (0: not read).
	Run int
	Err error
}

func (o ksObs) terminal() bool { return o.State == "Completed" || o.State == "Failed" }

func (o ksObs) faulted() bool {
	return o.State == "Failed" && strings.Contains(o.Failure, ksFaultMessage)
}

// newKSLives draws every kitchen-sink instance's plan and program.
func newKSLives(seed int64, n int, plans []string) map[int]*ksLife {
	out := map[int]*ksLife{}
	for i := range n {
		if kindOf(i) != kitchenSink {
			continue
		}
		plan, steps := ksDraw(seed, i, plans)
		out[i] = &ksLife{Index: i, Instance: instanceName(i), Plan: plan, Steps: steps,
			rng: rand.New(rand.NewPCG(uint64(seed)^0x0b5e, uint64(i))), sent: map[string]bool{}}
	}
	return out
}

// input is the input of run.
func (l *ksLife) input(run int) ksInput {
	return ksInput{Index: l.Index, Run: run, Steps: l.Steps}
}

// record appends an action and returns it.
func (l *ksLife) record(a ksAction) ksAction {
	l.Actions = append(l.Actions, a)
	return a
}

// startKitchenSink starts instance i's life.
func (d *driver) startKitchenSink(ctx context.Context, i int) {
	l := d.ks[i]
	d.senders.Add(1)
	go func() {
		defer d.senders.Done()
		d.live(ctx, l)
		d.mu.Lock()
		d.done[i] = true
		d.mu.Unlock()
	}()
}

// live carries out l's plan and returns once the instance is where the
// plan leaves it (or ctx ended).
func (d *driver) live(ctx context.Context, l *ksLife) {
	if l.Plan == planRewind || l.Plan == planRewindRestart {
		if err := d.plantFault(l.Instance, 1); err != nil {
			d.logf("%s: planting its fault: %v", l.Instance, err)
			return
		}
	}
	if a := d.ksStart(ctx, l, actStart, 1, durable.StartOptions{}); !a.accepted() {
		return
	}
	switch l.Plan {
	case planSuspend, planCancel, planForceRecreate:
		// The trigger: a step drawn from the program.
		at := l.rng.IntN(len(l.Steps))
		obs, ok := d.watch(ctx, l, -1, func(o ksObs) bool { return o.terminal() || (o.Progress.Run == 1 && o.Progress.Pos >= at) })
		if !ok || obs.terminal() {
			break
		}
		switch l.Plan {
		case planSuspend:
			// A few cycles, so that some suspensions land while the
			// program continues as new.
			for range 1 + l.rng.IntN(4) {
				if !d.suspendHoldResume(ctx, l, obs, -1) {
					break
				}
				// The next cycle once the resume took (a suspend before it
				// is refused: already Suspended).
				var ok bool
				if obs, ok = d.watch(ctx, l, -1, func(o ksObs) bool { return o.State != "Suspended" }); !ok || obs.terminal() {
					break
				}
			}
		case planCancel:
			d.ksCall(ctx, l, ksAction{Op: actCancel, Run: 1, Observed: obs.State}, func() error {
				return d.client.CancelInstance(ctx, l.Instance, "kitchen-sink operator", durable.EventOptions{IdempotencyKey: "ks-cancel/" + l.Instance + "/1"})
			})
		case planForceRecreate:
			d.deleteRecreate(ctx, l, obs, true)
		}
	case planBurst:
		burst := ksBurstPos(l.Steps)
		obs, ok := d.watch(ctx, l, burst, func(o ksObs) bool {
			return o.terminal() || (o.Progress.Waiting && o.Progress.Run == 1 && o.Progress.Pos == burst)
		})
		if ok && !obs.terminal() {
			d.suspendHoldResume(ctx, l, obs, burst)
		}
	case planRewind, planRewindRestart:
		obs, ok := d.watch(ctx, l, -1, ksObs.terminal)
		if ok && obs.faulted() {
			d.clearAndRewind(ctx, l, obs)
		}
	case planRestart, planLateCancel, planRecreate, planReuse:
		obs, ok := d.watch(ctx, l, -1, ksObs.terminal)
		if !ok {
			break
		}
		switch l.Plan {
		case planRestart:
			d.ksRestart(ctx, l, obs)
		case planLateCancel:
			d.ksCall(ctx, l, ksAction{Op: actCancel, Run: l.run, Observed: obs.State}, func() error {
				return d.client.CancelInstance(ctx, l.Instance, "kitchen-sink operator, late", durable.EventOptions{IdempotencyKey: "ks-late-cancel/" + l.Instance})
			})
			d.ksRestart(ctx, l, obs)
		case planRecreate:
			d.deleteRecreate(ctx, l, obs, false)
		case planReuse:
			d.reuse(ctx, l, obs)
		}
	}
	d.settle(ctx, l)
}

// ksBurstPos is the position of the program's burst (-1: none).
func ksBurstPos(steps []ksStep) int {
	for pos, s := range steps {
		if s.Op == opQueue && s.N >= ksBurstMin {
			return pos
		}
	}
	return -1
}

// settle serves the instance until it is where the model says it ends:
// terminal in a run the operator's actions allow, or gone.
func (d *driver) settle(ctx context.Context, l *ksLife) {
	exp := ksExpect(l)
	d.watch(ctx, l, -1, func(o ksObs) bool {
		if exp.Gone {
			return o.State == "NotFound"
		}
		return o.terminal() && o.Run != 0 && exp.Runs[o.Run] && !(o.faulted() && hasOp(l.Steps, opFault) && exp.Rewound)
	})
}

// suspendHoldResume suspends the instance, waits until it is Suspended,
// sends the burst at pos (if any) while it is, holds it a little, and
// resumes it. A resume refused while the instance stays Suspended is
// retried for a while, then recorded as refused (the model counts it).
// It reports whether it resumed the instance.
func (d *driver) suspendHoldResume(ctx context.Context, l *ksLife, obs ksObs, burst int) bool {
	a := d.ksCall(ctx, l, ksAction{Op: actSuspend, Run: l.run, Observed: obs.State}, func() error {
		return d.client.Suspend(ctx, l.Instance, "kitchen-sink operator")
	})
	if !a.accepted() {
		return false
	}
	obs, ok := d.watch(ctx, l, burst, func(o ksObs) bool { return o.State == "Suspended" || o.terminal() })
	if !ok || obs.terminal() {
		return false
	}
	if burst >= 0 {
		d.ksSend(ctx, l, ksProgress{Run: l.run, Pos: burst, Waiting: true, Messages: l.Steps[burst].N})
	}
	hold := time.Now().Add(time.Duration(300+l.rng.IntN(1700)) * time.Millisecond)
	if _, ok := d.watch(ctx, l, -1, func(ksObs) bool { return time.Now().After(hold) }); !ok {
		return false
	}
	var refusedSince time.Time
	for {
		obs := d.observe(ctx, l)
		a := d.ksCall(ctx, l, ksAction{Op: actResume, Run: l.run, Observed: obs.State}, func() error {
			return d.client.Resume(ctx, l.Instance, "kitchen-sink operator")
		})
		if a.accepted() || ctx.Err() != nil {
			return a.accepted()
		}
		// Refused: fine if the instance is no longer suspended (it ended,
		// or an earlier attempt resumed it); not while it stays so.
		if o := d.observe(ctx, l); o.Err == nil && o.State != "Suspended" {
			return false
		}
		if refusedSince.IsZero() {
			refusedSince = time.Now()
		}
		if time.Since(refusedSince) > ksPatience {
			l.record(ksAction{Op: actResume, Run: l.run, Observed: "Suspended", Err: errResumeRefused.Error()})
			return false
		}
		if sleepCtx(ctx, time.Second) {
			return false
		}
	}
}

// ksPatience is how long the operator repeats a call the instance's state
// says must be accepted before it records the refusal.
const ksPatience = 30 * time.Second

// errResumeRefused records a resume refused for ksPatience while the
// instance stayed Suspended.
var errResumeRefused = errors.New("resume refused while Suspended")

// clearAndRewind clears the planted fault of a failed instance and
// rewinds it (then, for rewind-restart, restarts it at once).
func (d *driver) clearAndRewind(ctx context.Context, l *ksLife, obs ksObs) {
	err := os.Remove(ksFaultPath(d.dir, l.Instance, l.run))
	l.record(ksAction{Op: actClear, Run: l.run, Observed: obs.State, Err: errText(err)})
	deadline := time.Now().Add(ksPatience)
	for {
		a := d.ksCall(ctx, l, ksAction{Op: actRewind, Run: l.run, Observed: obs.State}, func() error {
			return d.client.Rewind(ctx, l.Instance, durable.RewindOptions{Reason: "kitchen-sink operator: fault cleared"})
		})
		if a.accepted() || ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		// Refused: the instance must have left the failure already.
		if obs = d.observe(ctx, l); obs.Err == nil && !obs.faulted() {
			break
		}
		if sleepCtx(ctx, time.Second) {
			return
		}
	}
	if l.Plan == planRewindRestart {
		// What the client sees may still be the failed execution: the
		// restart may be accepted on top of the rewind.
		d.ksCall(ctx, l, ksAction{Op: actRestart, Run: l.run + 1, Observed: "Rewinding"}, func() error {
			return d.client.Restart(ctx, l.Instance, durable.RestartOptions{Input: l.input(l.run + 1)})
		})
	}
}

// ksRestart restarts a terminal instance as the next run.
func (d *driver) ksRestart(ctx context.Context, l *ksLife, obs ksObs) {
	next := l.run + 1
	a := d.ksCall(ctx, l, ksAction{Op: actRestart, Run: next, Observed: obs.State}, func() error {
		return d.client.Restart(ctx, l.Instance, durable.RestartOptions{Input: l.input(next)})
	})
	if a.accepted() {
		l.run = next
	}
}

// deleteRecreate deletes the instance (forced while it runs) and starts
// the next run under the same id. A start refused because the deleted
// instance is not yet swept is repeated for ksPatience.
func (d *driver) deleteRecreate(ctx context.Context, l *ksLife, obs ksObs, force bool) {
	a := d.ksCall(ctx, l, ksAction{Op: actDelete, Run: l.run, Observed: obs.State}, func() error {
		_, err := d.client.DeleteInstance(ctx, l.Instance, durable.DeleteOptions{Force: force})
		if errors.Is(err, durable.ErrInstanceNotFound) {
			return nil // the operator saw it: a repeated call after the delete applied
		}
		return err
	})
	if !a.accepted() {
		return
	}
	deadline := time.Now().Add(ksPatience)
	for {
		err := d.opCall(ctx, func() error {
			return d.client.StartOrchestration(ctx, l.Instance, ksOrchName, l.input(l.run+1),
				durable.StartOptions{IdempotencyKey: fmt.Sprintf("ks-start/%s/%d", l.Instance, l.run+1)})
		})
		if !errors.Is(err, durable.ErrInstanceExists) || time.Now().After(deadline) || ctx.Err() != nil {
			a := l.record(ksAction{Op: actRecreate, Run: l.run + 1, Observed: "Deleted", Err: errText(err)})
			if a.accepted() {
				l.run++
			}
			return
		}
		if sleepCtx(ctx, 500*time.Millisecond) {
			return
		}
	}
}

// reuse makes two concurrent starts of the next two runs with
// IDReuseAllowTerminal on the terminal instance: one must be refused.
func (d *driver) reuse(ctx context.Context, l *ksLife, obs ksObs) {
	var wg sync.WaitGroup
	acts := make([]ksAction, 2)
	for k := range acts {
		run := l.run + 1 + k
		wg.Add(1)
		go func() {
			defer wg.Done()
			retried := false
			err := d.opCallRetried(ctx, &retried, func() error {
				return d.client.StartOrchestration(ctx, l.Instance, ksOrchName, l.input(run),
					durable.StartOptions{IDReuse: durable.IDReuseAllowTerminal, IdempotencyKey: fmt.Sprintf("ks-reuse/%s/%d", l.Instance, run)})
			})
			acts[k] = ksAction{Op: actReuse, Run: run, Observed: obs.State, Err: errText(err), Ambiguous: err != nil && retried}
		}()
	}
	wg.Wait()
	for _, a := range acts {
		l.record(a)
	}
}

// ksStart starts run of the instance.
func (d *driver) ksStart(ctx context.Context, l *ksLife, op string, run int, o durable.StartOptions) ksAction {
	o.IdempotencyKey = fmt.Sprintf("ks-start/%s/%d", l.Instance, run)
	a := d.ksCall(ctx, l, ksAction{Op: op, Run: run, Observed: "NotFound"}, func() error {
		return d.client.StartOrchestration(ctx, l.Instance, ksOrchName, l.input(run), o)
	})
	if a.accepted() {
		l.run = run
	}
	return a
}

// ksCall makes one operator call and records it with its answer.
func (d *driver) ksCall(ctx context.Context, l *ksLife, a ksAction, fn func() error) ksAction {
	retried := false
	err := d.opCallRetried(ctx, &retried, fn)
	a.Err = errText(err)
	a.Ambiguous = err != nil && retried && ctx.Err() == nil
	return l.record(a)
}

// errText is err's text ("" for nil).
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// opCall is d.call for the operator: a refusal that names the
// instance's state is an answer, not a fault to call again after.
func (d *driver) opCall(ctx context.Context, fn func() error) error {
	var retried bool
	return d.opCallRetried(ctx, &retried, fn)
}

// opCallRetried is opCall; it sets retried when an attempt failed and was
// repeated (its request may have been applied).
func (d *driver) opCallRetried(ctx context.Context, retried *bool, fn func() error) error {
	var answer error
	err := d.call(ctx, func() error {
		err := fn()
		if isRefusal(err) {
			answer = err
			return nil
		}
		if err != nil {
			*retried = true
		}
		return err
	})
	if err != nil {
		return err
	}
	return answer
}

// isRefusal reports whether err is the client's answer about the
// instance's state (not a failed call).
func isRefusal(err error) bool {
	for _, target := range []error{durable.ErrInvalidState, durable.ErrInstanceNotFound, durable.ErrInstanceExists,
		durable.ErrInstanceStillRunning, durable.ErrCannotDeleteSubOrchestration} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// watch observes the instance every half second or so, serving its waits
// (but the one at skip), until cond holds (true) or ctx ends (false).
func (d *driver) watch(ctx context.Context, l *ksLife, skip int, cond func(ksObs) bool) (ksObs, bool) {
	for {
		obs := d.observe(ctx, l)
		if obs.Err == nil {
			if p := obs.Progress; p.Waiting && p.Pos != skip && (obs.State == "Running" || obs.State == "Suspended") {
				d.ksSend(ctx, l, p)
			}
			if cond(obs) {
				return obs, true
			}
		}
		if sleepCtx(ctx, time.Duration(400+l.rng.IntN(400))*time.Millisecond) {
			return obs, false
		}
	}
}

// observe reads the instance's status, and for a terminal one the run of
// its latest execution.
func (d *driver) observe(ctx context.Context, l *ksLife) ksObs {
	st, err := d.client.Status(ctx, l.Instance)
	if err != nil {
		return ksObs{Err: err}
	}
	var hist []duroxide.Event
	if st.State == durable.StateCompleted || st.State == durable.StateFailed {
		if hist, err = d.store.Read(ctx, l.Instance); err != nil {
			return ksObs{Err: err}
		}
	}
	obs := ksObserved(st, hist)
	if obs.Err == nil {
		l.Last = obs
	}
	return obs
}

// ksObserved is the observation of status st and, for a terminal st,
// hist, the latest execution read after it. A next execution (a restart,
// a reuse start) can start between the two reads: its run is not the
// status's, and taking the pair for a terminal observation of that run
// would stop serving it, so the observation is errMovedOn and is made
// again.
func ksObserved(st *durable.OrchestrationStatus, hist []duroxide.Event) ksObs {
	obs := ksObs{State: st.State.String(), Failure: st.FailureMessage()}
	if st.CustomStatus != nil {
		obs.Progress, _ = parseKSStatus(*st.CustomStatus)
	}
	if obs.terminal() {
		if len(hist) > 0 && !ksEnded(hist) {
			return ksObs{Err: errMovedOn}
		}
		obs.Run = ksRunOf(hist)
	}
	return obs
}

// errMovedOn: the instance started another execution between the reads
// of one observation.
var errMovedOn = errors.New("the instance started another execution while it was observed")

// ksEnded reports whether hist, one execution, ended completed or failed.
func ksEnded(hist []duroxide.Event) bool {
	for _, e := range hist {
		switch kindValue(e.Kind).(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed:
			return true
		}
	}
	return false
}

// ksSend delivers what the wait p asks for, once per wait: the event, or
// the messages in order, each recorded as intended before its call and
// keyed so that a repeated call is one delivery.
func (d *driver) ksSend(ctx context.Context, l *ksLife, p ksProgress) {
	tag := fmt.Sprintf("%d:%d", p.Run, p.Pos)
	if l.sent[tag] || p.Pos >= len(l.Steps) {
		return
	}
	l.sent[tag] = true
	if p.Update {
		done, wrong := ksServeUpdate(ctx, d.client, l.Instance, p)
		if wrong != "" {
			l.UpdateWrong = append(l.UpdateWrong, wrong)
		}
		if !done {
			delete(l.sent, tag) // served again at the next observation
			return
		}
		l.Intents++
		return
	}
	if p.Event {
		l.Intents++
		data := ksEventData(l.Instance, p.Run, p.Pos)
		_ = d.opCall(ctx, func() error {
			return d.client.RaiseEvent(ctx, l.Instance, ksEventName(p.Run, p.Pos), data, durable.EventOptions{IdempotencyKey: "ks/" + data})
		})
		return
	}
	for k := range p.Messages {
		l.Intents++
		data := ksMessageData(l.Instance, p.Run, p.Pos, k)
		err := d.opCall(ctx, func() error {
			return d.client.EnqueueEvent(ctx, l.Instance, ksQueueName(p.Run, p.Pos), data, durable.EventOptions{IdempotencyKey: "ks/" + data})
		})
		if err != nil {
			return // the instance is gone (deleted), or ctx ended
		}
	}
}

// plantFault creates the fault file of instance's run.
func (d *driver) plantFault(instance string, run int) error {
	path := ksFaultPath(d.dir, instance, run)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, nil, 0o600)
}
