// Package providertest is the Go port of duroxide's provider validation
// suite (Rust src/provider_validation, feature "provider-test"). It checks
// that a duroxide.Provider honours the storage contract the runtime relies
// on, using only the duroxide interfaces, so any provider can run it.
//
// See Run and RunModules. Subtests are named <module>/<rust_test_name>.
package providertest
