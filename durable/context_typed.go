package durable

import (
	"fmt"
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

// decodeResult decodes a durable call's result into Out with the typed
// codec and passes an error through (Rust's .map(|r| r.and_then(decode))),
// except that a string result is the raw payload unchanged: that makes the
// string form of each call the untyped Rust call, so one generic call
// serves both.
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

// SetKVValue stores a typed KV value with the typed codec, as every typed
// value is stored (a string as its raw text, anything else as JSON; see
// Encode). Rust's set_kv_value_typed quotes strings instead; KVValue
// and ClientKVValue read both forms. An unencodable value panics, as the typed
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
