package ops

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// DefaultPageSize is the page size of a Query that sets none.
const DefaultPageSize = 50

// MaxPageSize bounds a Query's page size.
const MaxPageSize = 1000

// Query selects instances. Empty fields do not restrict.
type Query struct {
	// Name is the orchestration name (exact).
	Name string
	// Status is the instance's state (running, completed, failed,
	// cancelled; see States) or its stored status (ContinuedAsNew),
	// matched case-insensitively.
	Status string
	// Prefix is an instance id prefix.
	Prefix string
	// Parent is the parent instance id of sub-orchestrations.
	Parent string
	// CreatedAfter and CreatedBefore bound the creation time.
	CreatedAfter, CreatedBefore time.Time
	// PageSize is the number of instances per page (DefaultPageSize if 0).
	PageSize int
	// PageToken continues a search where the previous page ended; it is
	// opaque.
	PageToken string
}

// Summary is one instance in a search result.
type Summary struct {
	ID      string `json:"id"`
	Name    string `json:"orchestration"`
	Version string `json:"version,omitempty"`
	// State is the coarse state (see States); Status the stored status of
	// the current execution behind it.
	State       string    `json:"state"`
	Status      string    `json:"status"`
	Parent      string    `json:"parent,omitempty"`
	ExecutionID uint64    `json:"execution_id"`
	Created     time.Time `json:"created"`
	Updated     time.Time `json:"updated"`
}

// Page is one page of a search.
type Page struct {
	Instances []Summary `json:"instances"`
	// Next continues the search; empty on the last page.
	Next string `json:"next,omitempty"`
	// Total counts every instance the query matches.
	Total int `json:"total"`
}

// Search returns one page of the instances q selects, newest first.
//
// Until the Client offers a paged search it lists every instance and
// reads each one's info, so its cost grows with the store; the page token
// is an offset into that ordering.
func (s *Service) Search(ctx context.Context, q Query) (*Page, error) {
	size, offset, err := q.page()
	if err != nil {
		return nil, err
	}
	all, err := s.matching(ctx, q)
	if err != nil {
		return nil, err
	}
	p := &Page{Instances: []Summary{}, Total: len(all)}
	if offset < len(all) {
		end := min(offset+size, len(all))
		p.Instances = all[offset:end]
		if end < len(all) {
			p.Next = encodeToken(end)
		}
	}
	return p, nil
}

func (s *Service) matching(ctx context.Context, q Query) ([]Summary, error) {
	ids, err := s.candidates(ctx, q)
	if err != nil {
		return nil, err
	}
	var out []Summary
	for _, id := range ids {
		if q.Prefix != "" && !strings.HasPrefix(id, q.Prefix) {
			continue
		}
		info, err := s.c.InstanceInfo(ctx, id)
		if err != nil {
			if isNotFound(err) {
				continue // deleted since the listing
			}
			return nil, err
		}
		sum := summarize(info)
		if q.matches(sum) {
			out = append(out, sum)
		}
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out, nil
}

// The states a search filters by, as the Client's search will name them.
const (
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateCancelled = "cancelled"
)

// States lists the states a Query's Status may name.
var States = []string{StateRunning, StateCompleted, StateFailed, StateCancelled}

// cancelledPrefix starts the stored output of a cancelled instance: the
// failure's display text, "canceled: <reason>".
const cancelledPrefix = "canceled: "

// stateOf classifies an instance from its stored status and output.
func stateOf(status string, output *string) string {
	switch status {
	case duroxide.StatusCompleted:
		return StateCompleted
	case duroxide.StatusFailed:
		if output != nil && strings.HasPrefix(*output, cancelledPrefix) {
			return StateCancelled
		}
		return StateFailed
	}
	return StateRunning
}

// candidates lists the ids to check: those of the one stored status the
// query's state needs, else all.
func (s *Service) candidates(ctx context.Context, q Query) ([]string, error) {
	stored := map[string]string{
		StateRunning: duroxide.StatusRunning, StateCompleted: duroxide.StatusCompleted,
		StateFailed: duroxide.StatusFailed, StateCancelled: duroxide.StatusFailed,
	}[strings.ToLower(q.Status)]
	if stored != "" {
		return s.c.ListInstances(ctx, durable.ListOptions{Status: stored})
	}
	return s.c.ListInstances(ctx)
}

func (q Query) matches(s Summary) bool {
	switch {
	case q.Name != "" && s.Name != q.Name,
		q.Status != "" && !q.statusMatches(s),
		q.Prefix != "" && !strings.HasPrefix(s.ID, q.Prefix),
		q.Parent != "" && s.Parent != q.Parent,
		!q.CreatedAfter.IsZero() && s.Created.Before(q.CreatedAfter),
		!q.CreatedBefore.IsZero() && !s.Created.Before(q.CreatedBefore):
		return false
	}
	return true
}

// statusMatches matches a state by name, else the stored status.
func (q Query) statusMatches(s Summary) bool {
	if slices.Contains(States, strings.ToLower(q.Status)) {
		return strings.EqualFold(s.State, q.Status)
	}
	return strings.EqualFold(s.Status, q.Status)
}

func (q Query) page() (size, offset int, err error) {
	size = q.PageSize
	if size == 0 {
		size = DefaultPageSize
	}
	if size < 0 || size > MaxPageSize {
		return 0, 0, fmt.Errorf("%w: page size %d is not in 1..%d", durable.ErrInvalidInput, size, MaxPageSize)
	}
	if q.PageToken == "" {
		return size, 0, nil
	}
	offset, err = decodeToken(q.PageToken)
	return size, offset, err
}

func encodeToken(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o" + strconv.Itoa(offset)))
}

func decodeToken(t string) (int, error) {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err == nil && len(b) > 1 && b[0] == 'o' {
		if n, err := strconv.Atoi(string(b[1:])); err == nil && n >= 0 {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: malformed page token", durable.ErrInvalidInput)
}

func summarize(info *duroxide.InstanceInfo) Summary {
	s := Summary{
		ID: info.InstanceID, Name: info.OrchestrationName, Version: info.OrchestrationVersion,
		State: stateOf(info.Status, info.Output), Status: info.Status, ExecutionID: info.CurrentExecutionID,
		Created: msTime(info.CreatedAt), Updated: msTime(info.UpdatedAt),
	}
	if info.ParentInstanceID != nil {
		s.Parent = *info.ParentInstanceID
	}
	return s
}

func msTime(ms uint64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(ms)).UTC()
}
