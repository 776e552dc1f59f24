package memprovider

import "github.com/duroxide-go/cdb/duroxide"

var _ duroxide.EnqueueNotifier = (*Provider)(nil)

// NotifyEnqueues implements duroxide.EnqueueNotifier: f hears of every
// message this provider enqueues (client writes, both kinds of ack),
// while the provider holds its lock.
func (p *Provider) NotifyEnqueues(f func(q duroxide.Queue)) (cancel func()) {
	return p.enqueues.Subscribe(f)
}

// notifyCommit notifies the queues an orchestration commit wrote to.
func (p *Provider) notifyCommit(c duroxide.OrchestrationCommit) {
	if len(c.WorkerItems) > 0 {
		p.enqueues.Notify(duroxide.WorkerQueue)
	}
	if len(c.OrchestratorItems) > 0 {
		p.enqueues.Notify(duroxide.OrchestratorQueue)
	}
}
