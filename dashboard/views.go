package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
)

// The timeline chart's geometry, in SVG user units: a label column, then
// the time axis; one row per activity (its retries on one row), timer or
// sub-orchestration.
const (
	chartLabelW = 230
	chartAxisW  = 740
	chartRowH   = 22
	chartTop    = 22
	// maxChartRows bounds a chart: a history of thousands of activities
	// would draw an unreadable, heavy SVG; the table below has them all.
	maxChartRows = 200
	// maxTree bounds the descendants the tree reads (one InstanceInfo
	// each).
	maxTree = 200
)

// execView is one execution as the instance page shows it.
type execView struct {
	ops.Execution
	Chart *chart
}

// chart is an execution's timeline chart.
type chart struct {
	Width, Height int
	AxisX         int
	Rows          []*chartRow
	Ticks         []tick
	// Clipped counts the rows left out (maxChartRows).
	Clipped int
}

type tick struct {
	X     float64
	Label string
}

// chartRow is one bar row: an activity with its attempts, a timer or a
// sub-orchestration.
type chartRow struct {
	Kind  string // "activity", "timer", "child"
	Label string
	// Short is Label cut to the chart's label column.
	Short string
	Child string
	// Note is "attempt n of m" (m: the attempts in this history; the
	// policy's maximum is not recorded), "fires at ...", or the outcome.
	Note      string
	LastError string
	Segs      []*seg
	Y         int
	// attempts are the activity's attempt segments, in order; open is
	// whether the last one has no outcome yet.
	attempts int
	open     bool
	failed   bool // the last attempt failed
	removed  bool
	// backoff is a timer row created after this activity's last failure,
	// which becomes a backoff segment if the activity is scheduled again.
	backoff *chartRow
	key     string
	// scheduled is the EventID of the last attempt's ActivityScheduled.
	scheduled uint64
}

// seg is one bar of a row.
type seg struct {
	Class      string // "ok", "failed", "open", "backoff", "fired", "pending"
	Title      string
	start, end time.Time
	X, W       float64
	Y          int
}

// pendingWork is what a running execution waits for.
type pendingWork struct {
	Activities []pendingActivity
	Timers     []pendingTimer
	Events     []string
	Queues     []string
	Children   []string
}

func (p *pendingWork) empty() bool {
	return len(p.Activities)+len(p.Timers)+len(p.Events)+len(p.Queues)+len(p.Children) == 0
}

type pendingActivity struct {
	Name      string
	Attempt   int
	Since     time.Time
	LastError string
	// id is the ActivityScheduled EventID of the attempt in flight.
	id uint64
	// Heartbeat is its last heartbeat (from the store, not history); nil
	// when none.
	Heartbeat *ops.Heartbeat
}

// withHeartbeats gives the pending activities of execution their last
// heartbeats.
func (p *pendingWork) withHeartbeats(execution uint64, hs []ops.Heartbeat) {
	for i := range p.Activities {
		a := &p.Activities[i]
		for j := range hs {
			if hs[j].ExecutionID == execution && hs[j].ActivityID == a.id {
				a.Heartbeat = &hs[j]
			}
		}
	}
}

type pendingTimer struct {
	Created, FireAt time.Time
}

