package cdb

import (
	"context"

	"github.com/duroxide-go/cdb/duroxide"
)

// commitLargeTurn commits a turn that does not fit one transactional
// batch.
func (p *Provider) commitLargeTurn(ctx context.Context, plan *turnPlan) error {
	return duroxide.Permanent("ack_orchestration_item", "turn of %d operations exceeds one transactional batch (not yet supported)", len(plan.ops)+1)
}
