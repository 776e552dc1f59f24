package durable

import (
	"context"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// ActivityHeartbeat is the last heartbeat an outstanding activity's
// attempts stored (ActivityContext.Heartbeat).
type ActivityHeartbeat struct {
	ExecutionID uint64
	ActivityID  uint64 // the ActivityScheduled event id
	Name        string
	// Details are the details as the typed codec encoded them (a string
	// as its raw text, anything else as JSON).
	Details string
	// At is when the store recorded them.
	At time.Time
}

// ActivityHeartbeats lists the heartbeats of instance's activities that
// are still outstanding (scheduled, not yet completed) and have
// heartbeated, by execution and activity id. It costs one query in the
// instance's partition, so Status leaves it out; the CLI's show and the
// dashboard's instance page call it. A provider that is not a
// duroxide.HeartbeatReader (memprovider and the Cosmos provider are)
// reports none.
func (c *Client) ActivityHeartbeats(ctx context.Context, instance string) ([]ActivityHeartbeat, error) {
	r, ok := c.p.(duroxide.HeartbeatReader)
	if !ok {
		return nil, nil
	}
	hs, err := r.ActivityHeartbeats(ctx, instance)
	if err != nil {
		return nil, err
	}
	out := make([]ActivityHeartbeat, len(hs))
	for i, h := range hs {
		out[i] = ActivityHeartbeat{ExecutionID: h.ExecutionID, ActivityID: h.ActivityID, Name: h.Name, Details: h.Details, At: time.UnixMilli(h.AtMs)}
	}
	return out, nil
}
