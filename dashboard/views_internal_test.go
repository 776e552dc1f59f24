package dashboard

import (
	"strconv"
	"testing"
	"time"

	"github.com/duroxide-go/cdb/internal/ops"
)

func TestRelative(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second: "just now", -2 * time.Second: "just now", 42 * time.Second: "42 s ago", 3 * time.Minute: "3 min ago",
		-59*time.Minute - 59*time.Second: "in 59 min", 5 * time.Hour: "5 h ago", 72 * time.Hour: "3 days ago",
	} {
		if got := relative(d); got != want {
			t.Errorf("relative(%v) = %q, want %q", d, got, want)
		}
	}
	if relTime(time.Time{}) != "" || isoTime(time.Time{}) != "" {
		t.Error("a zero time is shown")
	}
}

func TestPrettyJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":[2]}`:     "{\n  \"a\": 1,\n  \"b\": [\n    2\n  ]\n}",
		` [1] `:               "[\n  1\n]",
		`{"a":`:               `{"a":`, // not JSON: as it is
		`"just a string"`:     `"just a string"`,
		`42`:                  `42`,
		`<b>{"x":1}</b>`:      `<b>{"x":1}</b>`,
		"plain text, no json": "plain text, no json",
	} {
		if got := prettyJSON(in); got != want {
			t.Errorf("prettyJSON(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestChartRowsBounded: a history of many activities draws at most
// maxChartRows rows and counts the rest.
func TestChartRowsBounded(t *testing.T) {
	start := time.Unix(1_700_000_000, 0).UTC()
	ex := ops.Execution{ID: 1, Status: "Completed"}
	id := uint64(1)
	for i := range maxChartRows + 7 {
		at := start.Add(time.Duration(i) * time.Millisecond)
		ex.Timeline = append(ex.Timeline,
			ops.Entry{EventID: id, At: at, Kind: "ActivityScheduled", Name: "A" + strconv.Itoa(i)},
			ops.Entry{EventID: id + 1, At: at.Add(time.Millisecond), Kind: "ActivityCompleted", Source: id})
		id += 2
	}
	c, pend := buildChart(ex, start.Add(time.Hour))
	if len(c.Rows) != maxChartRows || c.Clipped != 7 || !pend.empty() {
		t.Fatalf("%d rows, %d clipped, pending %+v", len(c.Rows), c.Clipped, pend)
	}
	for _, r := range c.Rows {
		if s := r.Segs[0]; s.X < chartLabelW || s.X+s.W > chartLabelW+chartAxisW+0.01 || s.Class != "ok" {
			t.Fatalf("row %s: bar at %v+%v (%s)", r.Label, s.X, s.W, s.Class)
		}
	}
}
