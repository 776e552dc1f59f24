// Package dashboard is a web dashboard for duroxide instances: an
// http.Handler a service mounts on its own mux to list, search and
// inspect instances and act on them (cancel, raise an event, enqueue,
// suspend, resume, rewind, restart, re-drive, purge) and on schedules
// (pause, unpause, trigger).
//
//	mux.Handle("/duroxide/", requireOperator(dashboard.New(client, dashboard.Options{BasePath: "/duroxide"})))
//
// Start with [New] and [Options]; ExampleNew mounts it behind basic
// authentication.
//
// Authentication and authorization are the host's: wrap the handler in
// your own middleware (see the example). Options.ReadOnly hides every
// action and refuses every POST.
//
// The list counts instances per state; an instance's page draws a
// timeline chart of each execution (the latest first, earlier ones
// folded) from its history, lists its pending work and shows its whole
// instance tree; the queues page shows the queue depths and the store's
// counts with a throughput chart it polls (GET <base>/api/sample, JSON);
// the schedules page lists the schedules of package schedule (spec,
// state, next fire times, recent actions linked to their runs) and
// pauses, unpauses and triggers them.
//
// Pages are rendered on the server with html/template, which escapes
// every value by its context, charts included (inline SVG); the small
// script (no build step) refreshes a running instance's page, keeps
// relative times current, copies payloads, and draws the throughput
// chart from the sample JSON with DOM calls, never markup. Actions are POSTs behind a confirmation page,
// protected against cross-site requests twice: http.CrossOriginProtection
// refuses cross-origin browser requests, and each form carries a token
// bound to a cookie. Responses carry a strict Content-Security-Policy.
package dashboard

import (
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/internal/ops"
	"github.com/duroxide-go/cdb/schedule"
)

// Options configure New. The zero value serves at the root, with actions.
type Options struct {
	// ReadOnly hides every action and refuses every POST (403).
	ReadOnly bool
	// BasePath is the path the handler is mounted at ("/duroxide"); the
	// handler strips it from requests and prefixes it to its links. Empty
	// means the root.
	BasePath string
	// Title is shown in every page's header; defaults to "duroxide".
	Title string
	// Log receives one record per action taken (instance or schedule id,
	// action, outcome); nil logs nothing.
	Log *slog.Logger
	// ScheduleTimeout bounds how long a schedule's pause, unpause or
	// trigger waits for a runtime running the schedule engine
	// (schedule.Register) to take it; 0 is 30 s. A request not taken in
	// time stays queued, and the schedule takes it when such a runtime
	// runs.
	ScheduleTimeout time.Duration
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// handler serves the dashboard.
type handler struct {
	// c serves the reads ops does not wrap: the tree's instance infos and
	// the queues page's depths and metrics.
	c     *durable.Client
	ops   *ops.Service
	sched *schedule.Client
	opts  Options
	base  string
	pages map[string]*template.Template
	csrf  *csrfGuard
	mux   *http.ServeMux
}

// New returns the dashboard over c.
func New(c *durable.Client, opts Options) http.Handler {
	h := &handler{c: c, ops: ops.New(c), sched: schedule.NewClient(c), opts: opts, base: strings.TrimRight(opts.BasePath, "/")}
	if h.opts.Title == "" {
		h.opts.Title = "duroxide"
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails (Go 1.24+)
	h.csrf = &csrfGuard{key: key, path: h.base + "/"}
	h.pages = parsePages(h.funcs())
	h.mux = h.routes()
	var out http.Handler = h.mux
	if !opts.ReadOnly {
		out = http.NewCrossOriginProtection().Handler(out)
	}
	out = withSecurityHeaders(out)
	if h.base != "" {
		out = http.StripPrefix(h.base, out)
	}
	return out
}

func (h *handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", h.list)
	mux.HandleFunc("GET /instances/{id}", h.instance)
	mux.HandleFunc("GET /queues", h.queues)
	mux.HandleFunc("GET /api/sample", h.sampleJSON)
	mux.HandleFunc("GET /instances/{id}/confirm/{action}", h.confirm)
	mux.HandleFunc("POST /instances/{id}/{action}", h.act)
	mux.HandleFunc("GET /schedules", h.scheduleList)
	mux.HandleFunc("GET /schedules/{id}", h.scheduleDetail)
	mux.HandleFunc("GET /schedules/{id}/confirm/{action}", h.scheduleConfirm)
	mux.HandleFunc("POST /schedules/{id}/{action}", h.scheduleAct)
	return mux
}

// withSecurityHeaders adds headers that keep a hostile value from running
// as script even if it escaped the templates, and keep the pages out of
// frames.
func withSecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func parsePages(funcs template.FuncMap) map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, name := range []string{"list", "instance", "confirm", "error", "queues", "schedules", "schedule", "schedule_confirm"} {
		t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
		pages[name] = t
	}
	return pages
}

// render writes page with data and status code.
func (h *handler) render(w http.ResponseWriter, code int, page string, data map[string]any) {
	data["Title"] = h.opts.Title
	data["Base"] = h.base
	data["ReadOnly"] = h.opts.ReadOnly
	var buf strings.Builder
	if err := h.pages[page].Execute(&buf, data); err != nil {
		http.Error(w, "dashboard: rendering "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprint(w, buf.String())
}
