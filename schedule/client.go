package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// Client manages schedules through a durable.Client. Create and the
// requests (Update, Pause, Unpause, Trigger, Backfill) wait for the
// schedule to take them, so a runtime with Register's orchestration must
// be running; Describe, List and Delete only read or write the store.
type Client struct {
	c *durable.Client
}

// NewClient returns a schedule client over c.
func NewClient(c *durable.Client) *Client { return &Client{c: c} }

// Create creates the schedule id and waits until a runtime has taken it.
// An id in use is ErrExists; malformed options are
// ErrInvalidOptions or ErrInvalidSpec.
func (c *Client) Create(ctx context.Context, id string, o Options) error {
	if err := validateID(id); err != nil {
		return err
	}
	if err := o.validate(); err != nil {
		return err
	}
	// A start identical to an earlier one is taken as its retry, so an
	// existing schedule is looked for first.
	if cur, err := c.c.Status(ctx, instanceID(id)); err != nil {
		return err
	} else if cur.State != durable.StateNotFound {
		return fmt.Errorf("%w: %s", ErrExists, id)
	}
	st := state{ID: id, Options: o}
	if err := c.c.StartOrchestration(ctx, instanceID(id), OrchestrationName, st); err != nil {
		if errors.Is(err, durable.ErrInstanceExists) {
			return fmt.Errorf("%w: %s", ErrExists, id)
		}
		return err
	}
	_, err := c.c.WaitForKVValue(ctx, instanceID(id), stateKey)
	return err
}

// Description is a schedule as Describe reads it.
type Description struct {
	ID      string  `json:"id"`
	Options Options `json:"options"`
	// State is the schedule orchestration's durable.State, as its String:
	// "Running" while it fires, "Suspended" while held, "Failed" once
	// cancelled or failed (it fires no more; Delete removes it).
	State string `json:"state"`
	// Next are the coming nominal fire times (none while paused or not
	// running).
	Next []time.Time `json:"next,omitempty"`
	// Recent are the latest things the schedule did, oldest first.
	Recent []Record `json:"recent,omitempty"`
	// Running are the runs started and not yet seen ended; Buffered the
	// fires waiting for them.
	Running  []string    `json:"running,omitempty"`
	Buffered []time.Time `json:"buffered,omitempty"`
	// Started counts the runs the schedule started.
	Started uint64 `json:"started"`
	// Updated is when the schedule last changed its state.
	Updated time.Time `json:"updated"`
	// Error is why the schedule instance ended, once State is "Failed"
	// (its failure message: "canceled: <reason>" after a cancel).
	Error string `json:"error,omitempty"`
}

// DescribeOptions configure Describe.
type DescribeOptions struct {
	// NextFires is how many coming fire times to compute (0 = 5).
	NextFires int
}

// Describe reads the schedule id. A missing one is ErrNotFound.
func (c *Client) Describe(ctx context.Context, id string, opts ...DescribeOptions) (*Description, error) {
	var o DescribeOptions
	if len(opts) > 0 {
		o = opts[len(opts)-1]
	}
	if o.NextFires <= 0 {
		o.NextFires = 5
	}
	st, err := c.read(ctx, id)
	if err != nil {
		return nil, err
	}
	status, err := c.c.Status(ctx, instanceID(id))
	if err != nil {
		return nil, err
	}
	d := &Description{ID: st.ID, Options: st.Options, State: status.State.String(), Recent: st.Recent, Running: st.Running,
		Buffered: st.Buffered, Started: st.Started, Updated: st.Updated}
	if status.State == durable.StateFailed {
		d.Error = status.FailureMessage()
	}
	if !st.Options.Paused && status.State == durable.StateRunning {
		d.Next = nextFires(st.Options.Spec, st.Last, o.NextFires)
	}
	return d, nil
}

func (c *Client) read(ctx context.Context, id string) (state, error) {
	var st state
	raw, found, err := c.c.KVValue(ctx, instanceID(id), stateKey)
	if errors.Is(err, duroxide.ErrInstanceNotFound) || err == nil && !found {
		return st, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		if !strings.HasPrefix(raw, "{") {
			// Not JSON at all: through payload.WrapForDisplay without the
			// codec, the placeholder saying which codec is missing, which
			// is what an operator needs to read.
			return st, fmt.Errorf("schedule: %s: state unreadable: %s", id, clipText(raw, 200))
		}
		return st, fmt.Errorf("schedule: %s: state: %w", id, err)
	}
	return st, nil
}

