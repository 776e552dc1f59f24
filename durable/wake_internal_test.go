package durable

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// An orchestrator message wakes one loop, and a sleeping one before one
// still fetching: waking every loop made all but one query for nothing.
func TestFireOneWakesOneLoopAsleepFirst(t *testing.T) {
	s := newSignal()
	fetching, asleep, alsoAsleep := s.join(), s.join(), s.join()
	asleep.sleep()
	alsoAsleep.sleep()
	s.fireOne()
	require.True(t, isClosed(asleep.ch), "the longest asleep is woken")
	require.False(t, isClosed(alsoAsleep.ch), "one loop only")
	require.False(t, isClosed(fetching.ch), "a loop still fetching is left while one sleeps")
	require.True(t, asleep.leave(), "leave reports the wake-up")
	s.fireOne()
	require.True(t, isClosed(alsoAsleep.ch))
	s.fireOne()
	require.True(t, isClosed(fetching.ch), "with nobody asleep, a loop still fetching looks again")
	require.True(t, fetching.quiet(), "every wake-up reached a loop")
}

// A wake-up that finds no loop joined reaches nobody: a loop that saw
// nothing else ready before its turn must then fetch again rather than
// sleep (waiter.quiet), and so must every loop after a broadcast.
func TestAWakeUpThatReachedNobodyIsNotQuiet(t *testing.T) {
	s := newSignal()
	w := s.join()
	w.leave()
	require.True(t, w.quiet())
	s.fireOne()
	require.False(t, w.quiet(), "the wake-up reached no loop")
	v := s.join()
	s.fire()
	require.True(t, isClosed(v.ch))
	require.False(t, v.quiet(), "a broadcast is not heard by loops that have not joined")
}

// A message for an instance a loop holds wakes nobody and makes the
// holder look again; one for an instance already on the ready list wakes
// nobody more; the list gives instances out oldest first, once each.
func TestLocalTurnsLookAgainAndQueueOnce(t *testing.T) {
	var l localTurns
	since := l.mark()
	l.begin("held", since)
	require.True(t, l.note("held"), "the holder will look again: nobody to wake")
	require.True(t, l.end("held"), "the holder is told to look again")
	require.False(t, l.note("a"), "a is ready: wake a loop")
	require.True(t, l.note("a"), "a is queued already: nobody more to wake")
	require.False(t, l.note("b"))
	require.True(t, l.pending())
	require.Equal(t, "a", take(t, &l))
	require.Equal(t, "b", take(t, &l))
	require.Empty(t, take(t, &l))
	require.False(t, l.pending())
	require.False(t, l.note(""), "an unnamed wake-up only wakes")
	require.False(t, l.pending())
}

// take is localTurns.take when nothing waits for an ack.
func take(t *testing.T, l *localTurns) string {
	t.Helper()
	inst, deferred := l.take()
	require.False(t, deferred)
	return inst
}

// A ready instance with activity acks in flight waits until the last
// ends, which says to wake a loop for it; others are taken past it.
func TestLocalTurnsHoldAnInstanceWhileItsAcksAreInFlight(t *testing.T) {
	var l localTurns
	l.ackBegin("a")
	l.ackBegin("a")
	require.False(t, l.note("a"), "a is ready")
	require.False(t, l.note("b"))
	inst, deferred := l.take()
	require.Equal(t, "b", inst, "b is taken past a")
	require.True(t, deferred, "a waits")
	require.False(t, l.pending(), "a does not count while it waits")
	inst, deferred = l.take()
	require.Empty(t, inst)
	require.True(t, deferred)
	require.False(t, l.ackEnd("a"), "one ack still in flight")
	require.True(t, l.ackEnd("a"), "the last ack ended: wake a loop for a")
	require.True(t, l.pending())
	require.Equal(t, "a", take(t, &l))
	l.ackBegin("c")
	require.False(t, l.ackEnd("c"), "c is not ready: nobody to wake")
	require.True(t, l.acking == nil || len(l.acking) == 0, "no ack left counted")
}

// A message that came during the fetch that locked its instance woke a
// loop that finds the instance busy: the holder looks again after its
// turn. An instance taken off the ready list by a fetch that locked it
// otherwise is dropped from the list, and also looked at again.
func TestLocalTurnsCatchANoteDuringTheFetch(t *testing.T) {
	var l localTurns
	since := l.mark()
	require.False(t, l.note("x"), "x was not held yet")
	l.begin("x", since)
	require.False(t, l.pending(), "x is held now: off the ready list")
	require.True(t, l.end("x"), "the note during the fetch makes the holder look again")

	since = l.mark()
	l.begin("y", since)
	require.False(t, l.end("y"), "no message came for y")
	for range recentNotes {
		l.note("other")
		l.take()
	}
	l.begin("z", since)
	require.True(t, l.end("z"), "past the record of notes, the holder looks again to be safe")
}
