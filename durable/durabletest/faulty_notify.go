package durabletest

import "github.com/duroxide-go/cdb/duroxide"

var (
	_ duroxide.EnqueueNotifier     = (*FaultyProvider)(nil)
	_ duroxide.InstanceEndNotifier = (*FaultyProvider)(nil)
)

// NotifyEnqueues implements duroxide.EnqueueNotifier by forwarding to the
// wrapped provider, so a runtime over the wrapper still wakes at once for
// work enqueued in this process; a wrapped provider without the
// capability never notifies, and the runtime polls.
func (p *FaultyProvider) NotifyEnqueues(f func(q duroxide.Queue, instance string)) (cancel func()) {
	if n, ok := p.Provider.(duroxide.EnqueueNotifier); ok {
		return n.NotifyEnqueues(f)
	}
	return func() {}
}

// NotifyInstanceEnd implements duroxide.InstanceEndNotifier by forwarding
// to the wrapped provider, so a wait over the wrapper still wakes when the
// instance ends; a wrapped provider without the capability never
// notifies, and the wait polls.
func (p *FaultyProvider) NotifyInstanceEnd(instance string, f func()) (cancel func()) {
	if n, ok := p.Provider.(duroxide.InstanceEndNotifier); ok {
		return n.NotifyInstanceEnd(instance, f)
	}
	return func() {}
}
