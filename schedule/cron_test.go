package schedule

import (
	"errors"
	"testing"
	"time"
	_ "time/tzdata" // the zone tables are the test's own, not the machine's
)

func mustLoc(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("zone %s: %v", name, err)
	}
	return loc
}

// fires returns the first n fire times of s after from, in UTC.
func fires(t *testing.T, s Spec, from time.Time, n int) []time.Time {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatalf("validate %+v: %v", s, err)
	}
	return nextFires(s, from, n)
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestCronNextFireTimes(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		from string
		want []string
	}{
		{"every minute", Spec{Cron: []string{"* * * * *"}}, "2025-01-01T00:00:30Z",
			[]string{"2025-01-01T00:01:00Z", "2025-01-01T00:02:00Z"}},
		{"steps and ranges", Spec{Cron: []string{"*/20 9-10 * * *"}}, "2025-01-01T09:30:00Z",
			[]string{"2025-01-01T09:40:00Z", "2025-01-01T10:00:00Z", "2025-01-01T10:20:00Z", "2025-01-01T10:40:00Z", "2025-01-02T09:00:00Z"}},
		{"lists and range steps", Spec{Cron: []string{"0 1,13 * * *", "30 2-8/3 * * *"}}, "2025-03-01T00:00:00Z",
			[]string{"2025-03-01T01:00:00Z", "2025-03-01T02:30:00Z", "2025-03-01T05:30:00Z", "2025-03-01T08:30:00Z", "2025-03-01T13:00:00Z"}},
		{"a/step runs to the field's end", Spec{Cron: []string{"50/5 0 * * *"}}, "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T00:50:00Z", "2025-01-01T00:55:00Z", "2025-01-02T00:50:00Z"}},
		{"month and day names", Spec{Cron: []string{"0 12 * JAN,feb MON-wed"}}, "2025-01-30T00:00:00Z",
			[]string{"2025-02-03T12:00:00Z", "2025-02-04T12:00:00Z", "2025-02-05T12:00:00Z", "2025-02-10T12:00:00Z"}},
		{"sunday is 0 and 7", Spec{Cron: []string{"0 0 * * 7"}}, "2025-01-01T00:00:00Z",
			[]string{"2025-01-05T00:00:00Z", "2025-01-12T00:00:00Z"}},
		// Vixie cron: both day fields restricted match either; one
		// starred (even */2) leaves the other alone.
		{"day-of-month OR day-of-week", Spec{Cron: []string{"0 0 13 * FRI"}}, "2025-06-01T00:00:00Z",
			[]string{"2025-06-06T00:00:00Z", "2025-06-13T00:00:00Z", "2025-06-20T00:00:00Z", "2025-06-27T00:00:00Z", "2025-07-04T00:00:00Z", "2025-07-11T00:00:00Z", "2025-07-13T00:00:00Z"}},
		{"starred step day-of-month ANDs", Spec{Cron: []string{"0 0 */10 * MON"}}, "2025-01-01T00:00:00Z",
			[]string{"2025-03-31T00:00:00Z", "2025-04-21T00:00:00Z"}},
		{"@hourly", Spec{Cron: []string{"@hourly"}}, "2025-01-01T10:59:59Z",
			[]string{"2025-01-01T11:00:00Z", "2025-01-01T12:00:00Z"}},
		{"@daily @weekly @monthly @yearly", Spec{Cron: []string{"@weekly", "@monthly", "@yearly", "@daily"}}, "2025-12-30T12:00:00Z",
			[]string{"2025-12-31T00:00:00Z", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"}},
		{"seconds field", Spec{Cron: []string{"*/30 * * * * *"}}, "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T00:00:30Z", "2025-01-01T00:01:00Z"}},
		{"feb 29 only in leap years", Spec{Cron: []string{"0 0 29 2 *"}}, "2025-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"feb 29 across 2100 (no leap day)", Spec{Cron: []string{"0 0 29 2 *"}}, "2097-01-01T00:00:00Z",
			[]string{"2104-02-29T00:00:00Z"}},
		{"31st skips short months", Spec{Cron: []string{"0 0 31 * *"}}, "2025-01-31T00:00:00Z",
			[]string{"2025-03-31T00:00:00Z", "2025-05-31T00:00:00Z"}},
		{"time zone by spec", Spec{Cron: []string{"0 9 * * *"}, TimeZone: "Asia/Tokyo"}, "2025-01-01T00:00:00Z",
			[]string{"2025-01-02T00:00:00Z", "2025-01-03T00:00:00Z"}},
		{"CRON_TZ prefix overrides the spec's", Spec{Cron: []string{"CRON_TZ=Asia/Kolkata 0 9 * * *"}, TimeZone: "Asia/Tokyo"}, "2025-01-01T00:00:00Z",
			[]string{"2025-01-01T03:30:00Z", "2025-01-02T03:30:00Z"}},
		{"interval with offset", Spec{Intervals: []Interval{{Every: time.Hour, Offset: 15 * time.Minute}}}, "2025-01-01T00:15:00Z",
			[]string{"2025-01-01T01:15:00Z", "2025-01-01T02:15:00Z"}},
		{"calendar list", Spec{Calendars: []Calendar{{Hours: []int{9}, Minutes: []int{30}, DaysOfWeek: []time.Weekday{time.Monday}}, {Hours: []int{17}, DaysOfMonth: []int{1}, Months: []time.Month{time.March}}}}, "2025-02-25T00:00:00Z",
			[]string{"2025-03-01T17:00:00Z", "2025-03-03T09:30:00Z", "2025-03-10T09:30:00Z"}},
		{"calendar ANDs its day fields", Spec{Calendars: []Calendar{{DaysOfMonth: []int{13}, DaysOfWeek: []time.Weekday{time.Friday}}}}, "2025-01-01T00:00:00Z",
			[]string{"2025-06-13T00:00:00Z", "2026-02-13T00:00:00Z"}},
		{"calendar years", Spec{Calendars: []Calendar{{Months: []time.Month{time.July}, DaysOfMonth: []int{4}, Years: []int{2027, 2030}}}}, "2025-01-01T00:00:00Z",
			[]string{"2027-07-04T00:00:00Z", "2030-07-04T00:00:00Z"}},
		{"start and end bound", Spec{Cron: []string{"@daily"}, StartAt: utc("2025-05-03T00:00:00Z"), EndAt: utc("2025-05-05T00:00:00Z")}, "2025-01-01T00:00:00Z",
			[]string{"2025-05-03T00:00:00Z", "2025-05-04T00:00:00Z", "2025-05-05T00:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fires(t, c.spec, utc(c.from), len(c.want)+1)
			for i, w := range c.want {
				if i >= len(got) || !got[i].Equal(utc(w)) {
					t.Fatalf("fire %d: got %v, want %v (all: %v)", i, got, w, got)
				}
			}
			if c.name == "start and end bound" && len(got) != 3 {
				t.Fatalf("fires past EndAt: %v", got)
			}
		})
	}
}

