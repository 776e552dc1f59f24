package durable

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/duroxide"
)

// abandonFailingProvider fails every abandon permanently and remembers
// the lock tokens it was given.
type abandonFailingProvider struct {
	duroxide.Provider
	mu     sync.Mutex
	tokens []string
}

func (p *abandonFailingProvider) note(token string) error {
	p.mu.Lock()
	p.tokens = append(p.tokens, token)
	p.mu.Unlock()
	return duroxide.Permanent("abandon", "the store refused the abandon")
}

func (p *abandonFailingProvider) AbandonOrchestrationItem(_ context.Context, token string, _ time.Duration, _ bool) error {
	return p.note(token)
}

func (p *abandonFailingProvider) AbandonWorkItem(_ context.Context, token string, _ time.Duration, _ bool) error {
	return p.note(token)
}

func (p *abandonFailingProvider) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tokens...)
}

// An abandon the provider refuses is logged at Warn with the queue, the
// instance and the cause, and never with the lock token: the item stays
// locked until its lock expires, which an operator otherwise could not
// explain. Both queues go through the same helper.
func TestFailedAbandonsAreLoggedWithTheInstanceAndCause(t *testing.T) {
	for _, tc := range []struct {
		name, queue, orchestration string
	}{
		{"orchestrator queue", "orchestrator", "NotRegistered"},
		{"worker queue", "worker", "CallsMissingActivity"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs syncBuffer
			reg := NewRegistry()
			require.NoError(t, RegisterOrchestration(reg, "CallsMissingActivity", func(ctx *OrchestrationContext, in string) (string, error) {
				return CallActivity[string](ctx, "Missing", in).Await()
			}))
			p := &abandonFailingProvider{Provider: newMemProvider()}
			rt := startRuntime(t, p, reg, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			instance := "abandon-" + tc.queue
			require.NoError(t, rt.Client().StartOrchestration(t.Context(), instance, tc.orchestration, "x"))

			var line string
			require.Eventually(t, func() bool {
				line = abandonFailureLine(logs.String(), tc.queue)
				return line != ""
			}, testWait, 5*time.Millisecond, "the failed abandon is logged:\n%s", logs.String())
			require.Contains(t, line, "level=WARN")
			require.Contains(t, line, "instance_id="+instance)
			require.Contains(t, line, "the store refused the abandon")
			tokens := p.seen()
			require.NotEmpty(t, tokens)
			for _, tok := range tokens {
				require.NotContains(t, logs.String(), tok, "lock tokens are never logged")
			}
		})
	}
}

// abandonFailureLine returns the first line of logs reporting a failed
// abandon on queue, or "".
func abandonFailureLine(logs, queue string) string {
	for l := range strings.Lines(logs) {
		if strings.Contains(l, "abandoning a locked item failed") && strings.Contains(l, "queue="+queue+" ") {
			return l
		}
	}
	return ""
}
