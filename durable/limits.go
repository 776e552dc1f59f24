package durable

import (
	"fmt"

	"github.com/duroxide-go/cdb/duroxide"
)

// Limits on what one orchestration may hold. A turn that goes past one
// fails the orchestration with an error naming the limit, so code that
// stores data per item should bound its item count by these (Rust:
// duroxide's src/runtime/limits.rs).
const (
	// MaxKVKeys is the most keys an instance's KV store may hold.
	MaxKVKeys = 150
	// MaxKVValueBytes is the largest KV value, in bytes.
	MaxKVValueBytes = 64 * 1024
)

// The limits the dispatcher holds a turn to (limitViolation, and the
// carry-forward cap in commitResult), with Rust duroxide's values
// (src/runtime/limits.rs).
const (
	maxCarryForwardEvents = 100
	maxCustomStatusBytes  = 256 * 1024
	maxTagNameBytes       = 256
	maxKVKeys             = MaxKVKeys
	maxKVValueBytes       = MaxKVValueBytes
)

// limitViolation checks the turn's delta against duroxide's limits and
// returns the failure message of the first one exceeded ("" if none).
func limitViolation(delta []duroxide.Event, kv map[string]duroxide.KVEntry) string {
	for i := len(delta) - 1; i >= 0; i-- {
		if k, ok := delta[i].Kind.(duroxide.CustomStatusUpdated); ok && k.Status != nil {
			if len(*k.Status) > maxCustomStatusBytes {
				return fmt.Sprintf("Custom status size (%d bytes) exceeds limit (%d bytes)", len(*k.Status), maxCustomStatusBytes)
			}
			break
		}
	}
	for _, e := range delta {
		if k, ok := e.Kind.(duroxide.ActivityScheduled); ok && k.Tag != nil && len(*k.Tag) > maxTagNameBytes {
			return fmt.Sprintf("Activity '%s' tag size (%d bytes) exceeds limit (%d bytes)", k.Name, len(*k.Tag), maxTagNameBytes)
		}
	}
	for _, e := range delta {
		if k, ok := e.Kind.(duroxide.KeyValueSet); ok && len(k.Value) > maxKVValueBytes {
			return fmt.Sprintf("KV value for key '%s' (%d bytes) exceeds limit (%d bytes)", k.Key, len(k.Value), maxKVValueBytes)
		}
	}
	keys := map[string]bool{}
	for k := range kv {
		keys[k] = true
	}
	for _, e := range delta {
		switch k := e.Kind.(type) {
		case duroxide.KeyValueSet:
			keys[k.Key] = true
		case duroxide.KeyValueCleared:
			delete(keys, k.Key)
		case duroxide.KeyValuesCleared:
			clear(keys)
		}
	}
	if len(keys) > maxKVKeys {
		return fmt.Sprintf("KV key count (%d) exceeds limit (%d)", len(keys), maxKVKeys)
	}
	return ""
}

// enforceLimits fails the execution when the turn exceeded a limit: the
// failure event is appended and every work item dropped.
func (t *turn) enforceLimits() {
	msg := limitViolation(t.delta, t.kv)
	if msg == "" {
		return
	}
	details := duroxide.ApplicationError{Kind: duroxide.AppErrorKind{Type: duroxide.AppOrchestrationFailed}, Message: msg}
	t.append(nil, duroxide.OrchestrationFailed{Details: details})
	t.metadata.Status, t.metadata.Output = ptr(duroxide.StatusFailed), ptr(displayMessage(details))
	t.worker, t.orch = nil, nil
}
