package memprovider

import "github.com/duroxide-go/cdb/duroxide"

var _ duroxide.EnqueueNotifier = (*Provider)(nil)

// NotifyEnqueues implements duroxide.EnqueueNotifier: f hears of every
// message this provider enqueues (client writes, both kinds of ack),
// while the provider holds its lock.
func (p *Provider) NotifyEnqueues(f func(q duroxide.Queue, instance string)) (cancel func()) {
	return p.enqueues.Subscribe(f)
}

// notifyCommit notifies the work an orchestration commit made visible
// (enqueuenotify.Subscribers.NotifyCommit). Callers hold p.mu.
func (p *Provider) notifyCommit(c duroxide.OrchestrationCommit) {
	p.enqueues.NotifyCommit(c, p.now())
}
