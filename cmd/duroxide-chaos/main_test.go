package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/internal/leaktest"
)

// TestMain doubles as the worker: the driver under test re-executes this
// test binary with DUROXIDE_CHAOS_WORKER_ID set.
func TestMain(m *testing.M) {
	if id := os.Getenv(envWorkerID); id != "" {
		os.Exit(workerMain(context.Background(), id))
	}
	leaktest.VerifyTestMain(m)
}

// TestChaosShortRun runs the tool end to end: two worker processes (this
// test binary) with clocks 10 s apart (each with an 11 s skew margin),
// twenty instances started over a few seconds, workers killed and every
// fault kind injected meanwhile; the report must be clean.
func TestChaosShortRun(t *testing.T) {
	rep := runChaos(t, "-processes", "2", "-orchestrations", "20", "-json",
		"-ramp", "6s", "-duration", "3m", "-timeout", "5m",
		"-kill-interval", "2s", "-clock-skew", "5s")
	require.True(t, rep.OK)
	require.Equal(t, 20, rep.Expected)
	require.Equal(t, 20, rep.Completed)
	require.Zero(t, rep.Lost+rep.Stuck+rep.WrongOutput+rep.DuplicatedCompletions+rep.MissingCompletions+rep.HistoryGaps+rep.OutboxLeft+rep.LocksLeft)
	require.Zero(t, rep.DuplicatedDeliveries+rep.LostDeliveries+rep.UnintendedDeliveries)
	// The run ends when all complete, at least the ramp after it began:
	// kills happened while instances ran.
	require.GreaterOrEqual(t, rep.Kills, 1)
	require.Equal(t, map[string]string{"w1": "-5s", "w2": "5s"}, rep.ClockSkews)
	require.NotEmpty(t, rep.FaultedRequests, "injected faults reached requests")
	// 20 instances round-robin over the 11 kinds: two of each of the
	// first nine, one canloop and one large. The driver meant to deliver,
	// per instance: event 2 (the event, the end marker), inbox 5 (four
	// messages, the end marker), canloop 4 (three, the end marker).
	require.Equal(t, 2*2+2*(inboxMessages+1)+(canLoopMessage+1), rep.IntendedDeliveries)
	// Every activity ran at least once. Per instance: fan-out 4, timer 1,
	// sub's child 1, event 0, continue-as-new 3, KV 1, session 2, slow 2,
	// inbox 0, canloop 4 (every tenth of 40 rounds), large 60; so
	// 2*(4+1+1+0+3+1+2+2+0) + 4 + 60 = 92 executions without any
	// re-execution.
	require.GreaterOrEqual(t, rep.ActivityExecutions, 92)
	require.Greater(t, rep.EventsChecked, 0)
	require.Greater(t, rep.InstancesChecked, 20, "sub-orchestration children are checked too")
}

// TestChaosScheduleRun: the schedule kind under kills and faults, with
// two workers whose clocks are apart: every due time of every schedule
// has exactly one run, started once, and no run is of another time.
func TestChaosScheduleRun(t *testing.T) {
	rep := runChaos(t, "-processes", "2", "-orchestrations", "4", "-json", "-kinds", "schedule",
		"-ramp", "4s", "-duration", "2m", "-timeout", "4m", "-kill-interval", "2s", "-clock-skew", "2s")
	require.Equal(t, 4, rep.Completed)
	require.Equal(t, 4*scheduleFires, rep.ScheduleRuns)
	require.Zero(t, rep.ScheduleMissedRuns+rep.ScheduleExtraRuns+rep.ScheduleDoubledRuns)
	require.GreaterOrEqual(t, rep.Kills, 1)
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags([]string{"-processes", "3", "-orchestrations", "100", "-json"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 3, c.Processes)
	require.Equal(t, 100, c.Orchestrations)
	require.True(t, c.JSON)
	require.Equal(t, 30*time.Second, c.Ramp, "half of the default -duration")
	c, err = parseFlags([]string{"-worker", "-id", "w2"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, "w2", c.WorkerID)
	c, err = parseFlags([]string{"-kinds", "canloop,kitchensink"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, []string{"canloop", kitchenSink}, c.Kinds)
	require.NotContains(t, kinds, kitchenSink, "the kitchen sink runs only when named")
	// The goal-scale kitchen-sink soak (docs/reliability.md).
	c, err = parseFlags(strings.Fields("-processes 3 -orchestrations 1000 -kill-interval 5s -fault-interval 2s -clock-skew 60s -kinds kitchensink -duration 10m -timeout 40m -json"), &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, 1000, c.Orchestrations)
	require.Equal(t, 60*time.Second, c.MaxClockSkew)
	require.Equal(t, uint(10+120), c.MaxAttempts, "one attempt more per kill the ten minutes can make")
	require.Equal(t, ksPlans, c.plans(), "every plan unless aimed")
	c, err = parseFlags([]string{"-kinds", "bigpayload", "-large-payloads", "blob"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, largeBlob, c.LargePayloads)
	require.NotContains(t, kinds, bigPayloadKind, "bigpayload runs only when named")
	c, err = parseFlags([]string{"-kinds", "kitchensink", "-plans", "rewind,reuse"}, &bytes.Buffer{})
	require.NoError(t, err)
	require.Equal(t, []string{planRewind, planReuse}, c.plans())
	for _, bad := range [][]string{
		{"-kinds", "nosuchkind"}, {"-plans", "nosuchplan"},
		{"-processes", "0"}, {"-orchestrations", "0"}, {"-worker"}, {"-id", "w1"},
		{"-large-payloads", "disk"}, {"-kinds", "bigpayload"},
		{"-timeout", "0s"}, {"-kill-interval", "-1s"}, {"-clock-skew", "-1s"}, {"extra"},
	} {
		_, err := parseFlags(bad, &bytes.Buffer{})
		require.Error(t, err, "%q", bad)
	}
}

// TestCallRetriesThroughErrors: the driver calls again after any error, as
// a real caller would, and counts the repeats; bad input is not repeated.
func TestCallRetriesThroughErrors(t *testing.T) {
	d := &driver{}
	n := 0
	require.NoError(t, d.call(t.Context(), func() error {
		if n++; n < 3 {
			return errors.New("status 503")
		}
		return nil
	}))
	require.Equal(t, 3, n)
	require.Equal(t, 1, d.clientCalls)
	require.Equal(t, 2, d.clientRetries)

	bad := &durable.InputError{Op: "raise event", Reason: "bad"}
	n = 0
	require.ErrorIs(t, d.call(t.Context(), func() error { n++; return bad }), bad)
	require.Equal(t, 1, n)
}
