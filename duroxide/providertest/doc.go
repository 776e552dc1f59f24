/*
Package providertest is the Go port of duroxide's provider validation
suite (Rust src/provider_validation/*.rs, feature "provider-test"). It
checks that a duroxide.Provider honours the storage contract the runtime
relies on: peek-lock queues, instance locks, atomic acks, attempt counts,
sessions, tags, capability filtering, KV state, custom status and the
ProviderAdmin operations. It uses only the duroxide interfaces, so any
provider can run it, as every river driver runs riverdrivertest.

Start with [Factory] and [Run]; memprovider/memprovider_test.go is a
complete wiring.

# Wiring a provider

Implement Factory and call Run from a test in the provider's package:

	type factory struct {
		endpoint string // connection settings
	}

	// NewProvider returns a fresh, empty, isolated store for one test.
	func (f factory) NewProvider(t *testing.T) duroxide.Provider {
		p, err := myprovider.New(t.Context(), myprovider.Config{Container: "test-" + uuid.NewString()[:8]})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Drop(context.Background()) })
		return p
	}

	func (factory) LockTimeout() time.Duration        { return 5 * time.Second }
	func (factory) ShortPollThreshold() time.Duration { return 100 * time.Millisecond }

	// The two hooks need direct access to the store.
	func (factory) CorruptInstanceHistory(t *testing.T, p duroxide.Provider, instance string) {
		p.(*myprovider.Provider).OverwriteHistoryForTest(t.Context(), instance, `NOT_VALID_JSON{{{`)
	}
	func (factory) MaxAttemptCount(t *testing.T, p duroxide.Provider, instance string) uint32 {
		return p.(*myprovider.Provider).MaxOrchestratorAttemptsForTest(t.Context(), instance)
	}

	func TestProviderValidation(t *testing.T) {
		providertest.Run(t, factory{})
	}

RunModules runs a subset, for example
providertest.RunModules(t, factory{}, "atomicity", "sessions"); Modules
lists the module names and Tests the behaviours of one module.
memprovider/memprovider_test.go is a complete, working wiring.

# What the factory must provide

NewProvider must return an empty store that no other test shares: many
tests assert exact queue contents, and tests run in parallel. Timing
tests take LockTimeout-long locks and then sleep LockTimeout+100ms (Rust's
default is 5s; the SQLite reference uses 1s, which keeps the suite fast).
ShortPollThreshold bounds a fetch on an empty store for short-polling
providers (Rust's default is 100ms; duroxide-pg uses 500ms).

Two hooks need store access, as in Rust: CorruptInstanceHistory must
overwrite every stored history event of an instance with content that
cannot be decoded (Read then fails, and a fetch returns the item with
HistoryError set), and MaxAttemptCount must return the largest attempt
count among the instance's orchestrator-queue messages. They are used by
error_handling and capability_filtering.

The cancellation, deletion, bulk_deletion, prune, management and kv_store
modules also need Provider.Admin to return a ProviderAdmin.

A factory whose providers block for pollTimeout when there is no work
implements LongPoller. Then the two long-poll-only behaviours run and the
two short-poll ones do not; otherwise it is the other way round. A
behaviour that does not apply is not run, as Rust does not register it,
and the module's test log names it with the reason ("left out ...").
No other behaviour is ever skipped: a provider that lacks a
feature fails the tests for it.

# Names

Every behaviour is a subtest named <module>/<rust_test_name>, where module
is the Rust file name without ".rs" and rust_test_name the exact name of
the Rust test function, for example
atomicity/test_atomicity_failure_rollback or
poison_message/orchestration_attempt_count_starts_at_one. Filter them with
go test -run, e.g. -run 'TestProviderValidation/lock_expiration/'.

The modules and their behaviour counts match duroxide 0.1.29 (221
behaviours in 19 modules): atomicity 4, bulk_deletion 4, cancellation 16,
capability_filtering 20, custom_status 7, deletion 13, error_handling 7,
instance_creation 4, instance_locking 11, kv_store 35, lock_expiration 13,
long_polling 5, management 13, multi_execution 5, poison_message 9, prune
4, queue_semantics 8, sessions 33, tag_filtering 10. Seven modules are Go
additions: blocked_instances (5), the BlockOrchestrationItem and
BlockedReason calls the Go runtime's NondeterminismBlock policy uses, and
the optional StatusReader's ReadStatus, checked against them;
heartbeats (4), the optional HeartbeatRecorder keeping an activity's
heartbeat details on its work item across abandons and lock expiries
until the ack, and refusing details over MaxHeartbeatDetailsBytes;
held_messages (7): messages that arrive while an instance's start or an
abandoned batch is held back wait for it, neither dropped as orphans nor
delivered first, a fetched message a commit hands back keeps its place
ahead of what arrived during the turn, a result for an instance that
does not exist is dropped at once, a delayed client start
(DelayedStartWriter) makes its instance exist at once, and a client start
that has not run is deleted with what waits behind it unless its first
turn runs; instance_fetch (3), the optional InstanceFetcher locking a
named instance as a fetch that found it first would; instance_search (8),
ProviderAdmin.SearchInstances; signal_with_start (4), the optional
SignalStarter; work_handoff (3), the optional WorkHandOff writing a
turn's activities locked for the acking runtime;
lifecycle (15), what the Client's Suspend, Resume, Rewind and Restart need:
OrchestrationCommit.Suspend holding an instance's messages back until a
resume or cancellation brings them all, however many (for a provider
that is a SuspensionReader), an execution that ends clearing the
suspension, a search by the suspended state finding the instance, and
execution N+1 of a failed instance committed with a prefix
of history, a failed execution's fetch handing the KV it started with
(KVBaseline, until a rewind's RestoreKV restores it or a restart drops
it), and the next execution after a terminal one claimed once (of
two requests for it exactly one is accepted, per execution; for a
provider that is a NextExecutionWriter), a commit that only drains an
ended instance's late messages leaving its updatedAt at its end, and the
requests the next turn will take listed (for a PendingRequestReader).

Newer duroxide adds race_replay (src/provider_validation/race_replay.rs,
9 behaviours at 729fbb10): provider validations that run a Runtime over
the provider (duplicate starts, continue-as-new transitions while the
successor's start is not visible, version stamps). This package keeps to
the duroxide interfaces, so they are ported as the race_replay module of
durable/durabletest (the Go runtime's suite), under their Rust names, and run on every provider
that runs that suite. Its instance_locking (da71f3cb) changes no
behaviour's name: test_multi_threaded_lock_contention retries retryable
fetch errors for 5s, as here.

# Writing modules

Each module is one file holding its table of Tests in Rust source order;
modules.go lists the modules in one ordered table. Tests call t.Parallel, build their own provider with
newProvider, and use the shared helpers in helpers.go (startItem,
createInstance, mustFetch, mustAck, ...), which mirror the helpers of
Rust's provider_validation/mod.rs: fetches use a 30s lock and pollTimeout 0
unless a behaviour is about timing.
*/
package providertest
