package durable

import (
	"context"
	"strconv"
	"sync"

	"github.com/duroxide-go/cdb/duroxide"
)

// The runtime's view of history sizes: after each committed turn it
// records the execution's size (duroxide.history.bytes and .events) and
// warns when the turn took it past 75 % or 90 % of Options.HistoryLimits.
// A threshold is passed by one turn only, so each warning comes once per
// execution without remembering which were given (a turn whose commit is
// retried elsewhere may give it twice).

// maxSizeMarks bounds the instances whose size the runtime remembers.
const maxSizeMarks = 4096

// sizeMarks remembers each instance's history size as of its last commit
// here, so that a turn encodes only the events added since to size them.
type sizeMarks struct {
	mu sync.Mutex
	m  map[string]sizeMark
}

// sizeMark is an execution's size up to the event lastEventID.
type sizeMark struct {
	executionID uint64
	lastEventID uint64
	size        HistorySize
}

// sizeOf returns the size of an execution's history, starting from the
// mark when history still begins with what it measured.
func (s *sizeMarks) sizeOf(instance string, executionID uint64, history []duroxide.Event) HistorySize {
	s.mu.Lock()
	mark, ok := s.m[instance]
	s.mu.Unlock()
	var size HistorySize
	if n := mark.size.Events; ok && mark.executionID == executionID && n > 0 && n <= len(history) &&
		history[n-1].EventID == mark.lastEventID {
		size = mark.size
	}
	for _, ev := range history[size.Events:] {
		size.Events++
		size.Bytes += int64(eventBytes(ev))
	}
	return size
}

// remember stores the size of a running execution whose history ends
// with last (nil: it has none), or forgets a finished one. It takes the
// last event, not the history, so that a turn need not join its history
// and delta to tell it.
func (s *sizeMarks) remember(instance string, executionID uint64, last *duroxide.Event, size HistorySize, ended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ended || last == nil {
		delete(s.m, instance)
		return
	}
	if s.m == nil || len(s.m) >= maxSizeMarks {
		s.m = map[string]sizeMark{}
	}
	s.m[instance] = sizeMark{executionID: executionID, lastEventID: last.EventID, size: size}
}

// observeHistorySize records the committed turn's history size and warns
// at the thresholds it passed.
func (rt *Runtime) observeHistorySize(t *turn) {
	before := rt.sizes.sizeOf(t.instance, t.executionID, t.history)
	after := before
	for _, ev := range t.delta {
		after.Events++
		after.Bytes += int64(eventBytes(ev))
	}
	rt.sizes.remember(t.instance, t.executionID, t.lastEvent(), after, endsExecution(t.delta))
	ctx := context.Background()
	name := attrOrchestation.String(t.name)
	rt.tel.historyBytes.Record(ctx, after.Bytes, rt.tel.option(name))
	rt.tel.historyEvents.Record(ctx, int64(after.Events), rt.tel.option(name))
	limits := rt.opts.HistoryLimits
	for _, at := range historyWarnAt {
		if limits.pressure(before) >= at || limits.pressure(after) < at {
			continue
		}
		pct := strconv.Itoa(int(at*100 + 0.5))
		rt.tel.historyWarnings.Add(ctx, 1, rt.tel.option(name, attrThreshold.String(pct)))
		rt.log.Warn("orchestration history passed "+pct+" % of its limit; continue as new before it grows further",
			"instance_id", t.instance, "execution_id", t.executionID, "orchestration_name", t.name,
			"history_events", after.Events, "history_bytes", after.Bytes,
			"limit_events", limits.Events, "limit_bytes", limits.withDefaults().Bytes)
	}
}

// endsExecution reports whether delta ends the execution.
func endsExecution(delta []duroxide.Event) bool {
	for _, ev := range delta {
		switch ev.Kind.(type) {
		case duroxide.OrchestrationCompleted, duroxide.OrchestrationFailed, duroxide.OrchestrationContinuedAsNew:
			return true
		}
	}
	return false
}
