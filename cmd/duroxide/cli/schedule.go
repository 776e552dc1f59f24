package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/schedule"
)

// The schedule subcommands talk to the schedule's orchestration: create
// and the requests wait for a runtime that registered schedule.Register
// to take them, up to -timeout.

// errNoScheduler is a request no runtime took in time.
var errNoScheduler = errors.New("no runtime took the request in time (is a runtime with schedule.Register running on this store?)")

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, "; ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// schedule runs `duroxide schedule SUBCOMMAND ...`.
func (c Command) schedule(ctx context.Context, args []string) (int, error) {
	if len(args) == 0 {
		return 0, fmt.Errorf("%w: schedule needs a subcommand: create, describe, list, pause, unpause, trigger, backfill or delete", errUsage)
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("duroxide schedule", flag.ContinueOnError)
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for a runtime to take the request")
	var run func(context.Context, *schedule.Client, []string) error
	switch sub {
	case "create":
		finish := scheduleFlags(fs)
		run = func(ctx context.Context, sc *schedule.Client, pos []string) error {
			opts, err := finish()
			if err != nil {
				return err
			}
			if err := sc.Create(ctx, pos[0], opts); err != nil {
				return err
			}
			fmt.Fprintf(c.Stdout, "created schedule %s\n", quoteID(pos[0]))
			return nil
		}
	case "describe":
		asJSON := fs.Bool("json", false, "print JSON")
		next := fs.Int("next", 5, "how many coming fire times to show")
		run = func(ctx context.Context, sc *schedule.Client, pos []string) error {
			d, err := sc.Describe(ctx, pos[0], schedule.DescribeOptions{NextFires: *next})
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(c.Stdout, d)
			}
			writeSchedule(c.Stdout, d)
			return nil
		}
	case "list":
		asJSON := fs.Bool("json", false, "print JSON")
		run = func(ctx context.Context, sc *schedule.Client, _ []string) error {
			l, err := sc.List(ctx)
			if err != nil {
				return err
			}
			if *asJSON {
				return writeJSON(c.Stdout, l)
			}
			writeScheduleTable(c.Stdout, l)
			return nil
		}
	case "pause", "unpause":
		note := fs.String("note", "", "note shown by describe")
		run = func(ctx context.Context, sc *schedule.Client, pos []string) error {
			f := sc.Pause
			if sub == "unpause" {
				f = sc.Unpause
			}
			if err := f(ctx, pos[0], *note); err != nil {
				return err
			}
			fmt.Fprintf(c.Stdout, "%sd schedule %s\n", sub, quoteID(pos[0]))
			return nil
		}
	case "trigger", "backfill":
		overlap := fs.String("overlap", "", "overlap policy for these fires (default: the schedule's)")
		from := fs.String("from", "", "backfill: first time of the range (RFC 3339, inclusive)")
		to := fs.String("to", "", "backfill: end of the range (RFC 3339, exclusive)")
		run = func(ctx context.Context, sc *schedule.Client, pos []string) error {
			o := schedule.TriggerOptions{Overlap: schedule.Overlap(*overlap)}
			if sub == "trigger" {
				if err := sc.Trigger(ctx, pos[0], o); err != nil {
					return err
				}
				fmt.Fprintf(c.Stdout, "triggered schedule %s\n", quoteID(pos[0]))
				return nil
			}
			f, err := time.Parse(time.RFC3339, *from)
			if err != nil {
				return fmt.Errorf("%w: -from: %v", errUsage, err)
			}
			t, err := time.Parse(time.RFC3339, *to)
			if err != nil {
				return fmt.Errorf("%w: -to: %v", errUsage, err)
			}
			if err := sc.Backfill(ctx, pos[0], f, t, o); err != nil {
				return err
			}
			fmt.Fprintf(c.Stdout, "backfilled schedule %s over [%s, %s)\n", quoteID(pos[0]), stamp(f), stamp(t))
			return nil
		}
	case "delete":
		run = func(ctx context.Context, sc *schedule.Client, pos []string) error {
			if err := sc.Delete(ctx, pos[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.Stdout, "deleted schedule %s\n", quoteID(pos[0]))
			return nil
		}
	default:
		return 0, fmt.Errorf("%w: unknown schedule subcommand %q", errUsage, sub)
	}
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if sub == "list" {
		err = positional(pos)
	} else {
		err = positional(pos, "SCHEDULE")
	}
	if err != nil {
		return 0, err
	}
	err = c.withProvider(ctx, func(p duroxide.Provider) error {
		rctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		err := run(rctx, schedule.NewClient(durable.NewClient(p)), pos)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("schedule %s: %w", sub, errNoScheduler)
		}
		return err
	})
	return ExitOK, err
}

