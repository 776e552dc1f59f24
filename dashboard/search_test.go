package dashboard_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/duroxide"
)

// rows lists the instance links of a list page in order.
func rows(body string) []string {
	var ids []string
	for rest := body; ; {
		i := strings.Index(rest, `<a class="inst" href="/instances/`)
		if i < 0 {
			return ids
		}
		rest = rest[i+len(`<a class="inst" href="/instances/`):]
		ids = append(ids, rest[:strings.IndexByte(rest, '"')])
	}
}

func TestListByVersionCompletionOrderAndState(t *testing.T) {
	e := newEnv(t)
	e.run("ok-1", "Echo", "one")
	res, err := e.c.Search(t.Context(), duroxide.InstanceQuery{IDPrefix: "ok-1"})
	must(t, err)
	done := res.Instances[0].CompletedAt
	for time.Now().UnixMilli() <= done.UnixMilli() { // bad-1 is created and ends strictly later
		time.Sleep(100 * time.Microsecond)
	}
	e.run("bad-1", "Fail", "disk on fire")
	e.run("w-1", "Wait", "approval")
	b := newDashboard(t, e, dashboard.Options{})

	cut := url.QueryEscape(done.Add(time.Millisecond).UTC().Format(time.RFC3339Nano))
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"version=1.0.0&order=created-asc", []string{"ok-1", "bad-1", "w-1"}},
		{"version=9.9.9", nil},
		{"completed_before=" + cut, []string{"ok-1"}},
		{"completed_after=" + cut, []string{"bad-1"}},
		{"completed_after=2000-01-01T00:00&order=created-asc", []string{"ok-1", "bad-1"}},
		{"status=running", []string{"w-1"}},
		{"status=suspended", nil},
	} {
		code, body := b.get("/?" + tc.query)
		if got := rows(body); code != http.StatusOK || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Fatalf("?%s: %d %v, want %v\n%s", tc.query, code, got, tc.want, body)
		}
		if want := `id="count">` + strconv.Itoa(len(tc.want)) + " matching"; !strings.Contains(body, want) {
			t.Fatalf("?%s lacks %q", tc.query, want)
		}
	}
	_, body := b.get("/?completed_after=" + cut + "&order=created-asc")
	for _, want := range []string{`id="f-completed-after" placeholder="2006-01-02T15:04 (UTC)" value="` + strings.ReplaceAll(done.Add(time.Millisecond).UTC().Format(time.RFC3339Nano), "+", "&#43;"),
		`<option selected>created-asc</option>`, `<option>blocked</option>`, `<option>suspended</option>`} {
		if !strings.Contains(body, want) {
			t.Fatalf("the form lacks %q:\n%s", want, body)
		}
	}
	for _, q := range []string{"status=stuck", "order=sideways", "completed_before=tomorrow"} {
		if code, _ := b.get("/?" + q); code != http.StatusBadRequest {
			t.Fatalf("?%s: %d", q, code)
		}
	}
}

// TestLaterPagesCarryTheCount: the count is taken with the first page
// (it reads every match) and shown on the next ones from their links.
func TestLaterPagesCarryTheCount(t *testing.T) {
	e := newEnv(t)
	for _, id := range []string{"ok-1", "ok-2", "ok-3"} {
		e.run(id, "Echo", id)
	}
	b := newDashboard(t, e, dashboard.Options{})
	_, body := b.get("/?size=2")
	i := strings.Index(body, `id="next" href="`)
	if i < 0 || !strings.Contains(body, `id="count">3 matching`) {
		t.Fatalf("first page:\n%s", body)
	}
	rest := body[i+len(`id="next" href="`):]
	next := strings.ReplaceAll(rest[:strings.IndexByte(rest, '"')], "&amp;", "&")
	if !strings.Contains(next, "total=3") {
		t.Fatalf("next link %q does not carry the count", next)
	}
	if _, body = b.get(next); !strings.Contains(body, `id="count">3 matching`) || len(rows(body)) != 1 {
		t.Fatalf("second page:\n%s", body)
	}
}

// TestTamperedStoreTokenIsABadRequest: a list page whose token was
// tampered with so that its Cosmos continuation holds CR, LF or NUL is
// the caller's mistake (400), not a server failure (500).
func TestTamperedStoreTokenIsABadRequest(t *testing.T) {
	e := newCosmosEnv(t)
	e.run("ok-1", "Echo", "one")
	b := newDashboard(t, e, dashboard.Options{})
	q := duroxide.InstanceQuery{OrderBy: duroxide.OrderAny}
	for _, bad := range []string{"a\rb", "a\nb", "a\x00b"} {
		tok := q.EncodeCursor(duroxide.SearchCursor{Store: bad})
		if code, body := b.get("/?order=any&page=" + url.QueryEscape(tok)); code != http.StatusBadRequest {
			t.Fatalf("%q: %d\n%s", bad, code, body)
		}
	}
}
