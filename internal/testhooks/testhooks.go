// Package testhooks holds the test-only settings of a cdb.Provider: faults
// injected at the Cosmos boundary and a replacement clock. They live here,
// not in cdb.Options, so that production users never see them in go doc;
// the root package's tests, the interleaving explorer and
// cmd/duroxide-chaos import this package (Go's internal rule keeps it
// inside the module).
//
// Start with [Knobs] and [With].
package testhooks

import (
	"time"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Hooks inject faults at the Cosmos boundary: Before can fail a request
// before it is sent, After can replace its result (a response lost after
// the write was applied). They must be safe for concurrent use.
type Hooks = cosmos.Hooks

// Call describes one Cosmos request, as seen by Hooks.
type Call = cosmos.Call

// Knobs are the test-only settings of one provider.
type Knobs struct {
	// Hooks inject faults at the Cosmos boundary (nil: none).
	Hooks *Hooks
	// Now replaces the provider's clock (nil: time.Now).
	Now func() time.Time
}

// attach sets knobs on a cdb.Options or *cdb.Options. Package cdb installs
// it (Install) because this package cannot import cdb: cdb imports it.
var attach func(opts any, k Knobs) any

// Install is called once, from package cdb's init, with the function that
// sets Knobs on its Options.
func Install(f func(opts any, k Knobs) any) { attach = f }

// With returns opts, a cdb.Options or *cdb.Options, carrying k: a value is
// returned as a changed copy, a pointer is changed in place and returned.
func With[O any](opts O, k Knobs) O {
	return attach(opts, k).(O)
}
