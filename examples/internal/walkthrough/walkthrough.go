// Package walkthrough drives one orchestration through a Cosmos DB
// duroxide provider by hand, playing the part the duroxide runtime plays
// in production, and prints every step. The walkthrough and managedidentity
// examples share it; the admin example uses its fetch helpers to seed
// instances.
//
// Start with [Run], which takes each step in order.
//
// The orchestration is the smallest one with an activity:
//
//	Greet(name) = SayHello(name)     // SayHello(name) = "Hello, " + name + "!"
//
// which takes two orchestration turns and one activity:
//
//  1. a client enqueues StartOrchestration;
//  2. turn 1: the runtime fetches the instance, runs the orchestrator code
//     up to its first await and acks OrchestrationStarted and
//     ActivityScheduled with an ActivityExecute work item, naming the
//     orchestration in the metadata (this creates the instance);
//  3. a worker fetches the ActivityExecute, runs SayHello and acks the
//     result, which enqueues ActivityCompleted for the orchestrator;
//  4. turn 2: the runtime fetches the instance with its history and the
//     completion, replays, and acks ActivityCompleted and
//     OrchestrationCompleted with status Completed and the output;
//  5. anyone can read the history back.
package walkthrough

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/duroxide"
)

// Names used by the walk-through's orchestration.
const (
	Orchestration = "Greet"
	Version       = "1.0.0"
	Activity      = "SayHello"
	Input         = "world"

	// RuntimeVersion is the duroxide version stamped on the events we
	// write, as the runtime stamps its own.
	RuntimeVersion = "0.1.29"

	// LockTimeout is the peek-lock duration of every fetch.
	LockTimeout = 30 * time.Second
	// FetchTimeout bounds how long a fetch helper polls for its item.
	FetchTimeout = 30 * time.Second
)

// SayHello is the activity.
func SayHello(name string) string { return "Hello, " + name + "!" }

// NewInstanceID returns a fresh instance id such as
// "quickstart-20260102-150405-3f9a1c2b", so runs against a real account
// never collide.
func NewInstanceID(prefix string) string {
	return fmt.Sprintf("%s-%s-%08x", prefix, time.Now().UTC().Format("20060102-150405"), rand.Uint32())
}

