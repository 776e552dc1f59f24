package memprovider

import (
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/enqueuenotify"
)

var _ duroxide.EnqueueNotifier = (*Provider)(nil)

// NotifyEnqueues implements duroxide.EnqueueNotifier: f hears of every
// message this provider enqueues (client writes, both kinds of ack),
// while the provider holds its lock.
func (p *Provider) NotifyEnqueues(f func(q duroxide.Queue)) (cancel func()) {
	return p.enqueues.Subscribe(f)
}

// notifyCommit notifies the queues an orchestration commit wrote
// visible work to (enqueuenotify.CommitQueues). Callers hold p.mu.
func (p *Provider) notifyCommit(c duroxide.OrchestrationCommit) {
	worker, orchestrator := enqueuenotify.CommitQueues(c, p.now())
	if worker {
		p.enqueues.Notify(duroxide.WorkerQueue)
	}
	if orchestrator {
		p.enqueues.Notify(duroxide.OrchestratorQueue)
	}
}