// The DST rule: a wall time skipped by spring-forward fires once, at the
// first instant after the gap; a wall time repeated by fall-back fires
// once, at its first occurrence.
func TestCronDSTTransitions(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	london := mustLoc(t, "Europe/London")
	cases := []struct {
		name string
		spec Spec
		from time.Time
		want []time.Time
	}{
		// 2025-03-09 02:00 EST jumps to 03:00 EDT (07:00Z).
		{"NY 02:30 skipped fires at 03:00 EDT", Spec{Cron: []string{"30 2 * * *"}, TimeZone: "America/New_York"},
			time.Date(2025, 3, 8, 12, 0, 0, 0, ny),
			[]time.Time{time.Date(2025, 3, 9, 3, 0, 0, 0, ny), time.Date(2025, 3, 10, 2, 30, 0, 0, ny)}},
		{"NY every 15 min: the gap's times fire once at the gap's end", Spec{Cron: []string{"*/15 * * * *"}, TimeZone: "America/New_York"},
			time.Date(2025, 3, 9, 1, 40, 0, 0, ny),
			[]time.Time{time.Date(2025, 3, 9, 1, 45, 0, 0, ny), time.Date(2025, 3, 9, 3, 0, 0, 0, ny), time.Date(2025, 3, 9, 3, 15, 0, 0, ny)}},
		// 2025-11-02 02:00 EDT falls back to 01:00 EST: 01:30 happens at
		// 05:30Z and 06:30Z.
		{"NY 01:30 repeated fires once (EDT)", Spec{Cron: []string{"30 1 * * *"}, TimeZone: "America/New_York"},
			time.Date(2025, 11, 1, 12, 0, 0, 0, ny),
			[]time.Time{utc("2025-11-02T05:30:00Z"), utc("2025-11-03T06:30:00Z")}},
		{"NY hourly across fall-back skips the repeated hour", Spec{Cron: []string{"0 * * * *"}, TimeZone: "America/New_York"},
			utc("2025-11-02T04:30:00Z"),
			[]time.Time{utc("2025-11-02T05:00:00Z"), utc("2025-11-02T07:00:00Z"), utc("2025-11-02T08:00:00Z")}},
		{"NY from inside the repeated hour", Spec{Cron: []string{"30 1 * * *"}, TimeZone: "America/New_York"},
			utc("2025-11-02T06:10:00Z"),
			[]time.Time{utc("2025-11-03T06:30:00Z")}},
		// 2025-03-30 01:00 GMT jumps to 02:00 BST (01:00Z).
		{"London 01:30 skipped fires at 02:00 BST", Spec{Cron: []string{"CRON_TZ=Europe/London 30 1 * * *"}},
			time.Date(2025, 3, 29, 12, 0, 0, 0, london),
			[]time.Time{utc("2025-03-30T01:00:00Z"), utc("2025-03-31T00:30:00Z")}},
		// 2025-10-26 02:00 BST falls back to 01:00 GMT.
		{"London 01:30 repeated fires once (BST)", Spec{Cron: []string{"30 1 * * *"}, TimeZone: "Europe/London"},
			time.Date(2025, 10, 25, 12, 0, 0, 0, london),
			[]time.Time{utc("2025-10-26T00:30:00Z"), utc("2025-10-27T01:30:00Z")}},
		{"London calendar in the gap", Spec{Calendars: []Calendar{{Hours: []int{1}, Minutes: []int{15}, Months: []time.Month{time.March}, DaysOfMonth: []int{30}}}, TimeZone: "Europe/London"},
			utc("2025-01-01T00:00:00Z"),
			[]time.Time{utc("2025-03-30T01:00:00Z")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fires(t, c.spec, c.from, len(c.want))
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range c.want {
				if !got[i].Equal(c.want[i]) {
					t.Fatalf("fire %d: got %v, want %v (all %v)", i, got[i], c.want[i].UTC(), got)
				}
			}
		})
	}
}

