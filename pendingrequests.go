package cdb

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/cosmos"
)

// PendingRequests implements duroxide.PendingRequestReader: one query in
// the instance's partition, selecting the queue documents whose work item
// is of a request variant.
func (p *Provider) PendingRequests(ctx context.Context, inst string) ([]duroxide.WorkItem, error) {
	const op = "pending_requests"
	if err := validateInstanceID(op, inst); err != nil {
		return nil, err
	}
	params := cosmos.QueryParams{}.Add("@type", docOrchQueue)
	starts := make([]string, len(duroxide.RequestVariants))
	for i, v := range duroxide.RequestVariants {
		name := fmt.Sprintf("@v%d", i)
		params = params.Add(name, `{"`+v+`"`)
		starts[i] = "STARTSWITH(c.workItem, " + name + ")"
	}
	q := "SELECT c.workItem, c.enqueuedAt, c.enqueueOrder FROM c WHERE c.type = @type AND " + notStaged +
		" AND (" + strings.Join(starts, " OR ") + ")"
	var docs []queueDoc
	_, err := p.st.Query(ctx, q, params, cosmos.QueryOptions{Partition: &inst}, func(b []byte) bool {
		var d queueDoc
		if json.Unmarshal(b, &d) == nil {
			docs = append(docs, d)
		}
		return true
	})
	if err != nil {
		return nil, duroxide.Wrap(op, err)
	}
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].order() < docs[j].order() })
	var out []duroxide.WorkItem
	for _, d := range docs {
		w, err := duroxide.UnmarshalWorkItem([]byte(d.WorkItem))
		if err == nil && duroxide.IsRequest(w) {
			out = append(out, w)
		}
	}
	return out, nil
}
