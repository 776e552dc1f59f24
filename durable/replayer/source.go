package replayer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/duroxide-go/cdb/duroxide"
)

// Execution is one stored execution's history as a Source yields it.
type Execution struct {
	Instance      string                      `json:"instance"`
	ExecutionID   uint64                      `json:"execution_id"`
	Orchestration string                      `json:"orchestration"`
	Version       string                      `json:"version"`
	Status        string                      `json:"status,omitempty"`
	KVSnapshot    map[string]duroxide.KVEntry `json:"-"`
	Events        []duroxide.Event            `json:"events"`
	// ReadError is set, and Events empty, when the stored history could
	// not be read or decoded; the execution is reported as a history error.
	ReadError string `json:"read_error,omitempty"`
}

// Source yields the executions to check, one at a time, to fn; an error
// from fn stops it and is returned.
type Source interface {
	Executions(ctx context.Context, fn func(Execution) error) error
}

// Filter selects a provider's instances. Empty fields select everything.
type Filter struct {
	// Orchestration keeps instances of this orchestration name.
	Orchestration string
	// Status keeps instances in this status ("Running", "Completed",
	// "Failed", ...; ProviderAdmin.ListInstancesByStatus).
	Status string
	// IDPrefix keeps instances whose id starts with it.
	IDPrefix string
	// AllExecutions checks every stored execution of an instance, not only
	// the current one.
	AllExecutions bool
}

// ErrNoAdmin: the provider offers no ProviderAdmin to list instances with.
var ErrNoAdmin = errors.New("replayer: provider has no ProviderAdmin to list instances")

// FromProvider reads histories from p through its ProviderAdmin, in
// instance id order. It only reads.
func FromProvider(p duroxide.Provider, f Filter) Source { return providerSource{p: p, f: f} }

type providerSource struct {
	p duroxide.Provider
	f Filter
}

// Executions lists the instances and yields the selected executions of each.
func (s providerSource) Executions(ctx context.Context, fn func(Execution) error) error {
	admin := s.p.Admin()
	if admin == nil {
		return ErrNoAdmin
	}
	ids, err := s.instances(ctx, admin)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.instance(ctx, admin, id, fn); err != nil {
			return err
		}
	}
	return nil
}

func (s providerSource) instances(ctx context.Context, admin duroxide.ProviderAdmin) ([]string, error) {
	var ids []string
	var err error
	if s.f.Status != "" {
		ids, err = admin.ListInstancesByStatus(ctx, s.f.Status)
	} else {
		ids, err = admin.ListInstances(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("replayer: listing instances: %w", err)
	}
	ids = slices.DeleteFunc(ids, func(id string) bool { return !strings.HasPrefix(id, s.f.IDPrefix) })
	slices.Sort(ids)
	return ids, nil
}

// instance yields the selected executions of one instance.
func (s providerSource) instance(ctx context.Context, admin duroxide.ProviderAdmin, id string, fn func(Execution) error) error {
	info, err := admin.InstanceInfo(ctx, id)
	if err != nil {
		return unreadable(ctx, Execution{Instance: id}, "reading the instance", err, fn)
	}
	if s.f.Orchestration != "" && info.OrchestrationName != s.f.Orchestration {
		return nil
	}
	execs, err := admin.ListExecutions(ctx, id)
	if err != nil || len(execs) == 0 {
		if err == nil {
			err = errors.New("no executions")
		}
		ex := Execution{Instance: id, ExecutionID: info.CurrentExecutionID, Orchestration: info.OrchestrationName,
			Version: info.OrchestrationVersion, Status: info.Status}
		return unreadable(ctx, ex, "listing the executions", err, fn)
	}
	return s.executions(ctx, admin, id, info, execs, fn)
}

// executions reads execs of one instance in order, folding each one's KV
// events into the next one's snapshot, and yields the selected ones.
// Earlier executions are read only when selected or when their KV values
// may be in the current one's snapshot.
func (s providerSource) executions(ctx context.Context, admin duroxide.ProviderAdmin, id string, info *duroxide.InstanceInfo,
	execs []uint64, fn func(Execution) error) error {
	kv := map[string]duroxide.KVEntry{}
	readEarlier := s.f.AllExecutions || (len(execs) > 1 && s.hasKV(ctx, id))
	for i, execID := range execs {
		current := i == len(execs)-1
		if !current && !readEarlier {
			continue
		}
		ex := Execution{Instance: id, ExecutionID: execID, Orchestration: info.OrchestrationName,
			Version: info.OrchestrationVersion, KVSnapshot: cloneKV(kv)}
		if current {
			ex.Status = info.Status
		}
		events, err := admin.ReadHistoryWithExecutionID(ctx, id, execID)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			ex.ReadError = "reading the history: " + err.Error()
		} else {
			ex.Events = events
			ex.Orchestration, ex.Version = startedNameVersion(events, ex.Orchestration, ex.Version)
			foldKV(kv, events)
		}
		if current || s.f.AllExecutions {
			if err := fn(ex); err != nil {
				return err
			}
		}
	}
	return nil
}

// unreadable yields ex as a history error: one instance the provider
// cannot read (deleted meanwhile, a corrupt document) does not stop the
// others being checked. A cancelled ctx stops everything.
func unreadable(ctx context.Context, ex Execution, what string, err error, fn func(Execution) error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ex.ReadError = what + ": " + err.Error()
	return fn(ex)
}

// hasKV reports whether the instance has KV values, so earlier executions
// must be read to rebuild the current one's snapshot.
func (s providerSource) hasKV(ctx context.Context, id string) bool {
	values, err := s.p.KVValues(ctx, id)
	return err != nil || len(values) > 0
}

// startedNameVersion is the name and version events' OrchestrationStarted
// records, else the fallbacks.
func startedNameVersion(events []duroxide.Event, name, version string) (string, string) {
	if len(events) > 0 {
		if s, ok := events[0].Kind.(duroxide.OrchestrationStarted); ok {
			return s.Name, s.Version
		}
	}
	return name, version
}

// foldKV applies events' KV changes to kv, as the store folds an
// execution's KV delta at its end.
func foldKV(kv map[string]duroxide.KVEntry, events []duroxide.Event) {
	for _, e := range events {
		switch k := e.Kind.(type) {
		case duroxide.KeyValueSet:
			kv[k.Key] = duroxide.KVEntry{Value: k.Value, LastUpdatedAtMs: k.LastUpdatedAtMs}
		case duroxide.KeyValueCleared:
			delete(kv, k.Key)
		case duroxide.KeyValuesCleared:
			clear(kv)
		}
	}
}

func cloneKV(kv map[string]duroxide.KVEntry) map[string]duroxide.KVEntry {
	if len(kv) == 0 {
		return nil
	}
	out := make(map[string]duroxide.KVEntry, len(kv))
	for k, v := range kv {
		out[k] = v
	}
	return out
}
