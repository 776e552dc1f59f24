package durabletest

// module is one ported Rust test file: its stem (the subtest level under
// the backend) and its tests in the file's order.
type module struct {
	stem  string
	tests func() []sample
}

// modules is the one ordered table of ported files; Run runs
// <stem>/<Rust test name> for each. Porters of further files add a row.
func modules() []module {
	return []module{
		{"e2e_samples", samples},
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
	}
}
