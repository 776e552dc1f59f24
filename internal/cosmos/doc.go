// Package cosmos is the provider's one door to azcosmos for data-plane
// work: every request goes through [Store.Do], which counts it, runs the
// test hooks, applies the provider's throttling budget (429s are retried
// here and only here) and turns failures into [*Error] values, so error
// mapping, retries, request accounting and fault injection each live in
// one place. It also holds transactional batches ([Batch], [NewBatch]),
// scans that page over every partition key range across calls ([Cursor]),
// and the per-partition session tokens that give read-your-writes on a
// real account.
//
// Start with [NewStore] and [Store.Do] (store.go); the repository's
// docs/design.md says how the provider uses them.
package cosmos
