// Package cli is the duroxide command line: find, inspect and act on
// instances (list, show, start, raise, enqueue, cancel, suspend, resume,
// rewind, restart, purge), serve the web dashboard (ui), write stored
// histories to a JSON export (export) and check orchestration code against
// them (replay, package durable/replayer).
//
// Start with [Main]; the commands and their flags are in ops.go, over the
// operations package (internal/ops) the dashboard shares.
//
// Replaying needs the orchestration code, which only your program has, so
// `replay` runs from a main of your own that passes its registry:
//
//	func main() { os.Exit(cli.Main(myapp.NewRegistry())) }
//
//	go run ./cmd/replaycheck replay -export prod-histories.json
//
// The stock command (cmd/duroxide) has no registry: it offers every other
// command and explains replay. The store is the one embedded.Open opens:
// the Cosmos DB account of the COSMOS_* environment variables (a key, a
// connection string, or Entra ID through DefaultAzureCredential), else the
// in-process store in DUROXIDE_DATA_DIR or .duroxide/default. While a
// service has that store open, the command joins the store the service
// serves (embedded.Options.JoinRunning): no need to stop it to look.
//
// Exit codes: 0 success; 1 some execution does not replay, a bulk action
// failed on some instance, or an action was refused (purging a running
// instance without -force, starting an existing id, cancelling an
// instance that already ended, an instance not in the state the action
// needs); 2 usage error (one line saying what is wrong, the command's
// usage line and where the full usage is) or invalid input; 3 the
// store or the histories could not be read or written; 4 the instance
// does not exist; 5 the operation is not supported (raise or enqueue in
// bulk, suspend on a store that cannot suspend).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/replayer"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/ops"
	"github.com/duroxide-go/cdb/payload"
)

// The exit codes.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
	ExitError  = 3
)

// OpenFunc opens the provider histories are read from; close releases it.
type OpenFunc func(ctx context.Context) (p duroxide.Provider, close func() error, err error)

// Command is one configuration of the command line.
type Command struct {
	// Registry is the orchestration code replay checks; nil makes replay a
	// usage error that says how to get one.
	Registry *durable.Registry
	// Open opens the provider; nil opens the store embedded.Open opens
	// (OpenEmbedded).
	Open OpenFunc
	// Stdout and Stderr default to the process's.
	Stdout, Stderr io.Writer
	// Ready, if set, is called with the dashboard's URL once `ui` listens.
	Ready func(url string)
}

// Main runs the command line with reg on os.Args (an interrupt cancels
// it) and returns its exit code, for a main of your own to exit with:
//
//	func main() { os.Exit(cli.Main(myapp.NewRegistry())) }
func Main(reg *durable.Registry) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return Command{Registry: reg}.Run(ctx, os.Args[1:])
}

// OpenCosmosFromEnv opens the provider of cdb.ConfigFromEnv.
func OpenCosmosFromEnv(ctx context.Context) (duroxide.Provider, func() error, error) {
	cfg, err := cdb.ConfigFromEnv()
	if err != nil {
		return nil, nil, err
	}
	p, err := cdb.New(ctx, cfg, nil)
	if err != nil {
		return nil, nil, err
	}
	return p, p.Close, nil
}

const usage = `usage:
  duroxide list [filters] [-order O] [-limit N] [-page TOKEN] [-all] [-count=false] [-json]
                                        list instances, newest first (search is the same)
  duroxide show INSTANCE [-json] [-full]
                                        status, custom status, KV, sub-orchestrations and
                                        each execution's history as a timeline
  duroxide start -name ORCHESTRATION [-version V] [-input DATA] INSTANCE
  duroxide raise [-start ORCHESTRATION [-version V] [-input DATA]] INSTANCE EVENT [DATA]
                                        deliver an event to a pending wait; -start starts the
                                        instance first if it does not exist, in one write
  duroxide enqueue [-start ORCHESTRATION [-version V] [-input DATA]] INSTANCE QUEUE [DATA]
                                        append a message to the instance's queue (-start: as raise)
  duroxide update [-id ID] [-timeout D] INSTANCE UPDATE [DATA]
                                        send an update and print the instance's answer
  duroxide cancel [-reason R] INSTANCE | cancel [filters] [-reason R] [-dry-run] [-max N] [-progress]
  duroxide purge [-force] [-dry-run] INSTANCE | purge [filters] [-force] [-dry-run] [-max N] [-progress]
  duroxide suspend|resume|rewind [-reason R] INSTANCE | suspend|resume|rewind [filters] [-dry-run] [-max N] [-progress]
                                        hold a running instance / let it go on / run a failed
                                        instance's failed work again, keeping its results
  duroxide restart [-input DATA] [-pin VERSION] INSTANCE | restart [filters] ...
                                        start an ended instance again as a new execution
  duroxide redrive INSTANCE | redrive [filters] ...
                                        deliver a poisoned instance's work again
  duroxide ui [-addr 127.0.0.1:8080] [-read-only]
                                        serve the web dashboard
  duroxide export [-o FILE] [export filters]
                                        write stored histories as a JSON export (default stdout)
  duroxide replay [-export FILE | export filters] [-v] [-patch ID]
                                        check the orchestration code against stored histories;
                                        -patch: also fail while a running instance takes the old
                                        branch of ctx.Patched(ID)
filters: -name NAME -version V -status STATE[,STATE] -prefix ID_PREFIX -parent ID
  -created-after T -created-before T -completed-after T -completed-before T
  (STATE: running, completed, failed, cancelled, suspended, blocked; T: RFC 3339, or a duration
  ago such as 24h; O: created-desc, created-asc, any)
export filters: -orchestration NAME -status STATUS -prefix ID_PREFIX -all-executions
The store: the Cosmos DB account of COSMOS_ENDPOINT (with COSMOS_KEY, or Entra ID without it) or
COSMOS_CONNECTION_STRING, with COSMOS_DATABASE and COSMOS_CONTAINER; without one, the in-process
store in DUROXIDE_DATA_DIR (default .duroxide/default), which only one process may open at a time.
Exit codes: 0 ok; 1 replay mismatch, bulk failures or a refused action; 2 usage or invalid input;
3 store unreachable; 4 instance not found; 5 not supported.
`

