// Package doccheck has no code: its test type-checks every Go snippet of
// the repository's README.md and docs/*.md against the module's packages,
// so that documentation stops compiling when the API it shows changes.
// Start with doccheck_test.go; the rules for writing a snippet are in
// docs/testing.md ("Checked documentation").
package doccheck
