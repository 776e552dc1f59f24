package durable

import "github.com/duroxide-go/cdb/duroxide"

// NotifyEnqueues forwards the wrapped provider's duroxide.EnqueueNotifier,
// as every wrapper must: without it, a runtime over the wrapper is not
// woken by another Client's enqueue (TestLocalWakeUps).
func (c *fetchCountingProvider) NotifyEnqueues(f func(q duroxide.Queue, instance string)) (cancel func()) {
	if n, ok := c.Provider.(duroxide.EnqueueNotifier); ok {
		return n.NotifyEnqueues(f)
	}
	return func() {}
}
