package cdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// Summaries of executions the instance document no longer lists (see
// maxExecSummaries): one execution document each, in the instance's
// partition, written by the ack that trimmed them from the list and
// removed by the prune that removes their history.

// archivedExecution reads the summary of execution exec; nil when there is
// none.
func (p *Provider) archivedExecution(ctx context.Context, instance string, exec uint64) (*execEntry, error) {
	body, _, err := p.st.Read(ctx, instance, execSummaryDocID(instance, exec))
	if errors.Is(err, cosmos.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var d execSummaryDoc
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("execution summary %d of %q cannot be decoded: %w", exec, instance, err)
	}
	return &d.execEntry, nil
}

// archivedExecutions reads every execution document of instance, by
// execution id (one single-partition query).
func (p *Provider) archivedExecutions(ctx context.Context, instance string) (map[uint64]execEntry, error) {
	out := map[uint64]execEntry{}
	_, err := p.st.Query(ctx, "SELECT * FROM c WHERE c.type = @type", cosmos.QueryParams{}.Add("@type", docExecution),
		cosmos.QueryOptions{Partition: &instance, PageSize: 1000}, func(raw []byte) bool {
			var d execSummaryDoc
			if json.Unmarshal(raw, &d) == nil {
				out[d.execEntry.ID] = d.execEntry
			}
			return true
		})
	return out, err
}
