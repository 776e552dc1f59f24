// Package durablecheck is a go/analysis pass that reports constructs that
// are not replay-safe in durable orchestration code.
package durablecheck
