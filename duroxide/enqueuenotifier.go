package duroxide

// EnqueueNotifier is an optional Provider capability: a provider that can
// tell this process, at once, about the work it enqueues. A runtime
// detects it by type assertion and subscribes while it runs, so work
// enqueued in this process (a Client's writes, another Runtime's acks, an
// outbox delivery made here) is fetched at once instead of after the
// dispatchers' idle backoff. Work enqueued by other processes is not
// notified: it is found by polling, as without the capability. Go-only.
//
// A provider that wraps another (fault injection, telemetry, latency)
// must forward NotifyEnqueues to the wrapped provider, or the runtimes
// using the wrapper fall back to polling without a sign.
type EnqueueNotifier interface {
	// NotifyEnqueues registers f, called with the queue and the target
	// instance after every
	// enqueue this provider makes of work visible at once, until cancel is
	// called (cancel may be called more than once). A message visible only
	// later (a delayed enqueue, a timer that has not fired) is not
	// notified: polling finds it, and a runtime wakes itself for its own
	// timers. f must return quickly and must
	// not call the provider: it may be called from any goroutine, while
	// the provider holds its own locks. The instance lets a runtime
	// that already holds that instance's lock leave the new message to
	// the turn in progress rather than wake another dispatcher for it.
	NotifyEnqueues(f func(q Queue, instance string)) (cancel func())
}
