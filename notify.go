package cdb

import (
	"github.com/duroxide-go/cdb/duroxide"
)

var _ duroxide.EnqueueNotifier = (*Provider)(nil)

// NotifyEnqueues implements duroxide.EnqueueNotifier: f hears of every
// message this Provider value writes to a queue (client writes, acks, the
// outbox deliveries it makes), once the write succeeded. Messages written
// by other processes, or by another Provider on the same container, are
// not notified: runtimes find them by polling.
func (p *Provider) NotifyEnqueues(f func(q duroxide.Queue, instance string)) (cancel func()) {
	return p.enqueues.Subscribe(f)
}

// notifyDoc notifies the queue a document of docType for instance
// belongs to; other document types are not queue messages.
func (p *Provider) notifyDoc(docType, instance string) {
	switch docType {
	case docOrchQueue:
		p.enqueues.Notify(duroxide.OrchestratorQueue, instance)
	case docWorkerQueue:
		p.enqueues.Notify(duroxide.WorkerQueue, instance)
	}
}

// notifyCommit notifies the work a committed turn made visible
// (enqueuenotify.Subscribers.NotifyCommit).
func (p *Provider) notifyCommit(c duroxide.OrchestrationCommit) {
	p.enqueues.NotifyCommit(c, p.now())
}