// scheduleFlags adds create's flags to fs; finish builds the options.
func scheduleFlags(fs *flag.FlagSet) func() (schedule.Options, error) {
	var o schedule.Options
	var crons stringList
	fs.Var(&crons, "cron", "cron expression (repeatable): 5 fields, @hourly etc., optional CRON_TZ= prefix")
	every := fs.Duration("every", 0, "interval between fires")
	offset := fs.Duration("offset", 0, "the interval's offset from the Unix epoch")
	fs.StringVar(&o.Spec.TimeZone, "tz", "", "IANA time zone of the cron expressions (default UTC)")
	fs.DurationVar(&o.Spec.Jitter, "jitter", 0, "delay each fire by a deterministic amount below this")
	start := fs.String("start", "", "no fire before this time (RFC 3339)")
	end := fs.String("end", "", "no fire after this time (RFC 3339)")
	fs.StringVar(&o.Action.Orchestration, "orchestration", "", "orchestration each fire starts (required)")
	fs.StringVar(&o.Action.Version, "version", "", "its version (default: the registry's policy)")
	fs.StringVar(&o.Action.Input, "input", "", "its input")
	fs.StringVar(&o.Action.IDPrefix, "prefix", "", "run id prefix (default: the schedule id); runs are PREFIX@TIME")
	overlap := fs.String("overlap", "", "skip (default), buffer_one, buffer_all, cancel_other or allow_all")
	fs.DurationVar(&o.CatchupWindow, "catchup", 0, "how late a fire may still start (default 1m)")
	fs.BoolVar(&o.Paused, "paused", false, "create the schedule paused")
	fs.StringVar(&o.Note, "note", "", "note shown by describe")
	return func() (schedule.Options, error) {
		o.Spec.Cron = crons
		o.Overlap = schedule.Overlap(*overlap)
		if *every != 0 {
			o.Spec.Intervals = []schedule.Interval{{Every: *every, Offset: *offset}}
		}
		for _, b := range []struct {
			flag, v string
			to      *time.Time
		}{{"start", *start, &o.Spec.StartAt}, {"end", *end, &o.Spec.EndAt}} {
			if b.v == "" {
				continue
			}
			t, err := time.Parse(time.RFC3339, b.v)
			if err != nil {
				return o, fmt.Errorf("%w: -%s: %v", errUsage, b.flag, err)
			}
			*b.to = t
		}
		return o, nil
	}
}

// writeSchedule prints one schedule's description.
func writeSchedule(w io.Writer, d *schedule.Description) {
	o := d.Options
	fmt.Fprintf(w, "schedule  %s\n", quoteID(d.ID))
	state := "active"
	if o.Paused {
		state = "paused"
	}
	if d.State != durable.StateRunning.String() {
		state = "instance " + d.State + ", " + state
	}
	if o.Note != "" {
		state += " (" + safe(o.Note) + ")"
	}
	fmt.Fprintf(w, "state     %s\n", state)
	if d.Error != "" {
		fmt.Fprintf(w, "error     %s\n", safe(d.Error))
	}
	var spec []string
	for _, c := range o.Spec.Cron {
		spec = append(spec, "cron "+safe(c))
	}
	for _, iv := range o.Spec.Intervals {
		spec = append(spec, fmt.Sprintf("every %v offset %v", iv.Every, iv.Offset))
	}
	if n := len(o.Spec.Calendars); n > 0 {
		spec = append(spec, fmt.Sprintf("%d calendar(s)", n))
	}
	if o.Spec.TimeZone != "" {
		spec = append(spec, "in "+safe(o.Spec.TimeZone))
	}
	fmt.Fprintf(w, "spec      %s\n", strings.Join(spec, ", "))
	fmt.Fprintf(w, "action    %s input %q\n", safe(o.Action.Orchestration), clip(o.Action.Input, false))
	overlap := o.Overlap
	if overlap == "" {
		overlap = schedule.OverlapSkip
	}
	fmt.Fprintf(w, "overlap   %s\n", overlap)
	fmt.Fprintf(w, "started   %d runs\n", d.Started)
	for _, id := range d.Running {
		fmt.Fprintf(w, "running   %s\n", quoteID(id))
	}
	for _, t := range d.Next {
		fmt.Fprintf(w, "next      %s\n", stamp(t))
	}
	for _, r := range d.Recent {
		fmt.Fprintf(w, "recent    %s %-9s %s %s\n", stamp(r.At), r.Kind, stamp(r.Nominal), strings.TrimSpace(quoteID(r.RunID)+" "+r.Reason))
	}
}

// writeScheduleTable prints one line per schedule.
func writeScheduleTable(w io.Writer, l []*schedule.Description) {
	fmt.Fprintf(w, "%-24s %-7s %-8s %s\n", "SCHEDULE", "STATE", "STARTED", "NEXT")
	for _, d := range l {
		state, next := "active", "-"
		if d.Options.Paused {
			state = "paused"
		}
		if len(d.Next) > 0 {
			next = stamp(d.Next[0])
		}
		fmt.Fprintf(w, "%-24s %-7s %-8d %s\n", quoteID(d.ID), state, d.Started, next)
	}
}
