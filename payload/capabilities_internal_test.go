package payload

import (
	"testing"

	"github.com/duroxide-go/cdb/duroxide"
	"github.com/duroxide-go/cdb/memprovider"
)

// Every generated combination has exactly its groups' capabilities.
func TestCombinationsMatchTheirMasks(t *testing.T) {
	c := &core{p: memprovider.New()}
	for m := range capCombinations {
		w := combinations[m](c)
		_, cw := w.(duroxide.ClientWriter)
		_, ds := w.(duroxide.DelayedStartWriter)
		_, ne := w.(duroxide.NextExecutionWriter)
		_, ss := w.(duroxide.SignalStarter)
		_, pn := w.(duroxide.PendingNoter)
		_, fi := w.(duroxide.InstanceFetcher)
		_, sr := w.(duroxide.SuspensionReader)
		_, pr := w.(duroxide.PendingRequestReader)
		_, st := w.(duroxide.StatusReader)
		has := func(bit int) bool { return m&bit != 0 }
		if cw != has(capClientWrites) || ds != cw || ne != cw || ss != cw || pn != cw ||
			fi != has(capInstanceFetcher) || sr != has(capSuspensionReader) || pr != has(capPendingRequests) || st != has(capStatusReader) {
			t.Errorf("combination %05b: client %v %v %v %v %v, fetcher %v, suspension %v, pending %v, status %v", m, cw, ds, ne, ss, pn, fi, sr, pr, st)
		}
		if mask, err := capabilityMask(w); err != nil || mask != m {
			t.Errorf("combination %05b reads back as %05b, %v", m, mask, err)
		}
	}
}
