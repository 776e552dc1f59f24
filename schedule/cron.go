package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CronError is a malformed cron expression or calendar: Expr is the
// expression (or "calendar[i]"), Field the field at fault ("" for the
// whole), Reason what is wrong. It matches ErrInvalidSpec with errors.Is.
type CronError struct {
	Expr   string
	Field  string
	Reason string
}

// Error implements error.
func (e *CronError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %q: %s", ErrInvalidSpec, e.Expr, e.Reason)
	}
	return fmt.Sprintf("%v: %q: %s field: %s", ErrInvalidSpec, e.Expr, e.Field, e.Reason)
}

// Is makes a *CronError match ErrInvalidSpec.
func (e *CronError) Is(target error) bool { return target == ErrInvalidSpec }

// matcher names a set of wall-clock times by their fields, each a bit
// set. It is what a cron expression and a Calendar compile to.
type matcher struct {
	sec, min, hour uint64
	dom            uint64 // bits 1..31
	month          uint64 // bits 1..12
	dow            uint64 // bits 0..6, Sunday 0
	years          map[int]bool
	// domOrDow is Vixie cron's rule: when both day fields are
	// restricted, a day matches if either does.
	domOrDow bool
	loc      *time.Location
}

type fieldSpec struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	secondField = fieldSpec{name: "second", min: 0, max: 59}
	minuteField = fieldSpec{name: "minute", min: 0, max: 59}
	hourField   = fieldSpec{name: "hour", min: 0, max: 23}
	domField    = fieldSpec{name: "day-of-month", min: 1, max: 31}
	monthField  = fieldSpec{name: "month", min: 1, max: 12, names: map[string]int{
		"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6,
		"JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}}
	// Day-of-week 7 is Sunday too, as in Vixie cron.
	dowField = fieldSpec{name: "day-of-week", min: 0, max: 7, names: map[string]int{
		"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}}
)

var cronShorthands = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

// parseCron compiles one cron expression; def is the spec's time zone,
// which a CRON_TZ= (or TZ=) prefix overrides.
func parseCron(expr string, def *time.Location) (*matcher, error) {
	bad := func(field, reason string) error { return &CronError{Expr: expr, Field: field, Reason: reason} }
	s := strings.TrimSpace(expr)
	loc := def
	if i := strings.IndexByte(s, '='); i >= 0 && (strings.HasPrefix(s, "CRON_TZ=") || strings.HasPrefix(s, "TZ=")) {
		rest := s[i+1:]
		name, tail, _ := strings.Cut(rest, " ")
		l, err := time.LoadLocation(name)
		if err != nil || name == "" {
			return nil, bad("", fmt.Sprintf("time zone %q: unknown", name))
		}
		loc, s = l, strings.TrimSpace(tail)
	}
	if strings.HasPrefix(s, "@") {
		full, ok := cronShorthands[strings.ToLower(s)]
		if !ok {
			return nil, bad("", fmt.Sprintf("unknown shorthand %q", s))
		}
		s = full
	}
	fields := strings.Fields(s)
	if len(fields) == 5 {
		fields = append([]string{"0"}, fields...)
	}
	if len(fields) != 6 {
		return nil, bad("", fmt.Sprintf("%d fields, want 5 (minute hour day-of-month month day-of-week) or 6 (seconds first)", len(strings.Fields(s))))
	}
	m := &matcher{loc: loc}
	specs := []fieldSpec{secondField, minuteField, hourField, domField, monthField, dowField}
	outs := []*uint64{&m.sec, &m.min, &m.hour, &m.dom, &m.month, &m.dow}
	for i, f := range fields {
		bits, err := parseField(f, specs[i])
		if err != nil {
			return nil, bad(specs[i].name, err.Error())
		}
		*outs[i] = bits
	}
	if m.dow&(1<<7) != 0 {
		m.dow = m.dow&^(1<<7) | 1
	}
	domStar := strings.HasPrefix(fields[3], "*") || fields[3] == "?"
	dowStar := strings.HasPrefix(fields[5], "*") || fields[5] == "?"
	m.domOrDow = !domStar && !dowStar
	if !m.possible() {
		return nil, bad("", "names no existing day (such as February 30)")
	}
	return m, nil
}

// parseField parses a comma list of *, ?, n, a-b, each with an optional
// /step, into a bit set.
func parseField(f string, spec fieldSpec) (uint64, error) {
	var bits uint64
	for part := range strings.SplitSeq(f, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("step %q is not a positive number", stepText)
			}
			step = n
		}
		lo, hi := spec.min, spec.max
		switch {
		case rng == "*" || rng == "?" && (spec.name == domField.name || spec.name == dowField.name):
			if spec.name == dowField.name {
				hi = 6 // 7 only as an explicit Sunday
			}
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if lo, err = fieldValue(a, spec); err != nil {
				return 0, err
			}
			if hi, err = fieldValue(b, spec); err != nil {
				return 0, err
			}
			if lo > hi {
				return 0, fmt.Errorf("range %q runs backwards", rng)
			}
		default:
			v, err := fieldValue(rng, spec)
			if err != nil {
				return 0, err
			}
			lo, hi = v, v
			if hasStep {
				hi = spec.max // "a/s" is a-max/s
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, nil
}

func fieldValue(s string, spec fieldSpec) (int, error) {
	if v, ok := spec.names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number or name", s)
	}
	if v < spec.min || v > spec.max {
		return 0, fmt.Errorf("%d is outside %d-%d", v, spec.min, spec.max)
	}
	return v, nil
}

// daysIn is the most days a month ever has (February: 29).
var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// possible reports whether the day fields name a day that exists in
// some year: a restricted day-of-week always does; otherwise some listed
// day must fit some listed month.
func (m *matcher) possible() bool {
	if m.sec == 0 || m.min == 0 || m.hour == 0 || m.month == 0 {
		return false
	}
	if m.domOrDow || m.dom == 0 {
		return m.dow != 0
	}
	for mo := 1; mo <= 12; mo++ {
		if m.month&(1<<uint(mo)) != 0 && m.dom&(1<<uint(daysIn[mo]+1)-1) != 0 {
			return true
		}
	}
	return false
}

// calendarMatcher compiles Calendar i of a spec.
func calendarMatcher(i int, c Calendar, loc *time.Location) (*matcher, error) {
	name := fmt.Sprintf("calendar[%d]", i)
	m := &matcher{loc: loc}
	var err error
	set := func(field fieldSpec, vals []int, def uint64) uint64 {
		if err != nil {
			return 0
		}
		if len(vals) == 0 {
			return def
		}
		var bits uint64
		for _, v := range vals {
			if v < field.min || v > field.max {
				err = &CronError{Expr: name, Field: field.name, Reason: fmt.Sprintf("%d is outside %d-%d", v, field.min, field.max)}
				return 0
			}
			bits |= 1 << uint(v)
		}
		return bits
	}
	m.sec = set(secondField, c.Seconds, 1)
	m.min = set(minuteField, c.Minutes, 1)
	m.hour = set(hourField, c.Hours, 1)
	m.dom = set(domField, c.DaysOfMonth, all(domField))
	m.month = set(monthField, convert(c.Months), all(monthField))
	m.dow = set(fieldSpec{name: "day-of-week", min: 0, max: 6}, convert(c.DaysOfWeek), 0x7f)
	if err != nil {
		return nil, err
	}
	if len(c.Years) > 0 {
		m.years = map[int]bool{}
		for _, y := range c.Years {
			if y < 1970 || y > 9999 {
				return nil, &CronError{Expr: name, Field: "year", Reason: fmt.Sprintf("%d is outside 1970-9999", y)}
			}
			m.years[y] = true
		}
	}
	if !m.possible() {
		return nil, &CronError{Expr: name, Reason: "names no existing day (such as February 30)"}
	}
	return m, nil
}

func all(f fieldSpec) uint64 {
	var bits uint64
	for v := f.min; v <= f.max; v++ {
		bits |= 1 << uint(v)
	}
	return bits
}

func convert[T ~int](vs []T) []int {
	out := make([]int, len(vs))
	for i, v := range vs {
		out[i] = int(v)
	}
	return out
}

// searchYears bounds how far ahead next looks: far enough for a
// February 29 that falls on a given weekday.
const searchYears = 40

// next returns the first instant strictly after t whose wall time in
// m.loc matches, resolving DST: a wall time skipped by a spring-forward
// gap resolves to the first instant after the gap, and a wall time that
// occurs twice resolves to its first occurrence only. Resolution is
// monotone in wall time, so only wall times after t's need be tried.
func (m *matcher) next(t time.Time) time.Time {
	wall := civil(t.In(m.loc))
	w := wall.Truncate(time.Second).Add(time.Second)
	limit := wall.Year() + searchYears
	for {
		var ok bool
		if w, ok = m.nextWall(w, limit); !ok {
			return time.Time{}
		}
		if inst := resolve(w, m.loc); inst.After(t) {
			return inst
		}
		w = w.Add(time.Second)
	}
}

// civil is t's wall-clock reading as a UTC time, where wall-clock
// arithmetic has no DST.
func civil(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// nextWall returns the first matching wall time at or after w (a civil
// time), or false past the year limit.
func (m *matcher) nextWall(w time.Time, limit int) (time.Time, bool) {
	for w.Year() <= limit {
		y, mo, d := w.Date()
		switch {
		case m.years != nil && !m.years[y]:
			w = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
		case !has(m.month, int(mo)):
			w = time.Date(y, mo+1, 1, 0, 0, 0, 0, time.UTC)
		case !m.dayMatches(d, w.Weekday()):
			w = time.Date(y, mo, d+1, 0, 0, 0, 0, time.UTC)
		case !has(m.hour, w.Hour()):
			w = time.Date(y, mo, d, w.Hour()+1, 0, 0, 0, time.UTC)
		case !has(m.min, w.Minute()):
			w = time.Date(y, mo, d, w.Hour(), w.Minute()+1, 0, 0, time.UTC)
		case !has(m.sec, w.Second()):
			w = w.Add(time.Second)
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

func (m *matcher) dayMatches(d int, wd time.Weekday) bool {
	if m.domOrDow {
		return has(m.dom, d) || has(m.dow, int(wd))
	}
	return has(m.dom, d) && has(m.dow, int(wd))
}

func has(bits uint64, v int) bool { return bits&(1<<uint(v)) != 0 }

// resolve turns the civil wall time w into an instant in loc: its first
// occurrence, or for a time inside a DST gap the first instant after the
// gap (the transition).
func resolve(w time.Time, loc *time.Location) time.Time {
	_, before := w.Add(-36 * time.Hour).In(loc).Zone()
	_, after := w.Add(36 * time.Hour).In(loc).Zone()
	var best time.Time
	for _, off := range []int{before, after} {
		c := w.Add(-time.Duration(off) * time.Second)
		if civil(c.In(loc)).Equal(w) && (best.IsZero() || c.Before(best)) {
			best = c
		}
	}
	if !best.IsZero() {
		return best.UTC()
	}
	// In a gap: the later candidate lies past the transition, whose
	// instant starts its zone.
	c1 := w.Add(-time.Duration(before) * time.Second)
	c2 := w.Add(-time.Duration(after) * time.Second)
	later := c1
	if c2.After(c1) {
		later = c2
	}
	if start, _ := later.In(loc).ZoneBounds(); !start.IsZero() {
		return start.UTC()
	}
	return time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), 0, loc).UTC()
}
