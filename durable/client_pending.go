package durable

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
)

// PendingRequest is a request made of an instance (Client.Cancel,
// Suspend, Resume, Rewind, Redrive, Restart) that no runtime has taken
// yet: it takes effect at the instance's next turn, and until then the
// instance's status shows no sign of it.
type PendingRequest struct {
	// Kind is "cancel", "suspend", "resume", "rewind", "redrive" or
	// "restart".
	Kind string
	// Reason is the reason the request gave ("" for a restart).
	Reason string
}

// PendingRequests lists instance's pending requests, oldest first. It
// costs one query in the instance's partition, so Status leaves it out;
// the CLI's show and the dashboard's instance page call it. A provider
// that is not a duroxide.PendingRequestReader (memprovider and the Cosmos
// provider are) reports none.
func (c *Client) PendingRequests(ctx context.Context, instance string) ([]PendingRequest, error) {
	r, ok := c.p.(duroxide.PendingRequestReader)
	if !ok {
		return nil, nil
	}
	items, err := r.PendingRequests(ctx, instance)
	if err != nil {
		return nil, err
	}
	out := make([]PendingRequest, 0, len(items))
	for _, w := range items {
		if p, ok := pendingRequestOf(w); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// pendingRequestOf names the request w makes.
func pendingRequestOf(w duroxide.WorkItem) (PendingRequest, bool) {
	switch v := w.(type) {
	case duroxide.CancelInstanceItem:
		return PendingRequest{Kind: "cancel", Reason: v.Reason}, true
	case duroxide.SuspendInstanceItem:
		return PendingRequest{Kind: "suspend", Reason: v.Reason}, true
	case duroxide.ResumeInstanceItem:
		return PendingRequest{Kind: "resume", Reason: v.Reason}, true
	case duroxide.RewindInstanceItem:
		return PendingRequest{Kind: "rewind", Reason: v.Reason}, true
	case duroxide.RedriveInstanceItem:
		return PendingRequest{Kind: "redrive", Reason: v.Reason}, true
	case duroxide.ContinueAsNewItem:
		if v.RestartOf != nil {
			return PendingRequest{Kind: "restart"}, true
		}
	}
	return PendingRequest{}, false
}
