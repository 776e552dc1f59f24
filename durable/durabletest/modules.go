package durabletest

// module is one ported Rust test file: its stem (the subtest level under
// the backend) and its tests in the file's order.
type module struct {
	stem  string
	tests func() []test
}

// test is one ported Rust test of a module.
type test struct {
	name string
	run  func(e *env)
	// pure marks a test that needs no provider (Rust's plain #[test] unit
	// tests); it runs without asking the factory for a store.
	pure bool
}

// fromSamples lists samples as tests.
func fromSamples() []test {
	var out []test
	for _, s := range samples() {
		out = append(out, test{name: s.name, run: s.run})
	}
	return out
}

// modules is the one ordered table of ported files; Run runs
// <stem>/<Rust test name> for each. Porters of further files add a row.
func modules() []module {
	return []module{
		{"e2e_samples", fromSamples},
		{"kv_store_tests", kvStoreTests},
		{"schedule_with_retry_tests", scheduleWithRetryTests},
	}
}
