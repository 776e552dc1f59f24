package duroxide

// InstanceEndNotifier is an optional Provider capability: a provider that
// can tell this process, at once, that a commit it made ended an
// execution of an instance. The durable Client's WaitForOrchestration
// detects it by type assertion and, while it waits, wakes on the
// notification as well as on its poll schedule, so a wait for a short
// instance returns when the instance ends instead of at the next poll.
// The notification is a hint: the wait still reads the status, and
// still polls, since an instance ended by another process (or by another
// Provider value on the same store) is not notified. Go-only.
//
// A provider that wraps another (fault injection, telemetry, latency)
// should forward NotifyInstanceEnd to the wrapped provider; a wrapper
// that does not leaves waits on its polling schedule, which is slower but
// correct.
type InstanceEndNotifier interface {
	// NotifyInstanceEnd registers f, called after every commit this
	// provider makes that ends an execution of instance (Metadata.Status
	// Completed, Failed or ContinuedAsNew), until cancel is called
	// (cancel may be called more than once). f must return quickly and
	// must not call the provider: it may be called from any goroutine,
	// while the provider holds its own locks.
	NotifyInstanceEnd(instance string, f func()) (cancel func())
}
