package payload

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// Wrap returns a provider that stores every payload of p encoded by
// codecs, applied in the order given (compress before you encrypt, and
// keep an external store such as payload/blobstore last), and decodes
// what it reads, so the runtime and the Client see plain payloads. A
// stored payload that carries no envelope (written before a codec was
// configured) is read as it is.
//
// The returned provider has exactly the optional capabilities of p that
// the runtime and the Client detect (duroxide.ClientWriter and the
// writes beside it, InstanceFetcher, SuspensionReader,
// PendingRequestReader, StatusReader, HeartbeatRecorder), so both behave
// over it as over p; it also forwards EnqueueNotifier,
// InstanceEndNotifier, WorkAckFetcher, WorkHandOff, DispatchRefuser and
// HeartbeatReader, which stand in for themselves when p lacks them.
// Activity heartbeat details are payloads too: a
// renewal encodes them for the activity's execution, and the fetch and
// HeartbeatReader decode them. A p that has only part of the client
// writes (ClientWriter, DelayedStartWriter, NextExecutionWriter,
// SignalStarter, PendingNoter) is refused with ErrUnsupportedProvider.
//
// A payload that does not decode (ErrUnknownCodec, ErrUnknownKey,
// ErrCorrupt) fails the read that met it; in a fetched turn it is the
// item's HistoryError, which the runtime retries and then poisons; an
// activity whose input or heartbeat details do not decode is put back
// with a backoff, and the fetch reports the error.
//
// When a codec is a PayloadDeleter, deleting instances and pruning
// executions through the wrapper's Admin also deletes what it keeps.
func Wrap(p duroxide.Provider, codecs ...Codec) (duroxide.Provider, error) {
	return wrap(p, codecs, false)
}

// WrapForDisplay is Wrap for operator tools (the CLI, the dashboard):
// a payload that does not decode under codecs (none configured, a
// missing key) reads as its Placeholder instead of failing the read, so
// an instance can still be inspected; storing a placeholder is refused.
// codecs may be empty. Never give a runtime this provider.
func WrapForDisplay(p duroxide.Provider, codecs ...Codec) (duroxide.Provider, error) {
	return wrap(p, codecs, true)
}

func wrap(p duroxide.Provider, codecs []Codec, display bool) (duroxide.Provider, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: nil provider", ErrInvalidCodec)
	}
	ch, err := newChain(codecs, display)
	if err != nil {
		return nil, err
	}
	c := &core{p: p, ch: ch}
	for _, k := range codecs {
		if d, ok := k.(PayloadDeleter); ok {
			c.deleters = append(c.deleters, d)
		}
	}
	return withCapabilities(c)
}

// core is the wrapper's Provider and ProviderAdmin.
type core struct {
	p        duroxide.Provider
	ch       *chain
	deleters []PayloadDeleter
	// locks maps an orchestration lock token to its fetchedTurn.
	locks sync.Map
	// work maps a work-item lock token to the Scope of its activity, for
	// the heartbeat details a renewal of it encodes.
	work sync.Map
}

// workScope is the Scope of the activity holding lockToken.
func (c *core) workScope(lockToken string) (Scope, bool) {
	v, ok := c.work.Load(lockToken)
	if !ok {
		return Scope{}, false
	}
	return v.(Scope), true
}

// releaseWork forgets lockToken once its lock is ours no more: an ack or
// abandon went through, or failed for good.
func (c *core) releaseWork(lockToken string, err error) {
	if err == nil || !duroxide.IsRetryable(err) {
		c.work.Delete(lockToken)
	}
}

// fetchedTurn is what an ack of a fetched turn needs from its fetch: the
// instance its metadata output is encoded for, and the messages as
// stored, so one handed back to a later turn is written back byte for
// byte (the store recognises it by its encoding) even when it was stored
// unencoded or under a key rotated out since.
type fetchedTurn struct {
	instance string
	decoded  []duroxide.WorkItem
	stored   []duroxide.WorkItem
}

// handBack replaces in encoded (the commit's items, encoded) each item
// whose plain form equals a fetched message (each matching once) by that
// message as stored.
func (f *fetchedTurn) handBack(plain, encoded []duroxide.WorkItem) []duroxide.WorkItem {
	if f == nil || len(f.decoded) == 0 || len(plain) == 0 {
		return encoded
	}
	used := make([]bool, len(f.decoded))
	out := slices.Clone(encoded)
	for i, it := range plain {
		for j, d := range f.decoded {
			if !used[j] && reflect.DeepEqual(d, it) {
				used[j], out[i] = true, f.stored[j]
				break
			}
		}
	}
	return out
}

