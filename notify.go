package cdb

import (
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/enqueuenotify"
)

var _ duroxide.EnqueueNotifier = (*Provider)(nil)

// NotifyEnqueues implements duroxide.EnqueueNotifier: f hears of every
// message this Provider value writes to a queue (client writes, acks, the
// outbox deliveries it makes), once the write succeeded. Messages written
// by other processes, or by another Provider on the same container, are
// not notified: runtimes find them by polling.
func (p *Provider) NotifyEnqueues(f func(q duroxide.Queue)) (cancel func()) {
	return p.enqueues.Subscribe(f)
}

// notifyDoc notifies the queue a document of docType belongs to; other
// document types are not queue messages.
func (p *Provider) notifyDoc(docType string) {
	switch docType {
	case docOrchQueue:
		p.enqueues.Notify(duroxide.OrchestratorQueue)
	case docWorkerQueue:
		p.enqueues.Notify(duroxide.WorkerQueue)
	}
}

// notifyCommit notifies the queues a committed turn wrote visible work
// to (enqueuenotify.CommitQueues).
func (p *Provider) notifyCommit(c duroxide.OrchestrationCommit) {
	worker, orchestrator := enqueuenotify.CommitQueues(c, p.now())
	if worker {
		p.enqueues.Notify(duroxide.WorkerQueue)
	}
	if orchestrator {
		p.enqueues.Notify(duroxide.OrchestratorQueue)
	}
}
