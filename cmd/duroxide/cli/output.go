package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/duroxide-go/cdb/internal/ops"
)

// clipAt bounds a payload in show's timeline unless -full.
const clipAt = 100

// safe makes a stored value harmless on a terminal: control characters
// (escape sequences could rewrite the screen) are written as Go escapes.
func safe(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) || r == unicode.ReplacementChar }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// quoteID writes an id safely, quoted when it has spaces or is empty.
func quoteID(s string) string {
	if s == "" || strings.ContainsAny(s, " \t") {
		return strconv.Quote(s)
	}
	return safe(s)
}

func clip(s string, full bool) string {
	s = safe(s)
	if full || len(s) <= clipAt {
		return s
	}
	n := clipAt
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}

func span(d time.Duration) string {
	switch {
	case d <= 0:
		return ""
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// writeTable prints instances as an aligned table.
func writeTable(w io.Writer, list []ops.Summary) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tORCHESTRATION\tVERSION\tSTATE\tCREATED\tUPDATED\tCOMPLETED")
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", quoteID(s.ID), safe(s.Name), safe(s.Version), s.State,
			stamp(s.Created), stamp(s.Updated), stamp(s.Completed))
	}
	tw.Flush()
}

// writeDetail prints an instance: facts, KV, children, and each
// execution's timeline.
func writeDetail(w io.Writer, d *ops.Detail, full bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fact := func(k, v string) { fmt.Fprintf(tw, "%s\t%s\n", k, v) }
	fact("Instance", quoteID(d.ID))
	name := safe(d.Name)
	if d.Version != "" {
		name += " (v" + safe(d.Version) + ")"
	}
	fact("Orchestration", name)
	fact("Status", d.State)
	fact("Execution", strconv.FormatUint(d.ExecutionID, 10))
	fact("Created", stamp(d.Created))
	fact("Updated", stamp(d.Updated))
	if d.Parent != "" {
		fact("Parent", quoteID(d.Parent))
	}
	if d.Failure != "" {
		fact("Failure", clip(d.Failure, full))
	}
	if d.State == "Completed" {
		fact("Output", clip(d.Output, full))
	}
	if d.Waiting != "" {
		fact("Waiting", clip(d.Waiting, full))
	}
	if d.BlockedReason != "" {
		fact("Blocked", clip(d.BlockedReason, full))
	}
	if d.SuspendedReason != "" {
		fact("Suspended", clip(d.SuspendedReason, full))
	}
	for _, p := range d.Pending {
		// Taken at the instance's next turn: until then the state above
		// does not show it.
		fact("Pending", clip(p.String(), full)+" (requested; a runtime takes it at the instance's next turn)")
	}
	for _, h := range d.Heartbeats {
		fact("Heartbeat", fmt.Sprintf("%s #%d: %s (at %s)", safe(h.Name), h.ActivityID, clip(h.Details, full), stamp(h.At)))
	}
	if d.CustomStatus != nil {
		fact("Custom status", clip(*d.CustomStatus, full))
	}
	tw.Flush()
	if len(d.KV) > 0 {
		fmt.Fprintln(w, "\nKV:")
		for _, kv := range d.KV {
			fmt.Fprintf(w, "  %s = %s\n", safe(kv.Key), clip(kv.Value, full))
		}
	}
	if len(d.Children) > 0 {
		fmt.Fprintln(w, "\nSub-orchestrations:")
		for _, c := range d.Children {
			fmt.Fprintf(w, "  %s\n", quoteID(c))
		}
	}
	for _, ex := range d.Executions {
		fmt.Fprintf(w, "\nExecution %d (%s)\n", ex.ID, ex.Status)
		writeTimeline(w, ex.Timeline, full)
	}
}

func writeTimeline(w io.Writer, tl []ops.Entry, full bool) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tAT\tELAPSED\tEVENT\tNAME\tTOOK\tDETAIL")
	for _, e := range tl {
		detail := clip(e.Detail, full)
		if e.Failed {
			detail = "FAILED: " + detail
		}
		if e.Child != "" {
			detail = "-> " + quoteID(e.Child) + " " + detail
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.EventID, stamp(e.At), span(e.Offset), e.Kind, safe(e.Name), span(e.Duration), detail)
	}
	tw.Flush()
}
