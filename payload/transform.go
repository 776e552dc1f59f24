package payload

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
)

// coder is one direction of the chain (encode or decode) over the
// payload fields of duroxide's events and work items. Every payload
// field is listed here and nowhere else: inputs, outputs and results,
// event and message data, carried-forward events, custom status and KV
// values. Names, IDs, keys and error details are not payloads and are
// stored as they are.
type coder func(ctx context.Context, scope Scope, s string) (string, error)

// str codes *p in place.
func (f coder) str(ctx context.Context, scope Scope, p *string, err *error) {
	if *err != nil {
		return
	}
	*p, *err = f(ctx, scope, *p)
}

// opt codes an optional payload, returning a new pointer (the caller's
// value is shared with the runtime and must not change).
func (f coder) opt(ctx context.Context, scope Scope, p *string, err *error) *string {
	if p == nil || *err != nil {
		return p
	}
	s := *p
	f.str(ctx, scope, &s, err)
	return &s
}

// carry codes carried-forward events into a new slice.
func (f coder) carry(ctx context.Context, scope Scope, in []duroxide.CarryForwardEvent, err *error) []duroxide.CarryForwardEvent {
	if in == nil {
		return nil
	}
	out := make([]duroxide.CarryForwardEvent, len(in))
	for i, c := range in {
		out[i] = c
		f.str(ctx, scope, &out[i].Data, err)
	}
	return out
}

// lasting is the scope of payloads that outlive the execution that wrote
// them (KV values, custom status, what a new execution is started with),
// so a codec keeping payloads per execution never prunes them with it.
func lasting(instance string) Scope { return Scope{Instance: instance} }

// event returns e with its payloads coded.
func (f coder) event(ctx context.Context, instance string, e duroxide.Event) (duroxide.Event, error) {
	if e.InstanceID != "" {
		instance = e.InstanceID
	}
	sc := Scope{Instance: instance, ExecutionID: e.ExecutionID}
	var err error
	switch k := e.Kind.(type) {
	case duroxide.OrchestrationStarted:
		f.str(ctx, sc, &k.Input, &err)
		k.CarryForwardEvents = f.carry(ctx, sc, k.CarryForwardEvents, &err)
		k.InitialCustomStatus = f.opt(ctx, lasting(instance), k.InitialCustomStatus, &err)
		e.Kind = k
	case duroxide.OrchestrationCompleted:
		f.str(ctx, sc, &k.Output, &err)
		e.Kind = k
	case duroxide.ActivityScheduled:
		f.str(ctx, sc, &k.Input, &err)
		e.Kind = k
	case duroxide.ActivityCompleted:
		f.str(ctx, sc, &k.Result, &err)
		e.Kind = k
	case duroxide.ExternalEvent:
		f.str(ctx, sc, &k.Data, &err)
		e.Kind = k
	case duroxide.ExternalEventPersistent:
		f.str(ctx, sc, &k.Data, &err)
		e.Kind = k
	case duroxide.OrchestrationChained:
		f.str(ctx, sc, &k.Input, &err)
		e.Kind = k
	case duroxide.SubOrchestrationScheduled:
		f.str(ctx, sc, &k.Input, &err)
		e.Kind = k
	case duroxide.SubOrchestrationCompleted:
		f.str(ctx, sc, &k.Result, &err)
		e.Kind = k
	case duroxide.OrchestrationContinuedAsNew:
		f.str(ctx, sc, &k.Input, &err)
		e.Kind = k
	case duroxide.CustomStatusUpdated:
		k.Status = f.opt(ctx, lasting(instance), k.Status, &err)
		e.Kind = k
	case duroxide.KeyValueSet:
		f.str(ctx, lasting(instance), &k.Value, &err)
		e.Kind = k
	}
	return e, err
}

// events returns a new slice of events with their payloads coded.
func (f coder) events(ctx context.Context, instance string, in []duroxide.Event) ([]duroxide.Event, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]duroxide.Event, len(in))
	for i, e := range in {
		var err error
		if out[i], err = f.event(ctx, instance, e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// item returns w with its payloads coded.
func (f coder) item(ctx context.Context, w duroxide.WorkItem) (duroxide.WorkItem, error) {
	var err error
	switch v := w.(type) {
	case duroxide.StartOrchestrationItem:
		f.str(ctx, Scope{Instance: v.Instance, ExecutionID: v.ExecutionID}, &v.Input, &err)
		return v, err
	case duroxide.ActivityExecuteItem:
		f.str(ctx, Scope{Instance: v.Instance, ExecutionID: v.ExecutionID}, &v.Input, &err)
		return v, err
	case duroxide.ActivityCompletedItem:
		f.str(ctx, Scope{Instance: v.Instance, ExecutionID: v.ExecutionID}, &v.Result, &err)
		return v, err
	case duroxide.ExternalRaisedItem:
		f.str(ctx, lasting(v.Instance), &v.Data, &err)
		return v, err
	case duroxide.QueueMessageItem:
		f.str(ctx, lasting(v.Instance), &v.Data, &err)
		return v, err
	case duroxide.SubOrchCompletedItem:
		f.str(ctx, Scope{Instance: v.ParentInstance, ExecutionID: v.ParentExecutionID}, &v.Result, &err)
		return v, err
	case duroxide.ContinueAsNewItem:
		sc := lasting(v.Instance)
		f.str(ctx, sc, &v.Input, &err)
		v.CarryForwardEvents = f.carry(ctx, sc, v.CarryForwardEvents, &err)
		v.InitialCustomStatus = f.opt(ctx, sc, v.InitialCustomStatus, &err)
		return v, err
	}
	return w, nil
}

// items returns a new slice of work items with their payloads coded.
func (f coder) items(ctx context.Context, in []duroxide.WorkItem) ([]duroxide.WorkItem, error) {
	if in == nil {
		return nil, nil
	}
	out := make([]duroxide.WorkItem, len(in))
	for i, w := range in {
		var err error
		if out[i], err = f.item(ctx, w); err != nil {
			return nil, err
		}
	}
	return out, nil
}
