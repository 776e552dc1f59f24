package cdb

import (
	"context"
	"errors"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The maintenance loop: one background loop that finishes what a crash
// can leave half-done (large turns' roll-forward, deletions' sweeps) and
// delivers outbox intents that were not delivered right after their
// commit.

// RunMaintenance does now, over the whole container, what the background
// maintenance loop does a bounded step at a time every
// Options.MaintenanceInterval: it rolls forward large turns whose
// roll-forward was interrupted, finishes interrupted deletions, and
// delivers every pending outbox intent older than Options.OutboxMinAge.
// It reports how many intents it delivered. A failure of one step does
// not skip the others; the errors are joined.
//
// A service that disables the loop (a negative MaintenanceInterval), or
// a test that wants the work done before it asserts, calls it instead.
// Its requests are background, as the loop's are
// (Options.BackgroundPriority), unless ctx carries duroxide.PriorityHigh.
func (p *Provider) RunMaintenance(ctx context.Context) (int, error) {
	ctx = background(ctx) // priority.go
	err1 := p.finishPendingTurns(ctx, true)
	err2 := p.finishDeletions(ctx, true)
	n, err3 := p.deliverPendingIntents(ctx, true)
	return n, duroxide.Wrap("run_maintenance", errors.Join(err1, err2, err3))
}

// runMaintenance is the background maintenance loop started by New and
// NewWithContainer; Close stops it.
func (p *Provider) runMaintenance() {
	defer p.wg.Done()
	t := time.NewTicker(p.opts.MaintenanceInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.maintenanceRound()
		}
	}
}

// maintenanceRound runs one bounded round of the loop; Close cancels it.
func (p *Provider) maintenanceRound() {
	ctx, cancel := context.WithTimeout(background(context.Background()), p.opts.MaintenanceInterval*4)
	defer cancel()
	go func() {
		select {
		case <-p.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := p.deliverPendingIntents(ctx, false); err != nil && ctx.Err() == nil {
		p.opts.Logger.Warn("maintenance: delivering outbox intents", "error", err)
	}
	if err := p.finishPendingTurns(ctx, false); err != nil && ctx.Err() == nil {
		p.opts.Logger.Warn("maintenance: rolling large turns forward", "error", err)
	}
	if err := p.finishDeletions(ctx, false); err != nil && ctx.Err() == nil {
		p.opts.Logger.Warn("maintenance: finishing interrupted deletions", "error", err)
	}
}