// Run drives one Greet orchestration of instance through p, printing each
// step to w. It returns an error naming the step that failed.
func Run(ctx context.Context, p *cdb.Provider, w io.Writer, instance string) error {
	c := NewCounter(p)
	line := func(step, format string, args ...any) {
		fmt.Fprintf(w, "%-9s %s\n", step, fmt.Sprintf(format, args...))
	}

	// 1. Start: what a duroxide client's start_orchestration does.
	start := duroxide.StartOrchestrationItem{
		Instance:      instance,
		Orchestration: Orchestration,
		Input:         Input,
		Version:       ptr(Version),
		ExecutionID:   1,
	}
	if err := p.EnqueueForOrchestrator(ctx, start, 0); err != nil {
		return fmt.Errorf("start: enqueue StartOrchestration: %w", err)
	}
	line("start", "enqueued StartOrchestration of %s %s, input %q, for %s  %s", Orchestration, Version, Input, instance, c.Step())

	// 2. Turn 1: fetch, run the orchestrator to its first await, ack.
	item, err := FetchOrchestration(ctx, p, instance)
	if err != nil {
		return fmt.Errorf("turn 1: %w", err)
	}
	if len(item.History) != 0 {
		_ = p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true)
		return fmt.Errorf("turn 1: instance %s already has %d history events; use a fresh instance id", instance, len(item.History))
	}
	if _, ok := item.Messages[0].(duroxide.StartOrchestrationItem); !ok {
		_ = p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true)
		return fmt.Errorf("turn 1: expected StartOrchestration, got %s", messageNames(item.Messages))
	}
	line("turn 1", "fetched %s, %d history events, lock attempt %d  %s",
		messageNames(item.Messages), len(item.History), item.AttemptCount, c.Step())

	const scheduledID = 2 // the ActivityScheduled event's id names the activity
	err = p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			NewEvent(instance, 1, 1, nil, duroxide.OrchestrationStarted{Name: Orchestration, Version: Version, Input: Input}),
			NewEvent(instance, 1, scheduledID, nil, duroxide.ActivityScheduled{Name: Activity, Input: Input}),
		},
		WorkerItems: []duroxide.WorkItem{duroxide.ActivityExecuteItem{
			Instance: instance, ExecutionID: 1, ID: scheduledID, Name: Activity, Input: Input,
		}},
		// The metadata, not the events, is what creates the instance and
		// names it; a nil Status keeps it Running.
		Metadata: duroxide.ExecutionMetadata{OrchestrationName: ptr(Orchestration), OrchestrationVersion: ptr(Version)},
	})
	if err != nil {
		return fmt.Errorf("turn 1: ack: %w", err)
	}
	line("", "acked +OrchestrationStarted +ActivityScheduled, worker item ActivityExecute %s #%d  %s", Activity, scheduledID, c.Step())

	// 3. The activity: a worker fetches it, runs it and acks the result.
	work, err := FetchActivity(ctx, p, instance)
	if err != nil {
		return fmt.Errorf("activity: %w", err)
	}
	act := work.Item.(duroxide.ActivityExecuteItem)
	line("activity", "fetched ActivityExecute %s #%d input %q, lock attempt %d  %s", act.Name, act.ID, act.Input, work.AttemptCount, c.Step())
	result := SayHello(act.Input)
	err = p.AckWorkItem(ctx, work.LockToken, duroxide.ActivityCompletedItem{
		Instance: act.Instance, ExecutionID: act.ExecutionID, ID: act.ID, Result: result,
	})
	if err != nil {
		return fmt.Errorf("activity: ack: %w", err)
	}
	line("", "ran %s(%q) = %q, acked: ActivityCompleted #%d enqueued  %s", act.Name, act.Input, result, act.ID, c.Step())

	// 4. Turn 2: replay with the completion and finish.
	item, err = FetchOrchestration(ctx, p, instance)
	if err != nil {
		return fmt.Errorf("turn 2: %w", err)
	}
	done, ok := item.Messages[0].(duroxide.ActivityCompletedItem)
	if !ok || len(item.History) != 2 {
		_ = p.AbandonOrchestrationItem(ctx, item.LockToken, 0, true)
		return fmt.Errorf("turn 2: expected ActivityCompleted with 2 history events, got %s with %d", messageNames(item.Messages), len(item.History))
	}
	line("turn 2", "fetched %s, %d history events, lock attempt %d  %s",
		messageNames(item.Messages), len(item.History), item.AttemptCount, c.Step())
	err = p.AckOrchestrationItem(ctx, item.LockToken, duroxide.OrchestrationCommit{
		ExecutionID: 1,
		HistoryDelta: []duroxide.Event{
			NewEvent(instance, 1, 3, ptr(done.ID), duroxide.ActivityCompleted{Result: done.Result}),
			NewEvent(instance, 1, 4, nil, duroxide.OrchestrationCompleted{Output: done.Result}),
		},
		Metadata: duroxide.ExecutionMetadata{
			Status:               ptr(duroxide.StatusCompleted),
			Output:               ptr(done.Result),
			OrchestrationName:    ptr(Orchestration),
			OrchestrationVersion: ptr(Version),
		},
	})
	if err != nil {
		return fmt.Errorf("turn 2: ack: %w", err)
	}
	line("", "acked +ActivityCompleted +OrchestrationCompleted, status %s, output %q  %s", duroxide.StatusCompleted, done.Result, c.Step())

	// 5. Read the history back.
	history, err := p.Read(ctx, instance)
	if err != nil {
		return fmt.Errorf("history: read: %w", err)
	}
	line("history", "read %d events of %s  %s", len(history), instance, c.Step())
	for _, e := range history {
		line("", "  %s", Describe(e))
	}
	if n := len(history); n != 4 {
		return fmt.Errorf("history: expected 4 events, read %d", n)
	}
	if oc, ok := history[3].Kind.(duroxide.OrchestrationCompleted); !ok || oc.Output != SayHello(Input) {
		return fmt.Errorf("history: expected OrchestrationCompleted %q last, got %s", SayHello(Input), Describe(history[3]))
	}
	return nil
}

