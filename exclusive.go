package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// An Exclusive store (Options.Exclusive) has one live user, this
// process, so every lock and session it holds at New belongs to a dead
// one: waiting out their expiries (a worker lock's 30 s, plus the
// clock-skew margin) would only delay the work they hold. New expires
// them before anything runs; the documents stay as they are otherwise,
// so what happens next is exactly what happens when such a lock lapses
// (the takeover paths every provider already has), only sooner.

// lockedDoc is a document holding a lock or session that has not
// expired.
type lockedDoc struct {
	ID         string `json:"id"`
	InstanceID string `json:"instanceId"`
}

// releaseDeadLocks expires every unexpired lockedUntil in the container:
// instance and queue locks and worker sessions.
func (p *Provider) releaseDeadLocks(ctx context.Context) error {
	now := ms(p.now())
	var docs []lockedDoc
	q := "SELECT c.id, c.instanceId FROM c WHERE c.lockedUntil > @now"
	_, err := p.st.Query(ctx, q, cosmos.QueryParams{}.Add("@now", now), cosmos.QueryOptions{}, func(b []byte) bool {
		var d lockedDoc
		if json.Unmarshal(b, &d) == nil && d.ID != "" {
			docs = append(docs, d)
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("cdb: finding the locks an earlier process left: %w", err)
	}
	for _, d := range docs {
		var ops azcosmos.PatchOperations
		ops.AppendSet("/lockedUntil", now-1)
		if _, _, err := p.st.Patch(ctx, d.InstanceID, d.ID, ops, nil, false); err != nil && !errors.Is(err, cosmos.ErrNotFound) {
			return fmt.Errorf("cdb: releasing a lock an earlier process left: %w", err)
		}
	}
	if len(docs) > 0 {
		p.opts.Logger.Info("released the locks and sessions a dead process left in an exclusive store", "count", len(docs))
	}
	return nil
}
