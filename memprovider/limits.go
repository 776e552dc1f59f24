package memprovider

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/limits"
)

// Store limits. By default the provider refuses what the Cosmos DB
// provider refuses (internal/limits, one definition for both): instance
// ids that cannot be a partition key (empty, reserved, over 2,048 bytes,
// invalid UTF-8, control or non-BMP characters), KV keys and session ids
// that are not valid UTF-8, and anything whose Cosmos document would be
// over 2 MiB. Sizes are estimated from above (limits.DocBytes), so
// whatever Cosmos refuses is refused here too, and so is what comes
// within about 8 KiB of the limit (limits.FixedFieldBytes). Every refusal
// is permanent and of kind duroxide.ErrInvalidInput, as from the Cosmos
// provider.

// WithRelaxedLimits turns the store limits off: any id and any size are
// accepted, as by a provider without Cosmos DB's limits. Tests that
// exercise the runtime rather than the store (or a store without these
// limits) may use it; code tested with it may still fail on Cosmos DB.
func WithRelaxedLimits() Option {
	return func(p *Provider) { p.relaxedLimits = true }
}

// checkIDs refuses instance ids the store cannot hold.
func (p *Provider) checkIDs(op string, ids ...string) error {
	if p.relaxedLimits {
		return nil
	}
	for _, id := range ids {
		if err := limits.InstanceID(op, id); err != nil {
			return err
		}
	}
	return nil
}

// checkClientWrite refuses a client's start or enqueue (duroxide.ClientWriter)
// the store cannot hold, as EnqueueForOrchestrator does: the Cosmos
// provider writes the same queue document on either path.
func (p *Provider) checkClientWrite(op string, item duroxide.WorkItem) error {
	return p.checkItem(op, item, "")
}

// checkItem refuses a queue message whose target id, session id or
// document size the store cannot hold. from is the instance whose turn or
// activity sends it ("" for a client's enqueue): a message from one
// instance to another travels inside an outbox document on Cosmos DB.
func (p *Provider) checkItem(op string, item duroxide.WorkItem, from string) error {
	if p.relaxedLimits {
		return nil
	}
	target := item.InstanceID()
	if err := limits.InstanceID(op, target); err != nil {
		return err
	}
	data, err := duroxide.MarshalWorkItem(item)
	if err != nil {
		return duroxide.Permanent(op, "work item cannot be encoded: %v", err)
	}
	fields := []string{target, string(data)}
	if a, ok := item.(duroxide.ActivityExecuteItem); ok {
		if a.SessionID != nil {
			if err := limits.UserString(op, "session id", *a.SessionID); err != nil {
				return err
			}
			fields = append(fields, *a.SessionID)
		}
		if a.Tag != nil {
			fields = append(fields, *a.Tag)
		}
	}
	if from != "" && from != target {
		return limits.DocSize(op, fmt.Sprintf("the %s for %q (an outbox document)", item.Variant(), target),
			limits.DocBytes(from, target, limits.Nested(fields...)))
	}
	return limits.DocSize(op, item.Variant(), limits.DocBytes(fields...))
}

// checkEvents refuses history events whose KV key or document size the
// store cannot hold.
func (p *Provider) checkEvents(op, instance string, events []duroxide.Event) error {
	if p.relaxedLimits {
		return nil
	}
	var buf []byte
	for i := range events {
		e := &events[i]
		switch k := e.Kind.(type) {
		case duroxide.KeyValueSet:
			if err := limits.UserString(op, "KV key", k.Key); err != nil {
				return err
			}
		case duroxide.KeyValueCleared:
			if err := limits.UserString(op, "KV key", k.Key); err != nil {
				return err
			}
		}
		var err error
		if buf, err = duroxide.AppendEvent(buf[:0], e); err != nil {
			return duroxide.Permanent(op, "history event %d cannot be encoded: %v", e.EventID, err)
		}
		// The event's JSON as json.Marshal writes it (HTML escaped), in
		// one string field: sized without encoding it twice.
		n := limits.DocBytes(instance) + limits.HTMLEscapedLen(buf)
		if err := limits.DocSize(op, fmt.Sprintf("history event %d", e.EventID), n); err != nil {
			return err
		}
	}
	return nil
}

// checkCommit refuses a turn of instance (whose record st may be nil) that
// the store cannot hold: its events, its messages, and its instance
// document (metadata, output, custom status, one entry per execution).
func (p *Provider) checkCommit(op, instance string, st *instanceState, c duroxide.OrchestrationCommit) error {
	if p.relaxedLimits {
		return nil
	}
	if err := p.checkEvents(op, instance, c.HistoryDelta); err != nil {
		return err
	}
	for _, w := range c.WorkerItems {
		if err := p.checkItem(op, w, instance); err != nil {
			return err
		}
	}
	for _, o := range c.OrchestratorItems {
		if err := p.checkItem(op, o, instance); err != nil {
			return err
		}
	}
	fields := []string{instance, deref(c.Metadata.OrchestrationName), deref(c.Metadata.OrchestrationVersion),
		deref(c.Metadata.Output), deref(c.Metadata.ParentInstanceID), deref(customStatusOf(st, c.HistoryDelta))}
	executions := 1
	if st != nil {
		fields = append(fields, st.name, st.version)
		executions += len(st.executions)
	}
	n := limits.DocBytes(fields...) + executions*limits.ExecutionEntryBytes
	return limits.DocSize(op, "the instance document (output or custom status too large)", n)
}

// customStatusOf is the custom status the instance holds after events.
func customStatusOf(st *instanceState, events []duroxide.Event) *string {
	var status *string
	if st != nil {
		status = st.customStatus
	}
	for _, e := range events {
		if cs, ok := e.Kind.(duroxide.CustomStatusUpdated); ok {
			status = cs.Status
		}
	}
	return status
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkHeartbeat refuses heartbeat details the Cosmos provider refuses:
// over duroxide.MaxHeartbeatDetailsBytes (even with relaxed limits: the
// bound is the contract's, not the store's), or making item's document
// too large.
func (p *Provider) checkHeartbeat(op string, item duroxide.ActivityExecuteItem, details string) error {
	if p.relaxedLimits {
		if n := limits.EncodedLen(details); n > duroxide.MaxHeartbeatDetailsBytes {
			return duroxide.TooLarge(op, "heartbeat details", n, duroxide.MaxHeartbeatDetailsBytes)
		}
		return nil
	}
	data, err := duroxide.MarshalWorkItem(item)
	if err != nil {
		return duroxide.Permanent(op, "work item cannot be encoded: %v", err)
	}
	return limits.HeartbeatDetails(op, string(data), details)
}
