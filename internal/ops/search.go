package ops

import (
	"context"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// DefaultPageSize is the page size of a search that sets none: a screen's
// worth, smaller than the Client's default.
const DefaultPageSize = 50

// States lists the states a search filters by, as tools show them.
func States() []string {
	var out []string
	for _, s := range duroxide.InstanceStates() {
		out = append(out, string(s))
	}
	return out
}

// ParseStates reads a comma-separated list of states ("failed,cancelled",
// any case); "" is no filter. An unknown state is an ErrInvalidInput
// error.
func ParseStates(s string) ([]duroxide.InstanceState, error) {
	var out []duroxide.InstanceState
	for part := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		st, err := duroxide.ParseInstanceState(part)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Summary is one instance in a search result.
type Summary struct {
	ID      string `json:"id"`
	Name    string `json:"orchestration"`
	Version string `json:"version,omitempty"`
	// State is the coarse state a search filters by (see States); Status
	// the stored status of the current execution behind it.
	State       duroxide.InstanceState `json:"state"`
	Status      string                 `json:"status"`
	Parent      string                 `json:"parent,omitempty"`
	ExecutionID uint64                 `json:"execution_id"`
	Created     time.Time              `json:"created"`
	Updated     time.Time              `json:"updated"`
	// Completed is when the current execution ended; zero while it runs.
	Completed time.Time `json:"completed,omitzero"`
	// Output is the start of the output or failure text (at most
	// duroxide.OutputSnippetChars characters).
	Output string `json:"output,omitempty"`
}

// Page is one page of a search.
type Page struct {
	Instances []Summary `json:"instances"`
	// Next continues the search (pass it back as the query's
	// ContinuationToken); empty on the last page.
	Next string `json:"next,omitempty"`
	// Total counts every instance the query matches, when it asked for the
	// count (CountTotal); nil otherwise.
	Total *int `json:"total,omitempty"`
}

// Search returns one page of the instances q selects, through the
// Client's search (one query per page on Cosmos DB; docs/costs.md). A
// PageSize of 0 means DefaultPageSize. Ask for CountTotal on the first
// page only: the count reads every match. Its requests are low priority
// (an operator's read: duroxide.LowPriorityUnlessSet) unless ctx says
// otherwise.
func (s *Service) Search(ctx context.Context, q duroxide.InstanceQuery) (*Page, error) {
	ctx = duroxide.LowPriorityUnlessSet(ctx)
	if q.PageSize == 0 {
		q.PageSize = DefaultPageSize
	}
	res, err := s.c.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	p := &Page{Instances: make([]Summary, 0, len(res.Instances)), Next: res.ContinuationToken, Total: res.Count}
	for _, in := range res.Instances {
		p.Instances = append(p.Instances, summaryOf(in))
	}
	return p, nil
}

func summaryOf(in duroxide.InstanceSummary) Summary {
	return Summary{
		ID: in.InstanceID, Name: in.Name, Version: in.Version, State: in.State, Status: in.Status,
		Parent: in.ParentID, ExecutionID: in.ExecutionID, Created: in.CreatedAt.UTC(), Updated: in.UpdatedAt.UTC(),
		Completed: utcOrZero(in.CompletedAt), Output: in.Output,
	}
}

// summarize is an instance's Summary from its stored info, for the
// instance page (which reads the full record anyway).
func summarize(info *duroxide.InstanceInfo, blocked bool) Summary {
	s := Summary{
		ID: info.InstanceID, Name: info.OrchestrationName, Version: info.OrchestrationVersion,
		State: duroxide.StateOf(info.Status, info.Output, blocked, false), Status: info.Status, ExecutionID: info.CurrentExecutionID,
		Created: msTime(info.CreatedAt), Updated: msTime(info.UpdatedAt), Output: duroxide.Snippet(info.Output),
	}
	if info.ParentInstanceID != nil {
		s.Parent = *info.ParentInstanceID
	}
	return s
}

func utcOrZero(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

func msTime(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}