func TestInvalidSpecs(t *testing.T) {
	cases := []struct {
		name  string
		spec  Spec
		field string // the CronError's field, "" for none or not a CronError
	}{
		{"empty", Spec{}, ""},
		{"four fields", Spec{Cron: []string{"* * * *"}}, ""},
		{"seven fields", Spec{Cron: []string{"* * * * * * *"}}, ""},
		{"minute 60", Spec{Cron: []string{"60 * * * *"}}, "minute"},
		{"hour 24", Spec{Cron: []string{"0 24 * * *"}}, "hour"},
		{"day 0", Spec{Cron: []string{"0 0 0 * *"}}, "day-of-month"},
		{"month 13", Spec{Cron: []string{"0 0 1 13 *"}}, "month"},
		{"day-of-week 8", Spec{Cron: []string{"0 0 * * 8"}}, "day-of-week"},
		{"bad name", Spec{Cron: []string{"0 0 * FOO *"}}, "month"},
		{"backwards range", Spec{Cron: []string{"0 5-3 * * *"}}, "hour"},
		{"zero step", Spec{Cron: []string{"*/0 * * * *"}}, "minute"},
		{"unknown shorthand", Spec{Cron: []string{"@often"}}, ""},
		{"february 30", Spec{Cron: []string{"0 0 30 2 *"}}, ""},
		{"unknown CRON_TZ", Spec{Cron: []string{"CRON_TZ=Mars/Olympus 0 0 * * *"}}, ""},
		{"unknown time zone", Spec{Cron: []string{"@daily"}, TimeZone: "Nowhere/Land"}, ""},
		{"zero interval", Spec{Intervals: []Interval{{}}}, ""},
		{"negative jitter", Spec{Cron: []string{"@daily"}, Jitter: -time.Second}, ""},
		{"end before start", Spec{Cron: []string{"@daily"}, StartAt: utc("2025-02-01T00:00:00Z"), EndAt: utc("2025-01-01T00:00:00Z")}, ""},
		{"calendar hour 25", Spec{Calendars: []Calendar{{Hours: []int{25}}}}, "hour"},
		{"calendar april 31", Spec{Calendars: []Calendar{{Months: []time.Month{time.April}, DaysOfMonth: []int{31}}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.spec.Validate()
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Validate: %v, want ErrInvalidSpec", err)
			}
			if c.field != "" {
				var ce *CronError
				if !errors.As(err, &ce) || ce.Field != c.field {
					t.Fatalf("error %v: want a CronError on field %q", err, c.field)
				}
			}
			if _, err := c.spec.Next(DefaultTestStart); !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Next: %v", err)
			}
		})
	}
}

