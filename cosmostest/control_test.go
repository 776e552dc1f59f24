package cosmostest

import (
	"fmt"
	"net/http"
	"testing"
)

// A fault with a probability affects some matching requests, not all.
func TestFaultSpecProbability(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	fault, err := FaultSpec{Op: OpCreateItem, Status: http.StatusServiceUnavailable, Probability: 0.5}.Fault()
	if err != nil {
		t.Fatal(err)
	}
	f.s.InjectFault(fault)
	failed := 0
	const n = 200
	for i := range n {
		id := fmt.Sprintf("p%d", i)
		if _, err := f.ct.CreateItem(testCtx(t), pkOf("i1"), item(id, "i1"), nil); err != nil {
			wantStatus(t, err, http.StatusServiceUnavailable, "create "+id)
			failed++
		}
	}
	// Either bound failing has probability 2^-200.
	if failed == 0 || failed == n {
		t.Fatalf("%d of %d creates failed; want some, not all", failed, n)
	}
}

// WritesOnly leaves reads and queries alone.
func TestFaultSpecWritesOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.create(t, "a", "i1")
	fault, err := FaultSpec{WritesOnly: true, Status: http.StatusRequestTimeout}.Fault()
	if err != nil {
		t.Fatal(err)
	}
	f.s.InjectFault(fault)
	f.read(t, "a", "i1")
	_, err = f.ct.ReplaceItem(testCtx(t), pkOf("i1"), "a", item("a", "i1"), nil)
	wantStatus(t, err, http.StatusRequestTimeout, "replace")
	_, err = f.ct.DeleteItem(testCtx(t), pkOf("i1"), "a", nil)
	wantStatus(t, err, http.StatusRequestTimeout, "delete")
}
