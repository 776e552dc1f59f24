package cdb_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/internal/testhooks"
)

// This file holds the tools of the race tests (liveactors_test.go) and the
// interleaving explorer (explorer_test.go): a gate that pauses one
// provider — one actor — at a chosen Cosmos call until the test lets it
// go, and a shared manual clock so a lock expires exactly when a test
// says so.

// pausePoint is one place an actor stops: the first call matching match,
// before it is sent or (after) once it was applied.
type pausePoint struct {
	match   func(testhooks.Call) bool
	after   bool
	hit     bool
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

// wait blocks until the actor reached the point.
func (pp *pausePoint) wait(t testing.TB) {
	t.Helper()
	select {
	case <-pp.reached:
	case <-time.After(time.Minute):
		t.Fatal("the actor never reached its pause point")
	}
}

// reachedNow reports whether the actor is at (or went past) the point.
func (pp *pausePoint) reachedNow() bool {
	select {
	case <-pp.reached:
		return true
	default:
		return false
	}
}

// open lets the actor go on.
func (pp *pausePoint) open() { pp.once.Do(func() { close(pp.release) }) }

// gate is the Hooks of one provider: pause points and injected faults.
type gate struct {
	mu     sync.Mutex
	points []*pausePoint
	fail   func(c testhooks.Call) error // Before: a non-nil error fails the call
	// failAfter replaces a call's result once it returned (a lost
	// response when the call succeeded).
	failAfter func(c testhooks.Call, err error) error
	calls     []testhooks.Call // every call, for the explorer's schedules
}

func newGate(t testing.TB) *gate {
	g := &gate{}
	t.Cleanup(g.openAll) // never leave an actor blocked
	return g
}

// at arms a pause point; match is called under the gate's lock, so it
// may keep state (e.g. count calls).
func (g *gate) at(after bool, match func(testhooks.Call) bool) *pausePoint {
	pp := &pausePoint{match: match, after: after, reached: make(chan struct{}), release: make(chan struct{})}
	g.mu.Lock()
	g.points = append(g.points, pp)
	g.mu.Unlock()
	return pp
}

func (g *gate) setFail(f func(c testhooks.Call) error) {
	g.mu.Lock()
	g.fail = f
	g.mu.Unlock()
}

func (g *gate) setFailAfter(f func(c testhooks.Call, err error) error) {
	g.mu.Lock()
	g.failAfter = f
	g.mu.Unlock()
}

func (g *gate) openAll() {
	g.mu.Lock()
	pts := append([]*pausePoint(nil), g.points...)
	g.mu.Unlock()
	for _, pp := range pts {
		pp.open()
	}
}

func (g *gate) pause(c testhooks.Call, after bool) {
	g.mu.Lock()
	var hit *pausePoint
	for _, pp := range g.points {
		if !pp.hit && pp.after == after && pp.match(c) {
			pp.hit = true
			hit = pp
			break
		}
	}
	g.mu.Unlock()
	if hit != nil {
		close(hit.reached)
		<-hit.release
	}
}

func (g *gate) hooks() *testhooks.Hooks {
	return &testhooks.Hooks{
		Before: func(_ context.Context, c testhooks.Call) error {
			g.mu.Lock()
			g.calls = append(g.calls, c)
			f := g.fail
			g.mu.Unlock()
			if f != nil {
				if err := f(c); err != nil {
					return err
				}
			}
			g.pause(c, false)
			return nil
		},
		After: func(_ context.Context, c testhooks.Call, err error) error {
			g.pause(c, true)
			g.mu.Lock()
			f := g.failAfter
			g.mu.Unlock()
			if f != nil {
				return f(c, err)
			}
			return err
		},
	}
}

// Call predicates.

func isJournalRead(c testhooks.Call) bool {
	return c.Op == cdb.OpRead && strings.Contains(c.ID, "journal")
}

func isInstanceRead(c testhooks.Call) bool {
	return c.Op == cdb.OpRead && strings.HasSuffix(c.ID, "instance")
}

// nth matches the n-th (1-based) call that satisfies pred.
func nth(n int, pred func(testhooks.Call) bool) func(testhooks.Call) bool {
	seen := 0
	return func(c testhooks.Call) bool {
		if pred(c) {
			seen++
			return seen == n
		}
		return false
	}
}

// afterFirst matches calls satisfying pred once a call satisfying first
// was seen.
func afterFirst(first, pred func(testhooks.Call) bool) func(testhooks.Call) bool {
	armed := false
	return func(c testhooks.Call) bool {
		if armed && pred(c) {
			return true
		}
		if first(c) {
			armed = true
		}
		return false
	}
}

func isBatch(c testhooks.Call) bool { return c.Op == cdb.OpBatch }

// isBigBatch matches the batches of a large turn's stage and roll-forward.
func isBigBatch(c testhooks.Call) bool { return c.Op == cdb.OpBatch && c.Operations > 20 }

// async runs f in a goroutine; the returned channel yields its error.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

func recv(t testing.TB, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(2 * time.Minute):
		t.Fatal("the actor did not finish")
		return nil
	}
}
