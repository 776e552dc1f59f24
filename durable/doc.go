// Package durable runs durable orchestrations written in Go on any
// duroxide.Provider: the orchestration context, futures and combinators,
// the typed codec and the replay engine, plus the registry, runtime,
// client and activity context. Histories it writes are the ones Rust
// duroxide 0.1.29 writes for the same code: duroxide's replay-engine and
// runtime tests, ported with their assertions, check the event ids,
// sources, order and texts. No test has run Go and Rust processes on one
// store, so mixing them is unproven; run one language per store.
//
// Start with [NewRegistry], [RegisterOrchestration], [Start] and
// [NewClient]; the functions that take an *OrchestrationContext first, such
// as [CallActivity], are the durable calls. Each has a runnable example on
// the in-memory provider.
//
// # Writing orchestrations
//
// An orchestration is a function
//
//	func(ctx *durable.OrchestrationContext, input In) (Out, error)
//
// that is re-run from the start every time something it waits for happens.
// On each run the runtime replays the recorded history into it: a call such
// as durable.CallActivity is matched with the event recorded the first time,
// and its future resolves with the recorded result instead of running the
// activity again. This only works if the code makes the same calls, in the
// same order, on every run, so orchestration code must be deterministic:
//
//   - No time.Now, time.Since or time.Sleep. Use ctx.UTCNow (recorded in
//     history) and durable.NewTimer (a durable timer).
//   - No math/rand or crypto/rand, no uuid.New. Use ctx.NewGUID.
//   - No go statements, channels, select statements, sync primitives or
//     blocking I/O. Use durable.Go for concurrent blocks, ctx.Select to race
//     futures, durable.Join or ctx.WaitAll to wait for several. The runtime
//     runs orchestration code as coroutines, one at a time, and only it
//     decides who runs next; a goroutine of your own or a blocking
//     channel operation escapes that order (and may deadlock the turn).
//   - No dependence on map iteration order when it decides what to
//     schedule: sort the keys first (ctx.KVKeys is already sorted).
//   - No reading of mutable global state, environment variables, files or
//     the network; do that in activities and pass the results in.
//   - Do not use the context after the orchestration returns, or from a
//     goroutine it started.
//
// Side effects that must happen once, such as logging, belong behind
// !ctx.IsReplaying(); ctx.Logger() and ctx.TraceInfo and friends do that for
// you. Changing the order of durable calls in code that has running
// instances is a nondeterminism error ("nondeterministic: schedule
// mismatch ..."): version the orchestration, or branch on
// ctx.Patched(changeID), which running instances that passed the point
// answer false, instead. Under the default
// Options.Nondeterminism, NondeterminismBlock, such an instance is held
// with its history untouched (status StateBlocked, an ERROR log naming the
// call and the event) until code that replays it is deployed;
// NondeterminismFail fails it, as duroxide does.
//
// Scheduling. Each durable call is one generic function taking the
// context first and, last, an optional options struct: CallActivity
// (ActivityOptions: Retry, Session, Tag), NewTimer, WaitEvent,
// DequeueEvent, CallSubOrchestration (SubOrchestrationOptions: InstanceID,
// Version), StartOrchestration (a detached start) and ContinueAsNew. Each
// doc comment names the Rust call it ports. ctx.HistorySize and
// ctx.ContinueAsNewSuggested (against Options.HistoryLimits) tell a loop
// when to continue as new.
//
// Typed values. Every typed value (inputs, outputs, events, queue
// messages, activity results, KV values) goes through one codec, Encode
// and Decode: a string is stored as its raw text, anything else as compact
// JSON with sorted keys; decoding also accepts a JSON-quoted string. The
// string result of a durable call is the raw payload, not decoded, so
// CallActivity[string] is Rust's untyped call.
//
// Child ids. A sub-orchestration started without an explicit id is
// "{parent}::sub::{event_id}" in the parent's first execution (Rust's id)
// and "{parent}::sub::{execution_id}::{event_id}" in later ones, so every
// execution of an eternal orchestration starts new children. A child that
// continues as new keeps its parent link: its last execution completes the
// parent's future.
//
// Futures. Every durable call with a result returns a *Future, a retried
// activity included (its retry loop starts when the future is first
// awaited, raced or joined). Await blocks until it resolves. A future that is pending when it is dropped is
// cancelled, as in Rust: call Cancel explicitly, lose a ctx.Select, or
// simply return while it is pending. A cancelled activity is withdrawn from
// its worker, a cancelled sub-orchestration is cancelled, and history
// records a "dropped_future" breadcrumb. A future belongs to the code that
// created it, or that last waited on it; do not hand pending futures out of
// a durable.Go block that then returns.
//
// Coroutines. durable.Go(ctx, fn) starts fn as a deterministic block. It
// does not start at once: it runs when the creating code next waits, and
// blocks run in creation order, one at a time, each until it waits or
// returns. When the orchestration function returns, every block still
// pending is stopped. durable.ContinueAsNew never returns. A panic anywhere
// fails the orchestration with "orchestration panicked: <message>".
//
// Signals from outside. Wait for an approval, or any message a client may
// send before the orchestration is ready for it, on a persistent queue:
// DequeueEvent in the orchestration, Client.EnqueueEvent to send. Queued
// messages are kept until dequeued, first in, first out. External events
// (WaitEvent, Client.RaiseEvent) are delivered only to a wait pending
// when they arrive; one raised earlier is dropped. Client.SignalWithStart
// sends either, starting the instance first if it does not exist, in one
// atomic write.
//
// Updates. SetUpdateHandler registers a named handler (with an optional
// validator) that answers Update, a client's request to a running
// instance: the request is a queue message, the answer a KV record under
// the update's id, so a retry with the id gets the same answer and the
// handler runs once.
//
// Errors. An activity or sub-orchestration failure resolves its future
// with a *TaskFailedError whose message is what Rust code would see. A
// non-nil error returned by the orchestration fails it with err.Error() as
// the message.
//
// Fixing instances. Once the code is fixed, Client.Rewind runs a failed
// instance's failed work again in a new execution that keeps every result
// before the failure (dispatch_rewind_plan.go states the rule), Client.Redrive gives a
// poisoned instance its poisoned messages again, and Client.Restart starts
// a terminal instance over. Client.Suspend holds a running instance's
// turns (its messages and timers wait) until Client.Resume. Earlier
// executions are kept.
package durable
