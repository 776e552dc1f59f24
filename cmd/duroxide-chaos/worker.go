package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/internal/testhooks"
	"github.com/duroxide-go/cdb/payload"
)

// Environment passed from the driver to its workers. The key travels in the
// environment, never on the command line (visible in ps).
const (
	envLogDir = "DUROXIDE_CHAOS_LOG_DIR"
	// envClockSkew is the worker's clock skew (a time.Duration string):
	// its provider's clock runs that far ahead (behind, if negative).
	envClockSkew = "DUROXIDE_CHAOS_CLOCK_SKEW"
	// envSkewMargin is the workers' cdb.Options.MaxClockSkew (skewMargin).
	envSkewMargin = "DUROXIDE_CHAOS_SKEW_MARGIN"
	// envMaxAttempts is the workers' durable.Options.MaxAttempts
	// (killTolerantAttempts unless -max-attempts says otherwise).
	envMaxAttempts = "DUROXIDE_CHAOS_MAX_ATTEMPTS"
	// envLogLevel is the worker's slog level (-log-level).
	envLogLevel = "DUROXIDE_CHAOS_LOG_LEVEL"
)

// Lease and lock timings of the workers: short, so a killed worker's slots
// and locks pass to the others within seconds, and so locks are renewed
// often: the worker lock is renewed every second (half of it), well within
// slowActivity, and the session lock every 2 s.
const (
	workerLeaseDuration = 3 * time.Second
	workerRenewInterval = time.Second
	orchLockTimeout     = 5 * time.Second
	workerLockTimeout   = 2 * time.Second
	sessionLockTimeout  = 4 * time.Second
	// The maintenance sweep delivers the outbox intents a killed worker
	// left, once they are workerOutboxMinAge old.
	workerMaintenanceInterval = 2 * time.Second
	workerOutboxMinAge        = time.Second
)

// activityLogPath is the file worker id appends its activity executions to.
func activityLogPath(dir, id string) string { return filepath.Join(dir, "activities-"+id+".log") }

// runWorker is the worker role: a provider with Cosmos-backed leases and a
// runtime with the workload registered, until ctx ends (SIGTERM) or the
// driver kills the process.
func runWorker(ctx context.Context, id string, stderr io.Writer) error {
	endpoint, key, dir := os.Getenv(cdb.EnvEndpoint), os.Getenv(cdb.EnvKey), os.Getenv(envLogDir)
	if endpoint == "" || key == "" || dir == "" {
		return fmt.Errorf("worker %s: %s, %s and %s must be set (the driver sets them)", id, cdb.EnvEndpoint, cdb.EnvKey, envLogDir)
	}
	f, err := os.OpenFile(activityLogPath(dir, id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	reg, err := newRegistry(&activityLog{f: f}, dir)
	if err != nil {
		return err
	}
	leases, err := cdb.NewLeases(cdb.LeaseOptions{ProcessID: id, LeaseDuration: workerLeaseDuration, RenewInterval: workerRenewInterval})
	if err != nil {
		return err
	}
	skew, err := clockSkew()
	if err != nil {
		return fmt.Errorf("worker %s: %w", id, err)
	}
	level := slog.LevelError
	if v := os.Getenv(envLogLevel); v != "" {
		if err := level.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%s: %w", envLogLevel, err)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	margin, err := envDuration(envSkewMargin)
	if err != nil {
		return err
	}
	maxAttempts, err := envUint32(envMaxAttempts)
	if err != nil {
		return err
	}
	opts := &cdb.Options{Leases: leases, Logger: logger, MaintenanceInterval: workerMaintenanceInterval, OutboxMinAge: workerOutboxMinAge, MaxClockSkew: margin}
	newCtx := ctx
	if skew != 0 {
		// The provider's clock is the one every lock, lease, visibility
		// and timer decision of this process is made on. Only cdb.New
		// gets the seam: the runtime below is started with ctx and keeps
		// the wall clock for timer fire times and event timestamps.
		newCtx = testhooks.With(ctx, &testhooks.Seam{Now: func() time.Time { return time.Now().Add(skew) }})
	}
	p, err := cdb.New(newCtx, cdb.Config{Endpoint: endpoint, Key: key, SkipBootstrap: true}, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	// The driver's -codec gives every worker the same codecs.
	codecs, err := payload.CodecsFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	// And -large-payloads' claim-check, last, as the driver's chain has it.
	large, err := workerLargeCodec()
	if err != nil {
		return err
	}
	if large != nil {
		codecs = append(codecs, large)
	}
	var store duroxide.Provider = p
	if len(codecs) > 0 {
		if store, err = payload.Wrap(p, codecs...); err != nil {
			return err
		}
	}
	rt, err := durable.Start(ctx, store, reg, &durable.Options{
		OrchestrationConcurrency: 4,
		WorkerConcurrency:        4,
		MaxIdlePollInterval:      time.Second,
		OrchestratorLockTimeout:  orchLockTimeout,
		WorkerLockTimeout:        workerLockTimeout,
		SessionLockTimeout:       sessionLockTimeout,
		WorkerNodeID:             id,
		MaxAttempts:              maxAttempts,
		Logger:                   logger,
	})
	if err != nil {
		return err
	}
	<-ctx.Done()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rt.Shutdown(shutdown)
}

// clockSkew reads the worker's clock skew from the environment (none when
// unset).
func clockSkew() (time.Duration, error) { return envDuration(envClockSkew) }

// envDuration reads a time.Duration from environment variable name (0 when
// unset).
func envDuration(name string) (time.Duration, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return d, nil
}

// envUint32 reads a uint32 from environment variable name (0 when unset).
func envUint32(name string) (uint32, error) {
	v := os.Getenv(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return uint32(n), nil
}
