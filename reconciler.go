package cdb

import (
	"context"
	"errors"
	"time"

	"github.com/duroxide-go/cdb/duroxide"
)

// The background reconciler: one loop that finishes what a crash can leave
// half-done (large turns' roll-forward, deletions' sweeps) and delivers
// outbox intents that were not delivered right after their commit.

// ReconcileOutbox does now what the background reconciler does
// periodically, over the whole container: it finishes large turns whose
// roll-forward was interrupted, finishes interrupted deletions, and
// delivers every pending outbox intent older than Options.OutboxMinAge.
// It reports how many intents it delivered. A failure of one step does
// not skip the others; the errors are joined.
func (p *Provider) ReconcileOutbox(ctx context.Context) (int, error) {
	err1 := p.finishPendingTurns(ctx, true)
	err2 := p.finishDeletions(ctx, true)
	n, err3 := p.reconcileOnce(ctx, true)
	return n, duroxide.Wrap("reconcile_outbox", errors.Join(err1, err2, err3))
}

// runReconciler is the background loop started by New; Close stops it.
func (p *Provider) runReconciler() {
	defer p.wg.Done()
	t := time.NewTicker(p.opts.OutboxInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), p.opts.OutboxInterval*4)
			go func() {
				select {
				case <-p.stop:
					cancel()
				case <-ctx.Done():
				}
			}()
			if _, err := p.reconcileOnce(ctx, false); err != nil && ctx.Err() == nil {
				p.opts.Logger.Warn("outbox reconciler", "error", err)
			}
			if err := p.finishPendingTurns(ctx, false); err != nil && ctx.Err() == nil {
				p.opts.Logger.Warn("rolling large turns forward", "error", err)
			}
			if err := p.finishDeletions(ctx, false); err != nil && ctx.Err() == nil {
				p.opts.Logger.Warn("finishing interrupted deletions", "error", err)
			}
			cancel()
		}
	}
}
