// Package stress drives duroxide's stress workloads against any durable
// execution system and measures them, so that cmd/duroxide-stress and the
// peers harness (bench/peers) report the same numbers the same way.
//
// Start with [Run], a [Config] and a [Target] ([NewDuroxide] is this
// library's).
//
// The workload is duroxide's parallel-orchestrations test
// (src/provider_stress_test): keep InFlight instances running; each fans out
// FanOut activities that sleep ActivityDelay, and joins them. A system plugs
// in through [Target]; [Run] measures throughput, per-orchestration latency
// (start call to observed completion), CPU and peak memory.
package stress
