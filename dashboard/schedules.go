package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/schedule"
)

// The schedules pages read schedules as schedule.Client does (package
// schedule: a schedule is the orchestration schedule.OrchestrationName on
// instance "schedule:<id>", its state a KV value) and send pause, unpause
// and trigger as its requests, which a runtime running the schedule engine
// answers.

// defaultScheduleTimeout is Options.ScheduleTimeout's default, the CLI's
// -timeout.
const defaultScheduleTimeout = 30 * time.Second

// schedulesPerPage bounds one list page: each schedule costs a status and
// a KV read.
const schedulesPerPage = 50

// scheduleAction is a request the schedule pages send.
type scheduleAction string

const (
	schedulePause   scheduleAction = "pause"
	scheduleUnpause scheduleAction = "unpause"
	scheduleTrigger scheduleAction = "trigger"
)

func parseScheduleAction(s string) (scheduleAction, bool) {
	a := scheduleAction(s)
	switch a {
	case schedulePause, scheduleUnpause, scheduleTrigger:
		return a, true
	}
	return "", false
}

// errNoScheduler: no runtime answered a schedule request in time.
var errNoScheduler = errors.New("no runtime took the request in time: a runtime that registered schedule.Register must run on this store " +
	"(the request stays queued; the schedule takes it when one runs)")

// scheduleView is one schedule as the pages show it: its description, or
// (Description nil) why it could not be read.
type scheduleView struct {
	ID string
	*schedule.Description
	Unreadable string
}

// Status is the schedule's state in a word: running or paused while its
// instance runs, else the instance's state (suspended, failed).
func (v scheduleView) Status() string {
	switch {
	case v.Description == nil:
		return "unreadable"
	case v.State != durable.StateRunning.String():
		return strings.ToLower(v.State)
	case v.Options.Paused:
		return "paused"
	}
	return "running"
}

// Spec is the schedule's spec as short phrases, as duroxide schedule
// describe prints it.
func (v scheduleView) Spec() []string {
	s := v.Options.Spec
	var out []string
	for _, c := range s.Cron {
		out = append(out, "cron "+c)
	}
	for _, iv := range s.Intervals {
		p := "every " + iv.Every.String()
		if iv.Offset != 0 {
			p += " offset " + iv.Offset.String()
		}
		out = append(out, p)
	}
	if n := len(s.Calendars); n > 0 {
		out = append(out, fmt.Sprintf("%d calendar(s)", n))
	}
	if s.TimeZone != "" {
		out = append(out, "in "+s.TimeZone)
	}
	if s.Jitter > 0 {
		out = append(out, "jitter "+s.Jitter.String())
	}
	return out
}

// Overlap is the overlap policy, the default spelled out.
func (v scheduleView) Overlap() schedule.Overlap {
	if v.Options.Overlap == "" {
		return schedule.OverlapSkip
	}
	return v.Options.Overlap
}

// Latest are the recent actions, newest first.
func (v scheduleView) Latest() []schedule.Record {
	out := slices.Clone(v.Recent)
	slices.Reverse(out)
	return out
}

