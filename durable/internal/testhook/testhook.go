// Package testhook carries the settings a test environment gives a
// durable.Runtime through the context passed to durable.Start: a virtual
// clock and activity doubles; and the constructor durabletest uses to
// build an ActivityContext outside a runtime. It is internal so that
// production code has no test-only API (durable/testenv and durabletest
// are its only users); a runtime started without Hooks in its context
// reads the wall clock and its registry, as always.
//
// Start with [Hooks] and [With].
package testhook

import (
	"context"
	"time"
)

// Hooks is what a test environment overrides in a runtime.
type Hooks struct {
	// Now is the runtime's clock: timer fire times, event timestamps and
	// the UTCNow system call read it instead of time.Now.
	Now func() time.Time
	// Subscribe registers wake, called whenever the clock moves; the
	// runtime then fetches at once instead of waiting out its idle
	// backoff. It returns the function that unregisters wake.
	Subscribe func(wake func()) (unsubscribe func())
	// Activity returns the double replacing the activity name, a
	// durable.ActivityFunc (typed any here: this package cannot import
	// durable), and false when the registry's activity runs.
	Activity func(name string) (fn any, ok bool)
}

type hooksKey struct{}

// With returns ctx carrying h.
func With(ctx context.Context, h *Hooks) context.Context {
	return context.WithValue(ctx, hooksKey{}, h)
}

// From returns the hooks ctx carries, or nil.
func From(ctx context.Context) *Hooks {
	h, _ := ctx.Value(hooksKey{}).(*Hooks)
	return h
}

// NewActivityContext returns a durable.ActivityContext with no runtime
// behind it for instance and activityName; client is a *durable.Client or
// nil. Both are typed any because this package cannot import durable,
// which sets this in its init; durabletest.NewActivityContext wraps it.
var NewActivityContext func(ctx context.Context, instance, activityName string, client any) any
