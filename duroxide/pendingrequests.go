package duroxide

import "context"

// PendingRequestReader is the optional Provider capability that lists the
// requests an operator made of an instance that its next turn has not
// taken yet: suspend, resume, cancel, rewind, re-drive and restart (a
// ContinueAsNewItem a client enqueued for an ended instance) take effect
// only when a runtime next runs the instance, and until then a status
// shows no sign of them. Go-only.
type PendingRequestReader interface {
	// PendingRequests returns instance's queued orchestrator messages that
	// are such requests (IsRequest), oldest first; none for an unknown
	// instance. Messages locked by a turn in progress are still pending.
	PendingRequests(ctx context.Context, instance string) ([]WorkItem, error)
}

// IsRequest reports whether w is a request an operator makes of an
// instance (PendingRequestReader): a cancel, suspend, resume, rewind,
// re-drive, or the ContinueAsNewItem of a restart (RestartOf set).
func IsRequest(w WorkItem) bool {
	switch v := w.(type) {
	case CancelInstanceItem, SuspendInstanceItem, ResumeInstanceItem, RewindInstanceItem, RedriveInstanceItem:
		return true
	case ContinueAsNewItem:
		return v.RestartOf != nil
	}
	return false
}

// RequestVariants are the work item variants IsRequest may accept, as
// their JSON encodings begin ({"<variant>":...}): a provider can select
// the candidates in its query and leave the last word to IsRequest.
var RequestVariants = []string{"CancelInstance", "SuspendInstance", "ResumeInstance", "RewindInstance", "RedriveInstance", "ContinueAsNew"}