// InZone is t as a wall time in the schedule's time zone ("" for UTC or
// an unknown zone, which the spec's validation refuses anyway).
func (v scheduleView) InZone(t time.Time) string {
	if v.Description == nil || v.Options.Spec.TimeZone == "" {
		return ""
	}
	loc, err := time.LoadLocation(v.Options.Spec.TimeZone)
	if err != nil {
		return ""
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}

// describe reads one schedule. A missing one is schedule.ErrNotFound;
// any other failure is a view saying why (a state the codec is missing
// for shows the codec's placeholder), so one unreadable schedule does not
// hide the others on the list.
func (h *handler) describe(ctx context.Context, id string, next int) (scheduleView, error) {
	d, err := h.sched.Describe(ctx, id, schedule.DescribeOptions{NextFires: next})
	switch {
	case errors.Is(err, schedule.ErrNotFound):
		return scheduleView{}, err
	case err != nil:
		return scheduleView{ID: id, Unreadable: err.Error()}, nil
	}
	return scheduleView{ID: id, Description: d}, nil
}

func (h *handler) scheduleList(w http.ResponseWriter, r *http.Request) {
	ctx := duroxide.LowPriorityUnlessSet(r.Context())
	page, err := h.c.Search(ctx, duroxide.InstanceQuery{Name: schedule.OrchestrationName, IDPrefix: schedule.InstancePrefix,
		OrderBy: duroxide.OrderCreatedAsc, PageSize: schedulesPerPage, ContinuationToken: r.URL.Query().Get("page")})
	if err != nil {
		h.fail(w, err)
		return
	}
	var rows []scheduleView
	for _, in := range page.Instances {
		v, err := h.describe(ctx, strings.TrimPrefix(in.InstanceID, schedule.InstancePrefix), 3)
		if errors.Is(err, schedule.ErrNotFound) {
			continue // created and not yet taken, or being deleted: as schedule.List
		}
		if err != nil {
			h.fail(w, err)
			return
		}
		rows = append(rows, v)
	}
	data := map[string]any{"Schedules": rows, "Nav": "schedules"}
	if page.ContinuationToken != "" {
		data["NextURL"] = h.base + "/schedules?" + url.Values{"page": {page.ContinuationToken}}.Encode()
	}
	h.render(w, http.StatusOK, "schedules", data)
}

func (h *handler) scheduleDetail(w http.ResponseWriter, r *http.Request) {
	v, err := h.describe(duroxide.LowPriorityUnlessSet(r.Context()), idOf(r), 10)
	if err != nil {
		h.fail(w, err)
		return
	}
	data := map[string]any{"S": v, "Nav": "schedules", "Instance": schedule.InstancePrefix + v.ID}
	if a, ok := parseScheduleAction(r.URL.Query().Get("done")); ok {
		data["Done"] = a // only an action's name, never arbitrary text
	}
	if v.Description != nil && v.State == durable.StateRunning.String() {
		data["Refresh"] = 5
		if !h.opts.ReadOnly {
			data["Actions"] = scheduleActionsFor(v)
		}
	}
	h.render(w, http.StatusOK, "schedule", data)
}

// scheduleActionsFor lists the requests that apply: a running schedule
// instance takes them (a held or ended one would not answer).
func scheduleActionsFor(v scheduleView) []scheduleAction {
	if v.Options.Paused {
		return []scheduleAction{scheduleUnpause, scheduleTrigger}
	}
	return []scheduleAction{schedulePause, scheduleTrigger}
}

// scheduleURL is a schedule's page; the id is one segment (idSegment).
func (h *handler) scheduleURL(id string) string {
	return h.base + "/schedules/" + idSegment(id)
}

func (h *handler) scheduleConfirm(w http.ResponseWriter, r *http.Request) {
	if h.opts.ReadOnly {
		h.fail(w, errReadOnly)
		return
	}
	a, ok := parseScheduleAction(r.PathValue("action"))
	if !ok {
		h.fail(w, errUnknownAction)
		return
	}
	h.render(w, http.StatusOK, "schedule_confirm", map[string]any{
		"ID": idOf(r), "Action": a, "CSRF": h.csrf.token(w, r), "Nav": "schedules",
		"Overlaps": []schedule.Overlap{schedule.OverlapSkip, schedule.OverlapBufferOne, schedule.OverlapBufferAll,
			schedule.OverlapCancelOther, schedule.OverlapAllowAll},
	})
}

func (h *handler) scheduleAct(w http.ResponseWriter, r *http.Request) {
	if !h.acceptPost(w, r) {
		return
	}
	a, ok := parseScheduleAction(r.PathValue("action"))
	if !ok {
		h.fail(w, errUnknownAction)
		return
	}
	id := idOf(r)
	err := h.sendSchedule(r.Context(), id, a, r.PostFormValue("note"), schedule.Overlap(r.PostFormValue("overlap")))
	if h.opts.Log != nil {
		h.opts.Log.InfoContext(r.Context(), "duroxide dashboard action", "schedule", id, "action", string(a), "error", err)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	http.Redirect(w, r, h.scheduleURL(id)+"?done="+string(a), http.StatusSeeOther)
}

// sendSchedule sends one request and waits, at most ScheduleTimeout, for
// the schedule to answer it.
func (h *handler) sendSchedule(ctx context.Context, id string, a scheduleAction, note string, overlap schedule.Overlap) error {
	timeout := h.opts.ScheduleTimeout
	if timeout <= 0 {
		timeout = defaultScheduleTimeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	switch a {
	case schedulePause:
		err = h.sched.Pause(rctx, id, note)
	case scheduleUnpause:
		err = h.sched.Unpause(rctx, id, note)
	case scheduleTrigger:
		err = h.sched.Trigger(rctx, id, schedule.TriggerOptions{Overlap: overlap})
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("schedule %s: %s: %w", id, a, errNoScheduler)
	}
	return err
}