// DefaultTestStart is an arbitrary instant for the spec tests.
var DefaultTestStart = utc("2025-01-01T00:00:00Z")

// Jitter is a pure function of (schedule id, nominal time), bounded by
// the spec's jitter and spread over it.
func TestJitterIsDeterministicAndBounded(t *testing.T) {
	s := Spec{Cron: []string{"* * * * *"}, Jitter: 30 * time.Second}
	seen := map[time.Duration]bool{}
	for i := range 200 {
		at := DefaultTestStart.Add(time.Duration(i) * time.Minute)
		d := fireDelay(s, "sched", at)
		if d < 0 || d >= s.Jitter {
			t.Fatalf("delay %v outside [0, %v)", d, s.Jitter)
		}
		if d != fireDelay(s, "sched", at) {
			t.Fatal("the delay differs between two calls")
		}
		seen[d] = true
	}
	if len(seen) < 100 {
		t.Fatalf("only %d distinct delays over 200 fires", len(seen))
	}
	if fireDelay(s, "a", DefaultTestStart) == fireDelay(s, "b", DefaultTestStart) && fireDelay(s, "a", DefaultTestStart.Add(time.Minute)) == fireDelay(s, "b", DefaultTestStart.Add(time.Minute)) {
		t.Fatal("two schedules get the same delays")
	}
	if fireDelay(Spec{}, "a", DefaultTestStart) != 0 {
		t.Fatal("no jitter, yet a delay")
	}
}

func TestIntervalOffsetBeforeEpochMultiple(t *testing.T) {
	s := Spec{Intervals: []Interval{{Every: time.Minute, Offset: 10 * time.Second}}}
	from := time.Unix(-50, 0) // exactly on the fire k = -1
	got, err := s.Next(from)
	if err != nil || !got.Equal(time.Unix(10, 0)) {
		t.Fatalf("Next(%v) = %v, %v; want %v", from, got, err, time.Unix(10, 0).UTC())
	}
}
