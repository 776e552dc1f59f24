package dashboard

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
	"github.com/duroxide-go/cdb/schedule"
)

// maxDetail bounds a payload shown in full in the timeline.
const maxDetail = 4096

func (h *handler) funcs() template.FuncMap {
	return template.FuncMap{
		"instURL":    h.instanceURL,
		"confirmURL": func(id string, a ops.Action) string { return h.instanceURL(id) + "/confirm/" + string(a) },
		"actURL":     func(id string, a ops.Action) string { return h.instanceURL(id) + "/" + string(a) },
		"dur":        formatDuration,
		"ts":         formatTime,
		"clip":       clip,
		"lower":      strings.ToLower,
		"rel":        relTime,
		"iso":        isoTime,
		"pretty":     prettyJSON,
		"f1":         func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
		"add":        func(a, b int) int { return a + b },
		"schedURL":   h.scheduleURL,
		"schedConfirmURL": func(id string, a scheduleAction) string {
			return h.scheduleURL(id) + "/confirm/" + string(a)
		},
		"schedActURL": func(id string, a scheduleAction) string { return h.scheduleURL(id) + "/" + string(a) },
	}
}

// instanceURL is the instance page's path; the id is one segment
// (idSegment).
func (h *handler) instanceURL(id string) string {
	return h.base + "/instances/" + idSegment(id)
}

// idSegment is id as one path segment. Path escaping keeps "/", "?", "#"
// and "%" in the segment, but "." and ".." would stay dot segments, which
// browsers (in any percent-encoding) and ServeMux resolve away, to the
// list: they get a leading "~", and so, to keep the mapping reversible,
// does an id that starts with "~". idOf reads it back.
func idSegment(id string) string {
	if id == "." || id == ".." || strings.HasPrefix(id, "~") {
		id = "~" + id
	}
	return url.PathEscape(id)
}

// idOf is the instance id a request's {id} segment names (idSegment).
func idOf(r *http.Request) string {
	id := r.PathValue("id")
	if strings.HasPrefix(id, "~") {
		return id[1:]
	}
	return id
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	q, form, err := parseQuery(r.URL.Query())
	if err != nil {
		h.fail(w, err)
		return
	}
	page, err := h.ops.Search(r.Context(), q)
	if err != nil {
		h.fail(w, err)
		return
	}
	data := map[string]any{"Page": page, "Form": form, "Statuses": ops.States(), "Orders": orders, "Nav": "instances"}
	if q.ContinuationToken == "" {
		counts, err := h.stateCounts(r, q, form)
		if err != nil {
			h.fail(w, err)
			return
		}
		data["Counts"] = counts
	}
	total, counted := carriedTotal(r.URL.Query(), page)
	data["Total"], data["Counted"] = total, counted
	if r.URL.Query().Get("done") == string(ops.ActionPurge) {
		data["Purged"] = r.URL.Query().Get("id")
	}
	if page.Next != "" {
		next := url.Values{}
		for k, v := range form {
			if v != "" {
				next.Set(k, v)
			}
		}
		next.Set("page", page.Next)
		if counted {
			next.Set("total", strconv.Itoa(total))
		}
		data["NextURL"] = h.base + "/?" + next.Encode()
	}
	h.render(w, http.StatusOK, "list", data)
}

// stateCounts counts, per state, the instances the list's other filters
// match: one counting search per state (docs/costs.md: a count reads
// every match), on the first page only.
func (h *handler) stateCounts(r *http.Request, q duroxide.InstanceQuery, form map[string]string) ([]stateCount, error) {
	var out []stateCount
	for _, st := range ops.States() {
		states, err := ops.ParseStates(st)
		if err != nil {
			return nil, err
		}
		cq := q
		cq.States, cq.PageSize, cq.CountTotal = states, 1, true
		page, err := h.ops.Search(r.Context(), cq)
		if err != nil {
			return nil, err
		}
		link := url.Values{}
		for k, v := range form {
			if v != "" && k != "status" {
				link.Set(k, v)
			}
		}
		link.Set("status", st)
		n := 0
		if page.Total != nil {
			n = *page.Total
		}
		out = append(out, stateCount{State: st, N: n, URL: h.base + "/?" + link.Encode()})
	}
	return out, nil
}

