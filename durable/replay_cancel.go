package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// droppedFutureReason is the reason of every dropped-future breadcrumb.
const droppedFutureReason = "dropped_future"

// breadcrumbKind describes, for one kind of schedule, its schedule event,
// its cancellation breadcrumb, and its name in mismatch errors (Rust's).
type breadcrumbKind struct {
	kind       scheduleKind
	label      string
	isSchedule func(duroxide.EventKind) bool
	reasonOf   func(duroxide.EventKind) (string, bool)
	breadcrumb func() duroxide.EventKind
}

var breadcrumbKinds = []breadcrumbKind{
	{
		kind: kindActivity, label: "activities",
		isSchedule: func(k duroxide.EventKind) bool { _, ok := k.(duroxide.ActivityScheduled); return ok },
		reasonOf: func(k duroxide.EventKind) (string, bool) {
			c, ok := k.(duroxide.ActivityCancelRequested)
			return c.Reason, ok
		},
		breadcrumb: func() duroxide.EventKind { return duroxide.ActivityCancelRequested{Reason: droppedFutureReason} },
	},
	{
		kind: kindSubOrchestration, label: "sub-orchestrations",
		isSchedule: func(k duroxide.EventKind) bool { _, ok := k.(duroxide.SubOrchestrationScheduled); return ok },
		reasonOf: func(k duroxide.EventKind) (string, bool) {
			c, ok := k.(duroxide.SubOrchestrationCancelRequested)
			return c.Reason, ok
		},
		breadcrumb: func() duroxide.EventKind {
			return duroxide.SubOrchestrationCancelRequested{Reason: droppedFutureReason}
		},
	},
	{
		kind: kindExternalWait, label: "external waits",
		isSchedule: func(k duroxide.EventKind) bool { _, ok := k.(duroxide.ExternalSubscribed); return ok },
		reasonOf: func(k duroxide.EventKind) (string, bool) {
			c, ok := k.(duroxide.ExternalSubscribedCancelled)
			return c.Reason, ok
		},
		breadcrumb: func() duroxide.EventKind { return duroxide.ExternalSubscribedCancelled{Reason: droppedFutureReason} },
	},
	{
		kind: kindQueueDequeue, label: "persistent waits",
		isSchedule: func(k duroxide.EventKind) bool { _, ok := k.(duroxide.ExternalSubscribedPersistent); return ok },
		reasonOf: func(k duroxide.EventKind) (string, bool) {
			c, ok := k.(duroxide.ExternalSubscribedPersistentCancelled)
			return c.Reason, ok
		},
		breadcrumb: func() duroxide.EventKind {
			return duroxide.ExternalSubscribedPersistentCancelled{Reason: droppedFutureReason}
		},
	},
}

// collectCancelled records the futures the code dropped this turn, so
// their work is cancelled and replay can check the drops (Rust's
// collect_cancelled_from_context). On replay, every dropped-future
// breadcrumb already persisted must be reproduced by the code (subset
// check per kind, only for schedules of the persisted segment), else the
// turn fails with "cancellation mismatch". Each new drop then gets one
// breadcrumb event; dropped activities and children also go to the
// provider side channels.
func (e *replayEngine) collectCancelled() *turnResult {
	ctx := e.ctx
	dropped := make([][]uint64, len(breadcrumbKinds))
	for i, bk := range breadcrumbKinds {
		dropped[i] = ctx.cancelledScheduleIDs(bk.kind)
	}
	if e.persistedHistoryLen > 0 {
		persisted := e.baselineHistory[:min(e.persistedHistoryLen, len(e.baselineHistory))]
		for i, bk := range breadcrumbKinds {
			if abort := checkBreadcrumbs(bk, persisted, dropped[i]); abort != nil {
				return abort
			}
		}
	}

	subInstance := map[uint64]string{}
	for _, c := range ctx.cancelledSubOrchestrations() {
		subInstance[c.scheduleID] = c.instance
	}
	for i, bk := range breadcrumbKinds {
		already := e.existingBreadcrumbs(bk)
		for _, id := range dropped[i] {
			if already[id] {
				continue
			}
			switch bk.kind {
			case kindActivity:
				e.cancelledActivities = append(e.cancelledActivities, id)
			case kindSubOrchestration:
				inst, ok := subInstance[id]
				if !ok {
					continue // not bound to a child yet: nothing to cancel
				}
				e.cancelledSubOrchestrations = append(e.cancelledSubOrchestrations, inst)
			}
			already[id] = true
			e.appendEvent(u64p(id), bk.breadcrumb())
		}
	}
	ctx.clearCancelledTokens()
	return nil
}

// checkBreadcrumbs enforces persisted ⊆ dropped-in-replayed-segment.
func checkBreadcrumbs(bk breadcrumbKind, persisted []duroxide.Event, dropped []uint64) *turnResult {
	baseline := map[uint64]bool{}
	schedules := map[uint64]bool{}
	for _, ev := range persisted {
		if reason, ok := bk.reasonOf(ev.Kind); ok && reason == droppedFutureReason && ev.SourceEventID != nil {
			baseline[*ev.SourceEventID] = true
		}
		if bk.isSchedule(ev.Kind) {
			schedules[ev.EventID] = true
		}
	}
	if len(baseline) == 0 {
		return nil
	}
	inSegment := map[uint64]bool{}
	for _, id := range dropped {
		if schedules[id] {
			inSegment[id] = true
		}
	}
	for id := range baseline {
		if !inSegment[id] {
			return nondeterminism(fmt.Sprintf(
				"cancellation mismatch (%s): baseline_dropped_future_cancel_requests=%s ctx_cancelled_in_replayed_segment=%s",
				bk.label, formatIDSet(baseline), formatIDSet(inSegment)))
		}
	}
	return nil
}

// existingBreadcrumbs returns the schedule ids that already have a
// cancellation event of this kind (any reason) in baseline or delta.
func (e *replayEngine) existingBreadcrumbs(bk breadcrumbKind) map[uint64]bool {
	out := map[uint64]bool{}
	for _, evs := range [][]duroxide.Event{e.baselineHistory, e.delta} {
		for _, ev := range evs {
			if _, ok := bk.reasonOf(ev.Kind); ok && ev.SourceEventID != nil {
				out[*ev.SourceEventID] = true
			}
		}
	}
	return out
}
