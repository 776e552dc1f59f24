package duroxide

import "context"

// RequestPriority is a hint a caller attaches to a context for the
// provider: how urgent the storage requests made with that context are
// when the store is short of capacity. A provider whose store sheds load
// by priority (the Cosmos DB provider's priority-based execution) acts on
// it; any other ignores it, and memprovider does. Go-only; not persisted.
//
// It exists so that code far from the store can say what it is doing: a
// dashboard's or a command line's reads are worth less than the runtime's
// turns, and a user waiting on a search may be worth more than the
// provider's default for searches.
type RequestPriority int

const (
	// PriorityDefault leaves each call at the provider's own choice (the
	// Cosmos DB provider: Low for finding work, sweeps, searches and
	// full-container admin reads, High for everything else).
	PriorityDefault RequestPriority = iota
	// PriorityLow marks work a store short of capacity should delay first:
	// operator reads, reports, exports.
	PriorityLow
	// PriorityHigh marks work that must not be delayed before the
	// runtime's own progress, even where the provider would choose Low.
	PriorityHigh
)

type requestPriorityKey struct{}

// WithRequestPriority returns ctx carrying p for every provider call made
// with it (and every request those calls make); an inner hint replaces
// an outer one.
func WithRequestPriority(ctx context.Context, p RequestPriority) context.Context {
	return context.WithValue(ctx, requestPriorityKey{}, p)
}

// RequestPriorityOf returns the hint WithRequestPriority put on ctx
// (PriorityDefault when none).
func RequestPriorityOf(ctx context.Context) RequestPriority {
	p, _ := ctx.Value(requestPriorityKey{}).(RequestPriority)
	return p
}

// LowPriorityUnlessSet returns ctx with PriorityLow unless it already
// carries a hint: what a layer serving operators (a dashboard, a command
// line) wraps its reads in, leaving a caller's own choice alone.
func LowPriorityUnlessSet(ctx context.Context) context.Context {
	if RequestPriorityOf(ctx) != PriorityDefault {
		return ctx
	}
	return WithRequestPriority(ctx, PriorityLow)
}
