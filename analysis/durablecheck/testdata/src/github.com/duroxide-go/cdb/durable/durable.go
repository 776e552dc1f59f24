// Package durable is a stub of the runtime with the names the analyzer
// looks for. Its own body uses channels and locks, as the real one does:
// the analyzer must not check it.
package durable

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

type OrchestrationContext struct{ mu sync.Mutex }

type ActivityContext struct{ context.Context }

type Future[T any] struct{ ch chan T }

func (f *Future[T]) Await() (T, error) {
	v := <-f.ch
	return v, nil
}

type Awaitable interface{ done() bool }

func (f *Future[T]) done() bool { return true }

type Registry struct{}

type OrchestrationFunc func(ctx *OrchestrationContext, input string) (string, error)

type ActivityFunc func(ctx ActivityContext, input string) (string, error)

func NewRegistry() *Registry { return &Registry{} }

func (r *Registry) AddOrchestration(name string, fn OrchestrationFunc) error { return nil }

func (r *Registry) AddOrchestrationVersion(name, version string, fn OrchestrationFunc) error {
	return nil
}

func (r *Registry) AddActivity(name string, fn ActivityFunc) error { return nil }

func RegisterOrchestration[In, Out any](r *Registry, name string, fn func(*OrchestrationContext, In) (Out, error)) error {
	return nil
}

func RegisterActivity[In, Out any](r *Registry, name string, fn func(ActivityContext, In) (Out, error)) error {
	return nil
}

func NewTimer(ctx *OrchestrationContext, d time.Duration) *Future[struct{}] {
	ctx.mu.Lock()
	defer ctx.mu.Unlock()
	return &Future[struct{}]{ch: make(chan struct{}, 1)}
}

func (c *OrchestrationContext) UTCNow() *Future[time.Time] { return nil }

func (c *OrchestrationContext) NewGUID() *Future[string] { return nil }

func (c *OrchestrationContext) SetKVValue(key, value string) {}

func (c *OrchestrationContext) InstanceID() string { return "" }

func (c *OrchestrationContext) TraceInfo(msg string) {}

func (c *OrchestrationContext) Logger() *slog.Logger { return slog.Default() }

func (c *OrchestrationContext) Select(futs ...Awaitable) int { return 0 }

func CallActivity[Out any](ctx *OrchestrationContext, name string, input any) *Future[Out] {
	return nil
}

func Go[T any](ctx *OrchestrationContext, fn func(ctx *OrchestrationContext) (T, error)) *Future[T] {
	go func() { _, _ = fn(ctx) }()
	return nil
}

func KVValue[T any](ctx *OrchestrationContext, key string) (value T, found bool, err error) {
	return value, false, nil
}

func (c *OrchestrationContext) KVValue(key string) (string, bool) { return "", false }

func (c *OrchestrationContext) KVValues() map[string]string { return nil }

func (c *OrchestrationContext) KVKeys() []string { return nil }

func (c *OrchestrationContext) KVLen() int { return 0 }

func (c *OrchestrationContext) CustomStatus() (string, bool) { return "", false }

func (c *OrchestrationContext) Patched(changeID string) bool { return true }

func (c *OrchestrationContext) DeprecatePatch(changeID string) {}

type HistorySize struct {
	Events int
	Bytes  int64
}

func (c *OrchestrationContext) HistorySize() HistorySize { return HistorySize{} }

func (c *OrchestrationContext) ContinueAsNewSuggested() bool { return false }
