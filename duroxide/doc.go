// Package duroxide is the Go form of the provider contract of duroxide, the
// Rust durable-execution framework: the types a storage provider persists
// and the interfaces it implements. A provider written against this package
// stores data that Rust duroxide nodes (and the Rust duroxide-cdb provider)
// can read, and reads what they write.
//
// Start with [Provider], the contract a store implements, and
// [ProviderAdmin]; [Event] and [WorkItem] are what it stores.
//
// # The contract
//
// Provider mirrors Rust duroxide's Provider trait: an append-only history
// of Events per instance and execution; an orchestrator queue and a worker
// queue of WorkItems with peek-lock semantics; the atomic commit of an
// orchestration turn (AckOrchestrationItem with an OrchestrationCommit);
// sessions, KV state and custom status. ProviderAdmin mirrors the
// management trait (listing, metrics, deletion, pruning).
//
// Rust types map to Go as follows:
//
//   - The Event struct keeps the common fields; the EventKind enum becomes
//     the EventKind interface, implemented by one struct per variant
//     (OrchestrationStarted, ActivityScheduled, ...). The three queue
//     variants that Rust renamed (QueueSubscribed, QueueEventDelivered,
//     QueueSubscriptionCancelled) keep their wire names in Go
//     (ExternalSubscribedPersistent, ExternalEventPersistent,
//     ExternalSubscribedPersistentCancelled).
//   - The WorkItem enum becomes the WorkItem interface, implemented by
//     StartOrchestrationItem, ActivityExecuteItem, and so on (the Rust
//     variant name plus "Item").
//   - The ErrorDetails enum becomes the ErrorDetails interface, implemented
//     by InfrastructureError, ConfigurationError, ApplicationError and
//     PoisonError; AppErrorKind and PoisonMessageType are structs with a
//     kind discriminator.
//   - Option<T> is *T; u64 and u32 are uint64 and uint32; semver::Version
//     is SemVer.
//   - Rust's get_* methods drop the prefix, as Go names getters:
//     get_kv_value is KVValue, get_instance_info is InstanceInfo.
//   - TagFilter, SemVerRange and DispatcherCapabilityFilter carry the same
//     matching rules as in Rust (see their Matches and Contains methods).
//
// # JSON wire format
//
// Event, WorkItem and ErrorDetails are the types duroxide serializes (with
// InstanceStats, whose struct tags suffice), and their JSON is shared across
// languages, so it is reproduced exactly.
// Encoding (Event.MarshalJSON, AppendEvent, MarshalWorkItem,
// MarshalErrorDetails, and MarshalJSON on every variant) writes the bytes
// Rust serde_json writes:
//
//   - compact, with keys in Rust declaration order. An Event is one object:
//     event_id, source_event_id, instance_id, execution_id, timestamp_ms,
//     duroxide_version, then "type" and the variant's fields. WorkItem and
//     ErrorDetails are externally tagged, {"Variant":{...}}; unit variants
//     are bare strings ("Nondeterminism", "Panicked").
//   - optional fields Rust marks skip_serializing_if are omitted when nil;
//     the others are written as null. The field comments on each type say
//     which is which.
//   - strings escape only '"', '\\' and control characters; '<', '>', '&',
//     U+2028, U+2029 and all non-ASCII text are written unescaped. Invalid
//     UTF-8 in a Go string, which Rust cannot represent, is written as
//     U+FFFD.
//   - integers never pass through float64: 18446744073709551615 round-trips.
//
// Decoding (UnmarshalEvent, Event.UnmarshalJSON, UnmarshalWorkItem,
// UnmarshalErrorDetails, and UnmarshalJSON on every variant) accepts what
// serde accepts and rejects what it rejects: keys in any order, unknown keys
// ignored (so data from newer duroxide versions decodes), missing optional
// fields as nil or their serde default, duplicate or missing required
// fields, wrong JSON types, fractional, negative or out-of-range integers
// and invalid UTF-8 as errors. Nothing is silently dropped: a variant tag
// this package does not know is an error too. The package's tests compare
// the decoder and encoder with real serde_json output (testdata/).
//
// json.Marshal re-escapes '<', '>', '&', U+2028 and U+2029 in the output of
// any json.Marshaler. The result is the same JSON value and Rust reads it,
// but where exact bytes matter (for example when a size is computed from
// them) call the Marshal functions directly or use a json.Encoder with
// SetEscapeHTML(false).
//
// # Errors
//
// Providers report failures as *ProviderError values, possibly wrapped,
// which are either retryable (busy, throttled, timeouts, network) or
// permanent (corruption, duplicates, invalid input, invalid or expired lock
// tokens). Build them with Retryable, Permanent and Wrap; classify them
// with errors.Is(err, ErrRetryable), errors.Is(err, ErrPermanent) or
// IsRetryable. ToInfrastructure turns one into the ErrorDetails recorded in
// history.
//
// Decoding fails with an *UnknownVariantError (which matches
// ErrUnknownVariant under errors.Is) for an unknown event type or variant
// name, and with a *DecodeError, which names the offending field and byte
// offset, for anything else. Encoding fails with an *EncodeError for Go
// values that have no wire form, such as a nil Kind or ErrorDetails. A
// provider that cannot decode stored history must report it through
// OrchestrationItem.HistoryError rather than drop events.
//
// # Capability discovery
//
// The management operations are optional: Provider.Admin returns the
// provider's ProviderAdmin, or nil when it has none, so callers test for
// the capability instead of asserting interfaces:
//
//	if admin := p.Admin(); admin != nil {
//		ids, err := admin.ListInstances(ctx)
//		...
//	}
//
// WalkInstanceTree and DeleteInstance are default implementations of the
// corresponding ProviderAdmin methods, built on its other methods.
package duroxide