// orders are the list's orders, as ?order= spells them.
var orders = []string{"created-desc", "created-asc", "any"}

// carriedTotal is the number of matches: counted with the first page (the
// count reads every match, so later pages do not repeat it) and carried
// to the next pages in their links.
func carriedTotal(v url.Values, page *ops.Page) (int, bool) {
	if page.Total != nil {
		return *page.Total, true
	}
	n, err := strconv.Atoi(v.Get("total"))
	return n, err == nil && n >= 0
}

// parseQuery reads the list's filters; form echoes them back.
func parseQuery(v url.Values) (duroxide.InstanceQuery, map[string]string, error) {
	form := map[string]string{}
	for _, k := range []string{"name", "version", "status", "prefix", "parent", "after", "before", "completed_after",
		"completed_before", "order", "size"} {
		form[k] = strings.TrimSpace(v.Get(k))
	}
	form["status"] = strings.ToLower(form["status"])
	q := duroxide.InstanceQuery{Name: form["name"], Version: form["version"], IDPrefix: form["prefix"], ParentID: form["parent"],
		ContinuationToken: v.Get("page")}
	q.CountTotal = q.ContinuationToken == ""
	var err error
	if q.States, err = ops.ParseStates(form["status"]); err != nil {
		return q, form, err
	}
	if q.OrderBy, err = duroxide.ParseSearchOrder(form["order"]); err != nil {
		return q, form, err
	}
	for k, to := range map[string]*time.Time{"after": &q.CreatedFrom, "before": &q.CreatedBefore,
		"completed_after": &q.CompletedFrom, "completed_before": &q.CompletedBefore} {
		if *to, err = parseTime(form[k]); err != nil {
			return q, form, err
		}
	}
	if s := form["size"]; s != "" {
		if q.PageSize, err = strconv.Atoi(s); err != nil {
			return q, form, badRequest("page size must be a number")
		}
	}
	return q, form, nil
}

// parseTime accepts RFC 3339 or an HTML datetime-local value (UTC).
func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, badRequest("times are RFC 3339 (2006-01-02T15:04:05Z) or 2006-01-02T15:04 in UTC")
}

func (h *handler) instance(w http.ResponseWriter, r *http.Request) {
	d, err := h.ops.Instance(r.Context(), idOf(r))
	if err != nil {
		h.fail(w, err)
		return
	}
	now := time.Now()
	data := map[string]any{"D": d, "Nav": "instances"}
	// The latest execution first; the page folds the earlier ones.
	var execs []execView
	for i := len(d.Executions) - 1; i >= 0; i-- {
		c, pend := buildChart(d.Executions[i], now)
		execs = append(execs, execView{Execution: d.Executions[i], Chart: c})
		if i == len(d.Executions)-1 && !d.Terminal() && !pend.empty() {
			pend.withHeartbeats(d.Executions[i].ID, d.Heartbeats)
			data["Work"] = pend
		}
	}
	data["Execs"] = execs
	tree, clipped, err := instanceTree(duroxide.LowPriorityUnlessSet(r.Context()), h.c, d)
	if err != nil {
		h.fail(w, err)
		return
	}
	data["Tree"], data["TreeClipped"] = tree, clipped
	if a, ok := ops.ParseAction(r.URL.Query().Get("done")); ok {
		data["Done"] = a // only an action's name, never arbitrary text
	}
	if !h.opts.ReadOnly {
		data["Actions"] = actionsFor(d)
	}
	if !d.Terminal() {
		data["Refresh"] = 2
	}
	h.render(w, http.StatusOK, "instance", data)
}

