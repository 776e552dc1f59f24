package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/durable/durabletest"
	"github.com/duroxide-go/cdb/memprovider"
)

// TestPagerResumesFromItsHeartbeat: the pager's lock is lost after its
// details were stored; the item's next attempt resumes from them (one
// line in the resume log) and the step's output is the whole sum, as the
// model expects.
func TestPagerResumesFromItsHeartbeat(t *testing.T) {
	dir := t.TempDir()
	reg, err := newRegistry(nil, dir)
	require.NoError(t, err)
	store := memprovider.New()
	fp := durabletest.NewFaultyProvider(store)
	rt, err := durable.Start(t.Context(), fp, reg, &durable.Options{Logger: slog.New(slog.DiscardHandler),
		WorkerLockTimeout: 2 * time.Second, WorkerLockRenewalBuffer: time.Second})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	c := durable.NewClient(store)
	steps := []ksStep{{Op: opHeartbeat, N: 10}}
	require.NoError(t, c.StartOrchestration(t.Context(), "ks-hb", ksOrchName, ksInput{Index: 2, Run: 1, Steps: steps}))
	deadline := time.Now().Add(time.Minute)
	for {
		hs, err := c.ActivityHeartbeats(t.Context(), "ks-hb")
		require.NoError(t, err)
		if len(hs) == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no heartbeat stored")
		time.Sleep(20 * time.Millisecond)
	}
	fp.FailNext(durabletest.RenewWorkItemLock)
	st, err := c.WaitForOrchestration(t.Context(), "ks-hb", durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State, st.FailureMessage())
	out, err := durable.DecodeOutput[string](st)
	require.NoError(t, err)
	require.Equal(t, ksExpected(2, steps), out)
	require.Equal(t, "ks:h165", out)
	n, err := countResumes(dir)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the second attempt resumed")
}

// TestPagerStallEndsInItsHeartbeatTimeout: the stalling step's first
// attempt stops heartbeating; its heartbeat timeout fails it, the retry
// pages through, and the output is the whole sum the model expects.
func TestPagerStallEndsInItsHeartbeatTimeout(t *testing.T) {
	dir := t.TempDir()
	reg, err := newRegistry(nil, dir)
	require.NoError(t, err)
	store := memprovider.New()
	rt, err := durable.Start(t.Context(), store, reg, &durable.Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	defer func() { require.NoError(t, rt.Shutdown(context.Background())) }()
	c := durable.NewClient(store)
	steps := []ksStep{{Op: opHeartbeatStall, N: 4}}
	require.NoError(t, c.StartOrchestration(t.Context(), "ks-hbs", ksOrchName, ksInput{Index: 1, Run: 1, Steps: steps}))
	st, err := c.WaitForOrchestration(t.Context(), "ks-hbs", durable.WaitOptions{Timeout: time.Minute})
	require.NoError(t, err)
	require.Equal(t, durable.StateCompleted, st.State, st.FailureMessage())
	out, err := durable.DecodeOutput[string](st)
	require.NoError(t, err)
	require.Equal(t, ksExpected(1, steps), out)
	stalls, timeouts, err := countStalls(dir)
	require.NoError(t, err)
	require.Equal(t, [2]int{1, 1}, [2]int{stalls, timeouts}, "one attempt stalled, and its heartbeat timeout ended it")
}

// TestAddHeartbeatsKeepsTheRestOfTheProgram: the heartbeat steps are
// drawn last, so a seed's programs keep every other step in order.
func TestAddHeartbeatsKeepsTheRestOfTheProgram(t *testing.T) {
	with := 0
	for i := range 200 {
		_, steps := ksDraw(29, i, ksPlans)
		var rest []ksStep
		for _, s := range steps {
			if s.Op != opHeartbeat {
				rest = append(rest, s)
			}
		}
		if n := countHeartbeatSteps(steps); n > 0 {
			with++
			require.LessOrEqual(t, n, 2)
		}
		require.NotEmpty(t, rest)
	}
	require.Greater(t, with, 50, "about half the programs heartbeat")
	require.Less(t, with, 150)
}
