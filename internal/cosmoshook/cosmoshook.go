// Package cosmoshook defines the fault-injection hooks at the Cosmos
// boundary: the kind of request (Op), what a hook sees of one (Call) and
// the hooks themselves. internal/cosmos runs them and re-exports these
// names as aliases. They live apart, on the standard library alone, so
// that internal/testhooks can name them without linking the Azure SDK:
// package durable imports testhooks and must stay free of the SDK
// (durable/deps_test.go).
package cosmoshook

import "context"

// Op names a kind of Cosmos request, for counting and fault injection.
// internal/cosmos declares the kinds the provider issues.
type Op string

// Call describes one Cosmos request, as seen by Hooks.
type Call struct {
	Op           Op
	PartitionKey string // "" for cross-partition queries and control-plane calls
	ID           string // item id for point operations
	Operations   int    // number of operations in a batch
}

// Hooks let tests inject faults at the Cosmos boundary. Before runs before
// a request is sent; a non-nil error is returned as if Cosmos had failed
// and nothing is sent. After runs once a request returned; a non-nil error
// replaces the result, which simulates a response lost after the write
// was applied. Hooks must be safe for concurrent use.
type Hooks struct {
	Before func(ctx context.Context, c Call) error
	After  func(ctx context.Context, c Call, err error) error
}
