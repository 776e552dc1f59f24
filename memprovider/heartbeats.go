package memprovider

import (
	"cmp"
	"context"
	"slices"

	"github.com/duroxide-go/cdb/duroxide"
)

var (
	_ duroxide.HeartbeatRecorder = (*Provider)(nil)
	_ duroxide.HeartbeatReader   = (*Provider)(nil)
)

// ActivityHeartbeats implements duroxide.HeartbeatReader.
func (p *Provider) ActivityHeartbeats(ctx context.Context, instance string) ([]duroxide.ActivityHeartbeat, error) {
	const op = "activity_heartbeats"
	if err := ctx.Err(); err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	if err := p.checkIDs(op, instance); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []duroxide.ActivityHeartbeat
	for _, m := range p.workQueue {
		if m.item.Instance == instance && m.heartbeat != nil {
			out = append(out, duroxide.ActivityHeartbeat{ExecutionID: m.item.ExecutionID, ActivityID: m.item.ID, Name: m.item.Name, Heartbeat: *m.heartbeat})
		}
	}
	sortHeartbeats(out)
	return out, nil
}

func sortHeartbeats(hs []duroxide.ActivityHeartbeat) {
	slices.SortFunc(hs, func(a, b duroxide.ActivityHeartbeat) int {
		return cmp.Or(cmp.Compare(a.ExecutionID, b.ExecutionID), cmp.Compare(a.ActivityID, b.ActivityID))
	})
}