// errUsage marks a command line that cannot be run.
var errUsage = errors.New("usage")

// Run runs args (without the program name) and returns the exit code.
func (c Command) Run(ctx context.Context, args []string) int {
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Open == nil {
		c.Open = OpenEmbedded(c.Stderr)
	}
	if len(args) == 0 {
		fmt.Fprint(c.Stderr, usage)
		return ExitUsage
	}
	var code int
	var err error
	switch args[0] {
	case "export":
		code, err = c.export(ctx, args[1:])
	case "replay":
		code, err = c.replay(ctx, args[1:])
	case "list", "search":
		code, err = c.list(ctx, args[1:])
	case "show":
		code, err = c.show(ctx, args[1:])
	case "start":
		code, err = c.start(ctx, args[1:])
	case "raise":
		code, err = c.message(ctx, ops.ActionRaise, args[1:])
	case "enqueue":
		code, err = c.message(ctx, ops.ActionEnqueue, args[1:])
	case "update":
		code, err = c.update(ctx, args[1:])
	case "cancel", "purge", "suspend", "resume", "rewind", "restart", "redrive":
		a, _ := ops.ParseAction(args[0])
		code, err = c.action(ctx, a, args[1:])
	case "ui":
		code, err = c.ui(ctx, args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprint(c.Stdout, usage)
		return ExitOK
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	if err == nil {
		return code
	}
	if errors.Is(err, flag.ErrHelp) {
		return ExitOK // the command's usage is printed
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintln(c.Stderr, "duroxide:", strings.TrimPrefix(describe(err), errUsage.Error()+": "))
		if line := usageLine(args[0]); line != "" {
			fmt.Fprintln(c.Stderr, "usage:", line)
		}
		fmt.Fprintln(c.Stderr, usageHint)
		return ExitUsage
	}
	fmt.Fprintln(c.Stderr, "duroxide:", describe(err))
	return exitCode(err)
}

// usageHint ends a usage error.
const usageHint = "run 'duroxide help' (or -h) for usage"

// usageLine is command's line of the usage text ("duroxide purge
// [-force] INSTANCE | ..."), or "" for an unknown command.
func usageLine(command string) string {
	if command == "search" {
		command = "list"
	}
	for _, line := range strings.Split(usage, "\n") {
		rest, ok := strings.CutPrefix(line, "  duroxide ")
		if !ok {
			continue
		}
		names, _, _ := strings.Cut(rest, " ")
		if slices.Contains(strings.Split(names, "|"), command) {
			synopsis, _, _ := strings.Cut(rest, "  ") // before the description
			return "duroxide " + strings.TrimSpace(synopsis)
		}
	}
	return ""
}

// describe is err's text for a person: without the provider's internal
// operation names ("get_instance_info: ") that lead a ProviderError's
// text. The error itself, which exitCode matches, is unchanged.
func describe(err error) string {
	msg := err.Error()
	for _, pe := range providerErrors(err) {
		if pe.Operation != "" {
			msg = strings.Replace(msg, pe.Operation+": ", "", 1)
		}
	}
	return msg
}

// providerErrors lists the *duroxide.ProviderError values in err's tree.
func providerErrors(err error) []*duroxide.ProviderError {
	var out []*duroxide.ProviderError
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if pe, ok := err.(*duroxide.ProviderError); ok {
			out = append(out, pe)
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}

// helpRequested prints the usage of fs's command (its usage line and
// flags) to standard output for -h, and returns flag.ErrHelp.
func (c Command) helpRequested(fs *flag.FlagSet) error {
	command := strings.TrimPrefix(fs.Name(), "duroxide ")
	if line := usageLine(command); line != "" {
		fmt.Fprintln(c.Stdout, "usage:", line)
	}
	fs.SetOutput(c.Stdout)
	fs.PrintDefaults()
	return flag.ErrHelp
}

// options are the flags both commands share.
type options struct {
	filter     replayer.Filter
	exportPath string // replay: read this export; export: write here
	verbose    bool
	patch      string // replay: fail while an execution needs this patch's old branch
}

func (c Command) parse(name string, args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("duroxide "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is reported once, by Run
	fs.StringVar(&o.filter.Orchestration, "orchestration", "", "only instances of this orchestration name")
	fs.StringVar(&o.filter.Status, "status", "", "only instances in this status (Running, Completed, Failed, ...)")
	fs.StringVar(&o.filter.IDPrefix, "prefix", "", "only instances whose id starts with this")
	fs.BoolVar(&o.filter.AllExecutions, "all-executions", false, "every stored execution, not only the current one")
	if name == "export" {
		fs.StringVar(&o.exportPath, "o", "", "write the export to this file (default stdout)")
	} else {
		fs.StringVar(&o.exportPath, "export", "", "read histories from this export instead of the provider")
		fs.BoolVar(&o.verbose, "v", false, "list the executions that replay too")
		fs.StringVar(&o.patch, "patch", "", "fail while a running execution takes the old branch of this patch")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, c.helpRequested(fs)
		}
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if name == "replay" && o.exportPath != "" && o.filter != (replayer.Filter{}) {
		return o, fmt.Errorf("%w: filters select from a provider; pass them to export instead", errUsage)
	}
	return o, nil
}

// withProvider runs fn on the opened provider, read through the codecs
// DUROXIDE_CODEC and DUROXIDE_CODEC_KEYS configure (payload.CodecsFromEnv):
// a payload they cannot decode shows as a placeholder.
func (c Command) withProvider(ctx context.Context, fn func(duroxide.Provider) error) error {
	return c.withCodecs(ctx, payload.WrapForDisplay, fn)
}

// withHistories is withProvider for replay and export, which must see
// the payloads themselves: with codecs configured a payload that does
// not decode fails the command, and without them payloads are read as
// stored (an export keeps their envelopes).
func (c Command) withHistories(ctx context.Context, fn func(duroxide.Provider) error) error {
	return c.withCodecs(ctx, func(p duroxide.Provider, codecs ...payload.Codec) (duroxide.Provider, error) {
		if len(codecs) == 0 {
			return p, nil
		}
		return payload.Wrap(p, codecs...)
	}, fn)
}

func (c Command) withCodecs(ctx context.Context, wrap func(duroxide.Provider, ...payload.Codec) (duroxide.Provider, error), fn func(duroxide.Provider) error) error {
	codecs, err := payload.CodecsFromEnv(os.Getenv)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	raw, closeFn, err := c.Open(ctx)
	if err != nil {
		return fmt.Errorf("opening the provider: %w", err)
	}
	p, err := wrap(raw, codecs...)
	if err == nil {
		err = fn(p)
	}
	if closeFn != nil {
		if cerr := closeFn(); err == nil && cerr != nil {
			err = cerr
		}
	}
	return err
}

func (c Command) export(ctx context.Context, args []string) (int, error) {
	ctx = duroxide.LowPriorityUnlessSet(ctx) // reads only: an operator's (docs/costs.md, "Priority")
	o, err := c.parse("export", args)
	if err != nil {
		return 0, err
	}
	err = c.withHistories(ctx, func(p duroxide.Provider) error {
		src := replayer.FromProvider(p, o.filter)
		if o.exportPath == "" {
			return replayer.Export(ctx, c.Stdout, src)
		}
		return replayer.ExportToFile(ctx, o.exportPath, src)
	})
	return ExitOK, err
}

func (c Command) replay(ctx context.Context, args []string) (int, error) {
	ctx = duroxide.LowPriorityUnlessSet(ctx) // reads only: an operator's (docs/costs.md, "Priority")
	o, err := c.parse("replay", args)
	if err != nil {
		return 0, err
	}
	if c.Registry == nil {
		return 0, fmt.Errorf("%w: replay needs your orchestration code: build a main that exits with "+
			"os.Exit(cli.Main(registry)) (package github.com/duroxide-go/cdb/cmd/duroxide/cli) and run replay there", errUsage)
	}
	var rep *replayer.Report
	run := func(src replayer.Source) (err error) {
		rep, err = replayer.Replay(ctx, c.Registry, src)
		return err
	}
	if o.exportPath != "" {
		err = run(replayer.FromExportFile(o.exportPath))
	} else {
		err = c.withHistories(ctx, func(p duroxide.Provider) error { return run(replayer.FromProvider(p, o.filter)) })
	}
	if err != nil {
		return 0, err
	}
	if o.verbose {
		for _, r := range rep.Results {
			if r.Status == replayer.StatusOK {
				fmt.Fprintln(c.Stdout, r)
			}
		}
	}
	if err := rep.WriteText(c.Stdout); err != nil {
		return 0, err
	}
	if !rep.OK() {
		return ExitFailed, nil
	}
	if o.patch != "" {
		if old := rep.OldPatchBranches(o.patch); len(old) > 0 {
			fmt.Fprintf(c.Stdout, "patch %q: %d running executions take its old branch; keep ctx.Patched\n", o.patch, len(old))
			return ExitFailed, nil
		}
		fmt.Fprintf(c.Stdout, "patch %q: no running execution takes its old branch\n", o.patch)
	}
	return ExitOK, nil
}
