package providertest

// modules is the suite: each module of duroxide's provider validation
// tests (src/provider_validation/*.rs) with its behaviours in Rust source
// order. One ordered table, not init-time registration, so the order of
// modules and tests is visible in one place and does not depend on file
// initialisation order.
var modules = []module{
	{"atomicity", atomicityTests},
	{"blocked_instances", blockedInstancesTests},
	{"bulk_deletion", bulkDeletionTests},
	{"cancellation", cancellationTests},
	{"capability_filtering", capabilityFilteringTests},
	{"custom_status", customStatusTests},
	{"deletion", deletionTests},
	{"error_handling", errorHandlingTests},
	{"heartbeats", heartbeatsTests},
	{"held_messages", heldMessagesTests},
	{"instance_creation", instanceCreationTests},
	{"instance_fetch", instanceFetchTests},
	{"instance_locking", instanceLockingTests},
	{"instance_search", instanceSearchTests},
	{"kv_store", kvStoreTests},
	{"lifecycle", lifecycleTests},
	{"lock_expiration", lockExpirationTests},
	{"long_polling", longPollingTests},
	{"management", managementTests},
	{"multi_execution", multiExecutionTests},
	{"poison_message", poisonMessageTests},
	{"prune", pruneTests},
	{"queue_semantics", queueSemanticsTests},
	{"sessions", sessionsTests},
	{"signal_with_start", signalWithStartTests},
	{"tag_filtering", tagFilteringTests},
	{"work_handoff", workHandOffTests},
}
