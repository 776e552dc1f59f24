// Package schedule runs orchestrations on a schedule: cron expressions
// with time zones, intervals with offsets and calendar lists. A schedule
// is itself an orchestration (timers, children with deterministic IDs per
// fire time, continue-as-new), so it survives every process being down
// and fires at most once per time across any number of processes.
package schedule
