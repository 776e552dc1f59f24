// Package testhooks is the module's one test seam: what a test or a test
// tool overrides in a cdb.Provider or a durable.Runtime. A Seam travels
// in the context given to the constructor (cdb.New, cdb.NewWithContainer,
// durable.Start), which reads it once; nothing is installed globally and
// no options carry it, so production users never see it in go doc, and a
// constructor given a context without one runs as always. Go's internal
// rule keeps it inside the module: the root package's tests, the
// interleaving explorer, durable/testenv, durabletest and
// cmd/duroxide-chaos use it.
//
// The package names the Cosmos hooks through internal/cosmoshook, which
// has no dependency but the standard library: package durable imports
// this one and must not link the Azure SDK (durable/deps_test.go).
//
// Start with [Seam] and [With].
package testhooks

import (
	"context"
	"time"

	"github.com/duroxide-go/cdb/internal/cosmoshook"
)

// Hooks inject faults at the Cosmos boundary: Before can fail a request
// before it is sent, After can replace its result (a response lost after
// the write was applied). They must be safe for concurrent use.
type Hooks = cosmoshook.Hooks

// Call describes one Cosmos request, as seen by Hooks.
type Call = cosmoshook.Call

// Seam is what a test overrides in one provider or runtime. Each nil
// field leaves the production behaviour in place; a constructor uses the
// fields that concern it.
type Seam struct {
	// Cosmos injects faults at the Cosmos boundary of a provider (nil:
	// none).
	Cosmos *Hooks
	// Now is the clock, of a provider and of a runtime alike (nil:
	// time.Now). A provider makes every lock, lease, visibility and expiry
	// decision on it; a runtime reads it for timer fire times and event
	// timestamps.
	Now func() time.Time
	// Subscribe registers wake, which Now's clock calls whenever it
	// moves: a runtime then fetches at once instead of waiting out its
	// idle backoff. With both Now and Subscribe a runtime treats Now as a
	// virtual clock: it arms no wall-clock timer for a durable timer (the
	// clock wakes it when the timer is due) and answers the UTCNow system
	// call from Now. It returns the function that unregisters wake.
	// Runtime only.
	Subscribe func(wake func()) (unsubscribe func())
	// Activity returns the double replacing the activity name, a
	// durable.ActivityFunc (typed any: this package cannot import durable,
	// which imports it), and false when the registry's activity runs.
	// Runtime only.
	Activity func(name string) (fn any, ok bool)
}

type seamKey struct{}

// With returns ctx carrying s, for a constructor to read.
func With(ctx context.Context, s *Seam) context.Context {
	return context.WithValue(ctx, seamKey{}, s)
}

// From returns the seam ctx carries, or nil.
func From(ctx context.Context) *Seam {
	s, _ := ctx.Value(seamKey{}).(*Seam)
	return s
}

// NewActivityContext returns a durable.ActivityContext with no runtime
// behind it for instance and activityName; client is a *durable.Client or
// nil. It is the one constructor handed over rather than passed: a unit
// test of an activity function has no runtime to construct. Both are
// typed any and durable sets this in its init, because this package
// cannot import durable (durable imports it); durabletest.NewActivityContext
// wraps it.
var NewActivityContext func(ctx context.Context, instance, activityName string, client any) any
