package testenv

import (
	"sync"
	"time"
)

// virtualClock is the environment's time: it moves only forward, only
// when advanced, and wakes the runtime each time it moves.
type virtualClock struct {
	mu   sync.Mutex
	t    time.Time
	next int
	subs map[int]func()
}

func newVirtualClock(start time.Time) *virtualClock {
	return &virtualClock{t: start, subs: map[int]func(){}}
}

// now returns the virtual time.
func (c *virtualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// advance moves the clock to t (never back) and wakes the subscribers.
// Virtual times are in UTC, as the fire times they come from.
func (c *virtualClock) advance(t time.Time) {
	c.mu.Lock()
	if t.After(c.t) {
		c.t = t.UTC()
	}
	subs := make([]func(), 0, len(c.subs))
	for _, f := range c.subs {
		subs = append(subs, f)
	}
	c.mu.Unlock()
	for _, f := range subs {
		f()
	}
}

// subscribe calls wake at every move until unsubscribed.
func (c *virtualClock) subscribe(wake func()) (unsubscribe func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.subs[id] = wake
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.subs, id)
	}
}
