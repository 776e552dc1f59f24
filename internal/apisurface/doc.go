// Package apisurface has no code: its test reads the exported names of the
// module's user-facing packages and fails on test-only API or stuttering
// names there (issue 21), so they do not creep back.
//
// Start with apisurface_test.go.
package apisurface
