package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/duroxide-go/cdb"
	"github.com/duroxide-go/cdb/durable"
)

// Environment passed from the driver to its workers. The key travels in the
// environment, never on the command line (visible in ps).
const (
	envLogDir = "DUROXIDE_CHAOS_LOG_DIR"
)

// Lease and lock timings of the workers: short, so a killed worker's slots
// and locks pass to the others within seconds.
const (
	workerLeaseDuration = 3 * time.Second
	workerRenewInterval = time.Second
	orchLockTimeout     = 5 * time.Second
	workerLockTimeout   = 10 * time.Second
	sessionLockTimeout  = 10 * time.Second
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
	reg, err := newRegistry(&activityLog{f: f})
	if err != nil {
		return err
	}
	leases, err := cdb.NewCosmosLeases(cdb.LeaseOptions{ProcessID: id, LeaseDuration: workerLeaseDuration, RenewInterval: workerRenewInterval})
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	p, err := cdb.New(ctx, cdb.Config{Endpoint: endpoint, Key: key, SkipBootstrap: true},
		// The workers share this host's clock: a 1 s skew margin keeps the
		// margin's code path in the soak without adding the default 30 s
		// to every recovery after a kill.
		&cdb.Options{Leases: leases, Logger: logger, MaintenanceInterval: 2 * time.Second, OutboxMinAge: time.Second, MaxClockSkew: time.Second})
	if err != nil {
		return err
	}
	defer p.Close()
	rt, err := durable.Start(ctx, p, reg, &durable.Options{
		OrchestrationConcurrency: 4,
		WorkerConcurrency:        4,
		MaxIdlePollInterval:      time.Second,
		OrchestratorLockTimeout:  orchLockTimeout,
		WorkerLockTimeout:        workerLockTimeout,
		SessionLockTimeout:       sessionLockTimeout,
		WorkerNodeID:             id,
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
