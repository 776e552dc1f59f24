package schedule

import (
	"errors"
	"fmt"
	"time"
)

// Spec says when a schedule fires: at every time any of its cron
// expressions, intervals or calendars names, in TimeZone, between StartAt
// and EndAt, each fire delayed by up to Jitter. A Spec is plain data: it
// is stored in the schedule's orchestration input and compared across
// processes, so it holds names, never *time.Location values.
type Spec struct {
	// Cron lists cron expressions: five fields (minute hour day-of-month
	// month day-of-week) or six with seconds first, with ranges, steps,
	// lists, month and day names, and the @hourly/@daily/@weekly/
	// @monthly/@yearly shorthands.
	Cron []string `json:"cron,omitempty"`
	// Intervals fire every Every, shifted by Offset from the Unix epoch.
	Intervals []Interval `json:"intervals,omitempty"`
	// Calendars fire at the listed wall-clock times.
	Calendars []Calendar `json:"calendars,omitempty"`
	// TimeZone is an IANA zone name ("Europe/Berlin"); "" is UTC. Cron
	// and calendar times are wall-clock times in it: a time skipped by a
	// DST transition fires once at the first instant after the gap, and a
	// time repeated by one fires once, at its first occurrence.
	TimeZone string `json:"time_zone,omitempty"`
	// StartAt and EndAt bound the fire times (zero: unbounded). A
	// schedule fires from its creation on, or from StartAt when that is
	// earlier and within the catch-up window.
	StartAt time.Time `json:"start_at,omitzero"`
	EndAt   time.Time `json:"end_at,omitzero"`
	// Jitter delays each fire by a deterministic amount in [0, Jitter)
	// derived from the schedule and the nominal fire time, so every
	// process computes the same delay.
	Jitter time.Duration `json:"jitter,omitempty"`
}

// Interval fires at Offset + k·Every after the Unix epoch.
type Interval struct {
	Every  time.Duration `json:"every"`
	Offset time.Duration `json:"offset,omitempty"`
}

// Calendar names wall-clock times by their fields; an empty field means
// every value, except that Seconds, Minutes and Hours empty mean 0. Every
// field must match (unlike cron, DaysOfMonth and DaysOfWeek both set
// name the days that are both).
type Calendar struct {
	Seconds     []int          `json:"seconds,omitempty"`
	Minutes     []int          `json:"minutes,omitempty"`
	Hours       []int          `json:"hours,omitempty"`
	DaysOfMonth []int          `json:"days_of_month,omitempty"`
	Months      []time.Month   `json:"months,omitempty"`
	DaysOfWeek  []time.Weekday `json:"days_of_week,omitempty"`
	Years       []int          `json:"years,omitempty"`
}

// ErrInvalidSpec is returned for a Spec that names no fire time or has a
// malformed field; the message says which.
var ErrInvalidSpec = errors.New("schedule: invalid spec")

// Validate reports whether s is well formed.
func (s Spec) Validate() error {
	_, err := s.compile()
	return err
}

// Next returns the first nominal fire time strictly after t (before
// jitter), or the zero time when s fires no more.
func (s Spec) Next(t time.Time) (time.Time, error) {
	c, err := s.compile()
	if err != nil {
		return time.Time{}, err
	}
	return c.next(t), nil
}

// compiled is a validated Spec ready to compute fire times.
type compiled struct {
	spec      Spec
	intervals []Interval
	matchers  []*matcher
}

func (s Spec) compile() (*compiled, error) {
	if len(s.Cron) == 0 && len(s.Intervals) == 0 && len(s.Calendars) == 0 {
		return nil, fmt.Errorf("%w: no cron expression, interval or calendar", ErrInvalidSpec)
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%w: time zone %q: %v", ErrInvalidSpec, s.TimeZone, err)
	}
	if s.Jitter < 0 {
		return nil, fmt.Errorf("%w: jitter %v is negative", ErrInvalidSpec, s.Jitter)
	}
	if !s.StartAt.IsZero() && !s.EndAt.IsZero() && s.EndAt.Before(s.StartAt) {
		return nil, fmt.Errorf("%w: EndAt %v is before StartAt %v", ErrInvalidSpec, s.EndAt, s.StartAt)
	}
	c := &compiled{spec: s, intervals: s.Intervals}
	for _, iv := range s.Intervals {
		if iv.Every <= 0 {
			return nil, fmt.Errorf("%w: interval every %v", ErrInvalidSpec, iv.Every)
		}
	}
	for _, expr := range s.Cron {
		m, err := parseCron(expr, loc)
		if err != nil {
			return nil, err
		}
		c.matchers = append(c.matchers, m)
	}
	for i, cal := range s.Calendars {
		m, err := calendarMatcher(i, cal, loc)
		if err != nil {
			return nil, err
		}
		c.matchers = append(c.matchers, m)
	}
	return c, nil
}

func (c *compiled) next(t time.Time) time.Time {
	if !c.spec.StartAt.IsZero() && t.Before(c.spec.StartAt) {
		t = c.spec.StartAt.Add(-time.Nanosecond)
	}
	var best time.Time
	consider := func(n time.Time) {
		if !n.IsZero() && (best.IsZero() || n.Before(best)) {
			best = n
		}
	}
	for _, iv := range c.intervals {
		consider(intervalNext(iv, t))
	}
	for _, m := range c.matchers {
		consider(m.next(t))
	}
	if !c.spec.EndAt.IsZero() && best.After(c.spec.EndAt) {
		return time.Time{}
	}
	return best
}

func intervalNext(iv Interval, t time.Time) time.Time {
	since := t.Sub(time.Unix(0, 0).Add(iv.Offset))
	k := since / iv.Every // floor division, then the next multiple
	if since < 0 && since%iv.Every != 0 {
		k--
	}
	k++
	return time.Unix(0, 0).Add(iv.Offset + k*iv.Every).UTC()
}
