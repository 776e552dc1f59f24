package payload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The runtime and the Client detect a provider's optional capabilities
// by type assertion and fall back when one is missing, so the wrapper
// must have exactly the capabilities of what it wraps. Each capability
// group below is a type holding the core; capabilities_gen.go has one
// wrapper type per combination of groups, and withCapabilities picks the
// one matching the wrapped provider. Bit i is the i-th group; a new group
// is a constant here, its type below, and `go generate ./payload`.
//
//go:generate go run ./internal/capgen
const (
	capClientWrites = 1 << iota
	capInstanceFetcher
	capSuspensionReader
	capPendingRequests
	capStatusReader
	capHeartbeatRecorder
	capCombinations = 1 << iota
)

// capabilityMask returns the groups p has. ErrUnsupportedProvider when p
// has part of the client writes only: the Client treats them as one.
func capabilityMask(p duroxide.Provider) (int, error) {
	mask := 0
	_, cw := p.(duroxide.ClientWriter)
	_, ds := p.(duroxide.DelayedStartWriter)
	_, ne := p.(duroxide.NextExecutionWriter)
	_, ss := p.(duroxide.SignalStarter)
	_, pn := p.(duroxide.PendingNoter)
	switch n := count(cw, ds, ne, ss, pn); n {
	case 5:
		mask |= capClientWrites
	case 0:
	default:
		return 0, fmt.Errorf("%w: %T has %d of the 5 client writes (ClientWriter %v, DelayedStartWriter %v, NextExecutionWriter %v, SignalStarter %v, PendingNoter %v)",
			ErrUnsupportedProvider, p, n, cw, ds, ne, ss, pn)
	}
	if _, ok := p.(duroxide.InstanceFetcher); ok {
		mask |= capInstanceFetcher
	}
	if _, ok := p.(duroxide.SuspensionReader); ok {
		mask |= capSuspensionReader
	}
	if _, ok := p.(duroxide.PendingRequestReader); ok {
		mask |= capPendingRequests
	}
	if _, ok := p.(duroxide.StatusReader); ok {
		mask |= capStatusReader
	}
	if _, ok := p.(duroxide.HeartbeatRecorder); ok {
		mask |= capHeartbeatRecorder
	}
	return mask, nil
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func withCapabilities(c *core) (duroxide.Provider, error) {
	mask, err := capabilityMask(c.p)
	if err != nil {
		return nil, err
	}
	return combinations[mask](c), nil
}

// Always present: each stands in for itself when the wrapped provider
// lacks it (no notifications, so the runtime polls; an ack that locks
// nothing next; no refusal), which is how the runtime treats its absence.

// NotifyEnqueues implements duroxide.EnqueueNotifier.
func (c *core) NotifyEnqueues(f func(q duroxide.Queue, instance string)) (cancel func()) {
	if n, ok := c.p.(duroxide.EnqueueNotifier); ok {
		return n.NotifyEnqueues(f)
	}
	return func() {}
}

// NotifyInstanceEnd implements duroxide.InstanceEndNotifier. An end
// carries no payload, so there is nothing to decode.
func (c *core) NotifyInstanceEnd(instance string, f func()) (cancel func()) {
	if n, ok := c.p.(duroxide.InstanceEndNotifier); ok {
		return n.NotifyInstanceEnd(instance, f)
	}
	return func() {}
}

// RefuseDispatch implements duroxide.DispatchRefuser.
func (c *core) RefuseDispatch() error {
	if r, ok := c.p.(duroxide.DispatchRefuser); ok {
		return r.RefuseDispatch()
	}
	return nil
}

// AckWorkItemAndFetch implements duroxide.WorkAckFetcher.
func (c *core) AckWorkItemAndFetch(ctx context.Context, lockToken string, completion duroxide.WorkItem, lockTimeout time.Duration, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	f, ok := c.p.(duroxide.WorkAckFetcher)
	if !ok {
		return nil, c.AckWorkItem(ctx, lockToken, completion)
	}
	if completion != nil {
		var err error
		if completion, err = c.enc().item(ctx, completion); err != nil {
			return nil, codecError("ack_work_item", err)
		}
	}
	next, err := f.AckWorkItemAndFetch(ctx, lockToken, completion, lockTimeout, tags)
	c.releaseWork(lockToken, err)
	if err != nil || next == nil {
		return next, err
	}
	// The ack stands; a next item that does not decode is given back by
	// decodeWork, and the ack's outcome is reported alone.
	next, _ = c.decodeWork(ctx, next)
	return next, nil
}

// ActivityHeartbeats implements duroxide.HeartbeatReader (none when the
// wrapped provider lacks it), decoding the details as every other read
// decodes its payloads.
func (c *core) ActivityHeartbeats(ctx context.Context, instance string) ([]duroxide.ActivityHeartbeat, error) {
	r, ok := c.p.(duroxide.HeartbeatReader)
	if !ok {
		return nil, nil
	}
	hs, err := r.ActivityHeartbeats(ctx, instance)
	if err != nil || hs == nil {
		return hs, err
	}
	out := make([]duroxide.ActivityHeartbeat, len(hs))
	for i, h := range hs {
		out[i] = h
		if out[i].Details, err = c.ch.decode(ctx, Scope{Instance: instance, ExecutionID: h.ExecutionID}, h.Details); err != nil {
			return nil, codecError("activity_heartbeats", err)
		}
	}
	return out, nil
}

// clientWrites is duroxide.ClientWriter and the writes beside it.
type clientWrites struct{ c *core }

func (w clientWrites) StartInstance(ctx context.Context, item duroxide.StartOrchestrationItem, key string) error {
	enc, err := w.c.enc().item(ctx, item)
	if err != nil {
		return codecError("start_instance", err)
	}
	return w.c.p.(duroxide.ClientWriter).StartInstance(ctx, enc.(duroxide.StartOrchestrationItem), key)
}

func (w clientWrites) EnqueueForInstance(ctx context.Context, item duroxide.WorkItem, key string) error {
	enc, err := w.c.enc().item(ctx, item)
	if err != nil {
		return codecError("enqueue_for_instance", err)
	}
	return w.c.p.(duroxide.ClientWriter).EnqueueForInstance(ctx, enc, key)
}

func (w clientWrites) InstanceExists(ctx context.Context, instance string) (bool, error) {
	return w.c.p.(duroxide.ClientWriter).InstanceExists(ctx, instance)
}

func (w clientWrites) StartInstanceAt(ctx context.Context, item duroxide.StartOrchestrationItem, key string, at time.Time) error {
	enc, err := w.c.enc().item(ctx, item)
	if err != nil {
		return codecError("start_instance_at", err)
	}
	return w.c.p.(duroxide.DelayedStartWriter).StartInstanceAt(ctx, enc.(duroxide.StartOrchestrationItem), key, at)
}

func (w clientWrites) EnqueueNextExecution(ctx context.Context, item duroxide.WorkItem, after uint64, key string) error {
	enc, err := w.c.enc().item(ctx, item)
	if err != nil {
		return codecError("enqueue_next_execution", err)
	}
	return w.c.p.(duroxide.NextExecutionWriter).EnqueueNextExecution(ctx, enc, after, key)
}

func (w clientWrites) SignalWithStart(ctx context.Context, start duroxide.StartOrchestrationItem, startKey string, msg duroxide.WorkItem, msgKey string) (bool, error) {
	encStart, err := w.c.enc().item(ctx, start)
	if err != nil {
		return false, codecError("signal_with_start", err)
	}
	encMsg, err := w.c.enc().item(ctx, msg)
	if err != nil {
		return false, codecError("signal_with_start", err)
	}
	return w.c.p.(duroxide.SignalStarter).SignalWithStart(ctx, encStart.(duroxide.StartOrchestrationItem), startKey, encMsg, msgKey)
}

func (w clientWrites) NotePending(ctx context.Context, instance, note string) error {
	return w.c.p.(duroxide.PendingNoter).NotePending(ctx, instance, note)
}

func (w clientWrites) PendingNote(ctx context.Context, instance string) (string, error) {
	return w.c.p.(duroxide.PendingNoter).PendingNote(ctx, instance)
}

// instanceFetcher is duroxide.InstanceFetcher.
type instanceFetcher struct{ c *core }

func (f instanceFetcher) FetchOrchestrationInstance(ctx context.Context, instance string, lockTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := f.c.p.(duroxide.InstanceFetcher).FetchOrchestrationInstance(ctx, instance, lockTimeout, filter)
	return f.c.decodeTurn(ctx, item, err)
}

// suspensionReader is duroxide.SuspensionReader.
type suspensionReader struct{ c *core }

func (r suspensionReader) Suspension(ctx context.Context, instance string) (bool, string, error) {
	return r.c.p.(duroxide.SuspensionReader).Suspension(ctx, instance)
}

// pendingRequests is duroxide.PendingRequestReader.
type pendingRequests struct{ c *core }

func (r pendingRequests) PendingRequests(ctx context.Context, instance string) ([]duroxide.WorkItem, error) {
	items, err := r.c.p.(duroxide.PendingRequestReader).PendingRequests(ctx, instance)
	if err != nil {
		return nil, err
	}
	items, err = r.c.dec().items(ctx, items)
	return items, codecError("pending_requests", err)
}

// statusReader is duroxide.StatusReader.
type statusReader struct{ c *core }

func (r statusReader) ReadStatus(ctx context.Context, instance string) (*duroxide.InstanceStatus, error) {
	st, err := r.c.p.(duroxide.StatusReader).ReadStatus(ctx, instance)
	if err != nil || st == nil {
		return st, err
	}
	out := *st
	if out.History, err = r.c.dec().events(ctx, instance, st.History); err != nil {
		return nil, codecError("read_status", err)
	}
	if out.CustomStatus, err = r.c.decodeStatus(ctx, instance, st.CustomStatus); err != nil {
		return nil, err
	}
	return &out, nil
}

// heartbeatRecorder is duroxide.HeartbeatRecorder. Heartbeat details are
// a payload, encoded for the execution of the activity whose lock the
// renewal holds (remembered from its fetch: the renewal names only the
// lock).
type heartbeatRecorder struct{ c *core }

func (r heartbeatRecorder) RenewWorkItemLockWithDetails(ctx context.Context, lockToken string, extendFor time.Duration, details string) error {
	const op = "renew_work_item_lock_with_details"
	sc, ok := r.c.workScope(lockToken)
	if !ok {
		// Not fetched through this wrapper, or acked or given back since:
		// no lock it could encode for, as the store would say.
		return duroxide.Kinded(duroxide.ErrLockLost, op, "no work item fetched through the codec wrapper holds this lock")
	}
	enc, err := r.c.ch.encode(ctx, sc, details)
	if err != nil {
		return codecError(op, err)
	}
	err = r.c.p.(duroxide.HeartbeatRecorder).RenewWorkItemLockWithDetails(ctx, lockToken, extendFor, enc)
	if errors.Is(err, duroxide.ErrLockLost) {
		r.c.work.Delete(lockToken)
	}
	return err
}
