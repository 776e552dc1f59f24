package memprovider

import "github.com/duroxide-go/cdb/duroxide"

var (
	_ duroxide.EnqueueNotifier     = (*Provider)(nil)
	_ duroxide.InstanceEndNotifier = (*Provider)(nil)
)

// NotifyEnqueues implements duroxide.EnqueueNotifier: f hears of every
// message this provider enqueues (client writes, both kinds of ack),
// while the provider holds its lock.
func (p *Provider) NotifyEnqueues(f func(q duroxide.Queue, instance string)) (cancel func()) {
	return p.enqueues.Subscribe(f)
}

// NotifyInstanceEnd implements duroxide.InstanceEndNotifier: f hears of
// every commit of instance through this provider that ends an execution,
// while the provider holds its lock.
func (p *Provider) NotifyInstanceEnd(instance string, f func()) (cancel func()) {
	return p.ends.Subscribe(instance, f)
}

// notifyCommit notifies the work an orchestration commit of instance made
// visible (enqueuenotify.Subscribers.NotifyCommit) and, when it ended the
// execution, instance's end subscribers. Callers hold p.mu.
func (p *Provider) notifyCommit(instance string, c duroxide.OrchestrationCommit) {
	p.enqueues.NotifyCommit(c, p.now())
	p.ends.NotifyCommit(instance, &c)
}
