package cli_test

import (
	"context"
	"sync"
	"testing"

	"github.com/duroxide-go/cdb/cmd/duroxide/cli"
	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// listHints is a memprovider whose admin notes the request-priority hint
// of every ListInstances call (export's and replay's listing).
type listHints struct {
	*memprovider.Provider
	mu    *sync.Mutex
	hints *[]duroxide.RequestPriority
}

func (p listHints) Admin() duroxide.ProviderAdmin { return listHintsAdmin{p.Provider.Admin(), p} }

type listHintsAdmin struct {
	duroxide.ProviderAdmin
	p listHints
}

func (a listHintsAdmin) ListInstances(ctx context.Context) ([]string, error) {
	a.p.mu.Lock()
	*a.p.hints = append(*a.p.hints, duroxide.RequestPriorityOf(ctx))
	a.p.mu.Unlock()
	return a.ProviderAdmin.ListInstances(ctx)
}

// TestExportAndReplayReadAtLowPriority: export and replay read the store
// as an operator does, hinted PriorityLow (the list and show commands go
// through internal/ops, which its own test covers). Seen failing before
// export and replay wrapped their context: the hint was PriorityDefault.
func TestExportAndReplayReadAtLowPriority(t *testing.T) {
	var hints []duroxide.RequestPriority
	p := listHints{record(t), &sync.Mutex{}, &hints}
	if code, _, stderr := run(t, nil, p, "export"); code != cli.ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	if code, _, stderr := run(t, registry(t, false), p, "replay"); code != cli.ExitOK {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	if len(hints) != 2 || hints[0] != duroxide.PriorityLow || hints[1] != duroxide.PriorityLow {
		t.Fatalf("ListInstances hints %v, want [Low Low] (%d)", hints, duroxide.PriorityLow)
	}
}
