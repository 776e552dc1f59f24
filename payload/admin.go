package payload

import (
	"context"
	"errors"
	"slices"

	"github.com/duroxide-go/cdb/duroxide"
)

// admin decodes what the management contract reads and, for a codec that
// keeps payloads outside the store, deletes them with what the store
// deletes.
type admin struct {
	c *core
	a duroxide.ProviderAdmin
}

// EncodedPlaceholder replaces an output snippet (InstanceSummary.Output)
// that is encoded and cut short, which no codec can decode.
const EncodedPlaceholder = "<encoded payload>"

func (d *admin) ListInstances(ctx context.Context) ([]string, error) { return d.a.ListInstances(ctx) }

func (d *admin) ListInstancesByStatus(ctx context.Context, status string) ([]string, error) {
	return d.a.ListInstancesByStatus(ctx, status)
}

func (d *admin) ListExecutions(ctx context.Context, instance string) ([]uint64, error) {
	return d.a.ListExecutions(ctx, instance)
}

func (d *admin) ReadHistoryWithExecutionID(ctx context.Context, instance string, executionID uint64) ([]duroxide.Event, error) {
	h, err := d.a.ReadHistoryWithExecutionID(ctx, instance, executionID)
	if err != nil {
		return nil, err
	}
	h, err = d.c.dec().events(ctx, instance, h)
	return h, codecError("read_history_with_execution_id", err)
}

func (d *admin) ReadHistory(ctx context.Context, instance string) ([]duroxide.Event, error) {
	h, err := d.a.ReadHistory(ctx, instance)
	if err != nil {
		return nil, err
	}
	h, err = d.c.dec().events(ctx, instance, h)
	return h, codecError("read_history", err)
}

func (d *admin) LatestExecutionID(ctx context.Context, instance string) (uint64, error) {
	return d.a.LatestExecutionID(ctx, instance)
}

func (d *admin) InstanceInfo(ctx context.Context, instance string) (*duroxide.InstanceInfo, error) {
	info, err := d.a.InstanceInfo(ctx, instance)
	if err != nil || info == nil {
		return info, err
	}
	out := *info
	out.Output = d.c.dec().opt(ctx, Scope{Instance: instance, ExecutionID: info.CurrentExecutionID}, info.Output, &err)
	return &out, codecError("instance_info", err)
}

func (d *admin) ExecutionInfo(ctx context.Context, instance string, executionID uint64) (*duroxide.ExecutionInfo, error) {
	info, err := d.a.ExecutionInfo(ctx, instance, executionID)
	if err != nil || info == nil {
		return info, err
	}
	out := *info
	out.Output = d.c.dec().opt(ctx, Scope{Instance: instance, ExecutionID: executionID}, info.Output, &err)
	return &out, codecError("execution_info", err)
}

func (d *admin) SystemMetrics(ctx context.Context) (*duroxide.SystemMetrics, error) {
	return d.a.SystemMetrics(ctx)
}

func (d *admin) QueueDepths(ctx context.Context) (*duroxide.QueueDepths, error) {
	return d.a.QueueDepths(ctx)
}

func (d *admin) ListChildren(ctx context.Context, instance string) ([]string, error) {
	return d.a.ListChildren(ctx, instance)
}

func (d *admin) ParentID(ctx context.Context, instance string) (string, bool, error) {
	return d.a.ParentID(ctx, instance)
}

func (d *admin) InstanceTree(ctx context.Context, instance string) (*duroxide.InstanceTree, error) {
	return d.a.InstanceTree(ctx, instance)
}

func (d *admin) DeleteInstancesAtomic(ctx context.Context, ids []string, force bool) (*duroxide.DeleteInstanceResult, error) {
	res, err := d.a.DeleteInstancesAtomic(ctx, ids, force)
	if err != nil {
		return res, err
	}
	return res, d.deleteAll(ctx, "delete_instances_atomic", ids)
}

func (d *admin) DeleteInstance(ctx context.Context, instance string, force bool) (*duroxide.DeleteInstanceResult, error) {
	var ids []string
	if len(d.c.deleters) > 0 {
		// The tree must be read before the store forgets it.
		if tree, err := d.a.InstanceTree(ctx, instance); err == nil {
			ids = tree.AllIDs
		}
	}
	res, err := d.a.DeleteInstance(ctx, instance, force)
	if err != nil {
		return res, err
	}
	return res, d.deleteAll(ctx, "delete_instance", ids)
}

