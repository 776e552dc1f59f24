package cosmos

import (
	"context"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// Priority-based execution. An account that enables it throttles requests
// sent with x-ms-cosmos-priority-level: Low before the others when a
// container is over its RU/s (best effort: the service promises nothing),
// and ignores the header otherwise. The provider sends as Low the work
// whose delay costs nothing but latency — finding work, maintenance
// sweeps, admin reads — so that under throttling the container keeps
// serving the requests that move locked work forward: turns' loads and
// commits, acks, lock and lease renewals, clients' writes.
//
// A request's priority is decided where its intent is known, by marking
// the context it is made with (WithPriority): every request below the
// mark inherits it, which is what a sweep or an admin read wants for all
// the requests it makes. Only Low changes what is sent: a request left
// unmarked, or marked High, carries no per-request level and is sent as
// the client is configured (azcosmos ClientOptions.PriorityLevel; by
// default no header at all, as before priorities existed).

// Priority is how urgent a request is.
type Priority uint8

const (
	// PriorityDefault is a request nobody marked: sent as the client is
	// configured.
	PriorityDefault Priority = iota
	// PriorityLow is background work a throttled container should shed
	// first: sent with the store's background level (Low unless
	// SetBackgroundPriority says otherwise).
	PriorityLow
	// PriorityHigh is sent like PriorityDefault; it exists to override a
	// Low mark: a caller's own High outranks the call site's Low.
	PriorityHigh
)

// String names p for logs and test failures.
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityHigh:
		return "high"
	}
	return "default"
}

type priorityKey struct{}

// WithPriority returns ctx marking the requests made with it as p; an
// inner mark replaces an outer one.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// PriorityFrom returns the mark WithPriority put on ctx (PriorityDefault
// when none).
func PriorityFrom(ctx context.Context) Priority {
	p, _ := ctx.Value(priorityKey{}).(Priority)
	return p
}

// SetBackgroundPriority sets the level PriorityLow requests are sent
// with: azcosmos.PriorityLevelLow (the default), or PriorityLevelHigh,
// which sends them like every other request (no per-request level), for
// accounts whose default level was changed to Low or that should not shed
// them. Call it before the store is used.
func (s *Store) SetBackgroundPriority(l azcosmos.PriorityLevel) {
	if l == azcosmos.PriorityLevelHigh {
		s.background = nil
		return
	}
	low := azcosmos.PriorityLevelLow
	s.background = &low
}

// SetCallerPriority installs f, which reads from a request's context the
// priority its caller asked for (the root package maps duroxide's
// request-priority hint). A non-default answer outranks the call site's
// mark, so a caller can make a Low call High (a user waiting on a search)
// or a High one Low (a dashboard's reads). Call it before the store is
// used.
func (s *Store) SetCallerPriority(f func(context.Context) Priority) { s.caller = f }

// Priority is the priority the store gives a request made with ctx: the
// caller's (SetCallerPriority) if it says one, else the call site's mark.
func (s *Store) Priority(ctx context.Context) Priority {
	if s.caller != nil {
		if p := s.caller(ctx); p != PriorityDefault {
			return p
		}
	}
	return PriorityFrom(ctx)
}

// level is the azcosmos PriorityLevel a request made with ctx is sent
// with: the background level for a Low one, nil (no per-request level)
// for every other.
func (s *Store) level(ctx context.Context) *azcosmos.PriorityLevel {
	if s.Priority(ctx) == PriorityLow {
		return s.background
	}
	return nil
}
