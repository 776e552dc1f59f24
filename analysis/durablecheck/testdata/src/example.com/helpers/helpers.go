// Package helpers is called from orchestration code in another package.
package helpers

import (
	"strings"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

var Mode string

func Stamp() time.Time { return time.Now() } // want Stamp:`reaches time\.Now \(helpers\.go:\d+\)`

func Indirect() time.Time { return inner() } // want Indirect:`reaches time\.Now`

func inner() time.Time { return time.Now() }

type Counter struct {
	mu sync.Mutex
	n  int
}

func (c *Counter) Bump() { // want Bump:`reaches \(\*sync\.Mutex\)\.Lock`
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

func Pure(s string) string { return strings.ToUpper(s) }

// WithCtx takes the orchestration context, so it is orchestration code.
func WithCtx(ctx *durable.OrchestrationContext) (string, error) {
	return time.Now().String(), nil // want `time\.Now in orchestration code`
}

// Replays reads the clock on purpose: the ignored line carries no fact.
func Replays() time.Time {
	//durablecheck:ignore a test's deliberate wall-clock read
	return time.Now()
}
