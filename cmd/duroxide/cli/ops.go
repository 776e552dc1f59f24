package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
	"github.com/duroxide-go/cdb/schedule"
)

// The exit codes of the operations commands, beyond ExitOK, ExitFailed
// (a bulk action failed on some instance, or an action was refused, such
// as purging a running instance without -force or rewinding one that did
// not fail), ExitUsage and ExitError
// (the store could not be reached).
const (
	// ExitNotFound: the instance does not exist.
	ExitNotFound = 4
	// ExitNotSupported: this version cannot perform the operation (raise
	// or enqueue in bulk; suspend or resume on a store that cannot
	// suspend).
	ExitNotSupported = 5
)

// parseArgs parses flags and positional arguments in any order (the flag
// package alone stops at the first positional one).
func (c Command) parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard) // the error is reported once, by Run
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, c.helpRequested(fs)
			}
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// positional checks the count of positional arguments.
func positional(pos []string, names ...string) error {
	if len(pos) != len(names) {
		return fmt.Errorf("%w: want %s, got %d argument(s)", errUsage, strings.Join(names, " "), len(pos))
	}
	return nil
}

// withService runs fn on an ops.Service over the opened provider.
func (c Command) withService(ctx context.Context, fn func(*ops.Service) error) error {
	return c.withProvider(ctx, func(p duroxide.Provider) error { return fn(ops.New(durable.NewClient(p))) })
}

// filters are the search flags list and the bulk actions share.
type filters struct {
	q                                                            duroxide.InstanceQuery
	states                                                       string
	createdAfter, createdBefore, completedAfter, completedBefore string
}

func (f *filters) add(fs *flag.FlagSet) {
	fs.StringVar(&f.q.Name, "name", "", "orchestration name")
	fs.StringVar(&f.q.Version, "version", "", "orchestration version")
	fs.StringVar(&f.states, "status", "", "state, or states separated by commas: "+strings.Join(ops.States(), ", "))
	fs.StringVar(&f.q.IDPrefix, "prefix", "", "instance id prefix")
	fs.StringVar(&f.q.ParentID, "parent", "", "parent instance id (its sub-orchestrations)")
	fs.StringVar(&f.createdAfter, "created-after", "", "created at or after this time (RFC 3339, or a duration ago: 24h)")
	fs.StringVar(&f.createdBefore, "created-before", "", "created before this time (RFC 3339, or a duration ago)")
	fs.StringVar(&f.completedAfter, "completed-after", "", "ended at or after this time (RFC 3339, or a duration ago); ended instances only")
	fs.StringVar(&f.completedBefore, "completed-before", "", "ended before this time (RFC 3339, or a duration ago); ended instances only")
}

// query returns the query with the states and times resolved.
func (f *filters) query(now time.Time) (duroxide.InstanceQuery, error) {
	q := f.q
	var err error
	if q.States, err = ops.ParseStates(f.states); err != nil {
		return q, err
	}
	for _, w := range []struct {
		s  string
		to *time.Time
	}{{f.createdAfter, &q.CreatedFrom}, {f.createdBefore, &q.CreatedBefore}, {f.completedAfter, &q.CompletedFrom}, {f.completedBefore, &q.CompletedBefore}} {
		if *w.to, err = parseWhen(w.s, now); err != nil {
			return q, err
		}
	}
	return q, nil
}

// set reports whether any filter is given.
func (f *filters) set() bool {
	return f.q.Name != "" || f.q.Version != "" || f.states != "" || f.q.IDPrefix != "" || f.q.ParentID != "" ||
		f.createdAfter != "" || f.createdBefore != "" || f.completedAfter != "" || f.completedBefore != ""
}

// parseWhen reads an RFC 3339 time or a duration before now.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%w: %q is neither an RFC 3339 time nor a duration", errUsage, s)
}

