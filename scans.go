package cdb

import (
	"context"

	"github.com/duroxide-go/cdb/internal/cosmos"
)

// maintenanceScan runs one scan of a maintenance round: a bounded step of
// the named background scan, or with full the whole query from the start
// (for RunMaintenance, which promises everything pending).
func (p *Provider) maintenanceScan(ctx context.Context, name string, full bool, r cosmos.ScanRequest, each func(raw []byte)) error {
	cur := p.scans.Get(name)
	r.MaxPages = p.opts.ScanPages
	if full {
		cur, r.MaxPages = &cosmos.Cursor{}, 0
	}
	_, err := p.st.Scan(ctx, cur, r, func(items [][]byte, _ bool) {
		for _, it := range items {
			each(it)
		}
	})
	return err
}