func (c *core) enc() coder { return c.ch.encode }
func (c *core) dec() coder { return c.ch.decode }

// codecError makes a coding failure a provider error that still matches
// this package's sentinels: permanent for a payload that cannot decode
// under this configuration, as duroxide.Wrap classifies it otherwise (an
// external store's transient failure stays retryable).
func codecError(op string, err error) error {
	if err == nil {
		return nil
	}
	for _, s := range []error{ErrUnknownCodec, ErrUnknownKey, ErrCorrupt, ErrInvalidCodec} {
		if errors.Is(err, s) {
			return &duroxide.ProviderError{Operation: op, Message: err.Error(), Err: err}
		}
	}
	return duroxide.Wrap(op, err)
}

func (c *core) Name() string    { return c.p.Name() }
func (c *core) Version() string { return c.p.Version() }

func (c *core) FetchOrchestrationItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, filter *duroxide.DispatcherCapabilityFilter) (*duroxide.OrchestrationItem, error) {
	item, err := c.p.FetchOrchestrationItem(ctx, lockTimeout, pollTimeout, filter)
	return c.decodeTurn(ctx, item, err)
}

// decodeTurn decodes a fetched turn. A payload that does not decode makes
// the whole item a HistoryError (the runtime retries it, then poisons),
// never a partly decoded turn.
func (c *core) decodeTurn(ctx context.Context, item *duroxide.OrchestrationItem, err error) (*duroxide.OrchestrationItem, error) {
	if err != nil || item == nil {
		return item, err
	}
	out := *item
	var derr error
	if out.History, derr = c.dec().events(ctx, item.Instance, item.History); derr == nil {
		if out.Messages, derr = c.dec().items(ctx, item.Messages); derr == nil {
			if out.KVSnapshot, derr = c.decodeSnapshot(ctx, item.Instance, item.KVSnapshot); derr == nil {
				out.KVBaseline, derr = c.decodeSnapshot(ctx, item.Instance, item.KVBaseline)
			}
		}
	}
	if derr != nil && item.HistoryError == nil {
		msg := derr.Error()
		out.HistoryError, out.History, out.Messages, out.KVSnapshot, out.KVBaseline = &msg, nil, item.Messages, nil, nil
	}
	c.locks.Store(item.LockToken, &fetchedTurn{instance: item.Instance, decoded: out.Messages, stored: item.Messages})
	return &out, nil
}

func (c *core) decodeSnapshot(ctx context.Context, instance string, in map[string]duroxide.KVEntry) (map[string]duroxide.KVEntry, error) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]duroxide.KVEntry, len(in))
	for k, e := range in {
		v, err := c.ch.decode(ctx, lasting(instance), e.Value)
		if err != nil {
			return nil, err
		}
		e.Value = v
		out[k] = e
	}
	return out, nil
}

func (c *core) AckOrchestrationItem(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit) error {
	_, err := c.ackTurn(ctx, lockToken, commit, nil)
	return err
}

// AckOrchestrationItemAndLock implements duroxide.WorkHandOff: a plain
// ack when the wrapped provider lacks it; the activities it locks are
// decoded as a fetch's are.
func (c *core) AckOrchestrationItemAndLock(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit, want duroxide.LocalWork) ([]*duroxide.LockedWorkItem, error) {
	h, _ := c.p.(duroxide.WorkHandOff)
	locked, err := c.ackTurn(ctx, lockToken, commit, func(enc duroxide.OrchestrationCommit) ([]*duroxide.LockedWorkItem, error) {
		return h.AckOrchestrationItemAndLock(ctx, lockToken, enc, want)
	})
	if err != nil || h == nil {
		return nil, err
	}
	out := locked[:0]
	for _, w := range locked {
		// The ack stands; an item that does not decode is given back by
		// decodeWork and left out.
		if d, derr := c.decodeWork(ctx, w); derr == nil {
			out = append(out, d)
		}
	}
	return out, nil
}

// ackTurn encodes commit and acks it, through handOff when not nil.
func (c *core) ackTurn(ctx context.Context, lockToken string, commit duroxide.OrchestrationCommit,
	handOff func(duroxide.OrchestrationCommit) ([]*duroxide.LockedWorkItem, error)) ([]*duroxide.LockedWorkItem, error) {
	const op = "ack_orchestration_item"
	v, _ := c.locks.Load(lockToken)
	turn, _ := v.(*fetchedTurn)
	name := ""
	if turn != nil {
		name = turn.instance
	}
	enc, err := c.encodeCommit(ctx, name, commit)
	if err != nil {
		return nil, codecError(op, err)
	}
	enc.OrchestratorItems = turn.handBack(commit.OrchestratorItems, enc.OrchestratorItems)
	var locked []*duroxide.LockedWorkItem
	if handOff != nil && c.hasHandOff() {
		locked, err = handOff(enc)
	} else {
		err = c.p.AckOrchestrationItem(ctx, lockToken, enc)
	}
	if err == nil || !duroxide.IsRetryable(err) {
		c.locks.Delete(lockToken) // a permanent failure is not acked again
	}
	return locked, err
}