// list prints one page of the instances the filters select (every page
// with -all).
func (c Command) list(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("duroxide list", flag.ContinueOnError)
	var f filters
	f.add(fs)
	fs.IntVar(&f.q.PageSize, "limit", ops.DefaultPageSize, "instances per page")
	fs.StringVar(&f.q.ContinuationToken, "page", "", "continue from this page token (printed after a page; same filters)")
	order := fs.String("order", "created-desc", "created-desc (newest first), created-asc, or any (the store's cheapest)")
	count := fs.Bool("count", true, "count the matches on the first page (reads every match)")
	all := fs.Bool("all", false, "print every page")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if err := positional(pos); err != nil {
		return 0, err
	}
	q, err := f.query(time.Now())
	if err != nil {
		return 0, err
	}
	if q.OrderBy, err = duroxide.ParseSearchOrder(*order); err != nil {
		return 0, err
	}
	q.CountTotal = *count && q.ContinuationToken == ""
	err = c.withService(ctx, func(s *ops.Service) error {
		page, err := searchAll(ctx, s, q, *all)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(c.Stdout, page)
		}
		writeTable(c.Stdout, page.Instances)
		if page.Total != nil {
			fmt.Fprintf(c.Stderr, "%d of %d matching\n", len(page.Instances), *page.Total)
		} else {
			fmt.Fprintf(c.Stderr, "%d listed\n", len(page.Instances))
		}
		if page.Next != "" {
			fmt.Fprintf(c.Stderr, "next page: -page %s\n", page.Next)
		}
		return nil
	})
	return ExitOK, err
}

// searchAll returns the page q asks for or, with all, every page from it
// on in one; the count is the first page's.
func searchAll(ctx context.Context, s *ops.Service, q duroxide.InstanceQuery, all bool) (*ops.Page, error) {
	page, err := s.Search(ctx, q)
	for err == nil && all && page.Next != "" {
		q.ContinuationToken, q.CountTotal = page.Next, false
		var more *ops.Page
		if more, err = s.Search(ctx, q); err == nil {
			page.Instances, page.Next = append(page.Instances, more.Instances...), more.Next
		}
	}
	return page, err
}