// buildChart lays out ex's bars; open work runs to now (or, for an
// execution that ended, to its last event). It also returns the pending
// work when the execution is still running.
func buildChart(ex ops.Execution, now time.Time) (*chart, *pendingWork) {
	tl := ex.Timeline
	pend := &pendingWork{}
	if len(tl) == 0 {
		return nil, pend
	}
	start, end := tl[0].At, tl[len(tl)-1].At
	running := ex.Status == duroxide.StatusRunning
	if running && now.After(end) {
		end = now
	}
	var rows []*chartRow
	bySched := map[uint64]*seg{}    // scheduling EventID -> its bar
	rowOf := map[uint64]*chartRow{} // scheduling EventID -> its row
	retry := map[string]*chartRow{} // name+input -> a row whose last attempt failed
	var lastFailed *chartRow        // the activity that failed last, for backoff timers
	subscribed := map[string]int{}  // event name -> subscriptions not yet answered
	persistent := map[string]int{}  // queue name -> subscriptions not yet answered
	for _, e := range tl {
		switch e.Kind {
		case "ActivityScheduled":
			key := e.Name + "\x00" + e.Detail
			r := retry[key]
			if r == nil {
				r = &chartRow{Kind: "activity", Label: e.Name, key: key}
				rows = append(rows, r)
			} else {
				delete(retry, key)
				if b := r.backoff; b != nil {
					// The timer between a failure and the next attempt is the
					// retry policy's backoff: drawn on the activity's row.
					b.removed = true
					for _, s := range b.Segs {
						s.Class, s.Title = "backoff", "backoff "+s.Title
						r.Segs = append(r.Segs, s)
					}
					r.backoff = nil
				}
			}
			r.attempts++
			r.open, r.failed, r.scheduled = true, false, e.EventID
			s := &seg{Class: "open", start: e.At, Title: fmt.Sprintf("%s attempt %d", e.Name, r.attempts)}
			r.Segs = append(r.Segs, s)
			bySched[e.EventID], rowOf[e.EventID] = s, r
			lastFailed = nil
		case "ActivityCompleted", "ActivityFailed":
			s, r := bySched[e.Source], rowOf[e.Source]
			if s == nil {
				continue
			}
			s.end = e.At
			r.open = false
			if e.Kind == "ActivityFailed" {
				s.Class, r.failed, r.LastError = "failed", true, e.Detail
				s.Title += " failed after " + formatDuration(e.Duration) + ": " + clipShort(e.Detail)
				retry[r.key], lastFailed = r, r
			} else {
				s.Class = "ok"
				s.Title += " completed in " + formatDuration(e.Duration)
			}
		case "TimerCreated":
			r := &chartRow{Kind: "timer", Label: "timer", open: true}
			s := &seg{Class: "pending", start: e.At, end: e.FireAt, Title: "timer due " + formatTime(e.FireAt)}
			r.Segs = []*seg{s}
			rows = append(rows, r)
			bySched[e.EventID], rowOf[e.EventID] = s, r
			if lastFailed != nil {
				lastFailed.backoff = r
			}
			lastFailed = nil
		case "TimerFired":
			s, r := bySched[e.Source], rowOf[e.Source]
			if s == nil {
				continue
			}
			s.end, s.Class, r.open = e.At, "fired", false
			s.Title = "timer fired at " + formatTime(e.At)
		case "SubOrchestrationScheduled":
			r := &chartRow{Kind: "child", Label: e.Name, Child: e.Child, open: true}
			s := &seg{Class: "open", start: e.At, Title: "sub-orchestration " + e.Child}
			r.Segs = []*seg{s}
			rows = append(rows, r)
			bySched[e.EventID], rowOf[e.EventID] = s, r
			lastFailed = nil
		case "SubOrchestrationCompleted", "SubOrchestrationFailed":
			s, r := bySched[e.Source], rowOf[e.Source]
			if s == nil {
				continue
			}
			s.end, r.open = e.At, false
			if e.Kind == "SubOrchestrationFailed" {
				s.Class, r.LastError, r.failed = "failed", e.Detail, true
			} else {
				s.Class = "ok"
			}
		case "ExternalSubscribed":
			subscribed[e.Name]++
		case "ExternalEvent":
			if subscribed[e.Name] > 0 {
				subscribed[e.Name]--
			}
		case "ExternalSubscribedPersistent":
			persistent[e.Name]++
		case "ExternalEventPersistent":
			if persistent[e.Name] > 0 {
				persistent[e.Name]--
			}
		}
	}
	c := &chart{Width: chartLabelW + chartAxisW + 50, AxisX: chartLabelW} // room for the last tick's label
	span := end.Sub(start)
	if span <= 0 {
		span = time.Millisecond
	}
	x := func(t time.Time) float64 {
		if t.IsZero() || t.After(end) {
			t = end
		}
		if t.Before(start) {
			t = start
		}
		return chartLabelW + float64(t.Sub(start))/float64(span)*chartAxisW
	}
	for _, r := range rows {
		if r.removed {
			continue
		}
		if len(c.Rows) == maxChartRows {
			c.Clipped++
			continue
		}
		switch r.Kind {
		case "activity":
			switch {
			case r.open:
				r.Note = "attempt " + strconv.Itoa(r.attempts) + ", running"
			case r.attempts > 1 || r.failed:
				r.Note = fmt.Sprintf("attempt %d of %d", r.attempts, r.attempts)
				if r.failed {
					r.Note += ", failed"
				} else {
					r.Note += ", completed"
				}
			default:
				r.Note = "completed"
			}
		case "timer":
			if r.open {
				r.Note = "due " + formatTime(r.Segs[0].end)
			} else {
				r.Note = "fired"
			}
		case "child":
			switch {
			case r.open:
				r.Note = "running"
			case r.failed:
				r.Note = "failed"
			default:
				r.Note = "completed"
			}
		}
		r.Y = chartTop + len(c.Rows)*chartRowH
		r.Short = r.Label
		if n := []rune(r.Label); len(n) > 32 {
			r.Short = string(n[:31]) + "…"
		}
		for _, s := range r.Segs {
			e := s.end
			if e.IsZero() || (s.Class == "open" && running) {
				e = end
			}
			s.X = x(s.start)
			s.W = max(x(e)-s.X, 2) // a 0 ms bar is still seen
			s.Y = r.Y + 2
		}
		c.Rows = append(c.Rows, r)
		if running && r.open {
			last := r.Segs[len(r.Segs)-1]
			switch r.Kind {
			case "activity":
				err := ""
				if r.attempts > 1 {
					err = r.LastError
				}
				pend.Activities = append(pend.Activities, pendingActivity{Name: r.Label, Attempt: r.attempts, Since: last.start, LastError: err, id: r.scheduled})
			case "timer":
				pend.Timers = append(pend.Timers, pendingTimer{Created: last.start, FireAt: last.end})
			case "child":
				pend.Children = append(pend.Children, r.Child)
			}
		}
	}
	if running {
		for _, e := range tl { // in subscription order
			if e.Kind == "ExternalSubscribed" && subscribed[e.Name] > 0 {
				subscribed[e.Name]--
				pend.Events = append(pend.Events, e.Name)
			}
			if e.Kind == "ExternalSubscribedPersistent" && persistent[e.Name] > 0 {
				persistent[e.Name]--
				pend.Queues = append(pend.Queues, e.Name)
			}
		}
	}
	c.Height = chartTop + max(len(c.Rows), 1)*chartRowH + 4
	for i := 0; i <= 4; i++ {
		c.Ticks = append(c.Ticks, tick{X: chartLabelW + float64(i)*chartAxisW/4, Label: "+" + axisLabel(span*time.Duration(i)/4)})
	}
	if len(c.Rows) == 0 {
		return nil, pend
	}
	return c, pend
}