// NewEvent builds a history event stamped now with RuntimeVersion.
func NewEvent(instance string, executionID, eventID uint64, source *uint64, kind duroxide.EventKind) duroxide.Event {
	return duroxide.Event{
		EventID:         eventID,
		SourceEventID:   source,
		InstanceID:      instance,
		ExecutionID:     executionID,
		TimestampMs:     uint64(time.Now().UnixMilli()),
		DuroxideVersion: RuntimeVersion,
		Kind:            kind,
	}
}

// Describe renders an event on one line, e.g.
// `#3 ActivityCompleted (of #2) "Hello, world!"`.
func Describe(e duroxide.Event) string {
	s := fmt.Sprintf("#%d %s", e.EventID, e.Kind.EventType())
	if e.SourceEventID != nil {
		s += fmt.Sprintf(" (of #%d)", *e.SourceEventID)
	}
	switch k := e.Kind.(type) {
	case duroxide.OrchestrationStarted:
		s += fmt.Sprintf(" %s %s input %q", k.Name, k.Version, k.Input)
	case duroxide.ActivityScheduled:
		s += fmt.Sprintf(" %s input %q", k.Name, k.Input)
	case duroxide.ActivityCompleted:
		s += fmt.Sprintf(" %q", k.Result)
	case duroxide.OrchestrationCompleted:
		s += fmt.Sprintf(" output %q", k.Output)
	case duroxide.OrchestrationContinuedAsNew:
		s += fmt.Sprintf(" input %q", k.Input)
	case duroxide.SubOrchestrationScheduled:
		s += fmt.Sprintf(" %s as %s", k.Name, k.Instance)
	case duroxide.SubOrchestrationCompleted:
		s += fmt.Sprintf(" %q", k.Result)
	}
	return s
}

// messageNames renders a batch of messages, e.g. "1 message (StartOrchestration)".
func messageNames(ms []duroxide.WorkItem) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Variant()
	}
	return fmt.Sprintf("%s (%s)", plural(len(ms), "message"), strings.Join(names, ", "))
}

// ---- fetching one instance's work from a possibly shared container ----

// pollInterval is how often the fetch helpers poll when nothing is there.
// The provider short-polls; the runtime's dispatchers poll the same way.
const pollInterval = 100 * time.Millisecond

// ErrNotFetched is returned when the expected item did not show up.
var ErrNotFetched = errors.New("the expected work item was not fetched")

// FetchOrchestration fetches the next orchestration item of instance,
// polling for up to FetchTimeout. A fetch returns the oldest visible work
// of any instance, so in a container shared with other work it may return
// someone else's: those items are held (the provider then skips them) and
// handed back afterwards with AbandonOrchestrationItem, ignoring the
// attempt, so they are neither delayed for long nor counted as failures.
func FetchOrchestration(ctx context.Context, p duroxide.Provider, instance string) (*duroxide.OrchestrationItem, error) {
	var held []string
	defer func() {
		for _, tok := range held {
			_ = p.AbandonOrchestrationItem(context.WithoutCancel(ctx), tok, 0, true)
		}
	}()
	deadline := time.Now().Add(FetchTimeout)
	for {
		item, err := p.FetchOrchestrationItem(ctx, LockTimeout, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("fetch orchestration item: %w", err)
		}
		switch {
		case item != nil && item.Instance == instance:
			return item, nil
		case item != nil:
			held = append(held, item.LockToken)
			continue
		}
		if err := wait(ctx, deadline); err != nil {
			return nil, fmt.Errorf("%w: no orchestration item for %s within %v (%d items of other instances seen): %w", ErrNotFetched, instance, FetchTimeout, len(held), err)
		}
	}
}

