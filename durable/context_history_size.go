package durable

import (
	"sync"

	"github.com/duroxide-go/cdb/duroxide"
)

// HistorySize is how much history an execution holds: its events and
// the bytes of their duroxide JSON, which the providers store (a stored
// document adds its own fields around it).
type HistorySize struct {
	Events int
	Bytes  int64
}

// HistoryLimits are the history sizes an execution should stay under:
// ContinueAsNewSuggested answers true from SuggestContinueAsNewAt of one,
// and the runtime warns when an execution passes 75 % and 90 % of one.
// The zero value takes the defaults, which are the Cosmos DB store's:
// every history event is its own document, so the 2 MB document limit
// bounds each event (the store refuses a bigger one) and the history is
// bounded by the 20 GB a logical partition holds, which the instance's
// executions, KV and queues share.
type HistoryLimits struct {
	// Bytes is the most history bytes an execution should hold (default
	// DefaultHistoryBytes).
	Bytes int64
	// Events is the most events an execution should hold (default 0: no
	// limit on the count). Replay cost grows with it: a turn replays the
	// whole execution.
	Events int
}

// DefaultHistoryBytes is Cosmos DB's logical partition limit (20 GB, in
// decimal bytes so it is never above the service's).
const DefaultHistoryBytes int64 = 20_000_000_000

// SuggestContinueAsNewAt is the fraction of a HistoryLimits limit from
// which ContinueAsNewSuggested answers true (upstream duroxide's 75 %).
const SuggestContinueAsNewAt = 0.75

// historyWarnAt are the fractions of a limit at which the runtime logs a
// warning, once per execution each (the turn that passes it).
var historyWarnAt = []float64{0.75, 0.90}

// withDefaults fills the zero fields (Options.validate refuses negative
// ones).
func (l HistoryLimits) withDefaults() HistoryLimits {
	if l.Bytes <= 0 {
		l.Bytes = DefaultHistoryBytes
	}
	return l
}

// pressure is the larger of s's fractions of l's limits.
func (l HistoryLimits) pressure(s HistorySize) float64 {
	l = l.withDefaults()
	p := float64(s.Bytes) / float64(l.Bytes)
	if l.Events > 0 {
		p = max(p, float64(s.Events)/float64(l.Events))
	}
	return p
}

// HistorySize returns the size of this execution's history up to the
// point the code has reached: every event up to the last one that
// delivered something to the code before this call (its start, a result,
// an event, a message), so every replay answers the same here. It does
// not count what the code scheduled after that delivery, and restarts
// with each execution.
func (c *OrchestrationContext) HistorySize() HistorySize {
	if c.engine == nil {
		return HistorySize{}
	}
	return c.engine.sizeAtCursor()
}

// ContinueAsNewSuggested reports whether this execution's history has
// reached SuggestContinueAsNewAt of the runtime's Options.HistoryLimits:
// an orchestration that loops should then carry its state to a new
// execution (ContinueAsNew), whose history starts empty. Like
// HistorySize it answers the same on every replay, as long as the limits
// are not changed while instances run.
func (c *OrchestrationContext) ContinueAsNewSuggested() bool {
	return c.limits.pressure(c.HistorySize()) >= SuggestContinueAsNewAt
}

// eventBytes is the length of ev's duroxide JSON (serde's bytes). The
// encoding is only measured, so it goes to a pooled buffer: every
// committed event is measured, and a fresh buffer each was a large share
// of a turn's garbage.
func eventBytes(ev duroxide.Event) int {
	bp := eventBuffers.Get().(*[]byte)
	defer eventBuffers.Put(bp)
	b, err := duroxide.AppendEvent((*bp)[:0], &ev)
	if err != nil {
		return 0 // an event that cannot be encoded is never stored
	}
	if cap(b) <= maxPooledEventBuffer {
		*bp = b
	}
	return len(b)
}

// maxPooledEventBuffer keeps the rare large event's buffer out of the
// pool, so the pool holds small buffers only.
const maxPooledEventBuffer = 64 << 10

var eventBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}