func (d *admin) DeleteInstanceBulk(ctx context.Context, filter duroxide.InstanceFilter) (*duroxide.DeleteInstanceResult, error) {
	before, err := d.instancesIfDeleting(ctx)
	if err != nil {
		return nil, err
	}
	res, err := d.a.DeleteInstanceBulk(ctx, filter)
	if err != nil || before == nil {
		return res, err
	}
	after, err := d.a.ListInstances(ctx)
	if err != nil {
		return res, err
	}
	return res, d.deleteAll(ctx, "delete_instance_bulk", gone(before, after))
}

func (d *admin) PruneExecutions(ctx context.Context, instance string, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	if len(d.c.deleters) == 0 {
		return d.a.PruneExecutions(ctx, instance, options)
	}
	before, err := d.a.ListExecutions(ctx, instance)
	if err != nil {
		return nil, err
	}
	res, err := d.a.PruneExecutions(ctx, instance, options)
	if err != nil {
		return res, err
	}
	return res, d.prunePayloads(ctx, instance, before)
}

func (d *admin) PruneExecutionsBulk(ctx context.Context, filter duroxide.InstanceFilter, options duroxide.PruneOptions) (*duroxide.PruneResult, error) {
	if len(d.c.deleters) == 0 {
		return d.a.PruneExecutionsBulk(ctx, filter, options)
	}
	ids := filter.InstanceIDs
	if ids == nil {
		var err error
		if ids, err = d.a.ListInstances(ctx); err != nil {
			return nil, err
		}
	}
	before := make(map[string][]uint64, len(ids))
	for _, id := range ids {
		ex, err := d.a.ListExecutions(ctx, id)
		if err != nil {
			return nil, err
		}
		before[id] = ex
	}
	res, err := d.a.PruneExecutionsBulk(ctx, filter, options)
	if err != nil {
		return res, err
	}
	var errs []error
	for _, id := range ids {
		errs = append(errs, d.prunePayloads(ctx, id, before[id]))
	}
	return res, errors.Join(errs...)
}

func (d *admin) SearchInstances(ctx context.Context, q duroxide.InstanceQuery) (*duroxide.InstancePage, error) {
	page, err := d.a.SearchInstances(ctx, q)
	if err != nil || page == nil {
		return page, err
	}
	out := *page
	out.Instances = slices.Clone(page.Instances)
	for i := range out.Instances {
		out.Instances[i].Output = d.snippet(ctx, out.Instances[i])
	}
	return &out, nil
}

// snippet decodes an output snippet when it holds the whole payload;
// one cut short cannot be decoded and shows EncodedPlaceholder.
func (d *admin) snippet(ctx context.Context, s duroxide.InstanceSummary) string {
	if !IsEncoded(s.Output) {
		return s.Output
	}
	v, err := d.c.ch.decode(ctx, Scope{Instance: s.InstanceID, ExecutionID: s.ExecutionID}, s.Output)
	if err != nil {
		return EncodedPlaceholder
	}
	if r := []rune(v); len(r) > duroxide.OutputSnippetChars {
		v = string(r[:duroxide.OutputSnippetChars])
	}
	return v
}

// instancesIfDeleting lists the instances before a bulk deletion, only
// when a codec has payloads to delete with them.
func (d *admin) instancesIfDeleting(ctx context.Context) ([]string, error) {
	if len(d.c.deleters) == 0 {
		return nil, nil
	}
	ids, err := d.a.ListInstances(ctx)
	if ids == nil && err == nil {
		ids = []string{}
	}
	return ids, err
}

// prunePayloads deletes the payloads of the executions of instance that
// were in before and are no longer stored.
func (d *admin) prunePayloads(ctx context.Context, instance string, before []uint64) error {
	after, err := d.a.ListExecutions(ctx, instance)
	if err != nil {
		return err
	}
	var pruned []uint64
	for _, e := range before {
		if !slices.Contains(after, e) {
			pruned = append(pruned, e)
		}
	}
	if len(pruned) == 0 {
		return nil
	}
	var errs []error
	for _, del := range d.c.deleters {
		errs = append(errs, del.DeletePayloads(ctx, instance, pruned))
	}
	return codecError("prune_executions", errors.Join(errs...))
}

// deleteAll deletes everything the codecs keep for the instances the store
// deleted. The store's deletion stands whatever this returns.
func (d *admin) deleteAll(ctx context.Context, op string, ids []string) error {
	var errs []error
	for _, id := range ids {
		for _, del := range d.c.deleters {
			errs = append(errs, del.DeletePayloads(ctx, id, nil))
		}
	}
	return codecError(op, errors.Join(errs...))
}

// gone returns the ids in before that are not in after.
func gone(before, after []string) []string {
	left := make(map[string]bool, len(after))
	for _, id := range after {
		left[id] = true
	}
	var out []string
	for _, id := range before {
		if !left[id] {
			out = append(out, id)
		}
	}
	return out
}
