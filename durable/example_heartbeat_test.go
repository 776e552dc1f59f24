package durable_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/memprovider"
)

// A long activity heartbeats its progress; when its runtime stops under
// it, the next runtime's attempt of the same work item resumes from the
// last details its lock renewals stored (HeartbeatDetails).
func ExampleActivityContext_Heartbeat() {
	p := memprovider.New()
	stalled := make(chan struct{})
	reg := durable.NewRegistry()
	must(durable.RegisterActivity(reg, "Copy", func(ctx durable.ActivityContext, pages int) (string, error) {
		page, resumed, err := durable.HeartbeatDetails[int](ctx)
		if err != nil {
			return "", err
		}
		if !resumed {
			for page = 1; page <= pages/2; page++ {
				if err := ctx.Heartbeat(page); err != nil {
					return "", err
				}
			}
			time.Sleep(1500 * time.Millisecond) // a lock renewal stores the last heartbeat
			close(stalled)
			<-ctx.Done() // the runtime stops before the copy is done
			return "", ctx.Err()
		}
		return fmt.Sprintf("copied pages %d to %d after a restart", page+1, pages), nil
	}))
	must(durable.RegisterOrchestration(reg, "Backup", func(ctx *durable.OrchestrationContext, pages int) (string, error) {
		return durable.CallActivity[string](ctx, "Copy", pages).Await()
	}))
	// A 2 s lock is renewed every second: the resume point is at most a
	// second old.
	opts := &durable.Options{WorkerLockTimeout: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	first, err := durable.Start(context.Background(), p, reg, opts)
	must(err)
	c := durable.NewClient(p)
	must(c.StartOrchestration(context.Background(), "backup-1", "Backup", 10))
	<-stalled
	stop, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = first.Shutdown(stop) // the activity is still running: its result is never acked

	second, err := durable.Start(context.Background(), p, reg, opts)
	must(err)
	defer second.Shutdown(context.Background())
	st, err := c.WaitForOrchestration(context.Background(), "backup-1", durable.WaitOptions{Timeout: 30 * time.Second})
	must(err)
	fmt.Println(st.Output)
	// Output: copied pages 6 to 10 after a restart
}

// A worker fails an attempt that stops heartbeating; the failure matches
// ErrHeartbeatTimeout (a RetryPolicy would retry it; here the
// orchestration calls the activity again itself).
func ExampleRegistry_SetActivityPolicy() {
	var attempts atomic.Int32
	reg := durable.NewRegistry()
	must(durable.RegisterActivity(reg, "Poll", func(ctx durable.ActivityContext, _ string) (string, error) {
		if attempts.Add(1) == 1 {
			<-ctx.Done() // stuck: no heartbeat, until the timeout cancels it
			return "", context.Cause(ctx)
		}
		if err := ctx.Heartbeat("alive"); err != nil {
			return "", err
		}
		return "polled", nil
	}))
	must(reg.SetActivityPolicy("Poll", durable.ActivityPolicy{HeartbeatTimeout: 50 * time.Millisecond}))
	must(durable.RegisterOrchestration(reg, "Watch", func(ctx *durable.OrchestrationContext, _ string) (string, error) {
		_, err := durable.CallActivity[string](ctx, "Poll", "").Await()
		if !errors.Is(err, durable.ErrHeartbeatTimeout) {
			return "", err
		}
		return durable.CallActivity[string](ctx, "Poll", "").Await()
	}))
	c, stop := startExample(reg)
	defer stop()
	st := runExample(c, "watch-1", "Watch", "")
	fmt.Println(st.Output, "after", attempts.Load(), "attempts")
	// Output: polled after 2 attempts
}
