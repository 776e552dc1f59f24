package cli_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/durable"
)

// listed is a page as list -json prints it.
type listed struct {
	Instances []struct {
		ID        string
		Version   string
		State     string
		Completed time.Time
	}
	Next  string
	Total *int
}

func (e *opsEnv) listJSON(args ...string) listed {
	e.t.Helper()
	out, _ := e.want(cli.ExitOK, append([]string{"list", "-json"}, args...)...)
	var page listed
	must(e.t, json.Unmarshal([]byte(out), &page))
	return page
}

func (p listed) ids() []string {
	var ids []string
	for _, s := range p.Instances {
		ids = append(ids, s.ID)
	}
	return ids
}

// afterMillisecond waits until the clock has passed t's millisecond, so
// what happens next is stamped strictly later (search compares
// milliseconds).
func afterMillisecond(t time.Time) {
	for time.Now().UnixMilli() <= t.UnixMilli() {
		time.Sleep(100 * time.Microsecond)
	}
}

func TestListByVersionStateCompletionAndOrder(t *testing.T) {
	e := newOpsEnv(t)
	e.want(cli.ExitOK, "start", "-name", "Echo", "-version", "1.0.0", "-input", "x", "old-1")
	e.terminal("old-1")
	first := e.listJSON("-prefix", "old-1").Instances[0]
	if first.Version != "1.0.0" || first.State != "completed" || first.Completed.IsZero() {
		t.Fatalf("old-1: %+v", first)
	}
	afterMillisecond(first.Completed)
	e.start("Echo", "x", "new-1")
	afterMillisecond(time.Now()) // bad-1 is created strictly later
	e.start("Fail", "x", "bad-1")
	afterMillisecond(time.Now())
	e.start("Wait", "approval", "w-1")

	if got := e.listJSON("-name", "Echo", "-version", "1.0.0").ids(); !slices.Equal(got, []string{"old-1"}) {
		t.Fatalf("-version 1.0.0: %v", got)
	}
	if got := e.listJSON("-name", "Echo", "-version", "2.0.0").ids(); !slices.Equal(got, []string{"new-1"}) {
		t.Fatalf("-version 2.0.0: %v", got)
	}
	// A completion window selects ended instances only: never w-1.
	cut := first.Completed.Add(time.Millisecond).Format(time.RFC3339Nano)
	if got := e.listJSON("-completed-before", cut).ids(); !slices.Equal(got, []string{"old-1"}) {
		t.Fatalf("-completed-before %s: %v", cut, got)
	}
	got := e.listJSON("-completed-after", cut, "-order", "created-asc").ids()
	if !slices.Equal(got, []string{"new-1", "bad-1"}) {
		t.Fatalf("-completed-after %s, oldest first: %v", cut, got)
	}
	if got := e.listJSON("-completed-after", "1h").ids(); len(got) != 3 || slices.Contains(got, "w-1") {
		t.Fatalf("-completed-after 1h: %v", got)
	}
	if got := e.listJSON("-status", "failed,running", "-order", "created-asc").ids(); !slices.Equal(got, []string{"bad-1", "w-1"}) {
		t.Fatalf("two states: %v", got)
	}
	if got := e.listJSON("-status", "suspended"); len(got.Instances) != 0 || got.Total == nil || *got.Total != 0 {
		t.Fatalf("suspended: %+v", got)
	}
	_, errOut := e.want(cli.ExitUsage, "list", "-status", "stuck")
	if !strings.Contains(errOut, `unknown instance state "stuck"`) {
		t.Fatalf("unknown state: %s", errOut)
	}
	e.want(cli.ExitUsage, "list", "-order", "sideways")
	e.want(cli.ExitUsage, "list", "-completed-before", "tomorrow")
}

func TestListFindsBlockedInstances(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Drift", "x", "drift-1")
	e.start("Wait", "approval", "w-1")
	e.drift.Store(true) // new code, which does not replay drift-1's history
	e.want(cli.ExitOK, "raise", "drift-1", "go", "now")
	e.until("drift-1", func(st *durable.OrchestrationStatus) bool { return st.State == durable.StateBlocked })

	out, _ := e.want(cli.ExitOK, "list", "-status", "blocked")
	if !strings.Contains(out, "drift-1") || !strings.Contains(out, "blocked") || strings.Contains(out, "w-1") {
		t.Fatalf("blocked:\n%s", out)
	}
	if got := e.listJSON("-status", "running").ids(); !slices.Equal(got, []string{"w-1"}) {
		t.Fatalf("running: %v", got)
	}
}

// TestPagesStayPutWhileInstancesStart: a page token is a position in the
// order, not an offset, so instances started between two pages neither
// repeat nor hide the ones already listed.
func TestPagesStayPutWhileInstancesStart(t *testing.T) {
	e := newOpsEnv(t)
	e.start("Echo", "x", "a-1", "a-2", "a-3", "a-4")
	p1 := e.listJSON("-limit", "2")
	if len(p1.Instances) != 2 || p1.Next == "" || p1.Total == nil || *p1.Total != 4 {
		t.Fatalf("first page: %+v", p1)
	}
	e.start("Echo", "x", "b-1", "b-2")
	p2 := e.listJSON("-limit", "2", "-page", p1.Next)
	if p2.Total != nil {
		t.Fatalf("later pages are not counted again: %+v", p2)
	}
	seen := append(p1.ids(), p2.ids()...)
	for p := p2; p.Next != ""; {
		p = e.listJSON("-limit", "2", "-page", p.Next)
		seen = append(seen, p.ids()...)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"a-1", "a-2", "a-3", "a-4"}) {
		t.Fatalf("paging newest first across new starts saw %v", seen)
	}
	// A token continues only the search it came from.
	_, errOut := e.want(cli.ExitUsage, "list", "-limit", "2", "-page", p1.Next, "-name", "Echo")
	if !strings.Contains(errOut, "continuation token") {
		t.Fatalf("token of another search: %s", errOut)
	}
}
