// Package durablecheck is a go/analysis pass that reports constructs that
// are not replay-safe in durable orchestration code.
//
// The runtime re-runs an orchestration from the start on every turn and
// matches its durable calls with the recorded history, so the code must make
// the same calls in the same order on every run (see package durable,
// "Writing orchestrations"). The analyzer finds the usual ways to break
// that at build time instead of as a nondeterminism error in production.
//
// # Running it
//
// It is its own module, so golang.org/x/tools stays out of the library's
// go.mod, and its go.mod replaces the library with the repository root
// (../..): build it from a clone of the repository, not from your own
// module (which does not require this module) or with go install @version
// (which refuses a replace). From the clone's root:
//
//	go build -C analysis/durablecheck -o "$PWD/durablecheck" ./cmd/durablecheck
//
// then, in the module to check, as a vet tool:
//
//	go vet -vettool=/path/to/durablecheck ./...
//
// or on its own: durablecheck ./... .
//
// Start with [Analyzer]; the rules are in the sections below.
//
// # What is orchestration code
//
// A function, method or function literal whose first parameter is a
// *durable.OrchestrationContext is orchestration code. That covers every
// orchestration, since RegisterOrchestration, RegisterOrchestrationVersion
// and (*Registry).AddOrchestration(Version) all require that signature
// (literals and method values included), every block passed to durable.Go,
// and every helper the orchestration hands its context. From there the
// analyzer follows, within the package, every function and method it calls
// or refers to as a value and every function literal it contains; those
// are orchestration code too. A function taking durable.ActivityContext
// first is activity code and is never followed: activities may do I/O.
//
// Across packages of the same module it uses facts: a function that
// reaches a reported construct carries one, and orchestration code that
// calls it is reported at the call ("call to helpers.Stamp reaches
// time.Now (helpers.go:12) ..."). Functions of other modules and of the
// standard library are judged only by the rules below, not followed. The
// durable package itself is never checked: its scheduler uses goroutines,
// channels and locks on purpose.
//
// Limits: a function reached only through an interface, or through a
// value stored elsewhere (a field, a map, a variable), is not followed,
// since the callee is not known statically. A function named as a value
// in orchestration code, and a literal written there, are assumed to run
// there.
//
// # Rules and what to use instead
//
//   - time.Now, time.Since, time.Until: use ctx.UTCNow(), which records the
//     time in history. time.Sleep, time.After, time.AfterFunc, time.Tick,
//     time.NewTimer, time.NewTicker: use durable.NewTimer(ctx, d), a durable
//     timer. Methods of time.Time and time.Duration are fine.
//   - math/rand, math/rand/v2, crypto/rand (any function or method): take
//     random values from ctx.NewGUID() or from an activity. uuid.New,
//     uuid.NewString, uuid.NewRandom and the other github.com/google/uuid
//     constructors: use ctx.NewGUID().
//   - go statements: use durable.Go(ctx, fn), a deterministic concurrent
//     block.
//   - Channel sends, receives, range over a channel, close: wait on durable
//     futures (durable.Go, ctx.Select, ctx.WaitAll, durable.Join), and take
//     messages from outside with durable.WaitEvent or durable.DequeueEvent.
//     select statements: use ctx.Select(futures...).
//   - sync and sync/atomic (locks, WaitGroup, Once, Pool, atomics): the
//     runtime runs orchestration code one block at a time, so it needs no
//     locks; use durable.Go with durable.Join or ctx.WaitAll.
//   - A range over a map whose body makes a durable call (a method of the
//     context that records in history, or any call that is passed the
//     context): map order is random, so the calls would come in a different
//     order on replay. Range over the sorted keys,
//     slices.Sorted(maps.Keys(m)). Reading the map in the body, or
//     logging, is fine.
//   - Environment, file and network I/O: os (except the error predicates
//     such as os.IsNotExist), net, net/http, net/rpc, net/smtp, io/ioutil,
//     os/exec, os/signal, syscall, and filepath.Abs, EvalSymlinks, Glob,
//     Walk, WalkDir: do it in an activity (durable.CallActivity) or pass
//     the value in the orchestration's input. fmt.Print, Printf, Println
//     and the log and log/slog package-level functions: use ctx.Logger()
//     or ctx.TraceInfo and friends, which do not log again on replay.
//   - Writes to package-level variables (assignment, op-assignment, ++ and
//     --, also through a field, index or pointer), of any package: keep
//     state in locals, the orchestration's input and output, or
//     ctx.SetKVValue.
//   - ctx.Patched and ctx.DeprecatePatch with a change id that is not a
//     constant (a literal or a const): the id names the change in
//     history, and a computed one can differ on replay or name another
//     change. Pass a constant.
//
// # Silencing a finding
//
// Code that is nondeterministic on purpose, such as a test of the
// runtime's replay checks, marks the line with a comment that starts
// "//durablecheck:ignore" followed by the reason, at the end of the line or
// alone on the line above it.
package durablecheck