// actionsFor lists the actions that apply to an instance in its state.
func actionsFor(d *ops.Detail) []ops.Action {
	switch {
	case d.State == "Failed" && d.Poisoned():
		return []ops.Action{ops.ActionRedrive, ops.ActionRewind, ops.ActionRestart, ops.ActionPurge}
	case d.State == "Failed":
		return []ops.Action{ops.ActionRewind, ops.ActionRestart, ops.ActionPurge}
	case d.Terminal():
		return []ops.Action{ops.ActionRestart, ops.ActionPurge}
	case d.State == "Suspended":
		return []ops.Action{ops.ActionResume, ops.ActionCancel, ops.ActionRaise, ops.ActionEnqueue, ops.ActionPurge}
	}
	return []ops.Action{ops.ActionCancel, ops.ActionRaise, ops.ActionEnqueue, ops.ActionSuspend, ops.ActionPurge}
}

func (h *handler) confirm(w http.ResponseWriter, r *http.Request) {
	if h.opts.ReadOnly {
		h.fail(w, errReadOnly)
		return
	}
	a, ok := ops.ParseAction(r.PathValue("action"))
	if !ok {
		h.fail(w, errUnknownAction)
		return
	}
	id := idOf(r)
	h.render(w, http.StatusOK, "confirm", map[string]any{
		"ID": id, "Action": a, "CSRF": h.csrf.token(w, r),
	})
}

func (h *handler) act(w http.ResponseWriter, r *http.Request) {
	if !h.acceptPost(w, r) {
		return
	}
	a, ok := ops.ParseAction(r.PathValue("action"))
	if !ok {
		h.fail(w, errUnknownAction)
		return
	}
	id := idOf(r)
	req := ops.Request{Reason: r.PostFormValue("reason"), Name: r.PostFormValue("name"), Data: r.PostFormValue("data"),
		Force: r.PostFormValue("force") == "on", Version: r.PostFormValue("version")}
	if a == ops.ActionRestart && r.PostFormValue("replace_input") == "on" {
		in := r.PostFormValue("input")
		req.Input = &in
	}
	err := h.ops.Do(r.Context(), id, a, req)
	if h.opts.Log != nil {
		h.opts.Log.InfoContext(r.Context(), "duroxide dashboard action", "instance", id, "action", string(a), "error", err)
	}
	if err != nil {
		h.fail(w, err)
		return
	}
	if a == ops.ActionPurge {
		http.Redirect(w, r, h.base+"/?"+url.Values{"done": {string(a)}, "id": {id}}.Encode(), http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, h.instanceURL(id)+"?done="+string(a), http.StatusSeeOther)
}

// Errors the dashboard itself answers with.
var (
	errReadOnly      = errors.New("the dashboard is read-only")
	errCSRF          = errors.New("the form is stale or came from another site; reload the page and try again")
	errUnknownAction = errors.New("unknown action")
)

type badRequestError struct{ msg string }

func (e *badRequestError) Error() string { return e.msg }

func badRequest(msg string) error { return &badRequestError{msg} }

// fail renders err as an error page with the status code its kind maps
// to.
func (h *handler) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	var bad *badRequestError
	switch {
	case errors.Is(err, errReadOnly), errors.Is(err, errCSRF):
		code = http.StatusForbidden
	case errors.Is(err, errUnknownAction), errors.Is(err, durable.ErrInstanceNotFound), errors.Is(err, schedule.ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errNoScheduler):
		code = http.StatusGatewayTimeout
	case errors.Is(err, ops.ErrNotSupported):
		code = http.StatusNotImplemented
	case errors.As(err, &bad), errors.Is(err, durable.ErrInvalidInput), errors.Is(err, schedule.ErrInvalidOptions),
		errors.Is(err, schedule.ErrInvalidSpec):
		code = http.StatusBadRequest
	case errors.Is(err, durable.ErrInstanceStillRunning), errors.Is(err, durable.ErrInvalidState):
		code = http.StatusConflict
	}
	h.render(w, code, "error", map[string]any{"Code": code, "Status": http.StatusText(code), "Err": err.Error()})
}

func formatDuration(d time.Duration) string {
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

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

func clip(s string) string {
	if len(s) <= maxDetail {
		return s
	}
	n := maxDetail
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}
