package durable

import (
	"github.com/duroxide-go/cdb/duroxide"
)

// The nondeterminism policy (Options.Nondeterminism). A turn is
// nondeterministic when the orchestration code does not replay the
// history it wrote: typically the code changed under running instances.
// duroxide fails the instance for good, and rolling the code back cannot
// bring it back. Under NondeterminismBlock the runtime instead commits
// nothing: the instance's messages are released with a backoff and the
// attempt uncounted (BlockOrchestrationItem), so the instance waits,
// history untouched, until code that replays it is deployed; its next
// clean turn clears the blocked mark. Only a mismatch between the code and
// the history is held (turn.codeMismatch): a message that disagrees
// with history, or a corrupt history, cannot be fixed by deploying code,
// so it fails the instance under either policy.

// nondeterministic reports a nondeterministic turn (ERROR log, counter)
// and returns the message to hold the instance with under
// NondeterminismBlock, or "" when the policy fails it.
func (rt *Runtime) nondeterministic(instance string, executionID uint64, name, version string, d duroxide.ErrorDetails) string {
	msg := displayMessage(d)
	policy := rt.opts.Nondeterminism
	rt.tel.nondeterminism(name, policy)
	if policy == NondeterminismFail {
		rt.log.Error("nondeterminism: the orchestration code does not match the instance's history; failing the instance (NondeterminismFail)",
			"instance_id", instance, "execution_id", executionID, "orchestration_name", name, "orchestration_version", version, "error", msg)
		return ""
	}
	return msg
}

// block holds the instance: nothing is committed, the messages come back
// after NondeterminismBackoff (growing with consecutive blocked turns) and
// the attempt is not counted towards MaxAttempts.
func (rt *Runtime) block(item *duroxide.OrchestrationItem, instance, reason string) {
	rt.blockedMu.Lock()
	rt.blockedTurns[instance]++
	n := rt.blockedTurns[instance]
	rt.blockedMu.Unlock()
	delay := rt.opts.NondeterminismBackoff.Delay(n)
	rt.tel.blocked(item.LockToken)
	rt.log.Error("nondeterminism: the orchestration code does not match the instance's history; holding the instance, "+
		"history untouched, until code that replays it is deployed (NondeterminismBlock)",
		"instance_id", instance, "execution_id", item.ExecutionID, "orchestration_name", item.OrchestrationName,
		"orchestration_version", item.Version, "error", reason, "blocked_turns", n, "backoff", delay)
	if err := rt.p.BlockOrchestrationItem(rt.tel.context(item.LockToken, rt.ctx), item.LockToken, delay, reason); err != nil {
		rt.log.Warn("releasing a blocked instance failed; its lock expires instead", "instance_id", instance, "error", err)
	}
}
