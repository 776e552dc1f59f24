package duroxide

import "context"

// StatusReader is an optional Provider capability the durable Client's
// Client.Status uses: an instance's current history, custom
// status and blocked reason in one call, so that a provider keeping the
// last two in the record it reads for the first pays for one read, not
// three (Read, CustomStatus and BlockedReason each read it). Without
// it the Client makes those calls.
type StatusReader interface {
	// ReadStatus returns what Read, CustomStatus(instance, 0) and
	// BlockedReason, called in that order, return: the custom status and
	// blocked reason are never older than the history.
	ReadStatus(ctx context.Context, instance string) (*InstanceStatus, error)
}

// InstanceStatus is a StatusReader's answer.
type InstanceStatus struct {
	// History is the current execution's history (empty: none yet).
	History []Event
	// CustomStatus is nil when none was ever set.
	CustomStatus *CustomStatus
	// BlockedReason is "" unless the instance is blocked.
	BlockedReason string
	// Suspended reports a suspended instance (a SuspensionReader's
	// answer), SuspendedReason the reason given.
	Suspended       bool
	SuspendedReason string
}
