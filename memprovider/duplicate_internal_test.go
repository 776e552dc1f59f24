package memprovider

import (
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
)

// duplicateEventID finds an id the history has, or one the delta
// repeats, whether the delta is checked pairwise or with a set.
func TestDuplicateEventIDFindsRepeatsInHistoryAndDelta(t *testing.T) {
	rows := []storedEvent{{eventID: 1}, {eventID: 2}, {eventID: 5}}
	delta := func(ids ...uint64) []duroxide.Event {
		out := make([]duroxide.Event, len(ids))
		for i, id := range ids {
			out[i] = duroxide.Event{EventID: id}
		}
		return out
	}
	long := func(last uint64) []duroxide.Event {
		ids := []uint64{}
		for id := uint64(10); id < 10+maxScannedDelta+5; id++ {
			ids = append(ids, id)
		}
		return delta(append(ids, last)...)
	}
	for name, tc := range map[string]struct {
		delta []duroxide.Event
		id    uint64
		dup   bool
	}{
		"new ids":               {delta(3, 4, 6), 0, false},
		"in history":            {delta(3, 5), 5, true},
		"repeated in delta":     {delta(3, 4, 3), 3, true},
		"long, new":             {long(7), 0, false},
		"long, repeated":        {long(12), 12, true},
		"long, in history last": {long(2), 2, true},
	} {
		id, dup := duplicateEventID(rows, tc.delta)
		if dup != tc.dup || (dup && id != tc.id) {
			t.Errorf("%s: got %d, %v; want %d, %v", name, id, dup, tc.id, tc.dup)
		}
	}
}
