package durable

import (
	"fmt"
)

// The typed helpers encode inputs and decode outputs with the typed codec
// (see Encode and Decode), as Rust's *_typed methods do. An input that
// cannot be encoded panics, as in Rust: it is a programming error, and the
// panic fails the orchestration with the message.

func mustEncode(v any) string {
	s, err := Encode(v)
	if err != nil {
		panic(fmt.Sprintf("durable: encode: %v", err))
	}
	return s
}

// decodeResult is Rust's .map(|r| r.and_then(decode)).
func decodeResult[Out any](s string, err error) (Out, error) {
	if err != nil {
		var zero Out
		return zero, err
	}
	v, derr := Decode[Out](s)
	if derr != nil {
		return v, &TaskFailedError{Message: derr.Error()}
	}
	return v, nil
}

// ScheduleActivity schedules an activity with a typed input and output.
func ScheduleActivity[Out any](ctx *OrchestrationContext, name string, input any) *Future[Out] {
	return mapFuture(ctx.ScheduleActivity(name, mustEncode(input)), decodeResult[Out])
}

// ScheduleActivityOnSession is ScheduleActivity routed to sessionID.
func ScheduleActivityOnSession[Out any](ctx *OrchestrationContext, name string, input any, sessionID string) *Future[Out] {
	return mapFuture(ctx.ScheduleActivityOnSession(name, mustEncode(input), sessionID), decodeResult[Out])
}

// ScheduleActivityWithRetry is the typed ScheduleActivityWithRetry.
func ScheduleActivityWithRetry[Out any](ctx *OrchestrationContext, name string, input any, policy RetryPolicy) (Out, error) {
	return decodeResult[Out](ctx.ScheduleActivityWithRetry(name, mustEncode(input), policy))
}

// ScheduleActivityWithRetryOnSession is the typed
// ScheduleActivityWithRetryOnSession.
func ScheduleActivityWithRetryOnSession[Out any](ctx *OrchestrationContext, name string, input any, policy RetryPolicy, sessionID string) (Out, error) {
	return decodeResult[Out](ctx.ScheduleActivityWithRetryOnSession(name, mustEncode(input), policy, sessionID))
}

// ScheduleSubOrchestration starts a child with a typed input and output.
func ScheduleSubOrchestration[Out any](ctx *OrchestrationContext, name string, input any) *Future[Out] {
	return mapFuture(ctx.ScheduleSubOrchestration(name, mustEncode(input)), decodeResult[Out])
}

// ScheduleSubOrchestrationWithID starts a typed child under an explicit id.
func ScheduleSubOrchestrationWithID[Out any](ctx *OrchestrationContext, name, instance string, input any) *Future[Out] {
	return mapFuture(ctx.ScheduleSubOrchestrationWithID(name, instance, mustEncode(input)), decodeResult[Out])
}

// ScheduleOrchestration starts a detached orchestration with a typed input.
func ScheduleOrchestration(ctx *OrchestrationContext, name, instance string, input any) {
	ctx.ScheduleOrchestration(name, instance, mustEncode(input))
}

// ScheduleWait waits for an external event and decodes its data. An event
// raised while no wait of its name is pending (before the orchestration
// gets here, for one) is dropped: see OrchestrationContext.ScheduleWait.
// For approvals and other signals that may come early, use DequeueEvent.
func ScheduleWait[T any](ctx *OrchestrationContext, name string) *Future[T] {
	return mapFuture(ctx.ScheduleWait(name), decodeResult[T])
}

// DequeueEvent takes the next queue message (sent with the client's
// EnqueueEvent) and decodes it. Messages sent before the orchestration
// waits are kept, so this is the way to wait for an approval.
func DequeueEvent[T any](ctx *OrchestrationContext, queue string) *Future[T] {
	return mapFuture(ctx.DequeueEvent(queue), decodeResult[T])
}

// ContinueAsNew continues as new with a typed input; it never returns.
func ContinueAsNew(ctx *OrchestrationContext, input any) error {
	return ctx.ContinueAsNew(mustEncode(input))
}

// SetKVValue stores a typed KV value with the typed codec, as every typed
// value is stored (a string as its raw text, anything else as JSON; see
// Encode). Rust's set_kv_value_typed quotes strings instead; KVValue
// and KVValue read both forms. An unencodable value panics, as the typed
// inputs do.
func SetKVValue(ctx *OrchestrationContext, key string, value any) {
	s, err := Encode(value)
	if err != nil {
		panic(fmt.Sprintf("durable: KV value serialization: %v", err))
	}
	ctx.SetKVValue(key, s)
}

// KVValue reads a typed KV value with the typed codec (see Decode);
// found is false when the key is absent. Rust: get_kv_value_typed.
func KVValue[T any](ctx *OrchestrationContext, key string) (value T, found bool, err error) {
	s, ok := ctx.KVValue(key)
	if !ok {
		return value, false, nil
	}
	if value, err = Decode[T](s); err != nil {
		return value, true, fmt.Errorf("KV deserialization error for key '%s': %v", key, err)
	}
	return value, true, nil
}

// KVValueFromInstance reads a typed key of another instance; the value
// is nil when the key does not exist. Rust:
// get_kv_value_from_instance_typed.
func KVValueFromInstance[T any](ctx *OrchestrationContext, instanceID, key string) *Future[*T] {
	return mapFuture(ctx.KVValueFromInstance(instanceID, key), func(s *string, err error) (*T, error) {
		if err != nil || s == nil {
			return nil, err
		}
		v, derr := Decode[T](*s)
		if derr != nil {
			return nil, &TaskFailedError{Message: fmt.Sprintf("get_kv_value_from_instance_typed deserialization error: %v", derr)}
		}
		return &v, nil
	})
}