// show prints everything about one instance.
func (c Command) show(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("duroxide show", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	full := fs.Bool("full", false, "print payloads in full (default: clipped to 100 characters)")
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if err := positional(pos, "INSTANCE"); err != nil {
		return 0, err
	}
	err = c.withService(ctx, func(s *ops.Service) error {
		d, err := s.Instance(ctx, pos[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(c.Stdout, d)
		}
		writeDetail(c.Stdout, d, *full)
		return nil
	})
	return ExitOK, err
}

// start starts an instance.
func (c Command) start(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("duroxide start", flag.ContinueOnError)
	var r ops.StartRequest
	fs.StringVar(&r.Orchestration, "name", "", "orchestration name (required)")
	fs.StringVar(&r.Version, "version", "", "pin this version")
	fs.StringVar(&r.Input, "input", "", "input, stored as given (JSON for typed orchestrations)")
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if err := positional(pos, "INSTANCE"); err != nil {
		return 0, err
	}
	if r.Orchestration == "" {
		return 0, fmt.Errorf("%w: start needs -name", errUsage)
	}
	r.Instance = pos[0]
	err = c.withService(ctx, func(s *ops.Service) error { return s.Start(ctx, r) })
	if err == nil {
		fmt.Fprintf(c.Stdout, "started %s\n", quoteID(r.Instance))
	}
	return ExitOK, err
}

// message runs raise or enqueue: INSTANCE NAME [DATA], starting the
// instance first with -start.
func (c Command) message(ctx context.Context, a ops.Action, args []string) (int, error) {
	fs := flag.NewFlagSet("duroxide "+string(a), flag.ContinueOnError)
	var r ops.SignalStartRequest
	fs.StringVar(&r.Orchestration, "start", "", "start this orchestration first if the instance does not exist")
	fs.StringVar(&r.Version, "version", "", "with -start: pin this version")
	fs.StringVar(&r.Input, "input", "", "with -start: input, stored as given")
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	what := "EVENT"
	if a == ops.ActionEnqueue {
		what = "QUEUE"
	}
	if len(pos) == 2 {
		pos = append(pos, "")
	}
	if err := positional(pos, "INSTANCE", what, "[DATA]"); err != nil {
		return 0, err
	}
	if r.Orchestration == "" && (r.Version != "" || r.Input != "") {
		return 0, fmt.Errorf("%w: -version and -input need -start", errUsage)
	}
	r.Instance, r.Action, r.Name, r.Data = pos[0], a, pos[1], pos[2]
	started := false
	err = c.withService(ctx, func(s *ops.Service) error {
		if r.Orchestration == "" {
			return s.Do(ctx, r.Instance, a, ops.Request{Name: r.Name, Data: r.Data})
		}
		var err error
		started, err = s.SignalWithStart(ctx, r)
		return err
	})
	if err == nil {
		fmt.Fprintf(c.Stdout, "%s %s to %s", doneVerb(a), quoteID(r.Name), quoteID(r.Instance))
		if started {
			fmt.Fprintf(c.Stdout, ", which it started as %s", quoteID(r.Orchestration))
		}
		fmt.Fprintln(c.Stdout)
	}
	return ExitOK, err
}

// update sends an update (INSTANCE UPDATE [DATA]) and prints the answer.
func (c Command) update(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("duroxide update", flag.ContinueOnError)
	var r ops.UpdateRequest
	fs.StringVar(&r.ID, "id", "", "update id: a retry with the same id prints the first answer and runs nothing")
	fs.DurationVar(&r.Timeout, "timeout", 30*time.Second, "how long to wait for the answer")
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if len(pos) == 2 {
		pos = append(pos, "")
	}
	if err := positional(pos, "INSTANCE", "UPDATE", "[DATA]"); err != nil {
		return 0, err
	}
	r.Instance, r.Name, r.Data = pos[0], pos[1], pos[2]
	var answer string
	err = c.withService(ctx, func(s *ops.Service) error {
		var err error
		answer, err = s.Update(ctx, r)
		return err
	})
	if err == nil {
		fmt.Fprintln(c.Stdout, answer)
	}
	return ExitOK, err
}

// action runs cancel, purge, suspend, resume, rewind, restart or redrive
// on one instance or, with filters instead of an id, on every instance
// they select.
func (c Command) action(ctx context.Context, a ops.Action, args []string) (int, error) {
	fs := flag.NewFlagSet("duroxide "+string(a), flag.ContinueOnError)
	var r ops.Request
	var f filters
	f.add(fs)
	var b bulkFlags
	fs.BoolVar(&b.dryRun, "dry-run", false, "with filters (or purge's INSTANCE): list the instances it would apply to and do nothing")
	fs.BoolVar(&b.progress, "progress", false, "with filters: draw a progress bar on standard error even if it is not a terminal")
	fs.IntVar(&b.max, "max", 0, "with filters: stop after acting on this many instances (0: no limit)")
	switch a {
	case ops.ActionCancel:
		fs.StringVar(&r.Reason, "reason", "canceled from the duroxide CLI", "cancellation reason")
	case ops.ActionSuspend, ops.ActionResume, ops.ActionRewind:
		fs.StringVar(&r.Reason, "reason", string(a)+" from the duroxide CLI", "reason, logged with the operation")
	case ops.ActionPurge:
		fs.BoolVar(&r.Force, "force", false, "purge running instances too")
	case ops.ActionRestart:
		fs.Func("input", "restart with this input, stored as given (default: the input of the execution that ended)",
			func(v string) error { r.Input = &v; return nil })
		fs.StringVar(&r.Version, "pin", "", "restart this exact version (default: the registry's choice, as for a new start)")
	}
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	switch {
	case len(pos) == 1 && !f.set() && b.dryRun && b.max == 0 && a == ops.ActionPurge:
		return c.purgeDryRun(ctx, pos[0], r.Force)
	case len(pos) == 1 && !f.set() && !b.dryRun && b.max == 0:
	case len(pos) == 0 && f.set():
		b.progress = b.progress || isTerminal(c.Stderr)
		return c.bulk(ctx, a, r, f, b)
	case len(pos) == 1 && !f.set() && (b.dryRun || b.max != 0):
		return 0, fmt.Errorf("%w: -dry-run and -max go with filters (of one INSTANCE, only purge has a dry run)", errUsage)
	default:
		return 0, fmt.Errorf("%w: %s takes one INSTANCE, or filters (-name -version -status -prefix -parent -created-after "+
			"-created-before -completed-after -completed-before) for many", errUsage, a)
	}
	err = c.withService(ctx, func(s *ops.Service) error {
		err := s.Do(ctx, pos[0], a, r)
		if a == ops.ActionPurge && errors.Is(err, durable.ErrInstanceStillRunning) {
			return stillRunning(ctx, s, pos[0], err)
		}
		return err
	})
	if err == nil {
		fmt.Fprintf(c.Stdout, "%s %s\n", doneVerb(a), quoteID(pos[0]))
	}
	return ExitOK, err
}

// purgeDryRun prints the ids a purge of instance would delete, one a line
// on standard output, and a summary on standard error; it deletes
// nothing. A purge that would be refused (a running instance without
// -force, a sub-orchestration) fails as the purge would.
func (c Command) purgeDryRun(ctx context.Context, instance string, force bool) (int, error) {
	err := c.withService(ctx, func(s *ops.Service) error {
		ids, err := s.PurgePlan(ctx, instance, force)
		if errors.Is(err, durable.ErrInstanceStillRunning) {
			err = stillRunning(ctx, s, instance, err)
		}
		if err != nil {
			return fmt.Errorf("dry run: %w", err)
		}
		for _, id := range ids {
			fmt.Fprintln(c.Stdout, quoteID(id))
		}
		fmt.Fprintf(c.Stderr, "dry run: purge would delete %d instance(s): %s and %d sub-orchestration(s)\n", len(ids), quoteID(instance), len(ids)-1)
		return nil
	})
	return ExitOK, err
}

// cliError is an error's text as the CLI says it, keeping the error for
// errors.Is (and so the exit code).
type cliError struct {
	msg string
	err error
}

func (e *cliError) Error() string { return e.msg }
func (e *cliError) Unwrap() error { return e.err }

// stillRunning says which instance of instance's tree keeps a purge from
// running, and names the flag that purges it anyway.
func stillRunning(ctx context.Context, s *ops.Service, instance string, err error) error {
	who := "instance " + strconv.Quote(instance)
	if id, ok := s.RunningInTree(ctx, instance); ok && id != instance {
		who += "'s sub-orchestration " + strconv.Quote(id)
	}
	return &cliError{msg: who + " is still running: purge -force deletes it anyway, or cancel it first", err: err}
}

// bulkFlags are the flags of an action on many instances.
type bulkFlags struct {
	dryRun, progress bool
	max              int
}

// maxSkipLines bounds the skipped instances a bulk action names.
const maxSkipLines = 20

// bulk runs a on every instance f selects: on a dry run the ids it would
// act on go to standard output; skipped instances (with why) and failures
// go to standard error, then a summary line to standard output.
func (c Command) bulk(ctx context.Context, a ops.Action, r ops.Request, f filters, b bulkFlags) (int, error) {
	q, err := f.query(time.Now())
	if err != nil {
		return 0, err
	}
	if !ops.BulkSupported(a) {
		return 0, fmt.Errorf("%s of many instances: %w", a, ops.ErrNotSupported)
	}
	var bar *progressBar
	if b.progress {
		bar = &progressBar{w: c.Stderr, label: string(a), last: -1}
	}
	skipped := 0
	o := durable.BulkOptions{DryRun: b.dryRun, Limit: b.max, Progress: func(p durable.BulkProgress) {
		for _, it := range p.Page {
			if it.Outcome == durable.BulkSkipped || b.dryRun {
				bar.clear() // the lines below start on their own
			}
			switch {
			case it.Outcome == durable.BulkDone && b.dryRun:
				fmt.Fprintln(c.Stdout, quoteID(it.InstanceID))
			case it.Outcome == durable.BulkSkipped:
				if skipped++; skipped <= maxSkipLines {
					// The CLI's name for the client's Force option.
					reason := strings.ReplaceAll(it.Reason, "(use Force)", "(use -force)")
					fmt.Fprintf(c.Stderr, "skipped %s: %s\n", quoteID(it.InstanceID), safe(reason))
				}
			}
		}
		bar.update(p.Examined, max(p.Total, p.Examined))
	}}
	var res *durable.BulkResult
	err = c.withService(ctx, func(s *ops.Service) error {
		res, err = s.Bulk(ctx, q, a, r, o)
		return err
	})
	bar.finish()
	if res == nil {
		return 0, err
	}
	if skipped > maxSkipLines {
		fmt.Fprintf(c.Stderr, "skipped %d more\n", skipped-maxSkipLines)
	}
	for _, fl := range res.Errors {
		fmt.Fprintf(c.Stderr, "%s %s: %s\n", a, quoteID(fl.InstanceID), describe(fl.Err))
	}
	if b.dryRun {
		fmt.Fprintf(c.Stderr, "dry run: %s would apply to %d instance(s), %d skipped, of %d matching\n", a, res.Done, res.Skipped, res.Total)
		return ExitOK, err
	}
	fmt.Fprintf(c.Stdout, "%s: %d done, %d skipped, %d failed, of %d matching\n", a, res.Done, res.Skipped, res.Failed, res.Total)
	if err != nil {
		return 0, err
	}
	if res.Failed > 0 {
		return ExitFailed, nil
	}
	return ExitOK, nil
}

func doneVerb(a ops.Action) string {
	switch a {
	case ops.ActionRaise:
		return "raised"
	case ops.ActionEnqueue:
		return "enqueued"
	case ops.ActionCancel:
		return "cancel requested for"
	case ops.ActionPurge:
		return "purged"
	}
	// The lifecycle calls enqueue a request that a runtime carries out.
	return string(a) + " requested for"
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// exitCode maps an operation's error to its exit code.
func exitCode(err error) int {
	switch {
	case errors.Is(err, durable.ErrInstanceNotFound), errors.Is(err, schedule.ErrNotFound):
		return ExitNotFound
	case errors.Is(err, schedule.ErrInvalidSpec), errors.Is(err, schedule.ErrInvalidOptions):
		return ExitUsage
	case errors.Is(err, schedule.ErrExists), errors.Is(err, errNoScheduler):
		return ExitFailed
	case errors.Is(err, ops.ErrNotSupported):
		return ExitNotSupported
	case errors.Is(err, durable.ErrInvalidInput), errors.Is(err, durable.ErrNotRegistered):
		return ExitUsage
	case errors.Is(err, durable.ErrInstanceStillRunning), errors.Is(err, durable.ErrInstanceExists), errors.Is(err, durable.ErrInvalidState),
		errors.Is(err, durable.ErrCannotDeleteSubOrchestration), isUpdateAnswer(err), errors.Is(err, durable.ErrTimeout):
		return ExitFailed
	}
	return ExitError
}

// isUpdateAnswer reports whether err is an instance's answer to an
// update (refused, failed or unanswered): the action was refused, the
// store is fine.
func isUpdateAnswer(err error) bool {
	var u *durable.UpdateError
	return errors.As(err, &u)
}
