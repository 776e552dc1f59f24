package durable

import (
	"fmt"
	"time"
)

// The typed helpers encode inputs and decode outputs with the typed codec
// (see Encode and Decode), as Rust's *_typed methods do.

func mustEncode(v any) string {
	s, err := Encode(v)
	if err != nil {
		panic(fmt.Sprintf("durable: encode: %v", err))
	}
	return s
}

// decodeResult is Rust's .map(|r| r.and_then(decode)), except that a
// string result is the raw payload unchanged: that makes the string form of
// each call the untyped Rust call, so one generic call serves both.
func decodeResult[Out any](s string, err error) (Out, error) {
	if err != nil {
		var zero Out
		return zero, err
	}
	var out Out
	if p, ok := any(&out).(*string); ok {
		*p = s
		return out, nil
	}
	v, derr := Decode[Out](s)
	if derr != nil {
		return v, &TaskFailedError{Message: derr.Error()}
	}
	return v, nil
}

// Deprecated wrappers, removed once every caller uses the calls in schedule.go.

func (c *OrchestrationContext) ScheduleActivity(name, input string) *Future[string] {
	return c.scheduleActivity(name, input, "", "")
}
func (c *OrchestrationContext) ScheduleActivityOnSession(name, input, sessionID string) *Future[string] {
	return c.scheduleActivity(name, input, sessionID, "")
}
func (c *OrchestrationContext) ScheduleActivityWithRetry(name, input string, policy *RetryPolicy) (string, error) {
	return c.retryActivity(name, input, *policy, "", "").Await()
}
func (c *OrchestrationContext) ScheduleActivityWithRetryOnSession(name, input string, policy *RetryPolicy, sessionID string) (string, error) {
	return c.retryActivity(name, input, *policy, sessionID, "").Await()
}
func (c *OrchestrationContext) ScheduleTimer(d time.Duration) *Future[struct{}] { return c.scheduleTimer(d) }
func (c *OrchestrationContext) ScheduleWait(name string) *Future[string]      { return c.scheduleWait(name) }
func (c *OrchestrationContext) DequeueEvent(queue string) *Future[string]     { return c.dequeueEvent(queue) }
func (c *OrchestrationContext) ScheduleSubOrchestration(name, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, nil, nil, input)
}
func (c *OrchestrationContext) ScheduleSubOrchestrationWithID(name, instance, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, nil, &instance, input)
}
func (c *OrchestrationContext) ScheduleSubOrchestrationVersioned(name, version, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, optString(version), nil, input)
}
func (c *OrchestrationContext) ScheduleSubOrchestrationVersionedWithID(name, version, instance, input string) *Future[string] {
	return c.scheduleSubOrchestration(name, optString(version), &instance, input)
}
func (c *OrchestrationContext) ScheduleOrchestration(name, instance, input string) {
	c.startDetached(name, nil, instance, input)
}
func (c *OrchestrationContext) ScheduleOrchestrationVersioned(name, version, instance, input string) {
	c.startDetached(name, optString(version), instance, input)
}
func (c *OrchestrationContext) ContinueAsNew(input string) error { return c.continueAsNew(input, nil) }
func (c *OrchestrationContext) ContinueAsNewVersioned(version, input string) error {
	return c.continueAsNew(input, optString(version))
}
func ScheduleActivity[Out any](ctx *OrchestrationContext, name string, input any) *Future[Out] {
	return CallActivity[Out](ctx, name, input)
}
func ScheduleActivityOnSession[Out any](ctx *OrchestrationContext, name string, input any, sessionID string) *Future[Out] {
	return CallActivity[Out](ctx, name, input, ActivityOptions{Session: sessionID})
}
func ScheduleActivityWithRetry[Out any](ctx *OrchestrationContext, name string, input any, policy *RetryPolicy) (Out, error) {
	return CallActivity[Out](ctx, name, input, ActivityOptions{Retry: policy}).Await()
}
func ScheduleActivityWithRetryOnSession[Out any](ctx *OrchestrationContext, name string, input any, policy *RetryPolicy, sessionID string) (Out, error) {
	return CallActivity[Out](ctx, name, input, ActivityOptions{Retry: policy, Session: sessionID}).Await()
}
func ScheduleSubOrchestration[Out any](ctx *OrchestrationContext, name string, input any) *Future[Out] {
	return CallSubOrchestration[Out](ctx, name, input)
}
func ScheduleSubOrchestrationWithID[Out any](ctx *OrchestrationContext, name, instance string, input any) *Future[Out] {
	return mapFuture(ctx.ScheduleSubOrchestrationWithID(name, instance, mustEncode(input)), decodeResult[Out])
}
func ScheduleOrchestration(ctx *OrchestrationContext, name, instance string, input any) {
	StartOrchestration(ctx, name, instance, input)
}
func ScheduleWait[T any](ctx *OrchestrationContext, name string) *Future[T] { return WaitEvent[T](ctx, name) }
func ContinueAsNewTyped(ctx *OrchestrationContext, input any) error { return ContinueAsNew(ctx, input) }

// SetKVValue stores a typed KV value with the typed codec, as every typed
// value is stored (a string as its raw text, anything else as JSON; see
// Encode). Rust's set_kv_value_typed quotes strings instead; GetKVValue
// and KVValue read both forms. An unencodable value panics, as the typed
// inputs do.
func SetKVValue(ctx *OrchestrationContext, key string, value any) {
	s, err := Encode(value)
	if err != nil {
		panic(fmt.Sprintf("durable: KV value serialization: %v", err))
	}
	ctx.SetKVValue(key, s)
}

// GetKVValue reads a typed KV value with the typed codec (see Decode);
// found is false when the key is absent.
func GetKVValue[T any](ctx *OrchestrationContext, key string) (value T, found bool, err error) {
	s, ok := ctx.GetKVValue(key)
	if !ok {
		return value, false, nil
	}
	if value, err = Decode[T](s); err != nil {
		return value, true, fmt.Errorf("KV deserialization error for key '%s': %v", key, err)
	}
	return value, true, nil
}

// GetKVValueFromInstance reads a typed key of another instance; the value
// is nil when the key does not exist.
func GetKVValueFromInstance[T any](ctx *OrchestrationContext, instanceID, key string) *Future[*T] {
	return mapFuture(ctx.GetKVValueFromInstance(instanceID, key), func(s *string, err error) (*T, error) {
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
