package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/schedule"
)

// The schedule kind (-kinds schedule, not in the default mix): instance i
// owns the schedule chaos-sched-<i>, which fires every second
// scheduleFires times from a start the driver picks, each fire a run
// chaos-tick-<i>@<time> of ChaosChild, while workers are killed and
// faults injected. The owner waits for the event the driver raises once
// every due time's run has ended; the checker then counts the runs:
// exactly one per due time, none other, each started once.

const (
	scheduleKind  = "schedule"
	scheduleFires = 5
	// scheduleLead is how far ahead of its creation a schedule starts;
	// a schedule taken later still fires from its start (its catch-up
	// window is an hour).
	scheduleLead = 2 * time.Second
	firedPayload = "fired"
)

func scheduleID(i int) string { return fmt.Sprintf("chaos-sched-%d", i) }
func tickPrefix(i int) string { return fmt.Sprintf("chaos-tick-%d", i) }

// scheduleDue lists the due times of schedule i from start.
func scheduleDue(start time.Time) []time.Time {
	out := make([]time.Time, scheduleFires)
	for k := range out {
		out[k] = start.Add(time.Duration(k) * time.Second).UTC()
	}
	return out
}

// startSchedule creates schedule i and starts the goroutine that, once
// every due time's run has ended, deletes the schedule and tells the
// owner.
func (d *driver) startSchedule(ctx context.Context, i int) error {
	start := time.Now().Truncate(time.Second).Add(scheduleLead)
	due := scheduleDue(start)
	d.mu.Lock()
	if d.schedules == nil {
		d.schedules = map[int]time.Time{}
	}
	d.schedules[i] = start
	d.mu.Unlock()
	sc := schedule.NewClient(d.client)
	o := schedule.Options{
		Spec:          schedule.Spec{Intervals: []schedule.Interval{{Every: time.Second}}, StartAt: start, EndAt: due[len(due)-1]},
		Action:        schedule.Action{Orchestration: childName, Input: strconv.Itoa(i), IDPrefix: tickPrefix(i)},
		Overlap:       schedule.OverlapAllowAll,
		CatchupWindow: time.Hour,
	}
	err := d.call(ctx, func() error {
		err := sc.Create(ctx, scheduleID(i), o)
		if errors.Is(err, schedule.ErrExists) {
			return nil // a create repeated after an ambiguous failure
		}
		return err
	})
	if err != nil {
		return err
	}
	d.senders.Add(1)
	go func() {
		defer d.senders.Done()
		for _, t := range due {
			if !d.awaitEnded(ctx, schedule.RunID(tickPrefix(i), t)) {
				return
			}
		}
		if d.call(ctx, func() error {
			if err := sc.Delete(ctx, scheduleID(i)); err != nil && !errors.Is(err, schedule.ErrNotFound) {
				return err
			}
			return nil
		}) != nil || !d.awaitWaiting(ctx, i) {
			return
		}
		_ = d.send(ctx, i, intent{Name: eventName, Data: firedPayload})
	}()
	return nil
}

// awaitEnded polls until instance exists and has ended.
func (d *driver) awaitEnded(ctx context.Context, instance string) bool {
	for {
		st, err := d.client.Status(ctx, instance)
		if err == nil && st.IsTerminal() {
			return true
		}
		if sleepCtx(ctx, 300*time.Millisecond) {
			return false
		}
	}
}

// scheduleOwner is the schedule kind's orchestration: it waits for the
// driver's word that the schedule's runs have ended.
func scheduleOwner(ctx *durable.OrchestrationContext) (string, error) {
	ctx.SetCustomStatus(statusWaiting)
	data, err := durable.WaitEvent[string](ctx, eventName).Await()
	if err != nil {
		return "", err
	}
	return "schedule:" + data, nil
}

// checkSchedules counts the runs of every schedule: one per due time,
// none other, each completed and started exactly once.
func (d *driver) checkSchedules(ctx context.Context, r *Report, ids []string) ([]string, error) {
	d.mu.Lock()
	starts := d.schedules
	d.mu.Unlock()
	var problems []string
	for i, start := range starts {
		prefix := tickPrefix(i) + "@"
		want := map[string]bool{}
		for _, t := range scheduleDue(start) {
			want[schedule.RunID(tickPrefix(i), t)] = true
		}
		for _, id := range ids {
			if !strings.HasPrefix(id, prefix) {
				continue
			}
			if !want[id] {
				r.ScheduleExtraRuns++
				problems = append(problems, fmt.Sprintf("%s: a run of no due time", id))
				continue
			}
			delete(want, id)
			r.ScheduleRuns++
			starts, err := d.startsOf(ctx, id)
			if err != nil {
				return nil, err
			}
			if starts != 1 {
				r.ScheduleDoubledRuns++
				problems = append(problems, fmt.Sprintf("%s: started %d times", id, starts))
			}
			if st, err := d.client.Status(ctx, id); err != nil {
				return nil, err
			} else if st.State != durable.StateCompleted {
				r.WrongOutput++
				problems = append(problems, fmt.Sprintf("%s: %s, want Completed", id, st.State))
			}
		}
		for id := range want {
			r.ScheduleMissedRuns++
			problems = append(problems, fmt.Sprintf("%s: no run for this due time", id))
		}
	}
	return problems, nil
}

// startsOf counts the OrchestrationStarted events over instance's
// executions.
func (d *driver) startsOf(ctx context.Context, instance string) (int, error) {
	execs, err := d.p.ListExecutions(ctx, instance)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range execs {
		h, err := d.p.ReadHistoryWithExecutionID(ctx, instance, e)
		if err != nil {
			return 0, err
		}
		for _, ev := range h {
			if _, ok := kindValue(ev.Kind).(duroxide.OrchestrationStarted); ok {
				n++
			}
		}
	}
	return n, nil
}
