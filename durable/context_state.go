package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
)

// SetCustomStatus sets the status string clients see in the instance's
// status; it is recorded in history and carried across continue-as-new.
func (c *OrchestrationContext) SetCustomStatus(status string) {
	c.customStatus = &status
	c.emit(actionUpdateCustomStatus{Status: &status})
}

// ResetCustomStatus clears the custom status.
func (c *OrchestrationContext) ResetCustomStatus() {
	c.customStatus = nil
	c.emit(actionUpdateCustomStatus{})
}

// CustomStatus returns the current custom status, if any (Rust:
// get_custom_status).
func (c *OrchestrationContext) CustomStatus() (string, bool) {
	if c.customStatus == nil {
		return "", false
	}
	return *c.customStatus, true
}

// SetKVValue sets an instance-scoped key. Clients read it with the
// client's KV calls and other orchestrations with KVValueFromInstance;
// it survives continue-as-new.
func (c *OrchestrationContext) SetKVValue(key, value string) {
	at := c.nowMs()
	put(&c.kv, key, value)
	put(&c.kvUpdatedAt, key, at)
	c.emit(actionSetKeyValue{Key: key, Value: value, LastUpdatedAtMs: at})
}

// KVValue reads a key of this instance (a pure read: nothing is
// recorded). Rust: get_kv_value.
func (c *OrchestrationContext) KVValue(key string) (string, bool) {
	v, ok := c.kv[key]
	return v, ok
}

// KVValues returns a copy of this instance's KV store (Rust:
// get_kv_all_values).
func (c *OrchestrationContext) KVValues() map[string]string {
	out := make(map[string]string, len(c.kv))
	for k, v := range c.kv {
		out[k] = v
	}
	return out
}

// KVKeys returns this instance's keys, sorted (a fixed order keeps
// code that loops over them deterministic). Rust: get_kv_all_keys.
func (c *OrchestrationContext) KVKeys() []string {
	keys := make([]string, 0, len(c.kv))
	for k := range c.kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// KVLen returns the number of keys (Rust: get_kv_length).
func (c *OrchestrationContext) KVLen() int { return len(c.kv) }

// ClearKVValue removes a key.
func (c *OrchestrationContext) ClearKVValue(key string) {
	delete(c.kv, key)
	delete(c.kvUpdatedAt, key)
	c.emit(actionClearKeyValue{Key: key})
}

// ClearAllKVValues removes every key of this instance.
func (c *OrchestrationContext) ClearAllKVValues() {
	c.kv = map[string]string{}
	c.kvUpdatedAt = map[string]uint64{}
	c.emit(actionClearKeyValues{})
}

// PruneKVValuesUpdatedBefore clears every key last written before
// updatedBeforeMs (keys written in this turn are never pruned) and returns
// how many it cleared. Keys are cleared in sorted order.
func (c *OrchestrationContext) PruneKVValuesUpdatedBefore(updatedBeforeMs uint64) int {
	var keys []string
	for k, at := range c.kvUpdatedAt {
		if _, live := c.kv[k]; live && at < updatedBeforeMs {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		c.ClearKVValue(k)
	}
	return len(keys)
}

// KVValueFromInstance reads a key of another instance through the
// get_kv_value system activity, so the value read is recorded in history.
// The value is nil when the key does not exist. Rust:
// get_kv_value_from_instance.
func (c *OrchestrationContext) KVValueFromInstance(instanceID, key string) *Future[*string] {
	in := struct {
		InstanceID string `json:"instance_id"`
		Key        string `json:"key"`
	}{instanceID, key}
	b, _ := marshalNoEscape(in) // two strings cannot fail to encode
	return mapFuture(c.scheduleActivity(SyscallKVValue, string(b), "", ""), func(s string, err error) (*string, error) {
		if err != nil {
			return nil, err
		}
		var v *string
		if jerr := json.Unmarshal([]byte(s), &v); jerr != nil {
			return nil, &TaskFailedError{Message: fmt.Sprintf("get_kv_value_from_instance deserialization error: %v", jerr)}
		}
		return v, nil
	})
}

// Logger returns a logger for orchestration code that is replay-safe: it
// drops records while the code is replaying, so each message is logged
// once, when the code first runs past it. Records carry instance_id,
// execution_id, orchestration_name and orchestration_version.
func (c *OrchestrationContext) Logger() *slog.Logger {
	return slog.New(&replaySafeHandler{ctx: c, next: c.log().Handler()}).With(
		"instance_id", c.instanceID,
		"execution_id", c.executionID,
		"orchestration_name", c.orchestrationName,
		"orchestration_version", c.orchestrationVersion,
	)
}

// TraceInfo logs msg at info level unless replaying.
func (c *OrchestrationContext) TraceInfo(msg string) { c.Logger().Info(msg) }

// TraceWarn logs msg at warn level unless replaying.
func (c *OrchestrationContext) TraceWarn(msg string) { c.Logger().Warn(msg) }

// TraceError logs msg at error level unless replaying.
func (c *OrchestrationContext) TraceError(msg string) { c.Logger().Error(msg) }

// TraceDebug logs msg at debug level unless replaying.
func (c *OrchestrationContext) TraceDebug(msg string) { c.Logger().Debug(msg) }

func (c *OrchestrationContext) log() *slog.Logger {
	if c.logger != nil {
		return c.logger
	}
	return slog.Default()
}

// replaySafeHandler drops records while the orchestration is replaying.
type replaySafeHandler struct {
	ctx  *OrchestrationContext
	next slog.Handler
}

// Enabled is false while replaying.
func (h *replaySafeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return !h.ctx.isReplaying && h.next.Enabled(ctx, l)
}

// Handle drops records made while replaying.
func (h *replaySafeHandler) Handle(ctx context.Context, r slog.Record) error {
	if h.ctx.isReplaying {
		return nil
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs keeps the replay filter on the derived handler.
func (h *replaySafeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &replaySafeHandler{ctx: h.ctx, next: h.next.WithAttrs(as)}
}

// WithGroup keeps the replay filter on the derived handler.
func (h *replaySafeHandler) WithGroup(name string) slog.Handler {
	return &replaySafeHandler{ctx: h.ctx, next: h.next.WithGroup(name)}
}
