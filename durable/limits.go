package durable

// Limits on what one orchestration may hold (duroxide's
// src/runtime/limits.rs). A turn that goes past one fails the
// orchestration with an error naming the limit, so code that stores data
// per item should bound its item count by these.
const (
	// MaxKVKeys is the most keys an instance's KV store may hold.
	MaxKVKeys = 150
	// MaxKVValueBytes is the largest KV value, in bytes.
	MaxKVValueBytes = 64 * 1024
)
