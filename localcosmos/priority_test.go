package localcosmos

import (
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// RequestPriority reads the header azcosmos sends; no header, and any
// value but Low, is High.
func TestRequestPriority(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]Priority{"": PriorityHigh, "High": PriorityHigh, "Low": PriorityLow, "low": PriorityLow, " LOW ": PriorityLow, "Medium": PriorityHigh} {
		r, err := http.NewRequest(http.MethodGet, "http://localhost/", nil)
		if err != nil {
			t.Fatal(err)
		}
		if value != "" {
			r.Header.Set("x-ms-cosmos-priority-level", value)
		}
		if got := RequestPriority(r); got != want {
			t.Errorf("%q: %s, want %s", value, got, want)
		}
	}
}

// The server counts the Low requests of each operation, and serves them
// like the others (it throttles nothing). Seen failing before
// countRequest was told the priority: LowPriorityRequests stayed 0.
func TestLowPriorityCounted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.s.ResetCounts()
	low, high := azcosmos.PriorityLevelLow, azcosmos.PriorityLevelHigh
	f.create(t, "a", "i1")
	_, err := f.ct.ReadItem(testCtx(t), pkOf("i1"), "a", &azcosmos.ItemOptions{PriorityLevel: &low})
	wantOK(t, err, "Low read")
	_, err = f.ct.ReadItem(testCtx(t), pkOf("i1"), "a", &azcosmos.ItemOptions{PriorityLevel: &high})
	wantOK(t, err, "High read")
	_, err = f.ct.ReadItem(testCtx(t), pkOf("i1"), "a", nil)
	wantOK(t, err, "read without a level")
	if st := f.s.Stats(OpReadItem); st.Requests != 3 || st.LowPriorityRequests != 1 {
		t.Fatalf("reads: %+v, want 3 of which 1 Low", st)
	}
	if st := f.s.Stats(OpCreateItem); st.LowPriorityRequests != 0 {
		t.Fatalf("creates: %+v, want none Low", st)
	}
}
