package durabletest

// module is one ported Rust test file: its stem names the subtest level.
type module struct {
	name  string
	tests func() []sample
}

// modules lists the ported files in a fixed order; Run runs each as
// t.Run(<file stem>).
func modules() []module {
	return []module{
		{"e2e_samples", samples},
		{"cancellation_tests", cancellationTests},
		{"errors_tests", errorsTests},
		{"queue_event_tests", queueEventTests},
		{"custom_status_tests", customStatusTests},
		{"async_block_tests", asyncBlockTests},
		{"system_calls_test", systemCallsTests},
		{"timer_tests", timerTests},
		{"nondeterminism_tests", nondeterminismTests},
		{"orchestration_status_tests", orchestrationStatusTests},
		{"continue_as_new_tests", continueAsNewTests},
		{"typed_composability_tests", typedComposabilityTests},
		{"futures_tests", futuresTests},
		{"kv_store_tests", kvStoreTests},
		{"schedule_with_retry_tests", scheduleWithRetryTests},
		{"session_e2e_tests", sessionE2ETests},
		{"versioning_tests", versioningTests},
		{"capability_filtering_tests", capabilityFilteringTests},
		{"poison_message_tests", poisonMessageTests},
		{"lock_timeout_tests", lockTimeoutTests},
		{"unregistered_backoff_tests", unregisteredBackoffTests},
		{"reliability_tests", reliabilityTests},
		{"recovery_tests", recoveryTests},
		{"races_tests", racesTests},
		{"concurrency_tests", concurrencyTests},
		{"semantics_tests", semanticsTests},
		// src/provider_validation/race_replay.rs: provider validations
		// that need a runtime.
		{"race_replay", raceReplayTests},
		// tests/scenarios/suborch_id_collision.rs: the collision defence
		// race_replay's duplicate start relies on.
		{"suborch_id_collision", subOrchIDCollisionTests},
		// Go-only: transient store faults on renewals and acks.
		{"transient_fault_tests", transientFaultTests},
		{"api_edge_tests", apiEdgeTests},
		// Go-only: search and bulk operations (issue 22).
		{"operations_tests", operationsTests},
		// Go-only: rewind, re-drive and restart.
		{"lifecycle_tests", lifecycleTests},
		// Go-only: a child's result reaches the parent execution that
		// called it, whichever runtime completes the child (issue 29).
		{"sub_orchestration_routing_tests", subOrchestrationRoutingTests},
		// Go-only: nothing of a deleted tree reaches the next life of its
		// root's id.
		{"deletion_stray_tests", deletionStrayTests},
		// Go-only: signal-with-start and updates (issue 33).
		{"signal_with_start_tests", signalWithStartTests},
		{"update_tests", updateTests},
		// Go-only: ctx.Patched and ctx.DeprecatePatch across a code change
		// (issue 34).
		{"patching_tests", patchingTests},
		// Go-only: ctx.HistorySize, ctx.ContinueAsNewSuggested and the
		// history size warnings (issue 34).
		{"history_size_tests", historySizeTests},
		// Go-only: delayed starts (issue 33).
		{"delayed_start_tests", delayedStartTests},
		// Go-only: execution and instance timeouts (issue 33).
		{"timeout_tests", timeoutTests},
		// Go-only: payload codecs (issue 34).
		{"payload_codec_tests", payloadCodecTests},
	}
}
