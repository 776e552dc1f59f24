// Package clean is deterministic orchestration code: nothing to report.
package clean

import (
	"maps"
	"slices"
	"time"

	"github.com/duroxide-go/cdb/durable"
)

func Fanout(ctx *durable.OrchestrationContext, in map[string]string) (string, error) {
	var futs []durable.Awaitable
	for _, k := range slices.Sorted(maps.Keys(in)) {
		futs = append(futs, durable.CallActivity[string](ctx, k, in[k]))
	}
	now, err := ctx.UTCNow().Await()
	if err != nil {
		return "", err
	}
	id, err := ctx.NewGUID().Await()
	if err != nil {
		return "", err
	}
	if _, err := durable.NewTimer(ctx, time.Minute).Await(); err != nil {
		return "", err
	}
	ctx.Select(futs...)
	return now.Format(time.RFC3339) + id, nil
}