func axisLabel(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return formatDuration(d)
}

// clipShort is s cut to a tooltip's length.
func clipShort(s string) string {
	if len(s) <= 200 {
		return s
	}
	return clip(s[:200])
}

// treeNode is one instance of the tree the instance page shows.
type treeNode struct {
	ID, Name, State string
	Current         bool
	Kids            []*treeNode
}

// instanceTree reads the whole tree instance belongs to: up the parent
// links to the root, then the root's descendants (InstanceTree) with
// their parents and states (one InstanceInfo each, at most maxTree). It
// returns nil for an instance without parent or children.
func instanceTree(ctx context.Context, c *durable.Client, d *ops.Detail) (*treeNode, int, error) {
	if d.Parent == "" && len(d.Children) == 0 {
		return nil, 0, nil
	}
	root := d.ID
	for parent, hops := d.Parent, 0; parent != "" && hops < 32; hops++ {
		root = parent
		info, err := c.InstanceInfo(ctx, parent)
		if err != nil {
			break // a purged parent: the tree starts below it
		}
		parent = ""
		if info.ParentInstanceID != nil {
			parent = *info.ParentInstanceID
		}
	}
	tree, err := c.InstanceTree(ctx, root)
	if err != nil {
		return nil, 0, err
	}
	nodes := map[string]*treeNode{}
	var order []*treeNode
	parents := map[string]string{}
	clipped := 0
	for i, id := range tree.AllIDs {
		if i >= maxTree {
			clipped = len(tree.AllIDs) - maxTree
			break
		}
		n := &treeNode{ID: id, Current: id == d.ID}
		if info, err := c.InstanceInfo(ctx, id); err == nil {
			n.Name = info.OrchestrationName
			n.State = string(duroxide.StateOf(info.Status, info.Output, false, false))
			if info.ParentInstanceID != nil {
				parents[id] = *info.ParentInstanceID
			}
		}
		nodes[id] = n
		order = append(order, n)
	}
	top := nodes[root]
	if top == nil {
		top = &treeNode{ID: root}
	}
	for _, n := range order {
		if n == top {
			continue
		}
		if p := nodes[parents[n.ID]]; p != nil && p != n {
			p.Kids = append(p.Kids, n)
		} else {
			top.Kids = append(top.Kids, n)
		}
	}
	return top, clipped, nil
}

// stateCount is one state's count on the list page.
type stateCount struct {
	State string
	N     int
	URL   string
}

// prettyJSON indents s when it is a JSON object or array; other text is
// returned as it is.
func prettyJSON(s string) string {
	t := strings.TrimSpace(s)
	if t == "" || (t[0] != '{' && t[0] != '[') || !json.Valid([]byte(t)) {
		return s
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(t), "", "  "); err != nil {
		return s
	}
	return buf.String()
}

// relTime is t relative to now ("3 min ago", "in 5 s"); app.js keeps it
// current.
func relTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return relative(time.Since(t))
}

func relative(d time.Duration) string {
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < 5*time.Second:
		return "just now"
	case d < time.Minute:
		s = strconv.Itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		s = strconv.Itoa(int(d/time.Minute)) + " min"
	case d < 48*time.Hour:
		s = strconv.Itoa(int(d/time.Hour)) + " h"
	default:
		s = strconv.Itoa(int(d/(24*time.Hour))) + " days"
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

func isoTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