func (c *core) hasHandOff() bool {
	_, ok := c.p.(duroxide.WorkHandOff)
	return ok
}

func (c *core) encodeCommit(ctx context.Context, instance string, commit duroxide.OrchestrationCommit) (duroxide.OrchestrationCommit, error) {
	var err error
	if commit.HistoryDelta, err = c.enc().events(ctx, instance, commit.HistoryDelta); err != nil {
		return commit, err
	}
	if commit.WorkerItems, err = c.enc().items(ctx, commit.WorkerItems); err != nil {
		return commit, err
	}
	if commit.OrchestratorItems, err = c.enc().items(ctx, commit.OrchestratorItems); err != nil {
		return commit, err
	}
	// A failed execution's output is its failure text, which the store
	// reads (a search tells cancelled instances by it) and which, like
	// every ErrorDetails, is not a payload.
	if m := commit.Metadata; m.Status == nil || *m.Status != duroxide.StatusFailed {
		commit.Metadata.Output = c.enc().opt(ctx, Scope{Instance: instance, ExecutionID: commit.ExecutionID}, m.Output, &err)
	}
	return commit, err
}

func (c *core) AbandonOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	err := c.p.AbandonOrchestrationItem(ctx, lockToken, delay, ignoreAttempt)
	if err == nil {
		c.locks.Delete(lockToken)
	}
	return err
}

func (c *core) RenewOrchestrationItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	return c.p.RenewOrchestrationItemLock(ctx, lockToken, extendFor)
}

func (c *core) BlockOrchestrationItem(ctx context.Context, lockToken string, delay time.Duration, reason string) error {
	err := c.p.BlockOrchestrationItem(ctx, lockToken, delay, reason)
	if err == nil {
		c.locks.Delete(lockToken)
	}
	return err
}

func (c *core) BlockedReason(ctx context.Context, instance string) (string, error) {
	return c.p.BlockedReason(ctx, instance)
}

func (c *core) Read(ctx context.Context, instance string) ([]duroxide.Event, error) {
	h, err := c.p.Read(ctx, instance)
	if err != nil {
		return nil, err
	}
	h, err = c.dec().events(ctx, instance, h)
	return h, codecError("read", err)
}

func (c *core) ReadWithExecution(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	h, err := c.p.ReadWithExecution(ctx, instance, executionID)
	if err != nil {
		return nil, err
	}
	h, err = c.dec().events(ctx, instance, h)
	return h, codecError("read_with_execution", err)
}

func (c *core) AppendWithExecution(ctx context.Context, instance string, executionID uint64, events []duroxide.Event) error {
	enc, err := c.enc().events(ctx, instance, events)
	if err != nil {
		return codecError("append_with_execution", err)
	}
	return c.p.AppendWithExecution(ctx, instance, executionID, enc)
}

func (c *core) EnqueueForOrchestrator(ctx context.Context, item duroxide.WorkItem, delay time.Duration) error {
	enc, err := c.enc().item(ctx, item)
	if err != nil {
		return codecError("enqueue_for_orchestrator", err)
	}
	return c.p.EnqueueForOrchestrator(ctx, enc, delay)
}

func (c *core) EnqueueForWorker(ctx context.Context, item duroxide.WorkItem) error {
	enc, err := c.enc().item(ctx, item)
	if err != nil {
		return codecError("enqueue_for_worker", err)
	}
	return c.p.EnqueueForWorker(ctx, enc)
}

// undecodableBackoff is how long an activity whose payload does not
// decode stays out of the queue before it is tried again.
const undecodableBackoff = 5 * time.Second

func (c *core) FetchWorkItem(ctx context.Context, lockTimeout, pollTimeout time.Duration, session *duroxide.SessionFetchConfig, tags duroxide.TagFilter) (*duroxide.LockedWorkItem, error) {
	w, err := c.p.FetchWorkItem(ctx, lockTimeout, pollTimeout, session, tags)
	if err != nil || w == nil {
		return w, err
	}
	return c.decodeWork(ctx, w)
}

