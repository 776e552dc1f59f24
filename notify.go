package cdb

import (
	"github.com/duroxide-go/cdb/duroxide"
)

var (
	_ duroxide.EnqueueNotifier     = (*Provider)(nil)
	_ duroxide.InstanceEndNotifier = (*Provider)(nil)
)

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

// NotifyInstanceEnd implements duroxide.InstanceEndNotifier: f hears of
// every turn this Provider value commits that ends an execution of
// instance, once the commit succeeded. Executions ended by other
// processes, or by another Provider on the same container, are not
// notified: a wait finds them by polling.
func (p *Provider) NotifyInstanceEnd(instance string, f func()) (cancel func()) {
	return p.ends.Subscribe(instance, f)
}

// notifyCommit notifies the work a committed turn made visible
// (enqueuenotify.Subscribers.NotifyCommit) and, when the turn ended its
// execution, the instance's end subscribers. The commit names no
// instance; its history does (an ending turn writes its end event).
func (p *Provider) notifyCommit(c duroxide.OrchestrationCommit) {
	p.enqueues.NotifyCommit(c, p.now())
	if len(c.HistoryDelta) > 0 {
		p.ends.NotifyCommit(c.HistoryDelta[0].InstanceID, &c)
	}
}