// clipText is s cut to at most n bytes, on a rune boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// List describes every schedule, oldest first.
func (c *Client) List(ctx context.Context) ([]*Description, error) {
	var out []*Description
	q := duroxide.InstanceQuery{Name: OrchestrationName, IDPrefix: InstancePrefix, OrderBy: duroxide.OrderCreatedAsc}
	for {
		page, err := c.c.Search(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, in := range page.Instances {
			d, err := c.Describe(ctx, strings.TrimPrefix(in.InstanceID, InstancePrefix))
			if errors.Is(err, ErrNotFound) {
				continue // created, not yet taken, or being deleted
			}
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
		if page.ContinuationToken == "" {
			return out, nil
		}
		q.ContinuationToken = page.ContinuationToken
	}
}

// Update replaces the schedule's spec, action and policies; whether it is
// paused, and its note, stay as they are.
func (c *Client) Update(ctx context.Context, id string, o Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	return c.send(ctx, id, request{Op: opUpdate, Options: &o})
}

// Pause stops the schedule firing; fires due while it is paused never
// run. note is shown by Describe.
func (c *Client) Pause(ctx context.Context, id, note string) error {
	return c.send(ctx, id, request{Op: opPause, Note: note})
}

// Unpause resumes a paused schedule from its next fire time after now.
func (c *Client) Unpause(ctx context.Context, id, note string) error {
	return c.send(ctx, id, request{Op: opUnpause, Note: note})
}

// TriggerOptions configure Trigger and Backfill.
type TriggerOptions struct {
	// Overlap overrides the schedule's overlap policy for these fires.
	Overlap Overlap
}

// Trigger fires the schedule now (nominal time: the schedule's clock when
// it takes the request), under its overlap policy.
func (c *Client) Trigger(ctx context.Context, id string, opts ...TriggerOptions) error {
	o, err := triggerOptions(opts)
	if err != nil {
		return err
	}
	return c.send(ctx, id, request{Op: opTrigger, Overlap: o.Overlap})
}

// Backfill fires the schedule for each of its fire times in [from, to),
// at most 200 per call, under its overlap policy. Runs already started
// for those times are not started again (their ids are the same).
func (c *Client) Backfill(ctx context.Context, id string, from, to time.Time, opts ...TriggerOptions) error {
	o, err := triggerOptions(opts)
	if err != nil {
		return err
	}
	if !from.Before(to) {
		return fmt.Errorf("%w: backfill range [%v, %v) is empty", ErrInvalidOptions, from, to)
	}
	return c.send(ctx, id, request{Op: opBackfill, Overlap: o.Overlap, From: from, To: to})
}

func triggerOptions(opts []TriggerOptions) (TriggerOptions, error) {
	var o TriggerOptions
	if len(opts) > 0 {
		o = opts[len(opts)-1]
	}
	if o.Overlap != "" {
		if err := o.Overlap.validate(); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Delete deletes the schedule; the runs it started are left alone. A
// missing schedule is ErrNotFound.
func (c *Client) Delete(ctx context.Context, id string) error {
	if err := validateID(id); err != nil {
		return err
	}
	_, err := c.c.DeleteInstance(ctx, instanceID(id), durable.DeleteOptions{Force: true})
	if errors.Is(err, duroxide.ErrInstanceNotFound) {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return err
}

// send enqueues a request and waits for its answer.
func (c *Client) send(ctx context.Context, id string, req request) error {
	if err := validateID(id); err != nil {
		return err
	}
	st, err := c.c.Status(ctx, instanceID(id))
	if err != nil {
		return err
	}
	if st.State == durable.StateNotFound || st.IsTerminal() {
		return fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	req.ID = uuid.NewString()
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if err := c.c.EnqueueEvent(ctx, instanceID(id), controlQueue, string(b)); err != nil {
		return err
	}
	raw, err := c.c.WaitForKVValue(ctx, instanceID(id), replyKeyPrefix+req.ID)
	if err != nil {
		return err
	}
	var rep reply
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		return fmt.Errorf("schedule: %s: reply: %w", id, err)
	}
	if rep.Error != "" {
		if strings.Contains(rep.Error, ErrInvalidSpec.Error()) {
			return fmt.Errorf("%w: %s", ErrInvalidSpec, rep.Error)
		}
		return fmt.Errorf("%w: %s", ErrInvalidOptions, rep.Error)
	}
	return nil
}
