package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"sort"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Reading instance documents: single reads that hide tombstoned
// instances, and the projected cross-partition scans that admin listings,
// bulk deletion and bulk pruning share.

// readInstance reads the instance document; nil (no error) if absent or
// being deleted.
func (p *Provider) readInstance(ctx context.Context, inst string) (*instanceDoc, azcore.ETag, error) {
	doc, etag, err := p.readInstanceRaw(ctx, inst)
	if doc != nil && doc.Deleted != nil {
		return nil, "", err
	}
	return doc, etag, err
}

// readInstanceRaw reads the instance document including a tombstoned one.
func (p *Provider) readInstanceRaw(ctx context.Context, inst string) (*instanceDoc, azcore.ETag, error) {
	body, etag, err := p.st.Read(ctx, inst, instanceDocID(inst))
	if errors.Is(err, cosmos.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var doc instanceDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, "", duroxide.Permanent("read_instance", "instance document of %q cannot be decoded: %v", inst, err)
	}
	doc.ETag = string(etag)
	return &doc, etag, nil
}

// readInstancePrimary reads the instance document from the partition's
// primary (a one-read batch), nil when it is missing or tombstoned. After
// a 412 the lock's fate is decided on it: a lagging replica could show an
// ETag or lock expiry the primary has already moved past.
func (p *Provider) readInstancePrimary(ctx context.Context, inst string) (*instanceDoc, azcore.ETag, error) {
	res, err := p.readLockedPrimary(ctx, inst, []string{instanceDocID(inst)})
	if errors.Is(err, cosmos.ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	var doc instanceDoc
	if err := json.Unmarshal(res.Bodies[0], &doc); err != nil {
		return nil, "", duroxide.Permanent("read_instance", "instance document of %q cannot be decoded: %v", inst, err)
	}
	if doc.Deleted != nil {
		return nil, "", nil
	}
	doc.ETag = string(res.ETags[0])
	return &doc, res.ETags[0], nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func isTerminal(status string) bool {
	switch status {
	case duroxide.StatusCompleted, duroxide.StatusFailed, duroxide.StatusContinuedAsNew:
		return true
	}
	return false
}

// instanceRow is the projection store-wide queries read.
type instanceRow struct {
	InstanceID       string      `json:"instanceId"`
	Status           string      `json:"status"`
	ParentInstanceID *string     `json:"parentInstanceId"`
	CompletedAt      *int64      `json:"completedAt"`
	Executions       []execEntry `json:"executions"`
	ExecutionCount   int         `json:"executionCount"`
	EventCount       int         `json:"eventCount"`
	CurrentExecution uint64      `json:"currentExecutionId"`
	ETag             string      `json:"_etag"`
}

const liveInstances = "c.type = 'instance' AND NOT IS_DEFINED(c.provisional) AND NOT IS_DEFINED(c.deleted)"

func (p *Provider) scanInstances(ctx context.Context, fields, where string, params cosmos.QueryParams, each func(r instanceRow)) error {
	q := "SELECT " + fields + " FROM c WHERE " + liveInstances + where
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{PageSize: 1000}, func(raw []byte) bool {
		var r instanceRow
		if json.Unmarshal(raw, &r) == nil {
			each(r)
		}
		return true
	})
	return err
}

// mustInstance reads a live instance or fails with a permanent error.
func (p *Provider) mustInstance(ctx context.Context, op, instance string) (*instanceDoc, azcore.ETag, error) {
	if err := validateInstanceID(op, instance); err != nil {
		return nil, "", err
	}
	doc, etag, err := p.readInstance(ctx, instance)
	if err != nil {
		return nil, "", duroxide.Wrap(op, err)
	}
	if !doc.exists() {
		return nil, "", duroxide.Kinded(duroxide.ErrInstanceNotFound, op, "instance %q not found", instance)
	}
	return doc, etag, nil
}

// rowFields is the projection of instanceRow used by deletions.
const rowFields = "c.instanceId, c.status, c.parentInstanceId, c.completedAt, c.currentExecutionId, c._etag"

func (r instanceRow) doc() *instanceDoc {
	return &instanceDoc{ID: instanceDocID(r.InstanceID), InstanceID: r.InstanceID, Status: r.Status, CurrentExecutionID: r.CurrentExecution}
}

// filterInstances returns the instances an InstanceFilter selects (before
// its limit), oldest completion first.
func (p *Provider) filterInstances(ctx context.Context, op string, f duroxide.InstanceFilter) ([]instanceRow, error) {
	where, params := "", cosmos.QueryParams{}
	if f.InstanceIDs != nil {
		if len(f.InstanceIDs) == 0 {
			return nil, nil
		}
		where += " AND ARRAY_CONTAINS(@ids, c.instanceId)"
		params = params.Add("@ids", f.InstanceIDs)
	}
	if f.CompletedBefore != nil {
		where += " AND c.completedAt < @before"
		params = params.Add("@before", *f.CompletedBefore)
	}
	var rows []instanceRow
	err := p.scanInstances(ctx, rowFields, where, params, func(r instanceRow) { rows = append(rows, r) })
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := deref(rows[i].CompletedAt), deref(rows[j].CompletedAt)
		if a != b {
			return a < b
		}
		return rows[i].InstanceID < rows[j].InstanceID
	})
	return rows, nil
}