// decodeWork decodes a locked work item and the heartbeat an earlier
// attempt recorded on it. One that does not decode is given back (its
// attempt counted) before the error is returned, as a failed fetch holds
// no lock.
func (c *core) decodeWork(ctx context.Context, w *duroxide.LockedWorkItem) (*duroxide.LockedWorkItem, error) {
	item, err := c.dec().item(ctx, w.Item)
	sc := itemScope(w.Item)
	var hb *duroxide.Heartbeat
	if err == nil && w.Heartbeat != nil {
		h := *w.Heartbeat
		h.Details, err = c.ch.decode(ctx, sc, h.Details)
		hb = &h
	}
	if err != nil {
		if aerr := c.p.AbandonWorkItem(ctx, w.LockToken, undecodableBackoff, false); aerr != nil {
			err = errors.Join(err, aerr)
		}
		return nil, codecError("fetch_work_item", err)
	}
	out := *w
	out.Item, out.Heartbeat = item, hb
	c.work.Store(w.LockToken, sc)
	return &out, nil
}

// itemScope is the Scope of a worker item's payloads.
func itemScope(w duroxide.WorkItem) Scope {
	if a, ok := w.(duroxide.ActivityExecuteItem); ok {
		return Scope{Instance: a.Instance, ExecutionID: a.ExecutionID}
	}
	return Scope{}
}

func (c *core) AckWorkItem(ctx context.Context, lockToken string, completion duroxide.WorkItem) error {
	if completion != nil {
		var err error
		if completion, err = c.enc().item(ctx, completion); err != nil {
			return codecError("ack_work_item", err)
		}
	}
	err := c.p.AckWorkItem(ctx, lockToken, completion)
	c.releaseWork(lockToken, err)
	return err
}

func (c *core) AbandonWorkItem(ctx context.Context, lockToken string, delay time.Duration, ignoreAttempt bool) error {
	err := c.p.AbandonWorkItem(ctx, lockToken, delay, ignoreAttempt)
	c.releaseWork(lockToken, err)
	return err
}

func (c *core) RenewWorkItemLock(ctx context.Context, lockToken string, extendFor time.Duration) error {
	err := c.p.RenewWorkItemLock(ctx, lockToken, extendFor)
	if errors.Is(err, duroxide.ErrLockLost) {
		c.work.Delete(lockToken)
	}
	return err
}

func (c *core) RenewSessionLock(ctx context.Context, ownerIDs []string, extendFor, idleTimeout time.Duration) (int, error) {
	return c.p.RenewSessionLock(ctx, ownerIDs, extendFor, idleTimeout)
}

func (c *core) CleanupOrphanedSessions(ctx context.Context, idleTimeout time.Duration) (int, error) {
	return c.p.CleanupOrphanedSessions(ctx, idleTimeout)
}

func (c *core) CustomStatus(ctx context.Context, instance string, lastSeenVersion uint64) (*duroxide.CustomStatus, error) {
	cs, err := c.p.CustomStatus(ctx, instance, lastSeenVersion)
	if err != nil || cs == nil {
		return cs, err
	}
	return c.decodeStatus(ctx, instance, cs)
}

func (c *core) decodeStatus(ctx context.Context, instance string, cs *duroxide.CustomStatus) (*duroxide.CustomStatus, error) {
	if cs == nil {
		return nil, nil
	}
	var err error
	out := *cs
	out.Status = c.dec().opt(ctx, lasting(instance), cs.Status, &err)
	return &out, codecError("custom_status", err)
}

func (c *core) KVValue(ctx context.Context, instance, key string) (string, bool, error) {
	v, found, err := c.p.KVValue(ctx, instance, key)
	if err != nil || !found {
		return v, found, err
	}
	v, err = c.ch.decode(ctx, lasting(instance), v)
	if err != nil {
		return "", false, codecError("kv_value", err)
	}
	return v, true, nil
}

func (c *core) KVValues(ctx context.Context, instance string) (map[string]string, error) {
	m, err := c.p.KVValues(ctx, instance)
	if err != nil || m == nil {
		return m, err
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if out[k], err = c.ch.decode(ctx, lasting(instance), v); err != nil {
			return nil, codecError("kv_values", err)
		}
	}
	return out, nil
}

func (c *core) InstanceStats(ctx context.Context, instance string) (*duroxide.InstanceStats, error) {
	return c.p.InstanceStats(ctx, instance)
}

func (c *core) Admin() duroxide.ProviderAdmin {
	a := c.p.Admin()
	if a == nil {
		return nil
	}
	return &admin{c: c, a: a}
}