// FetchActivity fetches the next untagged worker item of instance, polling
// for up to FetchTimeout; other instances' items are held and handed back
// as FetchOrchestration does.
func FetchActivity(ctx context.Context, p duroxide.Provider, instance string) (*duroxide.LockedWorkItem, error) {
	var held []string
	defer func() {
		for _, tok := range held {
			_ = p.AbandonWorkItem(context.WithoutCancel(ctx), tok, 0, true)
		}
	}()
	deadline := time.Now().Add(FetchTimeout)
	for {
		w, err := p.FetchWorkItem(ctx, LockTimeout, 0, nil, duroxide.DefaultOnly())
		if err != nil {
			return nil, fmt.Errorf("fetch work item: %w", err)
		}
		if w != nil {
			if _, ok := w.Item.(duroxide.ActivityExecuteItem); ok && w.Item.InstanceID() == instance {
				return w, nil
			}
			held = append(held, w.LockToken)
			continue
		}
		if err := wait(ctx, deadline); err != nil {
			return nil, fmt.Errorf("%w: no activity for %s within %v (%d items of other instances seen): %w", ErrNotFetched, instance, FetchTimeout, len(held), err)
		}
	}
}

func wait(ctx context.Context, deadline time.Time) error {
	if time.Now().After(deadline) {
		return context.DeadlineExceeded
	}
	t := time.NewTimer(pollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ---- request accounting ----

// Counter reports the Cosmos requests a provider sent since the last call
// to Step, from p.RequestStats(). The maintenance loop runs in the
// background (every 5 s by default), so a step may now and then include
// one of its queries.
type Counter struct {
	p    *cdb.Provider
	last cdb.RequestStats
}

// NewCounter starts counting from p's current totals.
func NewCounter(p *cdb.Provider) *Counter { return &Counter{p: p, last: p.RequestStats()} }

// Step returns the requests since the previous call, e.g.
// "[3 requests: query 1, patch 1, read 1]".
func (c *Counter) Step() string {
	now := c.p.RequestStats()
	d := Delta(c.last, now)
	c.last = now
	return "[" + d + "]"
}

// Delta renders the requests in after that are not in before, by kind,
// e.g. "3 requests: batch 1, query 2".
func Delta(before, after cdb.RequestStats) string {
	var parts []string
	var total int64
	for _, op := range ops(after) {
		if n := after[op].Requests - before[op].Requests; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
			total += n
		}
	}
	if total == 0 {
		return "no requests"
	}
	return plural(int(total), "request") + ": " + strings.Join(parts, ", ")
}

// PrintStats prints p.RequestStats() as a small table: requests, request
// units and response bytes by kind of request.
func PrintStats(w io.Writer, s cdb.RequestStats) {
	const row = "  %-18s %8v %9v %9v\n"
	fmt.Fprintf(w, row, "kind", "requests", "RU", "read")
	var ru float64
	var bytes int64
	for _, op := range ops(s) {
		st := s[op]
		fmt.Fprintf(w, row, op, st.Requests, fmt.Sprintf("%.2f", st.RequestCharge), kb(st.BytesRead))
		ru += st.RequestCharge
		bytes += st.BytesRead
	}
	fmt.Fprintf(w, row, "total", s.Total(), fmt.Sprintf("%.2f", ru), kb(bytes))
}

func ops(s cdb.RequestStats) []cdb.Op {
	out := make([]cdb.Op, 0, len(s))
	for op := range s {
		out = append(out, op)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func kb(n int64) string { return fmt.Sprintf("%.1f KB", float64(n)/1024) }

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func ptr[T any](v T) *T { return &v }
