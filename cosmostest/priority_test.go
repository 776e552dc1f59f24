package cosmostest

import (
	"errors"
	"net/http"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// LowPriorityThrottle sheds the requests sent with priority level Low
// (429, SubStatusLowPriorityThrottled, a retry-after) without applying
// them, and serves High ones and those that name no level. Seen failing
// before takeFault honoured Fault.Priority: the High create was refused
// too.
func TestLowPriorityThrottle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	ctx := testCtx(t)
	remove := f.s.InjectFault(LowPriorityThrottle(25))
	low, high := azcosmos.PriorityLevelLow, azcosmos.PriorityLevelHigh

	_, err := f.ct.CreateItem(ctx, pkOf("i1"), item("low", "i1"), &azcosmos.ItemOptions{PriorityLevel: &low})
	wantStatus(t, err, http.StatusTooManyRequests, "Low create")
	if got := substatus(err); got != "3092" {
		t.Fatalf("Low create: substatus %q, want 3092", got)
	}
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.RawResponse.Header.Get("x-ms-retry-after-ms") != "1" {
		t.Fatalf("Low create: want x-ms-retry-after-ms 1 (25 ns rounds up to 1 ms), got %v", err)
	}
	_, err = f.ct.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{PriorityLevel: &low}).NextPage(ctx)
	wantStatus(t, err, http.StatusTooManyRequests, "Low query")
	if docs, _ := f.s.Documents(testDB, testColl); len(docs) != 0 {
		t.Fatalf("a shed request was applied: %v", docs)
	}

	_, err = f.ct.CreateItem(ctx, pkOf("i1"), item("high", "i1"), &azcosmos.ItemOptions{PriorityLevel: &high})
	wantOK(t, err, "High create")
	f.create(t, "none", "i1") // no level: High, as on the service
	if st := f.s.Stats(OpCreateItem); st.Requests != 3 || st.LowPriorityRequests != 1 {
		t.Fatalf("creates: %+v, want 3 requests of which 1 Low", st)
	}

	remove()
	_, err = f.ct.CreateItem(ctx, pkOf("i1"), item("low", "i1"), &azcosmos.ItemOptions{PriorityLevel: &low})
	wantOK(t, err, "Low create once the shedding ends")
}

// FaultSpec's priority reaches the fault, and a level that is neither is
// refused.
func TestFaultSpecPriority(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	fault, err := FaultSpec{Priority: PriorityHigh, Status: http.StatusServiceUnavailable}.Fault()
	if err != nil {
		t.Fatal(err)
	}
	f.s.InjectFault(fault)
	low := azcosmos.PriorityLevelLow
	_, err = f.ct.CreateItem(testCtx(t), pkOf("i1"), item("low", "i1"), &azcosmos.ItemOptions{PriorityLevel: &low})
	wantOK(t, err, "Low create under a High-only fault")
	_, err = f.ct.CreateItem(testCtx(t), pkOf("i1"), item("none", "i1"), nil)
	wantStatus(t, err, http.StatusServiceUnavailable, "create without a level")
	if _, err := (FaultSpec{Priority: "low", Status: 429}).Fault(); err == nil {
		t.Fatal(`priority "low" accepted`)
	}
}
