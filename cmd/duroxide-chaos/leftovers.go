package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/duroxide-go/cdb"
)

// What a run leaves behind in the store once its workers stopped: counted
// for the report (outbox_left, queue_left, locks_left) and, after a failed
// run, written out whole for whoever reads its logs.

// countLeftovers counts outbox intents, queue messages and live locks. A
// lock of a killed worker lasts until it expires, so locks are counted
// once the longest lock timeout has passed since the workers stopped (an
// expired lock is free); what remains was never going to be released.
// With skewed clocks "expired" is judged on the clock furthest ahead.
func (d *driver) countLeftovers(ctx context.Context, r *Report) error {
	ct, err := d.srv.Client().NewContainer(cdb.DefaultDatabase, cdb.DefaultContainer)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(max(workerLockTimeout, sessionLockTimeout, orchLockTimeout) + 2*time.Second)
	for {
		r.OutboxLeft, r.QueueLeft, r.LocksLeft = 0, 0, 0
		// Judged on the clock furthest ahead: the lock of a worker whose
		// clock runs ahead lasts that much longer in real time, and it is
		// free as soon as that worker's clock says so.
		now := time.Now().Add(d.cfg.MaxClockSkew).UnixMilli()
		q := "SELECT c.type, c.lockToken, c.lockedUntil, c.ownerId FROM c WHERE c.type IN (@outbox, @orch, @worker, @instance, @session)"
		params := []azcosmos.QueryParameter{{Name: "@outbox", Value: "outbox_intent"}, {Name: "@orch", Value: "orch_queue"},
			{Name: "@worker", Value: "worker_queue"}, {Name: "@instance", Value: "instance"}, {Name: "@session", Value: "session"}}
		pager := ct.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{QueryParameters: params})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("scanning for leftovers: %w", err)
			}
			for _, item := range page.Items {
				var doc leftover
				if err := json.Unmarshal(item, &doc); err != nil {
					return err
				}
				switch doc.Type {
				case "outbox_intent":
					r.OutboxLeft++
				case "orch_queue", "worker_queue":
					r.QueueLeft++
				}
				locked := doc.LockedUntil != nil && *doc.LockedUntil > now && (doc.LockToken != nil || (doc.OwnerID != nil && *doc.OwnerID != ""))
				if locked {
					r.LocksLeft++
				}
			}
		}
		if r.LocksLeft == 0 || time.Now().After(deadline) {
			if r.QueueLeft > 0 {
				return d.dumpLeftovers(ctx, ct)
			}
			return nil
		}
		if sleepCtx(ctx, time.Second) {
			return ctx.Err()
		}
	}
}

// waitOutboxDrained waits, while the workers still run, until the store
// holds no outbox intent, for at most the time the workers' maintenance
// takes to deliver one a killed worker left: its partition's lease must
// pass to a live worker, whose sweep takes intents once they are old
// enough on its own clock. An instance can complete in that time (the
// intent delivered, its deletion not), and stopping the workers then
// would count as left an intent the store was about to clean; one that
// outlives the bound is counted (outbox_left).
func (d *driver) waitOutboxDrained(ctx context.Context) {
	ct, err := d.srv.Client().NewContainer(cdb.DefaultDatabase, cdb.DefaultContainer)
	if err != nil {
		return
	}
	bound := workerLeaseDuration + 2*workerMaintenanceInterval + workerOutboxMinAge + 2*d.cfg.MaxClockSkew + 2*time.Second
	deadline := time.Now().Add(bound)
	for {
		n, err := countOutbox(ctx, ct)
		if err == nil && n == 0 || time.Now().After(deadline) {
			return
		}
		if err == nil {
			d.logf("%d outbox intents pending; waiting for the workers' maintenance", n)
		}
		if sleepCtx(ctx, time.Second) {
			return
		}
	}
}

// countOutbox counts the outbox intents in the store (by listing them:
// the gateway refuses a cross-partition aggregate from this SDK).
func countOutbox(ctx context.Context, ct *azcosmos.ContainerClient) (int, error) {
	q := "SELECT c.id FROM c WHERE c.type = @outbox"
	pager := ct.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{
		QueryParameters: []azcosmos.QueryParameter{{Name: "@outbox", Value: "outbox_intent"}}})
	n := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += len(page.Items)
	}
	return n, nil
}

// dumpLeftovers writes every queue document left, whole, and the instance
// documents they belong to, to leftovers.json in the run's directory: a
// message nobody took is explained by its fields (visibility, lock, a
// stage marker), which the counts do not show.
func (d *driver) dumpLeftovers(ctx context.Context, ct *azcosmos.ContainerClient) error {
	var docs []json.RawMessage
	instances := map[string]bool{}
	scan := func(q string, params []azcosmos.QueryParameter, keep func(map[string]any) bool) error {
		pager := ct.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{QueryParameters: params})
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				return fmt.Errorf("dumping leftovers: %w", err)
			}
			for _, item := range page.Items {
				var m map[string]any
				if json.Unmarshal(item, &m) == nil && keep(m) {
					docs = append(docs, item)
				}
			}
		}
		return nil
	}
	err := scan("SELECT * FROM c WHERE c.type IN (@orch, @worker)",
		[]azcosmos.QueryParameter{{Name: "@orch", Value: "orch_queue"}, {Name: "@worker", Value: "worker_queue"}},
		func(m map[string]any) bool {
			if inst, ok := m["instanceId"].(string); ok {
				instances[inst] = true
			}
			return true
		})
	if err != nil {
		return err
	}
	queued := len(docs)
	err = scan("SELECT * FROM c WHERE c.type = @instance", []azcosmos.QueryParameter{{Name: "@instance", Value: "instance"}},
		func(m map[string]any) bool { inst, _ := m["instanceId"].(string); return instances[inst] })
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(docs, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(d.dir, "leftovers.json")
	d.logf("%d queue documents left; they and their instances' documents are in %s", queued, path)
	return os.WriteFile(path, out, 0o600)
}

// leftover is the part of a document countLeftovers looks at.
type leftover struct {
	Type        string  `json:"type"`
	LockToken   *string `json:"lockToken"`
	LockedUntil *int64  `json:"lockedUntil"`
	OwnerID     *string `json:"ownerId"`
}
